// The partitioner: a linear order of the operators, a dynamic program over
// its segmentations, and one subprogram per segment (see partition.h).
#include "eqiforge/partition/partition.h"
#include "partition/period.h"
#include "partition/post_order.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "eqiforge/ir/fold.h"
#include "eqiforge/ir/op.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {
namespace {

constexpr uint32_t kNone = 0xffffffffu;

bool is_tile_level(Op op) {
  return op_has(op, kParallel) || op_has(op, kStorage) || op == Op::TileMatMul;
}

// Facts about the original program's nodes that every step needs.
struct Facts {
  const Program* p = nullptr;
  std::vector<bool> reachable;   // from an output
  std::vector<bool> dependent;   // depends on an input (an operator unless it is the input leaf)
  std::vector<bool> is_op;       // reachable, dependent and not a leaf: what is partitioned
  std::vector<bool> is_tuple;
  std::vector<int64_t> bytes;    // of the value (tensors only; 0 for tuples and literals)
  std::vector<std::vector<uint32_t>> users;  // operator users, each once
  std::vector<bool> is_output;
  // A value with a dim of extent > 1: only those may cross a cut. The search
  // has no candidate for a subgraph that outputs a value without one (the
  // mean of a 1-D row, a [1] tensor).
  std::vector<bool> wide;
  // The value a node is a mere copy of (x + 0, x * 1, a layout op of x, ...;
  // itself when it is none): a subgraph that outputs a copy of one of its
  // inputs has no candidate either, so such a value never crosses a cut,
  // nor is an output separated from what it copies.
  std::vector<uint32_t> copy_of;
  // Per node, per tuple component: the dims in a structural order (see
  // natural_layouts); the layout a boundary tensor is stored in.
  std::vector<std::vector<std::vector<Symbol>>> layouts;
};

int64_t elements(const Program& p, const TensorType& t) {
  int64_t n = 1;
  for (Symbol d : t.dims) {
    const DimInfo* info = p.dims.find(d);
    n *= info ? info->extent : 1;
  }
  return n;
}

// A dim order for every value that depends only on the program's structure,
// not on the names or declaration order of its dims, so that identical layers
// store their boundary tensors alike (and so hash alike). It follows how
// PyTorch lays results out: an input's layout; a pointwise op's widest
// operand, then the other operands' new dims; a matmul's left operand without
// the contracted dim, then the right operand's new dims; split, merge and
// rename in place; a reduction drops its dim.
std::vector<std::vector<std::vector<Symbol>>> natural_layouts(const Program& p) {
  std::vector<std::vector<std::vector<Symbol>>> out(p.size());
  auto append_new = [](std::vector<Symbol>& into, const std::vector<Symbol>& from) {
    for (Symbol d : from)
      if (std::find(into.begin(), into.end(), d) == into.end()) into.push_back(d);
  };
  auto without = [](std::vector<Symbol> v, Symbol d) {
    std::erase(v, d);
    return v;
  };
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId id{i};
    const Node& n = p.node(id);
    auto kids = p.children(id);
    auto one = [&](size_t k) -> const std::vector<Symbol>& { return out[kids[k].v].front(); };
    std::vector<std::vector<Symbol>> mine;
    switch (n.op) {
      case Op::Input: {
        Symbol name = attr_sym(n.attrs, 0);
        for (const InputDecl& in : p.inputs())
          if (in.name == name) mine.push_back(in.layout);
        break;
      }
      case Op::Iota: mine.push_back({attr_sym(n.attrs, 0)}); break;
      case Op::MatMul: case Op::TileMatMul: {
        Symbol k = attr_sym(n.attrs, 0);
        std::vector<Symbol> v = without(one(0), k);
        append_new(v, without(one(1), k));
        mine.push_back(v);
        break;
      }
      case Op::Reduce: {
        Symbol d = attr_sym(n.attrs, 0);
        for (const auto& part : out[kids[0].v]) mine.push_back(without(part, d));
        break;
      }
      case Op::Split: case Op::Merge: case Op::Rename: {
        Symbol a = attr_sym(n.attrs, 0), b = attr_sym(n.attrs, 1), c = attr_sym(n.attrs, 2);
        std::vector<Symbol> v;
        for (Symbol d : one(0)) {
          if (n.op == Op::Split && d == a) v.insert(v.end(), {b, c});
          else if (n.op == Op::Merge && d == a) v.push_back(c);
          else if (n.op == Op::Merge && d == b) continue;
          else if (n.op == Op::Rename && d == a) v.push_back(b);
          else v.push_back(d);
        }
        mine.push_back(v);
        break;
      }
      case Op::Tuple:
        for (NodeId k : kids) mine.push_back(out[k.v].empty() ? std::vector<Symbol>{} : out[k.v].front());
        break;
      case Op::Proj: {
        size_t k = n.attrs[0];
        const auto& parts = out[kids[0].v];
        mine.push_back(k < parts.size() ? parts[k] : std::vector<Symbol>{});
        break;
      }
      default: {
        // Pointwise (and anything else): the operand with the most dims
        // first (the first of those), then the others' new dims in order.
        size_t widest = 0;
        for (size_t k = 1; k < kids.size(); ++k)
          if (one(k).size() > one(widest).size()) widest = k;
        std::vector<Symbol> v = kids.empty() ? std::vector<Symbol>{} : one(widest);
        for (size_t k = 0; k < kids.size(); ++k) append_new(v, one(k));
        mine.push_back(v);
      }
    }
    if (mine.empty()) mine.emplace_back();
    out[i] = std::move(mine);
  }
  return out;
}

