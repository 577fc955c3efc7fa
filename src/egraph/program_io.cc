#include "eqiforge/egraph/program_io.h"

#include <algorithm>
#include <limits>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {

std::vector<EClassId> load_program(EGraph& g, const Program& p) {
  for (const DimInfo& d : p.dims.all()) {
    if (d.collected_from) {
      g.dims().declare_collected(*d.collected_from);
      continue;
    }
    if (const DimInfo* have = g.dims().find(d.name)) {
      if (have->extent != d.extent)
        throw Error(p.file, {},
                    "dim " + std::string(d.name.str()) + " has extent " + std::to_string(d.extent) +
                        " but the e-graph already has it with extent " + std::to_string(have->extent));
      continue;
    }
    g.dims().declare(d.name, d.extent);
  }
  for (const InputDecl& in : p.inputs()) g.declare_input(in);

  // Nodes are stored children first, so one pass in id order suffices.
  std::vector<EClassId> cls(p.size());
  std::vector<EClassId> children;
  for (uint32_t i = 0; i < p.size(); ++i) {
    const Node& n = p.node(NodeId{i});
    children.clear();
    for (NodeId c : p.children(NodeId{i})) children.push_back(cls[c.v]);
    std::string why;
    std::optional<EClassId> c = g.try_add(n.op, n.attrs, children, &why);
    if (!c) throw Error(p.file, n.loc, std::string(op_info(n.op).name) + ": " + why);
    cls[i] = *c;
  }
  std::vector<EClassId> roots;
  for (const OutputDecl& o : p.outputs()) roots.push_back(g.find(cls[o.value.v]));
  return roots;
}

std::optional<std::vector<ENodeId>> find_program_nodes(const EGraph& g, const Program& p, std::string* missing) {
  std::vector<ENodeId> found(p.size());
  std::vector<EClassId> cls(p.size());
  std::vector<EClassId> children;
  for (uint32_t i = 0; i < p.size(); ++i) {
    const Node& n = p.node(NodeId{i});
    children.clear();
    for (NodeId c : p.children(NodeId{i})) children.push_back(cls[c.v]);
    std::optional<EClassId> c = g.lookup(n.op, n.attrs, children);
    if (c) {
      c = g.find(*c);
      for (ENodeId e : g.nodes(*c)) {
        if (g.op(e) != n.op || g.attrs(e) != n.attrs) continue;
        std::span<const EClassId> kids = g.children(e);
        if (kids.size() != children.size()) continue;
        bool same = true;
        for (size_t k = 0; k < kids.size() && same; ++k) same = g.find(kids[k]) == children[k];
        if (same) {
          found[i] = e;
          break;
        }
      }
    }
    if (!c || !found[i].valid()) {
      if (missing) *missing = print_term(p, NodeId{i}).substr(0, 120);
      return std::nullopt;
    }
    cls[i] = *c;
  }
  return found;
}

std::vector<uint64_t> smallest_term_sizes(const EGraph& g) {
  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  std::vector<uint64_t> size(g.node_capacity() == 0 ? 0 : 0);
  std::vector<EClassId> classes = g.classes();
  uint32_t max_id = 0;
  for (EClassId c : classes) max_id = std::max(max_id, c.v);
  size.assign(classes.empty() ? 0 : max_id + 1, kInf);
  // Bellman-Ford style: sizes only decrease, so the loop ends.
  bool changed = true;
  while (changed) {
    changed = false;
    for (EClassId c : classes) {
      for (ENodeId n : g.nodes(c)) {
        uint64_t s = 1;
        for (EClassId ch : g.children(n)) {
          uint64_t cs = size[g.find(ch).v];
          s = (cs == kInf || s + cs < s) ? kInf : s + cs;
        }
        if (s < size[c.v]) size[c.v] = s, changed = true;
      }
    }
  }
  return size;
}

Program extract_smallest(const EGraph& g, std::span<const EClassId> roots,
                         std::span<const OutputDecl> outputs) {
  if (!g.clean()) throw Error("extract_smallest needs a rebuilt e-graph (call rebuild() first)");
  if (!outputs.empty() && outputs.size() != roots.size())
    throw Error("extract_smallest: " + std::to_string(roots.size()) + " roots but " +
                std::to_string(outputs.size()) + " output declarations");
  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  std::vector<uint64_t> size = smallest_term_sizes(g);

  // The chosen e-node of each class: the first that attains its size.
  auto best = [&](EClassId c) {
    c = g.find(c);
    for (ENodeId n : g.nodes(c)) {
      uint64_t s = 1;
      for (EClassId ch : g.children(n)) {
        uint64_t cs = size[g.find(ch).v];
        s = (cs == kInf || s + cs < s) ? kInf : s + cs;
      }
      if (s == size[c.v]) return n;
    }
    throw Error("e-class c" + std::to_string(c.v) + " has no finite term to extract");
  };

  Program p;
  p.file = "<extracted>";
  p.name = Symbol::intern("extracted");
  p.dims = g.dims();
  std::vector<NodeId> built(size.size(), NodeId{});
  // Every declared input, in declaration order, whether the terms use it or
  // not: the extracted program keeps the loaded one's signature.
  std::vector<std::pair<Symbol, NodeId>> input_nodes;
  for (const InputDecl& in : g.inputs())
    input_nodes.push_back({in.name, p.add_input(in.name, in.dtype, in.layout)});
  std::vector<NodeId> kids;
  // Iterative post-order: a class is built once all its chosen children are.
  auto build = [&](EClassId root) {
    std::vector<std::pair<EClassId, bool>> stack = {{g.find(root), false}};
    while (!stack.empty()) {
      auto [c, expanded] = stack.back();
      stack.pop_back();
      if (built[c.v].v != NodeId{}.v) continue;
      ENodeId n = best(c);
      if (!expanded) {
        stack.push_back({c, true});
        for (EClassId ch : g.children(n))
          if (built[g.find(ch).v].v == NodeId{}.v) stack.push_back({g.find(ch), false});
        continue;
      }
      if (g.op(n) == Op::Input) {
        Symbol name = attr_sym(g.attrs(n), 0);
        for (auto [in, node] : input_nodes)
          if (in == name) built[c.v] = node;
        if (built[c.v].v == NodeId{}.v)
          throw Error("input " + std::string(name.str()) + " is not declared in the e-graph");
        continue;
      }
      kids.clear();
      for (EClassId ch : g.children(n)) kids.push_back(built[g.find(ch).v]);
      built[c.v] = p.add(g.op(n), g.attrs(n), kids);
    }
    return built[g.find(root).v];
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    NodeId v = build(roots[i]);
    if (!outputs.empty()) {
      p.add_output(outputs[i].name, outputs[i].layout, v);
      continue;
    }
    const Type& t = g.type(roots[i]).get();
    std::vector<Symbol> layout = t.is_tuple ? std::vector<Symbol>{} : t.tensor().dims;
    std::sort(layout.begin(), layout.end(),
              [&](Symbol a, Symbol b) { return g.dims().order(a) < g.dims().order(b); });
    p.add_output(Symbol::intern("out" + std::to_string(i)), layout, v);
  }
  typecheck(p);
  return p;
}

}  // namespace eqf
