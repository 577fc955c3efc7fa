// Structural hashing of programs up to renaming (see partition.h): the
// repeated layers of a decoder stack give subgraphs that differ only in the
// names the front end chose, and are searched once.
#include <string>
#include <unordered_map>

#include "eqiforge/ir/op.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/partition/partition.h"
#include "partition/post_order.h"

namespace eqf {
namespace {

// A copy of p with inputs named x0, x1, ... and outputs y0, y1, ... by
// declared position, dims d0, d1, ... by first appearance (input layouts,
// then operators in a depth-first walk from the outputs, then output
// layouts), no let names, and nodes added in the walk's post-order. Two
// programs that differ only in names give the same copy, hence the same text.
Program canonical_copy(const Program& p) {
  Program c;
  c.file = p.file;
  c.name = Symbol::intern("canonical");
  std::unordered_map<uint32_t, Symbol> dim_names;
  std::vector<Symbol> dim_order;
  auto dim = [&](Symbol d) {
    auto it = dim_names.find(d.raw());
    if (it != dim_names.end()) return it->second;
    Symbol s = Symbol::intern("d" + std::to_string(dim_names.size()));
    dim_names.emplace(d.raw(), s);
    dim_order.push_back(d);
    return s;
  };
  auto layout = [&](const std::vector<Symbol>& l) {
    std::vector<Symbol> out;
    for (Symbol d : l) out.push_back(dim(d));
    return out;
  };

  std::vector<uint32_t> map(p.size(), 0xffffffffu);
  std::unordered_map<uint32_t, Symbol> input_names;
  for (size_t i = 0; i < p.inputs().size(); ++i) {
    const InputDecl& in = p.inputs()[i];
    Symbol name = Symbol::intern("x" + std::to_string(i));
    input_names.emplace(in.name.raw(), name);
    map[in.node.v] = c.add_input(name, in.dtype, layout(in.layout)).v;
  }

  std::vector<NodeId> kids;
  partition::post_order(p, partition::output_roots(p), [](uint32_t) { return true; }, [&](uint32_t id) {
    if (map[id] != 0xffffffffu) return;  // an input, added above
    auto children = p.children(NodeId{id});
    const Node& n = p.node(NodeId{id});
    const OpInfo& info = op_info(n.op);
    Attrs attrs = n.attrs;
    int slot = 0;
    for (AttrKind kind : info.attrs) {
      if (kind == AttrKind::None) break;
      if (kind == AttrKind::Axis)
        throw Error(p.file, n.loc,
                    std::string("structural hash: ") + std::string(info.name) +
                        " has a parallel axis; only high-level programs are hashed");
      if (kind == AttrKind::Dim) attrs[size_t(slot)] = dim(attr_sym(n.attrs, slot)).raw();
      if (kind == AttrKind::Sym) {
        // An input leaf that no declaration owns (a malformed program).
        auto it = input_names.find(n.attrs[size_t(slot)]);
        if (it == input_names.end())
          throw Error(p.file, n.loc, "structural hash: input " + std::string(attr_sym(n.attrs, slot).str()) +
                                         " is not declared");
        attrs[size_t(slot)] = it->second.raw();
      }
      slot += kind == AttrKind::F64 ? 2 : 1;
    }
    kids.clear();
    for (NodeId ch : children) kids.push_back(NodeId{map[ch.v]});
    map[id] = c.add(n.op, attrs, kids).v;
  });
  for (size_t i = 0; i < p.outputs().size(); ++i) {
    const OutputDecl& o = p.outputs()[i];
    c.add_output(Symbol::intern("y" + std::to_string(i)), layout(o.layout), NodeId{map[o.value.v]});
  }
  for (Symbol d : dim_order) {
    const DimInfo* info = p.dims.find(d);
    if (!info) throw Error(p.file, {}, "structural hash: dim " + std::string(d.str()) + " is not declared");
    c.dims.declare(dim_names.at(d.raw()), info->extent);
  }
  return c;
}

}  // namespace

std::string canonical_text(const Program& p) { return print_program(canonical_copy(p)); }

uint64_t structural_hash(const Program& p) {
  // FNV-1a over the canonical text: stable across runs and machines, so
  // hashes can key caches on disk.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : canonical_text(p)) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace eqf