// The values of literal-typed nodes (constants and pointwise ops over
// them), NaN elsewhere.
std::vector<double> literal_values(const Program& p) {
  std::vector<double> v(p.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<double> kids;
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId id{i};
    const Type& t = p.type(id).get();
    if (t.is_tuple || !t.tensor().literal) continue;
    kids.clear();
    for (NodeId c : p.children(id)) kids.push_back(v[c.v]);  // children come first
    v[i] = constant_op(p, id, kids);
  }
  return v;
}

std::vector<uint32_t> copies(const Program& p) {
  std::vector<double> lit = literal_values(p);
  std::vector<uint32_t> of(p.size());
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId id{i};
    const Node& n = p.node(id);
    auto kids = p.children(id);
    of[i] = i;
    auto is = [&](size_t k, double value) { return lit[kids[k].v] == value; };
    switch (n.op) {
      case Op::Add:
        if (is(1, 0)) of[i] = of[kids[0].v];
        else if (is(0, 0)) of[i] = of[kids[1].v];
        break;
      case Op::Mul:
        if (is(1, 1)) of[i] = of[kids[0].v];
        else if (is(0, 1)) of[i] = of[kids[1].v];
        break;
      case Op::Sub: if (is(1, 0)) of[i] = of[kids[0].v]; break;
      case Op::Div: if (is(1, 1)) of[i] = of[kids[0].v]; break;
      case Op::Neg:
        if (p.node(kids[0]).op == Op::Neg) of[i] = of[p.children(kids[0])[0].v];
        break;
      case Op::Split: case Op::Merge: case Op::Rename: of[i] = of[kids[0].v]; break;
      default: break;
    }
  }
  return of;
}

Facts facts_of(const Program& p) {
  Facts f;
  f.p = &p;
  size_t n = p.size();
  f.reachable.assign(n, false);
  f.dependent.assign(n, false);
  f.is_op.assign(n, false);
  f.is_tuple.assign(n, false);
  f.bytes.assign(n, 0);
  f.users.assign(n, {});
  f.is_output.assign(n, false);
  f.wide.assign(n, false);
  f.layouts = natural_layouts(p);
  f.copy_of = copies(p);
  for (const OutputDecl& o : p.outputs()) {
    f.reachable[o.value.v] = true;
    f.is_output[o.value.v] = true;
  }
  // Children have smaller ids: one pass from the top marks reachability.
  for (size_t i = n; i-- > 0;) {
    if (!f.reachable[i]) continue;
    for (NodeId c : p.children(NodeId{uint32_t(i)})) f.reachable[c.v] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    NodeId id{uint32_t(i)};
    const Node& node = p.node(id);
    if (is_tile_level(node.op))
      throw Error(p.file, node.loc,
                  std::string("partition: ") + std::string(op_info(node.op).name) +
                      " is a tile-level operator; partitioning takes a high-level program (before the search)");
    bool dep = node.op == Op::Input;
    for (NodeId c : p.children(id)) dep = dep || f.dependent[c.v];
    f.dependent[i] = dep;
    f.is_op[i] = f.reachable[i] && dep && node.op != Op::Input;
    const Type& t = p.type(id).get();
    f.is_tuple[i] = t.is_tuple;
    if (!t.is_tuple && !t.tensor().literal) {
      f.bytes[i] = elements(p, t.tensor()) * dtype_bytes(t.tensor().dtype);
      for (Symbol d : t.tensor().dims) {
        const DimInfo* info = p.dims.find(d);
        if (info && info->extent > 1) f.wide[i] = true;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!f.is_op[i]) continue;
    for (NodeId c : p.children(NodeId{uint32_t(i)})) {
      if (!f.is_op[c.v]) continue;
      auto& u = f.users[c.v];
      if (u.empty() || u.back() != i) u.push_back(uint32_t(i));
    }
  }
  return f;
}

// ---- linear orders -------------------------------------------------------------

std::vector<uint32_t> node_order(const Facts& f) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < f.is_op.size(); ++i)
    if (f.is_op[i]) out.push_back(i);
  return out;
}

