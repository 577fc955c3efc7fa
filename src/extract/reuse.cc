#include "extract/reuse.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "eqiforge/ir/typecheck.h"

namespace eqf::extract {
namespace {

bool is_global(const Program& p, NodeId n) {
  const Type& t = p.type(n).get();
  for (const TensorType& part : t.parts)
    if (!part.delta.empty()) return false;
  return true;
}

// A kernel root: the top of a grid chain of combines, and its body.
struct KernelRoot {
  NodeId root, body;
};

std::vector<KernelRoot> kernel_roots(const Program& p) {
  std::vector<KernelRoot> out;
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId n{i};
    if (p.node(n).op != Op::Combine || !is_global(p, n)) continue;
    NodeId body = n;
    while (p.node(body).op == Op::Combine) body = p.children(body)[0];
    out.push_back({n, body});
  }
  return out;
}

// The nodes `from` reaches, itself included.
std::vector<bool> descendants(const Program& p, NodeId from) {
  std::vector<bool> seen(p.size(), false);
  std::vector<NodeId> stack{from};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (seen[n.v]) continue;
    seen[n.v] = true;
    for (NodeId k : p.children(n)) stack.push_back(k);
  }
  return seen;
}

// p with each use of k.body by a node that k.root does not reach replaced by
// the partition chain that undoes k.root's combines; nullopt if none. (An
// output is no such use: outputs have no parallel axes, bodies have.)
std::optional<Program> rewrite(const Program& p, const KernelRoot& k) {
  const std::vector<bool> inside = descendants(p, k.root);
  bool any = false;
  for (uint32_t i = 0; i < p.size() && !any; ++i)
    if (!inside[i])
      for (NodeId c : p.children(NodeId{i})) any = any || c == k.body;
  if (!any) return std::nullopt;

  Program q;
  q.file = p.file;
  q.name = p.name;
  q.dims = p.dims;
  std::unordered_map<uint32_t, NodeId> built;
  for (const InputDecl& in : p.inputs())
    built.emplace(in.node.v, q.add_input(in.name, in.dtype, in.layout, in.loc));
  // The load of the body from the kernel's result: partitions in the order
  // of the combines from the top down. Built again for each use, the same
  // nodes (q hash-conses).
  std::function<NodeId(NodeId)> build;
  auto load = [&]() {
    NodeId at = build(k.root);
    for (NodeId c = k.root; c != k.body; c = p.children(c)[0]) {
      NodeId kid[] = {at};
      at = q.add(Op::Partition, p.node(c).attrs, kid, p.node(c).loc);
    }
    return at;
  };
  // Nodes inside k.root keep their children (what uses the body there is
  // the kernel's own combine); the others load it.
  build = [&](NodeId n) -> NodeId {
    if (auto it = built.find(n.v); it != built.end()) return it->second;
    const Node& node = p.node(n);
    std::vector<NodeId> kids;
    for (NodeId c : p.children(n)) kids.push_back(!inside[n.v] && c == k.body ? load() : build(c));
    NodeId out = q.add(node.op, node.attrs, kids, node.loc);
    built.emplace(n.v, out);
    return out;
  };
  for (const OutputDecl& o : p.outputs()) q.add_output(o.name, o.layout, build(o.value), o.loc);
  typecheck(q);
  return q;
}

}  // namespace

std::optional<Program> reuse_kernel_results(const Program& p) {
  std::optional<Program> out;
  // A rewrite renumbers the nodes, so the kernel roots are found again after
  // each. A rewrite takes one kernel's outside uses away and adds none (the
  // loads are new nodes), so at most one per kernel applies.
  const size_t kernels = kernel_roots(p).size();
  for (size_t round = 0; round < kernels; ++round) {
    const Program& cur = out ? *out : p;
    std::optional<Program> next;
    for (const KernelRoot& k : kernel_roots(cur))
      if ((next = rewrite(cur, k))) break;
    if (!next) break;
    out = std::move(next);
  }
  return out;
}

}  // namespace eqf::extract
