#include "extract/kernel_dims.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf::extract {
namespace {

using Renames = std::vector<std::pair<Symbol, Symbol>>;  // dim -> the kernel's own

// Calls f(slot, kind, dim) for each attribute slot of `node` that names a
// dim: a Dim slot, or an Axis slot (its dim).
template <class F>
void for_each_attr_dim(const Node& node, F&& f) {
  const OpInfo& info = op_info(node.op);
  int slot = 0;
  for (AttrKind kind : info.attrs) {
    if (kind == AttrKind::None) break;
    if (kind == AttrKind::F64) {
      slot += 2;
      continue;
    }
    if (kind == AttrKind::Dim) f(slot, kind, attr_sym(node.attrs, slot));
    if (kind == AttrKind::Axis) f(slot, kind, attr_axis(node.attrs, slot).dim);
    ++slot;
  }
}

bool has_dim(const Program& p, NodeId n, Symbol d) {
  for (const TensorType& part : p.type(n).get().parts)
    if (part.has_dim(d)) return true;
  return false;
}

// One kernel's region: the nodes it computes (its root and what the root
// reaches short of materialized tensors) and the materialized tensors it
// reads.
struct Region {
  std::vector<NodeId> nodes;
  std::vector<NodeId> leaves;
};

Region region_of(const Program& p, NodeId root, const std::vector<bool>& materialized) {
  Region r;
  std::vector<bool> seen(p.size(), false);
  std::vector<NodeId> stack{root};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (seen[n.v]) continue;
    seen[n.v] = true;
    if (n != root && materialized[n.v]) {
      r.leaves.push_back(n);
      continue;
    }
    r.nodes.push_back(n);
    for (NodeId c : p.children(n)) stack.push_back(c);
  }
  return r;
}

// The dims a kernel uses (its nodes' attributes, the tensors it reads), and
// of those the ones tied to the rest of the program: in its result, the dim
// of an axis it collects (the c_d.l dim names the axis) or of a unit axis
// (fixed by name).
struct DimUse {
  std::set<Symbol> used, tied;
};

DimUse dim_use(const Program& p, const Kernel& k, const Region& r, const std::set<Axis>& unit_axes) {
  DimUse u;
  for (NodeId n : r.nodes) {
    const Node& node = p.node(n);
    for_each_attr_dim(node, [&](int, AttrKind, Symbol d) { u.used.insert(d); });
    if (node.op == Op::Collect) u.tied.insert(attr_axis(node.attrs, 0).dim);
  }
  for (NodeId n : r.leaves)
    for (const TensorType& part : p.type(n).get().parts) u.used.insert(part.dims.begin(), part.dims.end());
  for (const TensorType& part : p.type(k.root).get().parts) u.tied.insert(part.dims.begin(), part.dims.end());
  for (Axis a : unit_axes) u.tied.insert(a.dim);
  return u;
}

std::string stem(const std::string& kernel_name) {
  const std::string suffix = "_kernel";
  if (kernel_name.size() > suffix.size() && kernel_name.ends_with(suffix))
    return kernel_name.substr(0, kernel_name.size() - suffix.size());
  return kernel_name;
}

class Rebuild {
 public:
  Rebuild(const Program& p, const LoweredProgram& lp, const std::vector<Renames>& renames,
          const std::vector<bool>& materialized)
      : p_(p), renames_(renames), materialized_(materialized) {
    for (size_t k = 0; k < lp.kernels.size(); ++k) kernel_of_root_.emplace(lp.kernels[k].root.v, k);
  }

  std::optional<Program> run() {
    q_.file = p_.file;
    q_.name = p_.name;
    // Each kernel's dims right after the dim they stand for: tiles list
    // dims in declaration order, and the kernel's tiles keep theirs.
    for (const DimInfo& d : p_.dims.all()) {
      if (d.collected_from) continue;  // typing declares those the program uses
      q_.dims.declare_like(d);
      for (const Renames& rs : renames_)
        for (const auto& [from, to] : rs)
          if (from == d.name) q_.dims.declare_same(to, d.name);
    }
    for (const InputDecl& in : p_.inputs()) inputs_.emplace(in.node.v, q_.add_input(in.name, in.dtype, in.layout, in.loc));
    for (const OutputDecl& o : p_.outputs()) {
      std::optional<NodeId> v = materialized(o.value);
      if (!v) return std::nullopt;
      q_.add_output(o.name, o.layout, *v, o.loc);
    }
    try {
      typecheck(q_);
    } catch (const Error&) {
      return std::nullopt;  // the original stays; the tests hold the rewrite to type-checking
    }
    return std::move(q_);
  }