// Post-order of a depth-first walk from the outputs (in declared order),
// children in operand order, without recursion (programs can be deep chains).
std::vector<uint32_t> depth_first_order(const Facts& f) {
  std::vector<uint32_t> out;
  partition::post_order(*f.p, partition::output_roots(*f.p), [](uint32_t) { return true; }, [&](uint32_t node) {
    if (f.is_op[node]) out.push_back(node);
  });
  return out;
}

// ---- the dynamic program ----------------------------------------------------------

// Lexicographic cost of a segmentation: operators past the bound (only where
// a tuple forces it), bytes across cuts, segments.
struct Cost {
  int64_t overflow = 0;
  int64_t bytes = 0;
  int64_t segments = 0;
  Cost& operator+=(const Cost& o) {
    overflow += o.overflow, bytes += o.bytes, segments += o.segments;
    return *this;
  }
  friend Cost operator+(Cost a, const Cost& b) { return a += b; }
  friend bool operator<(const Cost& a, const Cost& b) {
    if (a.overflow != b.overflow) return a.overflow < b.overflow;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.segments < b.segments;
  }
};

struct Segmentation {
  std::vector<uint32_t> order;   // operators in linear order
  std::vector<size_t> cuts;      // segment starts, with order.size() at the end
  Cost cost;
  size_t distinct = 0;           // segments up to copies (SegmentKeys: an estimate of the distinct subgraphs)
  size_t period = 0, units = 0;  // the repeated block of the cuts (0: none)
  bool ok = false;
};

// Fewer distinct segments are worth some traffic through the cuts: each
// distinct segment is one search, and lazy composition fuses across a cut
// where that pays. A segmentation may move up to twice the least bytes any
// segmentation moves, plus 256 KiB (~0.1 us at 4 TB/s, nothing next to a
// launch), and then wins on fewer distinct segments; beyond that the least
// bytes win. (The runtime's fallback cut, python/eqiforge/runtime/
// partition.py, allows the same slack.)
constexpr int64_t kTrafficSlack = 2;
constexpr int64_t kTrafficFloor = 256 * 1024;

bool within_traffic(const Segmentation& s, const Cost& least) {
  return s.cost.overflow == least.overflow && s.cost.bytes <= kTrafficSlack * least.bytes + kTrafficFloor;
}

// Among segmentations within the traffic slack: fewest distinct segments,
// then the plain order of costs.
bool fewer_searches(const Segmentation& a, const Segmentation& b) {
  if (!b.ok) return a.ok;
  if (!a.ok) return false;
  if (a.distinct != b.distinct) return a.distinct < b.distinct;
  return a.cost < b.cost;
}

// Prices the segments of one linear order.
class SegmentPricer {
 public:
  SegmentPricer(const Facts& f, const std::vector<uint32_t>& order, int max_ops)
      : f_(f), order_(order), max_ops_(max_ops), pos_(f.is_op.size(), kNone), last_use_(order.size(), 0),
        stamp_(order.size(), kNone) {
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = uint32_t(i);
    // last_use_[i]: the largest position of an operator that reads order[i].
    for (size_t i = 0; i < order.size(); ++i)
      for (uint32_t u : f.users[order[i]]) last_use_[i] = std::max(last_use_[i], pos_[u]);
  }

