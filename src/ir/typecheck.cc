// The type checker's entry points: infer_type dispatches on the op table's
// properties to one rule per op family (typing_*.cc); typecheck types a whole
// program bottom-up and checks its inputs and outputs.
#include "eqiforge/ir/typecheck.h"

#include <algorithm>

#include "ir/typing_rules.h"

namespace eqf {
namespace typing {

// ---- shared helpers ---------------------------------------------------------------

TypeError fail(Op op, const std::string& message) {
  return TypeError{std::string(op_name(op)) + ": " + message};
}

std::string dims_text(const std::vector<Symbol>& dims, const DimTable& table) {
  std::vector<Symbol> order = dims;
  std::stable_sort(order.begin(), order.end(),
                   [&](Symbol a, Symbol b) { return table.order(a) < table.order(b); });
  std::string out = "[";
  for (size_t i = 0; i < order.size(); ++i) out += (i ? " " : "") + str(order[i]);
  return out + "]";
}

std::string tensor_text(const TensorType& t, const DimTable& table) {
  return type_text(Type{{t}, false}, &table);
}

void insert_dim(std::vector<Symbol>& dims, Symbol d) {
  auto it = std::lower_bound(dims.begin(), dims.end(), d);
  if (it == dims.end() || *it != d) dims.insert(it, d);
}

void erase_dim(std::vector<Symbol>& dims, Symbol d) {
  auto it = std::lower_bound(dims.begin(), dims.end(), d);
  if (it != dims.end() && *it == d) dims.erase(it);
}

void insert_axis(std::vector<AxisState>& delta, Axis p, ParState s) {
  auto it =
      std::lower_bound(delta.begin(), delta.end(), p, [](const AxisState& a, Axis q) { return a.axis < q; });
  delta.insert(it, AxisState{p, s});
}

void erase_axis(std::vector<AxisState>& delta, Axis p) {
  auto it = std::find_if(delta.begin(), delta.end(), [&](const AxisState& a) { return a.axis == p; });
  if (it != delta.end()) delta.erase(it);
}

int blocked_count(const TensorType& t, Symbol d) {
  int n = 0;
  for (const AxisState& a : t.delta) n += is_blocked(a.state) && a.state.dim == d;
  return n;
}

std::optional<Axis> deeper_level(const TensorType& t, Axis p) {
  if (p.level >= Axis::kMaxLevel) return std::nullopt;
  Axis deeper{p.dim, uint8_t(p.level + 1)};
  if (t.state(deeper)) return deeper;
  return std::nullopt;
}

namespace {

// ---- leaves and tuples ------------------------------------------------------------

Result type_leaf(Op op, const Attrs& attrs, DimTable& dims) {
  TensorType out;
  switch (op) {
    case Op::Const:
      out.literal = true;
      return make(std::move(out));
    case Op::Iota: {
      Symbol d = attr_sym(attrs, 0);
      if (!dims.contains(d))
        return fail(op, "dim " + str(d) + " is not declared; expected a dim of the program");
      out.dtype = DType::I32;
      out.dims = {d};
      return make(std::move(out));
    }
    case Op::Input:
      return fail(op,
                  "an input's type comes from its declaration (dtype and layout), not from the node alone");
    default:
      return fail(op, "not a leaf");
  }
}

Result type_tuple_op(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  if (op == Op::Tuple) {
    if (kids.size() < 2) return fail(op, "expects at least 2 operands, got " + std::to_string(kids.size()));
    Type out;
    out.is_tuple = true;
    out.parts.reserve(kids.size());
    for (const Type* k : kids) out.parts.push_back(k->tensor());
    return TypeId::intern(out);
  }
  // proj(i, T)
  uint32_t i = attrs[0];
  const Type& t = *kids[0];
  if (!t.is_tuple) return fail(op, "the operand is a tensor (" + type_text(t, &dims) + "); expected a tuple");
  if (i >= t.parts.size())
    return fail(op, "index " + std::to_string(i) + " is out of range for a tuple of " +
                        std::to_string(t.parts.size()) + "; expected 0.." +
                        std::to_string(t.parts.size() - 1));
  return make(t.parts[i]);
}

// Ops whose operand may be a tuple: tuple reductions, collect and proj.
bool takes_tuples(Op op) {
  return op == Op::Reduce || op == Op::PReduce || op == Op::Collect || op == Op::Proj;
}

}  // namespace
}  // namespace typing

std::variant<TypeId, TypeError> infer_type(Op op, const Attrs& attrs, std::span<const TypeId> children,
                                           DimTable& dims) {
  using namespace typing;
  const OpInfo& info = op_info(op);
  if (info.arity != kVariadic && children.size() != size_t(info.arity))
    return fail(op, "expects " + std::to_string(info.arity) + " operand" + (info.arity == 1 ? "" : "s") +
                        ", got " + std::to_string(children.size()));

  // The children's types, resolved once (the table never moves a type).
  constexpr size_t kInline = 8;
  const Type* inline_kids[kInline];
  std::vector<const Type*> many;
  const Type** kid = inline_kids;
  if (children.size() > kInline) {
    many.resize(children.size());
    kid = many.data();
  }
  for (size_t i = 0; i < children.size(); ++i) {
    if (!children[i].valid()) return fail(op, "operand " + std::to_string(i + 1) + " has no type");
    kid[i] = &children[i].get();
    if (kid[i]->is_tuple && !takes_tuples(op))
      return fail(op, "operand " + std::to_string(i + 1) + " is a tuple " + type_text(*kid[i], &dims) +
                          "; expected a tensor: take a component with proj");
  }
  Kids kids(kid, children.size());

  // One rule per op family, chosen by the op table's properties.
  uint32_t props = info.props;
  if (props & kLeaf) return type_leaf(op, attrs, dims);
  if (props & kPointwise) return type_pointwise(op, attrs, kids, dims);
  if (props & kReduction) return type_reduce(op, attrs, kids, dims);
  if (props & kContraction) return type_contraction(op, attrs, kids, dims);
  if (props & kLayout) return type_layout(op, attrs, kids, dims);
  if (props & (kParallel | kStorage)) return type_parallel(op, attrs, kids, dims);
  if (props & kTupleOp) return type_tuple_op(op, attrs, kids, dims);
  return fail(op, "has no typing rule");
}

namespace {

// The type of a declared input: its dtype and the set of its layout's dims.
TypeId input_type(const Program& p, const InputDecl& in) {
  TensorType t;
  t.dtype = in.dtype;
  for (Symbol d : in.layout) {
    if (!p.dims.contains(d))
      throw Error(p.file, in.loc,
                  "input " + typing::str(in.name) + ": dim " + typing::str(d) +
                      " is not declared; expected a dim of (dims ...)");
    if (t.has_dim(d))
      throw Error(p.file, in.loc,
                  "input " + typing::str(in.name) + ": dim " + typing::str(d) +
                      " appears twice in its layout; expected distinct dims");
    typing::insert_dim(t.dims, d);
  }
  return TypeId::intern(Type{{std::move(t)}, false});
}

void check_output(const Program& p, const OutputDecl& out, TypeId id) {
  const Type& type = id.get();
  std::string name = "output " + typing::str(out.name);
  if (type.is_tuple)
    throw Error(
        p.file, out.loc,
        name + " is a tuple " + type_text(type, &p.dims) + "; expected a tensor: take a component with proj");
  const TensorType& t = type.tensor();
  if (t.literal)
    throw Error(p.file, out.loc,
                name + " is a literal constant; expected a tensor: give it a dtype with cast");
  if (!t.delta.empty())
    throw Error(p.file, out.loc,
                name + " has parallel axes (" + type_text(type, &p.dims) +
                    "); expected none: combine, preduce or collect every axis before the output");
  bool permutation = out.layout.size() == t.dims.size();
  for (size_t i = 0; i < out.layout.size() && permutation; ++i) {
    permutation = t.has_dim(out.layout[i]);
    for (size_t j = 0; j < i && permutation; ++j) permutation = out.layout[j] != out.layout[i];
  }
  if (!permutation) {
    std::string layout = "[";
    for (size_t i = 0; i < out.layout.size(); ++i) layout += (i ? " " : "") + typing::str(out.layout[i]);
    throw Error(p.file, out.loc,
                name + ": layout " + layout + "] is not a permutation of its dims " +
                    typing::dims_text(t.dims, p.dims) + "; expected each of its dims exactly once");
  }
}

}  // namespace

void typecheck(Program& p) {
  std::vector<TypeId> types(p.size());
  for (const InputDecl& in : p.inputs()) {
    if (in.node.v >= p.size() || p.node(in.node).op != Op::Input)
      throw Error(p.file, in.loc, "input " + typing::str(in.name) + " has no input node");
    if (types[in.node.v].valid())
      throw Error(p.file, in.loc,
                  "input " + typing::str(in.name) + " is declared twice; expected one declaration");
    types[in.node.v] = input_type(p, in);
  }

  std::vector<TypeId> kids;
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId id{i};
    const Node& n = p.node(id);
    if (n.op == Op::Input) {
      if (!types[i].valid())
        throw Error(p.file, n.loc, "input " + typing::str(attr_sym(n.attrs, 0)) + " is not declared");
      continue;
    }
    kids.clear();
    for (NodeId c : p.children(id)) {
      // Nodes are stored children first; a later child is a broken program.
      if (c.v >= i)
        throw Error(p.file, n.loc, std::string(op_info(n.op).name) + ": operand defined after its use");
      kids.push_back(types[c.v]);
    }
    auto r = infer_type(n.op, n.attrs, kids, p.dims);
    if (auto* err = std::get_if<TypeError>(&r)) throw Error(p.file, n.loc, err->message);
    types[i] = std::get<TypeId>(r);
  }

  for (const OutputDecl& out : p.outputs()) {
    if (out.value.v >= p.size())
      throw Error(p.file, out.loc, "output " + typing::str(out.name) + " has no value");
    check_output(p, out, types[out.value.v]);
  }
  p.set_types(std::move(types));
}

}  // namespace eqf
