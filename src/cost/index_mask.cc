#include "cost/index_mask.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_set>

#include "eqiforge/ir/fold.h"

namespace eqf::cost {
namespace {

// Nodes whose values the loop reads rather than computes: loads, constants
// and nested loops' results.
bool stops_walk(Op op) {
  return op == Op::Partition || op == Op::Replicate || op == Op::Input || op == Op::Iota || op == Op::Const ||
         op == Op::Collect || op == Op::PReduce || op == Op::Combine;
}

void reach(const Program& p, NodeId n, std::unordered_set<uint32_t>& seen) {
  if (!seen.insert(n.v).second) return;
  if (stops_walk(p.node(n).op)) return;
  for (NodeId c : p.children(n)) reach(p, c, seen);
}

bool is_literal(const Program& p, NodeId n) {
  const Type& t = p.type(n).get();
  return p.node(n).op == Op::Const || (!t.is_tuple && t.tensor().literal);
}

// Linear forms over dims: coefficient per dim symbol plus a constant.
struct Linear {
  std::vector<std::pair<Symbol, double>> coef;
  double constant = 0;
  void add(const Linear& o, double scale) {
    constant += scale * o.constant;
    for (auto [d, c] : o.coef) {
      auto it = std::find_if(coef.begin(), coef.end(), [&](const auto& x) { return x.first == d; });
      if (it == coef.end()) coef.push_back({d, scale * c});
      else it->second += scale * c;
    }
  }
};

// Only literal constants reach here as Const; their value is the attribute.
std::optional<double> literal_value(const Program& p, NodeId n) {
  if (p.node(n).op == Op::Const) return attr_f64(p.node(n).attrs);
  return std::nullopt;
}

std::optional<Linear> linearize(const Program& p, NodeId n) {
  const Node& node = p.node(n);
  auto kids = p.children(n);
  switch (node.op) {
    case Op::Const: {
      Linear l;
      l.constant = attr_f64(node.attrs);
      return l;
    }
    case Op::Iota: {
      Linear l;
      l.coef.push_back({attr_sym(node.attrs, 0), 1.0});
      return l;
    }
    case Op::Partition:
    case Op::Replicate:
    case Op::Cast:
      return linearize(p, kids[0]);
    case Op::Neg: {
      auto a = linearize(p, kids[0]);
      if (!a) return std::nullopt;
      Linear l;
      l.add(*a, -1);
      return l;
    }
    case Op::Add:
    case Op::Sub: {
      auto a = linearize(p, kids[0]), b = linearize(p, kids[1]);
      if (!a || !b) return std::nullopt;
      Linear l = *a;
      l.add(*b, node.op == Op::Add ? 1 : -1);
      return l;
    }
    case Op::Mul: {
      for (int i = 0; i < 2; ++i) {
        if (auto c = literal_value(p, kids[size_t(i)])) {
          auto x = linearize(p, kids[size_t(1 - i)]);
          if (!x) return std::nullopt;
          Linear l;
          l.add(*x, *c);
          return l;
        }
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

bool is_boolean(const Program& p, NodeId n) {
  const Type& t = p.type(n).get();
  return !t.is_tuple && t.tensor().dtype == DType::Bool;
}

// A 0/1 value: a boolean, or a boolean cast to a number (conjuncts reads
// through the cast).
bool zero_or_one(const Program& p, NodeId n) {
  return is_boolean(p, n) || (p.node(n).op == Op::Cast && is_boolean(p, p.children(n)[0]));
}

// The predicates a boolean node asserts (a conjunction), as `a - b cmp 0`;
// with `negate`, those its negation asserts (a negated comparison; a negated
// conjunction is a disjunction, which bounds nothing).
bool conjuncts(const Program& p, NodeId n, std::vector<std::pair<IndexPredicate::Cmp, Linear>>& out,
               bool negate = false) {
  const Node& node = p.node(n);
  auto kids = p.children(n);
  if (node.op == Op::Partition || node.op == Op::Replicate) return conjuncts(p, kids[0], out, negate);
  if (node.op == Op::Cast && is_boolean(p, kids[0])) return conjuncts(p, kids[0], out, negate);
  if (node.op == Op::Mul && !negate) return conjuncts(p, kids[0], out) && conjuncts(p, kids[1], out);
  if (node.op == Op::Eq) {
    // eq(b, 0) of a 0/1 value b is "not b".
    for (int i = 0; i < 2; ++i) {
      std::optional<double> zero = literal_value(p, kids[size_t(1 - i)]);
      if (zero && *zero == 0 && zero_or_one(p, kids[size_t(i)])) return conjuncts(p, kids[size_t(i)], out, !negate);
    }
  }
  IndexPredicate::Cmp cmp;
  if (node.op == Op::Lt) cmp = IndexPredicate::Cmp::Lt;
  else if (node.op == Op::Le) cmp = IndexPredicate::Cmp::Le;
  else if (node.op == Op::Eq && !negate) cmp = IndexPredicate::Cmp::Eq;
  else return false;
  auto a = linearize(p, kids[0]), b = linearize(p, kids[1]);
  if (!a || !b) return false;
  Linear l = *a;
  l.add(*b, -1);
  if (negate) {
    // not(l < 0) is -l <= 0; not(l <= 0) is -l < 0.
    Linear m;
    m.add(l, -1);
    out.push_back({cmp == IndexPredicate::Cmp::Lt ? IndexPredicate::Cmp::Le : IndexPredicate::Cmp::Lt, m});
    return true;
  }
  out.push_back({cmp, l});
  return true;
}

// The axis blocking dim d in a type, if exactly one does.
std::optional<Axis> blocking_axis(const TensorType& t, Symbol d, int& count) {
  count = 0;
  std::optional<Axis> a;
  for (const AxisState& as : t.delta)
    if ((as.state.kind == StateKind::Part || as.state.kind == StateKind::Local) && as.state.dim == d) {
      ++count;
      a = as.axis;
    }
  return a;
}

// A where with a literal branch (taken where its mask is off) and the
// conjuncts its other branch asserts; nullopt for any other node.
struct LiteralWhere {
  int literal_child = 2;
  std::vector<std::pair<IndexPredicate::Cmp, Linear>> conjuncts;
};
std::optional<LiteralWhere> literal_where(const Program& p, NodeId w) {
  if (p.node(w).op != Op::Where) return std::nullopt;
  auto kids = p.children(w);
  LiteralWhere out;
  out.literal_child = is_literal(p, kids[2]) ? 2 : is_literal(p, kids[1]) ? 1 : 0;
  if (out.literal_child == 0 || !conjuncts(p, kids[0], out.conjuncts, out.literal_child == 1)) return std::nullopt;
  return out;
}

// The extent of a dim no axis blocks, as a role-2 term reads it; nullopt
// for a collected dim (its extent is a coordinate count).
std::optional<int64_t> whole_extent(const Program& p, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  if (!info || info->collected_from) return std::nullopt;
  return info->extent;
}

// The conjunct `lin cmp 0` of a where whose tile type is `wt` as an index
// predicate: a dim no axis blocks is a role-2 term, one blocked by a single
// level-0 axis takes the role `role_of` gives that axis (-1: unusable);
// nullopt where a dim cannot be read either way.
template <class RoleOf>
std::optional<IndexPredicate> index_predicate(const Program& p, const TensorType& wt, IndexPredicate::Cmp cmp,
                                              const Linear& lin, RoleOf role_of) {
  IndexPredicate pred;
  pred.cmp = cmp;
  pred.constant = lin.constant;
  for (auto [d, c] : lin.coef) {
    if (c == 0) continue;
    int count = 0;
    std::optional<Axis> a = blocking_axis(wt, d, count);
    IndexPredicate::Term term{2, c, 0};
    if (count == 0) {
      std::optional<int64_t> extent = whole_extent(p, d);
      if (!extent) return std::nullopt;
      term.extent = *extent;
    } else if (count == 1 && a->level == 0) {
      term.role = role_of(*a);
      if (term.role < 0) return std::nullopt;
    } else {
      return std::nullopt;
    }
    pred.terms.push_back(term);
  }
  return pred;
}

}  // namespace

std::optional<LoopMaskTerms> find_loop_mask_terms(const Program& p, const Kernel& k, int loop) {
  const Loop& l = k.loops[size_t(loop)];
  std::vector<NodeId> components = loop_parts(p, l);

  std::vector<std::unordered_set<uint32_t>> reached(components.size());
  for (size_t i = 0; i < components.size(); ++i) reach(p, components[i], reached[i]);

  // Nodes in id order, so that the predicates come out in a fixed order.
  std::vector<uint32_t> candidates(reached[0].begin(), reached[0].end());
  std::sort(candidates.begin(), candidates.end());
  LoopMaskTerms mask;
  bool any_loop_term = false;
  for (uint32_t id : candidates) {
    NodeId w{id};
    // The literal branch is taken where the mask is off: the other branch
    // asserts the predicate (literal else) or its negation (literal then).
    std::optional<LiteralWhere> lw = literal_where(p, w);
    if (!lw) continue;
    bool everywhere = std::all_of(reached.begin(), reached.end(), [&](const auto& s) { return s.count(id) > 0; });
    if (!everywhere) continue;
    const int literal_child = lw->literal_child;
    const auto& preds = lw->conjuncts;
    const TensorType& wt = p.type(w).get().tensor();
    const size_t first = mask.predicates.size();
    for (const auto& [cmp, lin] : preds) {
      auto role_of = [&](Axis a) {
        if (a == l.axis) {
          any_loop_term = true;
          return 0;
        }
        if (std::find(k.grid.begin(), k.grid.end(), a) == k.grid.end()) return -1;
        if (mask.grid_axis && *mask.grid_axis != a) return -1;
        mask.grid_axis = a;
        return 1;
      };
      if (std::optional<IndexPredicate> pred = index_predicate(p, wt, cmp, lin, role_of))
        mask.predicates.push_back({w, literal_child, *pred});
    }
    const bool complete = mask.predicates.size() - first == preds.size();
    for (size_t i = first; i < mask.predicates.size(); ++i) mask.predicates[i].complete = complete;
  }
  if (mask.predicates.empty() || !any_loop_term) return std::nullopt;
  return mask;
}

std::optional<LoopMask> find_loop_mask(const Program& p, const Kernel& k, int loop, const ProgramSummary& summary) {
  std::optional<LoopMaskTerms> terms = find_loop_mask_terms(p, k, loop);
  if (!terms) return std::nullopt;
  LoopMask mask;
  if (terms->grid_axis) mask.grid_axis = summary.axis_index(*terms->grid_axis);
  for (const MaskedPredicate& mp : terms->predicates) mask.predicates.push_back(mp.predicate);
  return mask;
}

namespace {

// The reduction that merges a collect's states: that of the reduces over
// its dim c_p that read it (through partition/replicate chains), whole or
// as a tuple whose component i is (a chain over) the buffer's component i;
// nullptr when there is none, two differ, or anything else reads the states
// (an empty state's exp-sums are garbage that only such a merge ignores).
const Reduction* collect_merge(const Program& p, NodeId collect) {
  const Symbol c = attr_axis(p.node(collect).attrs, 0).collected_dim();
  auto chain = [&](NodeId x) {
    while (p.node(x).op == Op::Partition || p.node(x).op == Op::Replicate) x = p.children(x)[0];
    return x;
  };
  // The buffer component x reads: -1 for the whole buffer, -2 for none.
  auto component = [&](NodeId x) {
    x = chain(x);
    if (x == collect) return -1;
    if (p.node(x).op == Op::Proj && p.children(x)[0] == collect) return int(p.node(x).attrs[0]);
    return -2;
  };
  for (const OutputDecl& o : p.outputs())
    if (component(o.value) != -2) return nullptr;
  const Reduction* found = nullptr;
  auto merged_by = [&](const Node& node) {
    if (node.op != Op::Reduce || attr_sym(node.attrs, 0) != c) return false;
    const Reduction& r = attr_red(node.attrs, 1).get();
    if (found && !(*found == r)) return false;
    found = &r;
    return true;
  };
  std::vector<uint32_t> tuples;  // tuples of components: each must be merged
  for (uint32_t i = 0; i < p.size(); ++i) {
    const Node& node = p.node(NodeId{i});
    if (node.op == Op::Partition || node.op == Op::Replicate) continue;  // links of a chain
    std::span<const NodeId> kids = p.children(NodeId{i});
    for (size_t j = 0; j < kids.size(); ++j) {
      int k = component(kids[j]);
      if (k == -2) continue;
      if (k == -1) {
        if (node.op == Op::Proj) continue;  // a component, checked where it is read
        if (!merged_by(node)) return nullptr;
        continue;
      }
      if (node.op != Op::Tuple || size_t(k) != j) return nullptr;
      if (tuples.empty() || tuples.back() != i) tuples.push_back(i);
    }
  }
  for (uint32_t i = 0; i < p.size(); ++i) {
    const Node& node = p.node(NodeId{i});
    for (NodeId ch : p.children(NodeId{i}))
      if (std::binary_search(tuples.begin(), tuples.end(), ch.v) && !merged_by(node)) return nullptr;
  }
  for (const OutputDecl& o : p.outputs())
    if (std::binary_search(tuples.begin(), tuples.end(), o.value.v)) return nullptr;
  return found;
}

// An integer the emitter writes as one (loop bounds' is_small_integer).
bool small_integer(double x) { return std::abs(x - std::round(x)) < 1e-9 && std::abs(x) < 1e9; }

// Whether every value a kernel stores is decided on a block where the where
// of `block` takes its literal branch: a constant; or, for a collect's state
// (`merge` its merging reduction), a constant, or an exp-sum component whose
// max component is -inf there (the merge counts such a state as empty and
// reads none of its exp-sums: triton_ops.cc, reduce_tuple).
bool stores_decided(const Program& p, const Kernel& k, const std::vector<NodeId>& stored, const Reduction* merge,
                    BlockConstants& block) {
  for (size_t i = 0; i < stored.size(); ++i) {
    if (block.eval(stored[i])) continue;
    const Store& s = k.stores[i];
    if (!merge || s.component < 0 || size_t(s.component) >= merge->arity()) return false;
    const RedComponent& c = merge->components[size_t(s.component)];
    if (c.repair != Repair::ExpSum || merge->components[c.arg0].base != RedBase::Max) return false;
    const NodeId tuple = s.value;
    std::optional<double> m = block.eval(p.children(tuple)[c.arg0]);
    if (!m || *m != -std::numeric_limits<double>::infinity()) return false;
  }
  return true;
}

}  // namespace

std::optional<double> BlockConstants::eval(NodeId n) {
  if (auto it = memo_.find(n.v); it != memo_.end()) return it->second;
  std::optional<double> v = compute(n);
  memo_.emplace(n.v, v);
  return v;
}

std::optional<double> BlockConstants::compute(NodeId n) {
  const Node& node = p_.node(n);
  auto kids = p_.children(n);
  if (n == where_) return fold_literal(p_, kids[size_t(literal_child_)]);
  const Type& t = p_.type(n).get();
  if (!t.is_tuple && t.tensor().literal) return fold_literal(p_, n);
  switch (node.op) {
    case Op::Replicate:  // the same tile at every coordinate: an alias
      return eval(kids[0]);
    case Op::Proj: {
      NodeId tuple = kids[0];
      if (p_.node(tuple).op != Op::Tuple) return std::nullopt;
      return eval(p_.children(tuple)[size_t(node.attrs[0])]);
    }
    case Op::Where: {
      if (std::optional<double> c = eval(kids[0])) return eval(*c != 0 ? kids[1] : kids[2]);
      std::optional<double> a = eval(kids[1]), b = eval(kids[2]);
      if (a && b && (*a == *b || (std::isnan(*a) && std::isnan(*b)))) return a;
      return std::nullopt;
    }
    case Op::Reduce: {
      // Over a block's valid positions (at least one): max of a constant is
      // that constant, a sum of zeros is zero.
      RedId r = attr_red(node.attrs, 1);
      std::optional<double> x = eval(kids[0]);
      if (!x) return std::nullopt;
      if (r == RedId::max()) return x;
      if (r == RedId::add() && *x == 0) return 0.0;
      return std::nullopt;
    }
    default:
      break;
  }
  if (!op_has(node.op, kPointwise)) return std::nullopt;
  std::vector<double> values;
  for (NodeId c : kids) {
    std::optional<double> v = eval(c);
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  return constant_op(p_, n, values);
}

std::optional<GridMaskTerms> find_grid_mask_terms(const Program& p, const Kernel& k) {
  if (k.grid.empty() || k.stores.empty()) return std::nullopt;
  std::unordered_set<uint32_t> loads;
  for (const Load& ld : k.loads) loads.insert(ld.node.v);
  // What the kernel stores: a tuple's component where a store keeps one.
  std::vector<NodeId> stored;
  for (const Store& s : k.stores) {
    NodeId v = s.value;
    if (s.component >= 0) {
      if (p.node(v).op != Op::Tuple) return std::nullopt;
      v = p.children(v)[size_t(s.component)];
    }
    stored.push_back(v);
  }
  const Reduction* merge = p.node(k.root).op == Op::Collect ? collect_merge(p, k.root) : nullptr;
  // The nodes the kernel computes for them, down to its loads; in id order,
  // so that the predicates come out in a fixed order.
  std::unordered_set<uint32_t> seen;
  std::vector<NodeId> stack = stored;
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.v).second || loads.count(n.v)) continue;
    for (NodeId c : p.children(n)) stack.push_back(c);
  }
  std::vector<uint32_t> nodes(seen.begin(), seen.end());
  std::sort(nodes.begin(), nodes.end());

  std::optional<GridMaskTerms> mask;
  for (uint32_t id : nodes) {
    NodeId w{id};
    std::optional<LiteralWhere> lw = literal_where(p, w);
    if (!lw) continue;
    const int literal_child = lw->literal_child;
    const TensorType& wt = p.type(w).get().tensor();
    std::optional<Axis> axis;
    if (mask) axis = mask->axis;
    std::vector<IndexPredicate> usable;
    for (const auto& [cmp, lin] : lw->conjuncts) {
      auto role_of = [&](Axis a) {
        if (std::find(k.grid.begin(), k.grid.end(), a) == k.grid.end() || (axis && *axis != a)) return -1;
        axis = a;
        return 0;
      };
      std::optional<IndexPredicate> pred = index_predicate(p, wt, cmp, lin, role_of);
      if (!pred) continue;
      // Integral forms only (the emitter writes them as integer sums), and
      // at least one term on the grid axis.
      bool ok = small_integer(pred->constant), on_grid = false;
      for (const IndexPredicate::Term& t : pred->terms) {
        ok = ok && small_integer(t.coef);
        on_grid = on_grid || t.role == 0;
      }
      if (ok && on_grid) usable.push_back(*pred);
    }
    if (usable.empty()) continue;
    BlockConstants block(p, w, literal_child);
    if (!stores_decided(p, k, stored, merge, block)) continue;
    if (!mask) mask = GridMaskTerms{*axis, {}};
    mask->predicates.insert(mask->predicates.end(), usable.begin(), usable.end());
  }
  return mask;
}

std::optional<LoopMask> find_grid_mask(const Program& p, const Kernel& k, const ProgramSummary& summary, int* axis) {
  std::optional<GridMaskTerms> terms = find_grid_mask_terms(p, k);
  if (!terms) return std::nullopt;
  *axis = summary.axis_index(terms->axis);
  LoopMask mask;
  mask.predicates = std::move(terms->predicates);
  return mask;
}

double visited_blocks(const LoopMask& mask, double T, double Bt, double S, double Bg) {
  const int64_t J = int64_t(std::ceil(T / Bt));
  const int64_t I = mask.grid_axis >= 0 ? int64_t(std::ceil(S / Bg)) : 1;
  // Range of a predicate's linear form over the box of block (i, j).
  auto range = [&](const IndexPredicate& pr, int64_t i, int64_t j, double& lo, double& hi) {
    lo = hi = pr.constant;
    for (const IndexPredicate::Term& t : pr.terms) {
      double a = 0, b = 0;
      if (t.role == 0) {
        a = double(j) * Bt;
        b = std::min(double(j + 1) * Bt, T) - 1;
      } else if (t.role == 1) {
        a = double(i) * Bg;
        b = std::min(double(i + 1) * Bg, S) - 1;
      } else {
        a = 0;
        b = double(t.extent) - 1;
      }
      double x = t.coef * a, y = t.coef * b;
      lo += std::min(x, y);
      hi += std::max(x, y);
    }
  };
  // Whether some point of the block can satisfy the predicate.
  auto possible = [&](const IndexPredicate& pr, int64_t i, int64_t j) {
    double lo, hi;
    range(pr, i, j, lo, hi);
    switch (pr.cmp) {
      case IndexPredicate::Cmp::Lt: return lo < 0;
      case IndexPredicate::Cmp::Le: return lo <= 0;
      case IndexPredicate::Cmp::Eq: return lo <= 0 && hi >= 0;
    }
    return true;
  };
  double total = 0;
  for (int64_t i = 0; i < I; ++i) {
    // Each predicate's possible blocks form an interval of j (its linear
    // form is monotone in j): find it by binary search from a possible block.
    int64_t lo_j = 0, hi_j = J - 1;
    for (const IndexPredicate& pr : mask.predicates) {
      double coef_t = 0;
      for (const IndexPredicate::Term& t : pr.terms)
        if (t.role == 0) coef_t += t.coef;
      if (coef_t == 0) {
        if (!possible(pr, i, 0)) lo_j = 1, hi_j = 0;
        continue;
      }
      // Find some possible block: for an Eq predicate the set may be interior.
      auto first_true = [&](int64_t a, int64_t b, const std::function<bool(int64_t)>& f) {
        // smallest j in [a, b] with f(j) true, f monotone false..true; b + 1 if none
        while (a <= b) {
          int64_t m = a + (b - a) / 2;
          if (f(m)) b = m - 1;
          else a = m + 1;
        }
        return a;
      };
      // For coef_t > 0, lo grows with j: "lo small enough" holds on a prefix;
      // for an Eq predicate "hi >= 0" also holds on a suffix. Mirror for < 0.
      auto lo_ok = [&](int64_t j) {
        double lo, hi;
        range(pr, i, j, lo, hi);
        return pr.cmp == IndexPredicate::Cmp::Lt ? lo < 0 : lo <= 0;
      };
      auto hi_ok = [&](int64_t j) {
        if (pr.cmp != IndexPredicate::Cmp::Eq) return true;
        double lo, hi;
        range(pr, i, j, lo, hi);
        return hi >= 0;
      };
      int64_t a, b;
      if (coef_t > 0) {
        b = first_true(0, J - 1, [&](int64_t j) { return !lo_ok(j); }) - 1;  // last j with lo_ok
        a = first_true(0, J - 1, hi_ok);                                     // first j with hi_ok
      } else {
        a = first_true(0, J - 1, lo_ok);
        b = first_true(0, J - 1, [&](int64_t j) { return !hi_ok(j); }) - 1;
      }
      lo_j = std::max(lo_j, a);
      hi_j = std::min(hi_j, b);
    }
    if (hi_j >= lo_j) total += double(hi_j - lo_j + 1);
  }
  return total;
}

}  // namespace eqf::cost
