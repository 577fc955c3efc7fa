#include "ir/parse_dims.h"

#include <algorithm>
#include <unordered_map>

namespace eqf {
namespace {

using DimSet = std::vector<Symbol>;
// One dim set per component: a tensor has one, a tuple one per element.
using Parts = std::vector<DimSet>;

void insert(DimSet& s, Symbol d) {
  if (std::find(s.begin(), s.end(), d) == s.end()) s.push_back(d);
}
void erase(DimSet& s, Symbol d) { s.erase(std::remove(s.begin(), s.end(), d), s.end()); }
DimSet first(const Parts& parts) { return parts.empty() ? DimSet{} : parts.front(); }

}  // namespace

std::optional<std::vector<Symbol>> structural_dims(Program& p, NodeId root) {
  std::unordered_map<Symbol, const InputDecl*> inputs;
  for (const InputDecl& in : p.inputs()) inputs.emplace(in.name, &in);

  // Children come before parents, so one pass in id order sees every child
  // before its users.
  std::vector<Parts> dims(root.v + 1);
  std::vector<char> is_tuple(root.v + 1, 0);
  for (uint32_t i = 0; i <= root.v; ++i) {
    NodeId id{i};
    const Node& n = p.node(id);
    auto kids = p.children(id);
    auto kid = [&](size_t k) -> const Parts& { return dims[kids[k].v]; };
    Parts& out = dims[i];
    // Pointwise ops broadcast by name: the union of the operands' dims. The
    // op table says which ops those are, so a new one needs no case here.
    if (op_has(n.op, kPointwise)) {
      DimSet u;
      for (size_t k = 0; k < kids.size(); ++k)
        for (Symbol d : first(kid(k))) insert(u, d);
      out = {u};
    }
    switch (n.op) {
      case Op::Input: {
        auto it = inputs.find(attr_sym(n.attrs, 0));
        out = {it == inputs.end() ? DimSet{} : it->second->layout};
        break;
      }
      case Op::Const:
        out = {DimSet{}};
        break;
      case Op::Iota:
        out = {DimSet{attr_sym(n.attrs, 0)}};
        break;
      case Op::Reduce: {
        out = kid(0);
        for (DimSet& s : out) erase(s, attr_sym(n.attrs, 0));
        break;
      }
      case Op::MatMul:
      case Op::TileMatMul: {
        DimSet u = first(kid(0));
        for (Symbol d : first(kid(1))) insert(u, d);
        erase(u, attr_sym(n.attrs, 0));
        out = {u};
        break;
      }
      case Op::Split: {
        DimSet s = first(kid(0));
        erase(s, attr_sym(n.attrs, 0));
        insert(s, attr_sym(n.attrs, 1));
        insert(s, attr_sym(n.attrs, 2));
        out = {s};
        break;
      }
      case Op::Merge: {
        DimSet s = first(kid(0));
        erase(s, attr_sym(n.attrs, 0));
        erase(s, attr_sym(n.attrs, 1));
        insert(s, attr_sym(n.attrs, 2));
        out = {s};
        break;
      }
      case Op::Rename: {
        DimSet s = first(kid(0));
        erase(s, attr_sym(n.attrs, 0));
        insert(s, attr_sym(n.attrs, 1));
        out = {s};
        break;
      }
      case Op::Partition:
      case Op::Replicate:
      case Op::Combine:
      case Op::PReduce:
        out = kid(0);
        break;
      case Op::Collect: {
        Symbol c = p.dims.declare_collected(attr_axis(n.attrs, 0));
        out = kid(0);
        for (DimSet& s : out) insert(s, c);
        break;
      }
      case Op::Tuple:
        for (size_t k = 0; k < kids.size(); ++k) out.push_back(first(kid(k)));
        break;
      case Op::Proj: {
        const Parts& t = kid(0);
        uint32_t index = n.attrs[0];
        out = {index < t.size() ? t[index] : DimSet{}};
        break;
      }
      default:  // pointwise: handled above
        break;
    }
    // Ops that act on each component keep a tuple a tuple.
    bool per_component = n.op == Op::Reduce || op_has(n.op, kParallel) || n.op == Op::Collect;
    is_tuple[i] = n.op == Op::Tuple || (per_component && is_tuple[kids[0].v]);
  }
  if (is_tuple[root.v]) return std::nullopt;
  DimSet result = first(dims[root.v]);
  std::stable_sort(result.begin(), result.end(),
                   [&](Symbol a, Symbol b) { return p.dims.order(a) < p.dims.order(b); });
  return result;
}

}  // namespace eqf