  // The cost of segment [a, b), or false when the segment cannot be a
  // subgraph: a tuple, a value without a dim of extent > 1 or a mere copy of
  // a value computed before the segment would cross a cut, or an original
  // output would be a copy of a value computed before the segment.
  bool cost(size_t a, size_t b, Cost& c) {
    c = Cost{};
    c.segments = 1;
    c.overflow = std::max<int64_t>(0, int64_t(b - a) - max_ops_);
    ++generation_;
    for (size_t i = a; i < b; ++i) {
      uint32_t node = order_[i];
      uint32_t source = f_.copy_of[node];
      // Copies an input of the segment: an operator before it, or (only
      // where the value crosses: an original output copying an original
      // input is one in any subgraph) an original input.
      bool copies_input = source != node && (pos_[source] == kNone ? !f_.is_op[source] && f_.dependent[source]
                                                                   : pos_[source] < a);
      if (last_use_[i] >= b && f_.users[node].size() > 0) {
        if (f_.is_tuple[node] || !f_.wide[node] || copies_input) return false;
        c.bytes += f_.bytes[node];  // written once
      } else if (f_.is_output[node] && copies_input && pos_[source] != kNone) {
        return false;
      }
      for (NodeId ch : f_.p->children(NodeId{node})) {
        uint32_t q = pos_[ch.v];
        if (q == kNone || q >= a || stamp_[q] == generation_) continue;
        stamp_[q] = generation_;
        if (f_.is_tuple[ch.v]) return false;
        c.bytes += f_.bytes[ch.v];  // read by this segment
      }
    }
    return true;
  }

 private:
  const Facts& f_;
  const std::vector<uint32_t>& order_;
  int64_t max_ops_;
  std::vector<uint32_t> pos_, last_use_;
  std::vector<uint32_t> stamp_;  // operands already counted for the segment being priced
  uint32_t generation_ = 0;
};

// The best segmentations of a span of the order into segments of at most
// `longest` operators, to (forward) or from (backward) every position:
// forward, cost[b - lo] prices [lo, b) and link[b - lo] is its last cut;
// backward, cost[a - lo] prices [a, hi) and link[a - lo] is its first cut.
struct Chain {
  size_t lo = 0;
  std::vector<Cost> cost;
  std::vector<size_t> link;
  std::vector<bool> reached;
  bool at(size_t x) const { return reached[x - lo]; }
};

Chain forward_chain(SegmentPricer& pricer, size_t lo, size_t hi, size_t longest) {
  Chain ch{lo, std::vector<Cost>(hi - lo + 1), std::vector<size_t>(hi - lo + 1, lo), std::vector<bool>(hi - lo + 1)};
  ch.reached[0] = true;
  for (size_t b = lo + 1; b <= hi; ++b) {
    for (size_t len = 1; len <= longest && len <= b - lo; ++len) {
      size_t a = b - len;
      if (!ch.reached[a - lo]) continue;
      Cost c;
      if (!pricer.cost(a, b, c)) continue;
      Cost total = ch.cost[a - lo] + c;
      // Ties go to the later cut (longer last segment), deterministically.
      if (!ch.reached[b - lo] || total < ch.cost[b - lo]) {
        ch.cost[b - lo] = total;
        ch.link[b - lo] = a;
        ch.reached[b - lo] = true;
      }
    }
  }
  return ch;
}

Chain backward_chain(SegmentPricer& pricer, size_t lo, size_t hi, size_t longest) {
  Chain ch{lo, std::vector<Cost>(hi - lo + 1), std::vector<size_t>(hi - lo + 1, hi), std::vector<bool>(hi - lo + 1)};
  ch.reached[hi - lo] = true;
  for (size_t a = hi; a-- > lo;) {
    for (size_t len = 1; len <= longest && a + len <= hi; ++len) {
      size_t b = a + len;
      if (!ch.reached[b - lo]) continue;
      Cost c;
      if (!pricer.cost(a, b, c)) continue;
      Cost total = c + ch.cost[b - lo];
      if (!ch.reached[a - lo] || total < ch.cost[a - lo]) {
        ch.cost[a - lo] = total;
        ch.link[a - lo] = b;
        ch.reached[a - lo] = true;
      }
    }
  }
  return ch;
}

// The cuts of a forward chain's best segmentation of [lo, b), b excluded.
std::vector<size_t> forward_cuts(const Chain& ch, size_t b) {
  std::vector<size_t> cuts;
  for (size_t x = b; x > ch.lo; x = ch.link[x - ch.lo]) cuts.push_back(ch.link[x - ch.lo]);
  std::reverse(cuts.begin(), cuts.end());
  return cuts;
}

