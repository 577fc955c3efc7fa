// Children-first walks of a program's DAG without recursion (programs can be
// chains deeper than any stack).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf::partition {

// Visits every node reachable from `roots` once, children (in operand order)
// before their parents, roots in the order given. `expand(node)` false makes
// a node a leaf: its children are not walked, and `visit` still sees it.
template <class Roots, class Expand, class Visit>
void post_order(const Program& p, const Roots& roots, Expand&& expand, Visit&& visit) {
  std::vector<bool> seen(p.size(), false);
  std::vector<std::pair<uint32_t, size_t>> stack;  // (node, next child)
  for (NodeId root : roots) {
    if (seen[root.v]) continue;
    seen[root.v] = true;
    stack.emplace_back(root.v, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == 0 && !expand(node)) {
        uint32_t leaf = node;
        stack.pop_back();
        visit(leaf);
        continue;
      }
      auto kids = p.children(NodeId{node});
      if (next < kids.size()) {
        uint32_t c = kids[next++].v;
        if (!seen[c]) {
          seen[c] = true;
          stack.emplace_back(c, 0);
        }
        continue;
      }
      uint32_t done = node;
      stack.pop_back();
      visit(done);
    }
  }
}

// The program's outputs as walk roots.
inline std::vector<NodeId> output_roots(const Program& p) {
  std::vector<NodeId> roots;
  for (const OutputDecl& o : p.outputs()) roots.push_back(o.value);
  return roots;
}

}  // namespace eqf::partition
