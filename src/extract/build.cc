#include "extract/build.h"

#include <unordered_map>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf::extract {
namespace {

class Builder {
 public:
  Builder(const EGraph& g, OptionTable& table, const PartialProgram& s, Program& p)
      : g_(g), table_(table), s_(s), p_(p) {}

  NodeId build(EClassId c) {
    c = g_.find(c);
    if (auto it = built_.find(c.v); it != built_.end()) return it->second;
    const Filled* f = s_.find(c.v);
    if (!f) throw Error("extraction: class c" + std::to_string(c.v) + " was reached but never filled");
    const Option& o = table_.options(c)[f->option];
    NodeId out;
    if (o.kind == Option::Kind::Node) {
      ENodeId n = o.path.front();
      if (o.op == Op::Input) {
        out = inputs_.at(attr_sym(g_.attrs(n), 0).raw());
      } else {
        std::vector<NodeId> kids;
        for (EClassId k : o.children) kids.push_back(build(k));
        out = p_.add(o.op, g_.attrs(n), kids);
      }
    } else {
      // A chain of views or of combines: its bottom first, then each e-node
      // of the path from the bottom up.
      out = build(o.children.front());
      for (auto it = o.path.rbegin(); it != o.path.rend(); ++it) {
        NodeId kid[] = {out};
        out = p_.add(g_.op(*it), g_.attrs(*it), kid);
      }
    }
    built_.emplace(c.v, out);
    return out;
  }

  void add_inputs() {
    for (const InputDecl& in : g_.inputs())
      inputs_.emplace(in.name.raw(), p_.add_input(in.name, in.dtype, in.layout, in.loc));
  }

 private:
  const EGraph& g_;
  OptionTable& table_;
  const PartialProgram& s_;
  Program& p_;
  std::unordered_map<uint32_t, NodeId> built_;
  std::unordered_map<uint32_t, NodeId> inputs_;
};

}  // namespace

Program build_program(const EGraph& g, OptionTable& table, const PartialProgram& s, std::span<const EClassId> roots,
                      std::span<const OutputDecl> outputs, const std::string& name) {
  Program p;
  p.file = "<extracted>";
  p.name = Symbol::intern(name.empty() ? "extracted" : name);
  // Fixed dims only: typing declares the collected dims the program uses.
  for (const DimInfo& d : g.dims().all())
    if (!d.collected_from) p.dims.declare(d.name, d.extent);
  Builder b(g, table, s, p);
  b.add_inputs();
  for (size_t i = 0; i < roots.size(); ++i) {
    NodeId v = b.build(roots[i]);
    p.add_output(outputs[i].name, outputs[i].layout, v, outputs[i].loc);
  }
  typecheck(p);
  return p;
}

}  // namespace eqf::extract
