#include "eqiforge/egraph/dot.h"

#include <algorithm>
#include <vector>

#include "egraph/attr_syntax.h"

namespace eqf {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string to_dot(const EGraph& g, EClassId root, int depth) {
  root = g.find(root);
  // Breadth-first to `depth`; `level` of each class reached.
  std::vector<std::pair<EClassId, int>> order = {{root, 0}};
  std::vector<uint32_t> seen = {root.v};
  for (size_t i = 0; i < order.size(); ++i) {
    auto [c, level] = order[i];
    if (level >= depth) continue;
    for (ENodeId n : g.nodes(c))
      for (EClassId ch : g.children(n)) {
        EClassId k = g.find(ch);
        if (std::find(seen.begin(), seen.end(), k.v) != seen.end()) continue;
        seen.push_back(k.v);
        order.push_back({k, level + 1});
      }
  }
  std::string out =
      "digraph egraph {\n  compound=true;\n  clusterrank=local;\n  node [shape=box, fontname=monospace];\n";
  for (auto [c, level] : order) {
    std::string cid = std::to_string(c.v);
    std::string label = "c" + cid + " : " + g.data_text(c);
    out += "  subgraph cluster_" + cid + " {\n    style=dotted;\n    label=\"" + escape(label) + "\";\n";
    if (level >= depth) {
      out += "    c" + cid + "_more [label=\"" + std::to_string(g.nodes(c).size()) +
             " e-nodes\", style=dashed];\n";
    } else {
      for (ENodeId n : g.nodes(c)) {
        Op o = g.op(n);
        std::string text = std::string(op_info(o).name);
        for (int i = 0; i < 3 && op_info(o).attrs[i] != AttrKind::None; ++i)
          text += " " + attr_text(o, g.attrs(n), i);
        out += "    n" + std::to_string(n.v) + " [label=\"" + escape(text) + "\\n<- " +
               escape(std::string(g.origin_name(g.origin(n)))) + "\"];\n";
      }
    }
    out += "  }\n";
  }
  // Edges go from an e-node to any node of the child's cluster (lhead clips
  // them at the cluster's border).
  auto anchor = [&](EClassId c) {
    for (auto [k, level] : order)
      if (k == c)
        return level >= depth ? "c" + std::to_string(c.v) + "_more" : "n" + std::to_string(g.nodes(c)[0].v);
    return std::string();
  };
  for (auto [c, level] : order) {
    if (level >= depth) continue;
    for (ENodeId n : g.nodes(c)) {
      std::span<const EClassId> ch = g.children(n);
      for (size_t i = 0; i < ch.size(); ++i) {
        EClassId k = g.find(ch[i]);
        out += "  n" + std::to_string(n.v) + " -> " + anchor(k) + " [lhead=cluster_" + std::to_string(k.v) +
               (ch.size() > 1 ? ", label=\"" + std::to_string(i) + "\"" : std::string()) + "];\n";
      }
    }
  }
  return out + "}\n";
}

}  // namespace eqf