// Cuts that repeat with the order's period: the best segmentation of one
// block of `j` periods (the unit), repeated over every whole unit of the
// repeated run from a phase, the best segmentations before and after. Each
// phase and unit length up to four bounds (at least one period) is priced;
// the result replaces `best` where it is within the traffic slack of `plain`
// (the order's least-traffic segmentation) and needs fewer searches.
void try_periodic_cuts(SegmentPricer& pricer, partition::SegmentKeys& keys, const partition::Period& period,
                       const Chain& forward, size_t longest, const Segmentation& plain, Segmentation& best) {
  size_t n = forward.cost.size() - 1;
  Chain backward = backward_chain(pricer, 0, n, longest);
  size_t run_end = period.start + period.repeats * period.period;
  for (size_t j = 1; 2 * j <= period.repeats; ++j) {
    size_t unit = j * period.period;
    if (j > 1 && unit > 4 * longest) break;
    for (size_t phase = 0; phase < period.period; ++phase) {
      size_t u0 = period.start + phase;
      size_t units = (run_end - u0) / unit;
      size_t tail = u0 + units * unit;
      if (units < 2 || !forward.at(u0) || !backward.at(tail)) continue;
      Chain inner = forward_chain(pricer, u0, u0 + unit, longest);
      if (!inner.at(u0 + unit)) continue;
      std::vector<size_t> unit_cuts = forward_cuts(inner, u0 + unit);
      Segmentation s;
      s.cuts = forward_cuts(forward, u0);
      s.cost = forward.cost[u0];
      bool ok = true;
      for (size_t k = 0; k < units && ok; ++k) {
        size_t shift = k * unit;
        for (size_t c = 0; c < unit_cuts.size() && ok; ++c) {
          size_t a = unit_cuts[c] + shift, b = (c + 1 < unit_cuts.size() ? unit_cuts[c + 1] : u0 + unit) + shift;
          Cost piece;
          ok = pricer.cost(a, b, piece);  // repeats can differ at the run's ends
          s.cost += piece;
          s.cuts.push_back(a);
        }
      }
      if (!ok) continue;
      for (size_t x = tail; x < n; x = backward.link[x]) s.cuts.push_back(x);
      s.cuts.push_back(n);
      s.cost += backward.cost[tail];
      s.distinct = keys.distinct(s.cuts);
      s.period = unit;
      s.units = units;
      s.ok = true;
      if (within_traffic(s, plain.cost) && fewer_searches(s, best)) best = std::move(s);
    }
  }
}

// The least-traffic segmentation of one order, and the one within its
// traffic slack that needs the fewest searches (the same where cuts that
// repeat do not help).
struct Candidates {
  Segmentation least_traffic, fewest_searches;
};

Candidates segment(const Facts& f, std::vector<uint32_t> order, int max_ops) {
  size_t n = order.size();
  SegmentPricer pricer(f, order, max_ops);
  partition::SegmentKeys keys(*f.p, order, f.is_op, f.is_output);
  partition::Period period = partition::find_period(keys.signatures());
  // Segments may exceed the bound only where tuples force it: try the bound,
  // then a growing slack.
  for (size_t slack = 0;; slack = slack ? slack * 2 : 8) {
    size_t longest = std::min(n, size_t(max_ops) + slack);
    Chain forward = forward_chain(pricer, 0, n, longest);
    if (!forward.at(n) && longest < n) continue;
    Segmentation best;
    if (!forward.at(n)) return {best, best};  // cannot happen: one segment of everything has no cut
    best.cost = forward.cost[n];
    best.cuts = forward_cuts(forward, n);
    best.cuts.push_back(n);
    best.distinct = keys.distinct(best.cuts);
    best.ok = true;
    Candidates out{best, best};
    if (period.period > 0) try_periodic_cuts(pricer, keys, period, forward, longest, out.least_traffic, out.fewest_searches);
    out.least_traffic.order = order;  // the pricer reads it until here
    out.fewest_searches.order = std::move(order);
    return out;
  }
}

// ---- building the subprograms ------------------------------------------------------

std::vector<Symbol> declared_order(const Program& p, std::vector<Symbol> dims) {
  std::sort(dims.begin(), dims.end(), [&](Symbol a, Symbol b) { return p.dims.order(a) < p.dims.order(b); });
  return dims;
}

