// find_in_class: the check behind `eqiforge-opt prove`.
#include "eqiforge/rules/prove.h"

#include <algorithm>

#include "eqiforge/ir/parse.h"

namespace eqf {

ProofReport find_in_class(const EGraph& g, std::span<const EClassId> roots,
                          std::span<const OutputDecl> root_decls, const Program& target) {
  ProofReport report;
  report.proved = true;
  // Each node of the target, bottom-up: its class and the e-node that holds it.
  std::vector<EClassId> cls(target.size());
  std::vector<bool> found(target.size(), false);
  std::vector<EClassId> kids;
  for (uint32_t i = 0; i < target.size(); ++i) {
    const Node& n = target.node(NodeId{i});
    kids.clear();
    bool ok = true;
    for (NodeId c : target.children(NodeId{i})) {
      ok &= found[c.v];
      if (ok) kids.push_back(cls[c.v]);
    }
    if (!ok) continue;
    std::optional<EClassId> c = g.lookup(n.op, n.attrs, kids);
    if (!c) continue;
    cls[i] = g.find(*c);
    found[i] = true;
  }
  std::vector<bool> counted(target.size(), false);
  for (const OutputDecl& out : target.outputs()) {
    std::string name(out.name.str());
    auto it = std::find_if(root_decls.begin(), root_decls.end(),
                           [&](const OutputDecl& d) { return d.name == out.name; });
    if (it == root_decls.end()) {
      report.proved = false;
      report.outputs.push_back(name + ": the first program has no output of this name");
      continue;
    }
    EClassId root = g.find(roots[size_t(it - root_decls.begin())]);
    if (found[out.value.v] && cls[out.value.v] == root) {
      report.outputs.push_back(name + ": in the output's e-class c" + std::to_string(root.v));
      // Provenance of every node of the term, once.
      std::vector<NodeId> stack = {out.value};
      while (!stack.empty()) {
        NodeId id = stack.back();
        stack.pop_back();
        if (counted[id.v]) continue;
        counted[id.v] = true;
        const Node& n = target.node(id);
        kids.clear();
        for (NodeId c : target.children(id)) {
          kids.push_back(cls[c.v]);
          stack.push_back(c);
        }
        for (ENodeId e : g.nodes(cls[id.v])) {
          if (g.op(e) != n.op || g.attrs(e) != n.attrs) continue;
          std::span<const EClassId> ek = g.children(e);
          bool same = ek.size() == kids.size();
          for (size_t k = 0; k < kids.size() && same; ++k) same = g.find(ek[k]) == kids[k];
          if (!same) continue;
          ++report.rules[std::string(g.origin_name(g.origin(e)))];
          break;
        }
      }
      continue;
    }
    report.proved = false;
    if (found[out.value.v]) {
      report.outputs.push_back(name + ": the term is in e-class c" + std::to_string(cls[out.value.v].v) +
                               ", not in the output's e-class c" + std::to_string(root.v));
      continue;
    }
    // The first missing node whose operands are all present.
    std::string missing;
    std::vector<NodeId> stack = {out.value};
    std::vector<bool> seen(target.size(), false);
    while (!stack.empty() && missing.empty()) {
      NodeId id = stack.back();
      stack.pop_back();
      if (seen[id.v] || found[id.v]) continue;
      seen[id.v] = true;
      bool kids_found = true;
      for (NodeId c : target.children(id)) {
        if (!found[c.v]) {
          kids_found = false;
          stack.push_back(c);
        }
      }
      if (kids_found) missing = print_term(target, id);
    }
    report.outputs.push_back(name + ": not reached; the e-graph lacks " + missing);
  }
  return report;
}

std::string ProofReport::text() const {
  std::string out = proved ? "proved\n" : "not proved\n";
  for (const std::string& o : outputs) out += "  " + o + "\n";
  if (proved) {
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [rule, n] : rules) by_count.push_back({-n, rule});
    std::sort(by_count.begin(), by_count.end());
    out += "rules that built the target's e-nodes:\n";
    for (const auto& [n, rule] : by_count) out += "  " + std::to_string(-n) + "  " + rule + "\n";
  }
  return out;
}

}  // namespace eqf
