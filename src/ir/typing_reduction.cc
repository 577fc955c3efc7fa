// Typing of dim reductions and contractions (docs/ir.md, "Reductions" and
// "Contraction"). tile_matmul is typed as reduce(k, +, mul(A, B)) by
// composing the pointwise combination with the reduction's state rule, so the
// two can never disagree.
#include <algorithm>

#include "ir/typing_rules.h"

namespace eqf::typing {

ParState reduce_state(const ParState& s, Symbol d, RedId base, bool repaired) {
  switch (s.kind) {
    case StateKind::Part:
      // Each coordinate reduced its own block of d: combining the coordinates
      // with the base finishes the reduction. A repaired component only
      // finishes together with the components its repair reads: local.
      if (s.dim != d) return s;
      return repaired ? ParState::local() : ParState::partial(base);
    case StateKind::Rep:
      return s;
    case StateKind::Partial:
      // A reduction commutes with a partial of the same plain reduction only.
      return !repaired && s.red == base ? s : ParState::local();
    case StateKind::Local:
      return s.dim == d ? ParState::local() : s;
  }
  return ParState::local();
}

int repair_refs(const RedComponent& c, uint8_t out[2]) {
  switch (c.repair) {
    case Repair::None:
      return 0;
    case Repair::ExpSum:       // the max the terms were computed against
    case Repair::WelfordMean:  // the count
      out[0] = c.arg0;
      return 1;
    case Repair::WelfordM2:  // the count and the mean
      out[0] = c.arg0;
      out[1] = c.arg1;
      return 2;
  }
  return 0;
}

std::optional<std::string> combine_repaired(const RedComponent& c, size_t i,
                                            const std::vector<TensorType>& comps, const DimTable& table,
                                            TensorType& out) {
  uint8_t refs[2];
  int n = repair_refs(c, refs);
  PwArg args[3] = {{&comps[i], int(i)}};
  for (int r = 0; r < n; ++r) {
    const TensorType& ref = comps[refs[r]];
    // The repair factor broadcasts into the component by dim name; a dim the
    // component lacks would change its shape.
    for (Symbol d : ref.dims)
      if (!comps[i].has_dim(d))
        return "component " + std::to_string(i) + "'s repair reads component " + std::to_string(refs[r]) +
               ", which has dim " + str(d) + " that component " + std::to_string(i) + " lacks (" +
               dims_text(ref.dims, table) + " vs " + dims_text(comps[i].dims, table) +
               "); expected the read component's dims to be a subset";
    args[r + 1] = PwArg{&ref, int(refs[r])};
  }
  // The repaired value depends on the read components nonlinearly (exp, a
  // weighted mean): their states combine as in a nonlinear pointwise op.
  return combine_pointwise(Op::Exp, std::span<const PwArg>(args, size_t(n + 1)), "component", out);
}

Result type_reduce(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  Symbol d = attr_sym(attrs, 0);
  RedId r = attr_red(attrs, 1);
  const Reduction& red = r.get();
  const Type& x = *kids[0];
  size_t n = red.arity();
  if (n == 1 && x.is_tuple)
    return fail(op, "the reduction " + reduction_text(r) +
                        " has one component, so the operand must be a tensor, got " + type_text(x, &dims));
  if (n > 1 && (!x.is_tuple || x.parts.size() != n))
    return fail(op, "the reduction " + reduction_text(r) + " has " + std::to_string(n) +
                        " components, so the operand must be a tuple of " + std::to_string(n) +
                        " tensors, got " + type_text(x, &dims));
  for (size_t i = 0; i < n; ++i) {
    const TensorType& c = x.parts[i];
    if (c.literal || !c.has_dim(d))
      return fail(op, (n == 1 ? std::string("the operand") : "component " + std::to_string(i)) +
                          " has no dim " + str(d) + "; expected a tensor with dim " + str(d) + ", got " +
                          tensor_text(c, dims));
  }
  Type out;
  out.is_tuple = n > 1;
  out.parts.resize(n);
  TensorType effective;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& c = x.parts[i];
    const RedComponent& rc = red.components[i];
    bool repaired = rc.repair != Repair::None;
    const std::vector<AxisState>* delta = &c.delta;
    if (repaired) {
      if (auto e = combine_repaired(rc, i, x.parts, dims, effective)) return fail(op, *e);
      delta = &effective.delta;
    }
    TensorType& o = out.parts[i];
    o.dtype = c.dtype;
    o.dims = c.dims;
    erase_dim(o.dims, d);
    o.delta = *delta;
    RedId base = r.base_of(i);
    for (AxisState& a : o.delta) a.state = reduce_state(a.state, d, base, repaired);
  }
  return TypeId::intern(out);
}

Result type_contraction(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  Symbol k = attr_sym(attrs, 0);
  PwArg args[2];
  for (size_t i = 0; i < 2; ++i) {
    const TensorType& t = kids[i]->tensor();
    args[i] = PwArg{&t, int(i + 1)};
    std::string who = "operand " + std::to_string(i + 1);
    if (t.literal) return fail(op, who + " is a literal constant; expected a tensor with dim " + str(k));
    if (!t.has_dim(k))
      return fail(op, who + " has no dim " + str(k) + "; expected a tensor with dim " + str(k) + ", got " +
                          tensor_text(t, dims));
  }
  const TensorType &a = *args[0].t, &b = *args[1].t;
  if (a.dtype != b.dtype)
    return fail(op, "operand 1 is " + std::string(dtype_name(a.dtype)) + " but operand 2 is " +
                        std::string(dtype_name(b.dtype)) +
                        "; a contraction needs one dtype: cast one explicitly");
  TensorType out;
  out.dtype = a.dtype;
  if (op == Op::MatMul) {
    for (size_t i = 0; i < 2; ++i)
      if (!args[i].t->delta.empty())
        return fail(op, "operand " + std::to_string(i + 1) + " has parallel axes (" +
                            tensor_text(*args[i].t, dims) +
                            "); matmul is the global form: use tile_matmul on tiles");
    out.dims = a.dims;
    for (Symbol d : b.dims) insert_dim(out.dims, d);
  } else {
    // tile_matmul(k, A, B) is reduce(k, +, mul(A, B)).
    if (auto e = combine_pointwise(Op::Mul, args, "operand", out)) return fail(op, *e);
    if (out.delta.empty())
      return fail(
          op,
          "the operands have no parallel axes; tile_matmul is the tile form: use matmul on global tensors");
    for (AxisState& s : out.delta) s.state = reduce_state(s.state, k, RedId::add(), false);
  }
  erase_dim(out.dims, k);
  return make(std::move(out));
}

}  // namespace eqf::typing