double op_flops(const Program& p, NodeId id) {
  const Node& node = p.node(id);
  const Type& t = p.type(id).get();
  if (node.op == Op::MatMul) {
    // 2 per multiply-add: the extents of every dim of both operands.
    std::vector<Symbol> all;
    for (NodeId c : p.children(id))
      for (Symbol d : p.type(c).get().tensor().dims) all.push_back(d);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    double n = 2;
    for (Symbol d : all) n *= double(p.dims.find(d)->extent);
    return n;
  }
  if (op_has(node.op, kLayout) || node.op == Op::Proj || node.op == Op::Tuple) return 0;
  if (node.op == Op::Reduce) {
    double n = 0;
    for (const TensorType& part : p.type(p.children(id)[0]).get().parts) n += double(elements(p, part));
    return n;
  }
  double n = 0;
  for (const TensorType& part : t.parts) n += double(elements(p, part));
  return n;
}

struct Builder {
  const Program& p;
  const Facts& f;
  Partition& out;
  std::vector<int> boundary_of;   // original node -> boundary index, or -1
  // Names of the original program's inputs, outputs and lets, and of the
  // boundaries so far: a boundary's name is none of them, so that no
  // subprogram declares one name twice (a program that is itself a subgraph
  // has outputs named like the boundaries cut from it: b0_x).
  std::unordered_set<std::string> taken;

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
    taken.insert(name);
    return name;
  }

  // The subprogram of one segment, built in a canonical order: a depth-first
  // walk from its outputs, so its inputs (and the nodes it adds) come in an
  // order that depends only on the structure.
  void build(int index, const std::vector<uint32_t>& nodes, const std::vector<bool>& in_segment,
             const std::vector<bool>& crosses) {
    Subgraph sg;
    Program& q = sg.program;
    q.file = p.file;
    q.name = Symbol::intern(std::string(p.name.str()) + "_part" + std::to_string(index));
    sg.nodes.reserve(nodes.size());
    for (uint32_t n : nodes) sg.nodes.push_back(NodeId{n});
    sg.ops = int(nodes.size());

    // Outputs, in linear order of their nodes: original outputs at each node
    // (in declared order), or the boundary value. A value that is both an
    // original output and read by a later subgraph is declared once, as the
    // original output, and the boundary is that output (its later readers
    // read what it wrote, in its layout).
    struct Pending {
      NodeId node;
      int original = -1;
      bool boundary = false;
    };
    std::vector<Pending> outs;
    for (uint32_t n : nodes) {
      size_t first = outs.size();
      for (size_t o = 0; o < p.outputs().size(); ++o)
        if (p.outputs()[o].value.v == n) outs.push_back({NodeId{n}, int(o), false});
      if (!crosses[n]) continue;
      if (outs.size() > first) outs[first].boundary = true;
      else outs.push_back({NodeId{n}, -1, true});
    }

    // Dims used anywhere in the segment (operands included), declared in the
    // original order.
    std::vector<Symbol> used;
    std::vector<uint32_t> map(p.size(), kNone);
    auto note_dims = [&](NodeId id) {
      for (const TensorType& t : p.type(id).get().parts)
        for (Symbol d : t.dims) used.push_back(d);
    };

    // Walk: which original nodes are copied, and which become inputs.
    std::vector<uint32_t> post;      // nodes to copy, children first
    std::vector<uint32_t> leaves;    // nodes that become inputs, first use first
    std::vector<NodeId> roots;
    for (const Pending& o : outs) roots.push_back(o.node);
    // An original input or another segment's value becomes an input.
    auto copied = [&](uint32_t n) {
      return p.node(NodeId{n}).op != Op::Input && (in_segment[n] || !f.dependent[n]);
    };
    partition::post_order(p, roots, copied, [&](uint32_t node) {
      note_dims(NodeId{node});
      (copied(node) ? post : leaves).push_back(node);
    });
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    for (Symbol d : declared_order(p, used)) q.dims.declare(d, p.dims.find(d)->extent);

    for (uint32_t leaf : leaves) {
      NodeId id{leaf};
      const Node& node = p.node(id);
      SubgraphInput src;
      if (node.op == Op::Input) {
        Symbol name = attr_sym(node.attrs, 0);
        size_t k = 0;
        while (p.inputs()[k].name != name) ++k;
        const InputDecl& decl = p.inputs()[k];
        map[leaf] = q.add_input(decl.name, decl.dtype, decl.layout, decl.loc).v;
        src = {false, uint32_t(k)};
        sg.bytes += f.bytes[leaf];
      } else {
        int b = boundary_of[leaf];
        BoundaryTensor& bt = out.boundaries[size_t(b)];
        map[leaf] = q.add_input(Symbol::intern(bt.name), bt.dtype, bt.layout, node.loc).v;
        src = {true, uint32_t(b)};
        if (bt.consumers.empty() || bt.consumers.back() != index) bt.consumers.push_back(index);
        sg.bytes += bt.bytes;
        sg.boundary_in_bytes += bt.bytes;
      }
      sg.inputs.push_back(src);
    }
    std::vector<NodeId> kids;
    for (uint32_t n : post) {
      NodeId id{n};
      const Node& node = p.node(id);
      kids.clear();
      for (NodeId c : p.children(id)) kids.push_back(NodeId{map[c.v]});
      NodeId copy = q.add(node.op, node.attrs, kids, node.loc);
      map[n] = copy.v;
      Symbol let = p.name_of(id);
      if (let.valid()) q.set_name(copy, let);
      if (in_segment[n]) {
        double fl = op_flops(p, id);
        sg.flops += fl;
        if (node.op == Op::MatMul) sg.mma_flops += fl;
      }
    }
    for (const Pending& o : outs) {
      NodeId v{map[o.node.v]};
      SubgraphOutput role;
      const OutputDecl* decl = o.original >= 0 ? &p.outputs()[size_t(o.original)] : nullptr;
      if (o.boundary) {
        int b = int(out.boundaries.size());
        BoundaryTensor bt;
        Symbol let = p.name_of(o.node);
        bt.name = fresh_name("b" + std::to_string(b) + "_" + (let.valid() ? std::string(let.str()) : "t" + std::to_string(o.node.v)));
        bt.node = o.node;
        const TensorType& t = p.type(o.node).get().tensor();
        bt.dtype = t.dtype;
        // Stored once: in the original output's layout when it is one.
        bt.layout = decl ? decl->layout : f.layouts[o.node.v].front();
        {
          // The structural order must be a permutation of the value's dims;
          // where it is not (it always should be), the declared order is.
          std::vector<Symbol> a = bt.layout, b = t.dims;
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          if (a != b) bt.layout = declared_order(p, t.dims);
        }
        for (Symbol d : bt.layout) bt.shape.push_back(p.dims.find(d)->extent);
        bt.bytes = f.bytes[o.node.v];
        bt.producer = index;
        boundary_of[o.node.v] = b;
        out.boundaries.push_back(bt);
        role.boundary = b;
        sg.boundary_out_bytes += bt.bytes;
        if (!decl) q.add_output(Symbol::intern(bt.name), bt.layout, v, p.node(o.node).loc);
      }
      if (decl) {
        q.add_output(decl->name, decl->layout, v, decl->loc);
        role.original_output = o.original;
        out.outputs[size_t(o.original)] = {index, int(sg.outputs.size())};
      }
      sg.bytes += f.bytes[o.node.v];
      sg.outputs.push_back(role);
    }
    typecheck(q);
    sg.hash = structural_hash(q);
    out.subgraphs.push_back(std::move(sg));
  }
};

}  // namespace

