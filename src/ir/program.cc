#include "eqiforge/ir/program.h"

#include <unordered_map>

namespace eqf {
namespace {

uint64_t node_hash(Op op, const Attrs& attrs, std::span<const NodeId> children) {
  uint64_t h = 0xcbf29ce484222325ull ^ uint64_t(op);
  auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  for (uint32_t a : attrs) mix(a);
  for (NodeId c : children) mix(c.v);
  mix(children.size());
  return h;
}

}  // namespace

NodeId Program::add(Op op, const Attrs& attrs, std::span<const NodeId> kids, SourceLoc loc) {
  uint64_t h = node_hash(op, attrs, kids);
  auto [lo, hi] = cons_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const Node& n = nodes_[it->second];
    if (n.op != op || n.attrs != attrs || n.num_children != kids.size()) continue;
    bool same = true;
    for (size_t i = 0; i < kids.size() && same; ++i) same = child_pool_[n.first_child + i] == kids[i];
    if (same) return NodeId{it->second};
  }
  Node n{op, attrs, uint32_t(child_pool_.size()), uint32_t(kids.size()), loc};
  child_pool_.insert(child_pool_.end(), kids.begin(), kids.end());
  nodes_.push_back(n);
  uint32_t id = uint32_t(nodes_.size() - 1);
  cons_.emplace(h, id);
  return NodeId{id};
}

NodeId Program::add_input(Symbol input_name, DType dtype, std::vector<Symbol> layout, SourceLoc loc) {
  NodeId id = add(Op::Input, Attrs{input_name.raw(), 0, 0}, {}, loc);
  inputs_.push_back(InputDecl{input_name, dtype, std::move(layout), id, loc});
  return id;
}

void Program::add_output(Symbol output_name, std::vector<Symbol> layout, NodeId value, SourceLoc loc) {
  outputs_.push_back(OutputDecl{output_name, std::move(layout), value, loc});
}

std::span<const NodeId> Program::children(NodeId id) const {
  const Node& n = nodes_[id.v];
  return std::span<const NodeId>(child_pool_.data() + n.first_child, n.num_children);
}

Symbol Program::name_of(NodeId id) const {
  auto it = names_.find(id.v);
  return it == names_.end() ? Symbol() : it->second;
}

bool Program::same_as(const Program& other) const {
  if (name != other.name) return false;
  const auto& da = dims.all();
  const auto& db = other.dims.all();
  // Collected dims appear when typing; compare declared (fixed) dims only.
  auto fixed = [](const std::vector<DimInfo>& v) {
    std::vector<std::pair<uint32_t, int64_t>> out;
    for (const DimInfo& d : v)
      if (!d.collected_from) out.emplace_back(d.name.raw(), d.extent);
    return out;
  };
  if (fixed(da) != fixed(db)) return false;
  if (inputs_.size() != other.inputs_.size() || outputs_.size() != other.outputs_.size()) return false;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputDecl &a = inputs_[i], &b = other.inputs_[i];
    if (a.name != b.name || a.dtype != b.dtype || a.layout != b.layout) return false;
  }
  // Isomorphism of the output DAGs: a node of this program maps to exactly one
  // node of the other.
  std::unordered_map<uint32_t, uint32_t> map;
  std::vector<std::pair<NodeId, NodeId>> stack;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const OutputDecl &a = outputs_[i], &b = other.outputs_[i];
    if (a.name != b.name || a.layout != b.layout) return false;
    stack.emplace_back(a.value, b.value);
  }
  while (!stack.empty()) {
    auto [a, b] = stack.back();
    stack.pop_back();
    auto [it, fresh] = map.emplace(a.v, b.v);
    if (!fresh) {
      if (it->second != b.v) return false;
      continue;
    }
    const Node &na = node(a), &nb = other.node(b);
    if (na.op != nb.op || na.attrs != nb.attrs || na.num_children != nb.num_children) return false;
    auto ca = children(a), cb = other.children(b);
    for (size_t i = 0; i < ca.size(); ++i) stack.emplace_back(ca[i], cb[i]);
  }
  return true;
}

}  // namespace eqf