 private:
  // A materialized tensor: an input, or the root of the kernel that stores it.
  std::optional<NodeId> materialized(NodeId n) {
    if (auto it = inputs_.find(n.v); it != inputs_.end()) return it->second;
    auto k = kernel_of_root_.find(n.v);
    if (k == kernel_of_root_.end()) return std::nullopt;
    return in_kernel(k->second, n);
  }

  std::optional<NodeId> in_kernel(size_t k, NodeId n) {
    const uint64_t key = (uint64_t(k) << 32) | n.v;
    if (auto it = built_.find(key); it != built_.end()) return it->second;
    const Node& node = p_.node(n);
    const Renames& rs = renames_[k];
    std::vector<NodeId> kids;
    for (NodeId c : p_.children(n)) {
      std::optional<NodeId> kid;
      if (materialized_[c.v]) {
        kid = materialized(c);
        if (!kid) return std::nullopt;
        // Read through a rename of each of the kernel's own dims it has.
        for (const auto& [from, to] : rs)
          if (has_dim(p_, c, from)) {
            NodeId view[] = {*kid};
            kid = q_.add(Op::Rename, Attrs{from.raw(), to.raw(), 0}, view, node.loc);
          }
      } else {
        kid = in_kernel(k, c);
        if (!kid) return std::nullopt;
      }
      kids.push_back(*kid);
    }
    Attrs attrs = node.attrs;
    for_each_attr_dim(node, [&](int slot, AttrKind kind, Symbol d) {
      for (const auto& [from, to] : rs)
        if (d == from)
          attrs[size_t(slot)] = kind == AttrKind::Axis ? Axis{to, attr_axis(node.attrs, slot).level}.pack() : to.raw();
    });
    NodeId out = q_.add(node.op, attrs, kids, node.loc);
    built_.emplace(key, out);
    return out;
  }

  const Program& p_;
  const std::vector<Renames>& renames_;
  const std::vector<bool>& materialized_;
  Program q_;
  std::unordered_map<uint32_t, NodeId> inputs_;
  std::unordered_map<uint32_t, size_t> kernel_of_root_;
  std::unordered_map<uint64_t, NodeId> built_;  // (kernel, node) -> node of q_
};

}  // namespace

std::optional<Program> separate_kernel_dims(const Program& p, const LoweredProgram& lp) {
  std::vector<bool> materialized(p.size(), false);
  for (const Buffer& b : lp.buffers) materialized[b.node.v] = true;
  for (const Kernel& k : lp.kernels) materialized[k.root.v] = true;
  std::vector<DimUse> uses;
  for (const Kernel& k : lp.kernels) uses.push_back(dim_use(p, k, region_of(p, k.root, materialized), lp.unit_axes));

  std::vector<Renames> renames(lp.kernels.size());
  std::set<std::string> taken;
  for (const DimInfo& d : p.dims.all()) taken.insert(std::string(d.name.str()));
  bool any = false;
  for (const DimInfo& d : p.dims.all()) {
    if (d.collected_from) continue;
    std::vector<size_t> users;
    for (size_t k = 0; k < uses.size(); ++k)
      if (uses[k].used.count(d.name)) users.push_back(k);
    if (users.size() < 2) continue;
    // The first kernel that ties d keeps it, else the first user.
    auto tied = [&](size_t k) { return uses[k].tied.count(d.name) > 0; };
    auto first_tied = std::find_if(users.begin(), users.end(), tied);
    const size_t keeper = first_tied != users.end() ? *first_tied : users.front();
    for (size_t k : users) {
      if (k == keeper || tied(k)) continue;
      const std::string base = std::string(d.name.str()) + "_" + stem(lp.kernels[k].name);
      std::string name = base;
      for (int i = 2; taken.count(name); ++i) name = base + "_" + std::to_string(i);
      taken.insert(name);
      renames[k].push_back({d.name, Symbol::intern(name)});
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return Rebuild(p, lp, renames, materialized).run();
}

}  // namespace eqf::extract