int count_ops(const Program& p) {
  Facts f = facts_of(p);
  return int(std::count(f.is_op.begin(), f.is_op.end(), true));
}

namespace {

// The subgraphs of one segmentation.
Partition build_partition(const Program& p, const Facts& f, const PartitionOptions& options, Segmentation chosen,
                          const char* order) {
  Partition out;
  out.max_ops = options.max_ops;
  out.total_ops = int(std::count(f.is_op.begin(), f.is_op.end(), true));
  out.outputs.assign(p.outputs().size(), OutputSource{});
  out.order = order;
  out.period = int(chosen.period);
  out.units = int(chosen.units);

  // Outputs that are inputs (or depend on none) have no operator: they go
  // with the last subgraph, or make one when the program has no operator.
  Builder builder{p, f, out, std::vector<int>(p.size(), -1), {}};
  for (const InputDecl& in : p.inputs()) builder.taken.insert(std::string(in.name.str()));
  for (const OutputDecl& o : p.outputs()) builder.taken.insert(std::string(o.name.str()));
  for (uint32_t i = 0; i < p.size(); ++i)
    if (Symbol let = p.name_of(NodeId{i}); let.valid()) builder.taken.insert(std::string(let.str()));
  std::vector<bool> in_segment(p.size(), false);
  std::vector<bool> crosses(p.size(), false);
  size_t segments = chosen.cuts.empty() ? 0 : chosen.cuts.size() - 1;
  if (segments == 0) chosen.cuts = {0, 0}, segments = 1;
  std::vector<int> segment_of(p.size(), -1);
  for (size_t s = 0; s < segments; ++s)
    for (size_t i = chosen.cuts[s]; i < chosen.cuts[s + 1]; ++i) segment_of[chosen.order[i]] = int(s);
  for (size_t s = 0; s < segments; ++s) {
    std::vector<uint32_t> nodes(chosen.order.begin() + long(chosen.cuts[s]), chosen.order.begin() + long(chosen.cuts[s + 1]));
    std::fill(in_segment.begin(), in_segment.end(), false);
    for (uint32_t n : nodes) {
      in_segment[n] = true;
      crosses[n] = false;
      for (uint32_t u : f.users[n])
        if (segment_of[u] != int(s)) crosses[n] = true;
    }
    if (s + 1 == segments) {
      // Leaf-valued outputs: copied here (an input passes through, a
      // constant or iota is computed).
      for (const OutputDecl& o : p.outputs())
        if (!f.is_op[o.value.v] && !in_segment[o.value.v]) {
          in_segment[o.value.v] = true;
          if (p.node(o.value).op != Op::Input) nodes.push_back(o.value.v);
        }
      // An input passed straight to an output: add it as a node so the
      // builder lists it among the segment's outputs.
      for (const OutputDecl& o : p.outputs())
        if (p.node(o.value).op == Op::Input && std::find(nodes.begin(), nodes.end(), o.value.v) == nodes.end())
          nodes.push_back(o.value.v);
    }
    builder.build(int(s), nodes, in_segment, crosses);
  }
  // Leaves were counted as operators of the last subgraph only to place them.
  Subgraph& last = out.subgraphs.back();
  last.ops = 0;
  for (NodeId n : last.nodes) last.ops += f.is_op[n.v] ? 1 : 0;
  std::erase_if(last.nodes, [&](NodeId n) { return !f.is_op[n.v]; });

  for (Subgraph& sg : out.subgraphs) {
    if (options.bytes_per_s > 0 && options.flops_per_s > 0) {
      double mma = options.mma_flops_per_s > 0 ? options.mma_flops_per_s : options.flops_per_s;
      sg.estimate_s = std::max(double(sg.bytes) / options.bytes_per_s,
                               sg.mma_flops / mma + (sg.flops - sg.mma_flops) / options.flops_per_s);
    }
  }
  for (const BoundaryTensor& b : out.boundaries) out.boundary_bytes += b.bytes * int64_t(1 + b.consumers.size());
  return out;
}

size_t distinct_subgraphs(const Partition& part) {
  std::vector<uint64_t> hashes;
  for (const Subgraph& sg : part.subgraphs) hashes.push_back(sg.hash);
  std::sort(hashes.begin(), hashes.end());
  return size_t(std::unique(hashes.begin(), hashes.end()) - hashes.begin());
}

}  // namespace

