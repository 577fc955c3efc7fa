// The fillings of an e-class (see extract/choice.h).
#include "extract/choice.h"

#include "extract/hash_mix.h"

#include <algorithm>
#include <optional>

namespace eqf::extract {
namespace {

bool is_chain_op(Op op) {
  return op == Op::Partition || op == Op::Replicate || op == Op::Rename || op == Op::Split || op == Op::Merge;
}

// A collect is a kernel of its own: its grid is the collected axis and the
// axes its value is partitioned on (packed); any other state has no kernel
// form (nullopt), nor has a grid past the limit.
std::optional<std::vector<uint32_t>> collect_grid(const EGraph& g, ENodeId n, const ExtractLimits& limits) {
  Axis p = attr_axis(g.attrs(n), 0);
  const Type& xt = g.type(g.children(n)[0]).get();
  std::vector<uint32_t> grid{p.pack()};
  for (const TensorType& part : xt.parts)
    for (const AxisState& as : part.delta) {
      if (as.axis == p) continue;
      if (as.state.kind == StateKind::Part) {
        if (std::find(grid.begin(), grid.end(), as.axis.pack()) == grid.end()) grid.push_back(as.axis.pack());
      } else if (as.state.kind != StateKind::Rep) {
        return std::nullopt;
      }
    }
  if (int(grid.size()) > limits.max_grid_axes) return std::nullopt;
  return grid;
}

}  // namespace

OptionTable::Entry& OptionTable::entry(EClassId c) {
  c = g_.find(c);
  if (entries_.size() <= c.v) entries_.resize(size_t(c.v) + 1);
  Entry& e = entries_[c.v];
  if (!e.built) {
    e.built = true;
    const Type& t = g_.type(c).get();
    e.facts.literal = !t.is_tuple && t.tensor().literal;
    e.facts.global = !e.facts.literal && std::all_of(t.parts.begin(), t.parts.end(), [](const TensorType& part) {
      return part.delta.empty();
    });
    e.facts.scalar = std::all_of(t.parts.begin(), t.parts.end(), [](const TensorType& part) {
      return part.dims.empty();
    });
    build(c, e);
  }
  return e;
}


uint64_t OptionTable::canon_node(ENodeId n) const {
  Op op = g_.op(n);
  const Attrs& a = g_.attrs(n);
  uint64_t h = mix(mix(mix(mix(1, uint64_t(op)), a[0]), a[1]), a[2]);
  std::vector<uint32_t> kids;
  for (EClassId c : g_.children(n)) kids.push_back(g_.find(c).v);
  // Operand order of commutative operators and of contractions (named dims
  // make matmul(k, A, B) and matmul(k, B, A) the same value) is not a choice.
  if (op_has(op, kCommutative) || op_has(op, kContraction)) std::sort(kids.begin(), kids.end());
  for (uint32_t k : kids) h = mix(h, k);
  return h;
}

void OptionTable::build(EClassId c, Entry& e) {
  if (e.facts.literal) {
    // Every term of a literal class is the same constant: take its const.
    for (ENodeId n : g_.nodes(c))
      if (g_.op(n) == Op::Const) {
        Option o;
        o.op = Op::Const;
        o.path = {n};
        o.canon = canon_node(n);
        e.options.push_back(std::move(o));
        return;
      }
  }
  bool grid_done = false, chain_done = false;
  for (ENodeId n : g_.nodes(c)) {
    Op op = g_.op(n);
    if (is_chain_op(op)) {
      // A global view is only a step inside a load chain.
      if (e.facts.global || e.facts.literal || chain_done) continue;
      chain_done = true;  // walk_chain takes every chain e-node of the class at once
      std::vector<ENodeId> path;
      std::vector<EClassId> seen{c};
      walk_chain(c, c, path, seen, e.options);
      continue;
    }
    if (op == Op::Combine) {
      if (!e.facts.global || grid_done) continue;  // combines below a kernel's top are not fillings
      grid_done = true;
      std::vector<ENodeId> path;
      std::vector<EClassId> seen{c};
      walk_grid(c, path, seen, e.options);
      continue;
    }
    if (op == Op::MatMul) continue;  // global contraction: no kernel form
    std::optional<std::vector<uint32_t>> grid;
    if (op == Op::Collect && !(grid = collect_grid(g_, n, limits_))) continue;
    Option o;
    o.kind = Option::Kind::Node;
    o.op = op;
    o.path = {n};
    for (EClassId k : g_.children(n)) o.children.push_back(g_.find(k));
    o.kernel_root = op == Op::Collect;
    if (op == Op::Collect) o.grid_axes = std::move(*grid);
    if (op == Op::PReduce) o.loop_axis = g_.attrs(n)[0];
    o.input = op == Op::Input;
    o.canon = canon_node(n);
    e.options.push_back(std::move(o));
  }
}

void OptionTable::walk_chain(EClassId top, EClassId at, std::vector<ENodeId>& path, std::vector<EClassId>& seen,
                             std::vector<Option>& out) {
  for (ENodeId n : g_.nodes(at)) {
    if (!is_chain_op(g_.op(n))) continue;
    EClassId child = g_.find(g_.children(n)[0]);
    if (std::find(seen.begin(), seen.end(), child) != seen.end()) continue;
    path.push_back(n);
    seen.push_back(child);
    Option o;
    o.kind = Option::Kind::Chain;
    o.op = g_.op(path.front());
    o.path = path;
    o.children = {child};
    // Canonical form: runs of partition/replicate wrappers commute (each
    // adds its own axis), so they are sorted; views stay where they are.
    uint64_t h = mix(2, top.v);
    std::vector<uint64_t> run;
    auto flush = [&] {
      std::sort(run.begin(), run.end());
      for (uint64_t w : run) h = mix(h, w);
      h = mix(h, 0xFFFF);
      run.clear();
    };
    for (ENodeId p : path) {
      Op op = g_.op(p);
      const Attrs& a = g_.attrs(p);
      uint64_t w = mix(mix(mix(uint64_t(op), a[0]), a[1]), a[2]);
      if (op == Op::Partition || op == Op::Replicate) {
        run.push_back(w);
      } else {
        flush();
        h = mix(h, w);
        o.blocked = true;
      }
      if (op == Op::Partition) o.blocked = true;
    }
    flush();
    o.canon = mix(h, child.v);
    out.push_back(std::move(o));
    if (int(path.size()) < limits_.max_chain) walk_chain(top, child, path, seen, out);
    path.pop_back();
    seen.pop_back();
  }
}

void OptionTable::walk_grid(EClassId at, std::vector<ENodeId>& path, std::vector<EClassId>& seen,
                            std::vector<Option>& out) {
  for (ENodeId n : g_.nodes(at)) {
    if (g_.op(n) != Op::Combine) continue;
    EClassId body = g_.find(g_.children(n)[0]);
    if (std::find(seen.begin(), seen.end(), body) != seen.end()) continue;
    path.push_back(n);
    seen.push_back(body);
    Option o;
    o.kind = Option::Kind::Grid;
    o.op = Op::Combine;
    o.path = path;
    o.children = {body};
    o.kernel_root = true;
    for (ENodeId p : path) o.grid_axes.push_back(g_.attrs(p)[0]);
    // Canonical form: the set of grid axes (their order is program_id's).
    std::vector<uint64_t> axes;
    for (ENodeId p : path) axes.push_back((uint64_t(g_.attrs(p)[0]) << 32) | g_.attrs(p)[1]);
    std::sort(axes.begin(), axes.end());
    uint64_t h = 3;
    for (uint64_t a : axes) h = mix(h, a);
    o.canon = mix(h, body.v);
    out.push_back(std::move(o));
    if (int(path.size()) < limits_.max_grid_axes) walk_grid(body, path, seen, out);
    path.pop_back();
    seen.pop_back();
  }
}

bool OptionTable::allowed(EClassId c, const Option& o, uint8_t req) {
  switch (o.kind) {
    case Option::Kind::Chain:
      return !(req & (kNoChain | kMaterial | kCollect | kRoot));
    case Option::Kind::Grid:
      return !(req & kCollect);
    case Option::Kind::Node:
      break;
  }
  switch (o.op) {
    case Op::Input:
    case Op::Const:
    case Op::Iota:
    case Op::Proj:
      return !(req & (kRoot | kCollect));
    case Op::Collect:
      return !(req & kRoot);
    default:
      if (req & (kMaterial | kCollect | kRoot)) return false;
      // A global value with dims inside a kernel would be computed whole by
      // every program: leaves are materialized. Scalars (a cast constant)
      // are the exception.
      return !facts(c).global || facts(c).scalar;
  }
}

void OptionTable::analyze(std::span<const EClassId> roots, uint8_t root_req) {
  // The (class, requirement) pairs the roots reach.
  std::vector<std::pair<EClassId, uint8_t>>& pairs = reached_;
  std::vector<std::pair<EClassId, uint8_t>> work;
  pairs.clear();
  std::vector<uint16_t> seen;
  auto visit = [&](EClassId c, uint8_t r) {
    c = g_.find(c);
    entry(c);
    if (seen.size() <= c.v) seen.resize(size_t(c.v) + 1, 0);
    if (seen[c.v] & (1u << r)) return;
    seen[c.v] |= uint16_t(1u << r);
    work.push_back({c, r});
  };
  for (EClassId r : roots) visit(r, root_req);
  while (!work.empty()) {
    auto [c, r] = work.back();
    work.pop_back();
    pairs.push_back({c, r});
    for (const Option& o : entry(c).options) {
      if (!allowed(c, o, r)) continue;
      uint8_t cr = child_req(o, r);
      for (EClassId k : o.children) visit(k, cr);
    }
  }
  // Least fixpoint: nothing is viable until shown to have a finite filling.
  for (auto [c, r] : pairs) entries_[c.v].viable &= uint16_t(~(1u << r));
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto [c, r] : pairs) {
      Entry& e = entries_[c.v];
      if (e.viable & (1u << r)) continue;
      for (const Option& o : e.options)
        if (viable(c, o, r)) {
          e.viable |= uint16_t(1u << r);
          changed = true;
          break;
        }
    }
  }
}


bool OptionTable::viable(EClassId c, const Option& o, uint8_t req) {
  if (!allowed(c, o, req)) return false;
  uint8_t cr = child_req(o, req);
  for (EClassId k : o.children)
    if (!viable(k, cr)) return false;
  return true;
}

uint8_t OptionTable::child_req(const Option& o, uint8_t req) const {
  switch (o.kind) {
    case Option::Kind::Chain:
      return kNoChain | (o.blocked ? kMaterial : 0);
    case Option::Kind::Grid:
      // A kernel whose body is only a load chain copies a buffer it could
      // have been given: never a candidate worth building.
      return kNoChain;
    case Option::Kind::Node:
      break;
  }
  if (o.op == Op::Proj) return kNoChain | ((req & kMaterial) ? (kMaterial | kCollect) : 0);
  if (o.op == Op::Collect) return kNoChain;  // likewise, collecting a load is a copy
  return 0;
}

}  // namespace eqf::extract