Partition partition_program(const Program& p, const PartitionOptions& options) {
  if (options.max_ops < 1)
    throw Error(p.file, {}, "partition: the operator bound must be at least 1, got " + std::to_string(options.max_ops));
  if (p.types().size() != p.size()) throw Error(p.file, {}, "partition: the program must be type-checked first");
  Facts f = facts_of(p);

  // The least traffic of the two orders (depth-first on ties), unless cuts
  // that repeat with a period give fewer distinct subgraphs (structural
  // hashes of the built subgraphs) within its traffic slack.
  Candidates by_depth = segment(f, depth_first_order(f), options.max_ops);
  Candidates by_node = segment(f, node_order(f), options.max_ops);
  bool node_first = by_node.least_traffic.ok &&
                    (!by_depth.least_traffic.ok || by_node.least_traffic.cost < by_depth.least_traffic.cost);
  Cost least = (node_first ? by_node : by_depth).least_traffic.cost;
  Partition chosen = build_partition(p, f, options, std::move((node_first ? by_node : by_depth).least_traffic),
                                     node_first ? "node" : "depth-first");
  size_t distinct = distinct_subgraphs(chosen);
  for (Candidates* c : {&by_depth, &by_node}) {
    Segmentation& periodic = c->fewest_searches;
    if (periodic.period == 0 || !within_traffic(periodic, least) || periodic.distinct >= distinct) continue;
    Partition other = build_partition(p, f, options, std::move(periodic), c == &by_node ? "node" : "depth-first");
    size_t other_distinct = distinct_subgraphs(other);
    if (other_distinct < distinct) chosen = std::move(other), distinct = other_distinct;
  }
  return chosen;
}

}  // namespace eqf
