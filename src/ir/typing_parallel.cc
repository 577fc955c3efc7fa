// Typing of the parallel-state ops and of collect (docs/ir.md, "Parallel
// states"): they add or remove one axis. Axis names are canonical (d.l), so
// the rules also keep levels in order: d.l partitions the block left by
// d.(l-1), an axis d.l with l > 0 appears only where d.(l-1) is in scope, and
// d.l leaves scope only when d.(l+1) is gone.
#include "ir/typing_rules.h"

namespace eqf::typing {
namespace {

std::optional<std::string> check_axis_dim(Axis p, const DimTable& dims) {
  if (!dims.contains(p.dim))
    return "axis " + p.name() + " is on dim " + str(p.dim) +
           ", which is not declared; expected an axis d.l of a declared dim d";
  return std::nullopt;
}

std::string who(size_t i, size_t n) {
  return n == 1 ? std::string("the operand") : "component " + std::to_string(i);
}

// The state of p in t for an op that removes p, or an error when p is not in
// scope or a deeper level of its dim still is.
std::optional<std::string> removable(const TensorType& t, Axis p, const std::string& whom,
                                     const ParState*& state) {
  state = t.literal ? nullptr : t.state(p);
  if (!state) return whom + " has no axis " + p.name() + " in scope";
  if (std::optional<Axis> deeper = deeper_level(t, p))
    return "axis " + deeper->name() + " is in scope inside " + p.name() + "; remove " + deeper->name() +
           " before " + p.name();
  return std::nullopt;
}

Result type_partition(Op op, const Attrs& attrs, const TensorType& x, DimTable& dims) {
  Axis p = attr_axis(attrs, 0);
  Symbol d = attr_sym(attrs, 1);
  if (p.dim != d)
    return fail(op, "axis " + p.name() + " partitions dim " + str(p.dim) + ", not " + str(d) +
                        "; expected an axis " + str(d) + ".l");
  if (x.literal || !x.has_dim(d))
    return fail(op, "the operand has no dim " + str(d) + "; expected a tensor with dim " + str(d) + ", got " +
                        tensor_text(x, dims));
  if (const ParState* s = x.state(p))
    return fail(
        op, "the operand already has axis " + p.name() + " (" + state_text(*s) + "); expected a new axis");
  // Level l splits the block left by levels 0..l-1: exactly those partition d.
  for (uint8_t l = 0; l < p.level; ++l) {
    Axis outer{d, l};
    const ParState* s = x.state(outer);
    if (!s || !is_blocked(*s) || s->dim != d)
      return fail(op, "axis " + p.name() + " splits the block of " + str(d) + " left by " + outer.name() +
                          ", but " + outer.name() +
                          (s ? " is " + state_text(*s) : std::string(" is not in scope")) + "; expected " +
                          outer.name() + " to partition " + str(d) + " first");
  }
  int count = blocked_count(x, d);
  if (count != p.level)
    return fail(op, "dim " + str(d) + " is partitioned by " + std::to_string(count) +
                        " axes of the operand; " + p.name() + " expects exactly the " +
                        std::to_string(p.level) + " levels below it");
  TensorType out = x;
  insert_axis(out.delta, p, ParState::part(d));
  return make(std::move(out));
}

Result type_replicate(Op op, const Attrs& attrs, const TensorType& x, DimTable& dims) {
  Axis p = attr_axis(attrs, 0);
  if (auto e = check_axis_dim(p, dims)) return fail(op, *e);
  // A literal mixes with any state as it is; replicating it changes nothing.
  if (x.literal) return make(x);
  if (const ParState* s = x.state(p))
    return fail(
        op, "the operand already has axis " + p.name() + " (" + state_text(*s) + "); expected a new axis");
  if (p.level > 0) {
    Axis outer{p.dim, uint8_t(p.level - 1)};
    if (!x.state(outer))
      return fail(op, "axis " + p.name() + " is a deeper level of " + str(p.dim) + ", but " + outer.name() +
                          " is not in scope; expected " + outer.name() + " first");
  }
  TensorType out = x;
  insert_axis(out.delta, p, ParState::rep());
  return make(std::move(out));
}

Result type_combine(Op op, const Attrs& attrs, const TensorType& x, DimTable& dims) {
  Axis p = attr_axis(attrs, 0);
  Symbol d = attr_sym(attrs, 1);
  const ParState* s = nullptr;
  if (auto e = removable(x, p, "the operand", s)) return fail(op, *e);
  if (!(s->kind == StateKind::Part && s->dim == d)) {
    std::string hint;
    if (s->kind == StateKind::Partial)
      hint = ": a partial value is finished with preduce";
    else if (s->kind == StateKind::Local)
      hint = ": a local value's tiles are not blocks of one tensor";
    else if (s->kind == StateKind::Rep)
      hint = ": a replicated value needs no combine";
    else
      hint = ": combine along the dim the axis partitions";
    return fail(op, "axis " + p.name() + " is " + state_text(*s) + " in the operand; expected part(" +
                        str(d) + ")" + hint + " (" + tensor_text(x, dims) + ")");
  }
  TensorType out = x;
  erase_axis(out.delta, p);
  return make(std::move(out));
}

// Whether component i of a preduce with reduction r may be in state s on p.
bool preduce_accepts(RedId r, size_t i, const ParState& s) {
  if (s.kind == StateKind::Partial && s.red == r.base_of(i)) return true;
  // A repaired component's coordinates hold states against their own local
  // values: local (or a plain partial sum) is what the repair expects.
  if (r.get().components[i].repair == Repair::None) return false;
  return (s.kind == StateKind::Partial && s.red == RedId::add()) ||
         (s.kind == StateKind::Local && !s.dim.valid());
}

std::string preduce_expected(RedId r, size_t i) {
  std::string e = "partial(" + reduction_text(r.base_of(i)) + ")";
  if (r.get().components[i].repair == Repair::None) return e;
  if (r.base_of(i) != RedId::add()) e += ", partial(+)";
  return e + " or local";
}

Result type_preduce(Op op, const Attrs& attrs, const Type& x, DimTable& dims) {
  Axis p = attr_axis(attrs, 0);
  RedId r = attr_red(attrs, 1);
  const Reduction& red = r.get();
  size_t n = red.arity();
  if (n == 1 && x.is_tuple)
    return fail(op, "the reduction " + reduction_text(r) +
                        " has one component, so the operand must be a tensor, got " + type_text(x, &dims));
  if (n > 1 && (!x.is_tuple || x.parts.size() != n))
    return fail(op, "the reduction " + reduction_text(r) + " has " + std::to_string(n) +
                        " components, so the operand must be a tuple of " + std::to_string(n) +
                        " tensors, got " + type_text(x, &dims));
  for (size_t i = 0; i < n; ++i) {
    const ParState* s = nullptr;
    if (auto e = removable(x.parts[i], p, who(i, n), s)) return fail(op, *e);
    if (!preduce_accepts(r, i, *s))
      return fail(op, "axis " + p.name() + " is " + state_text(*s) + " in " + who(i, n) + "; expected " +
                          preduce_expected(r, i) + " for the reduction " + reduction_text(r));
  }
  Type out;
  out.is_tuple = n > 1;
  out.parts.resize(n);
  TensorType effective;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& c = x.parts[i];
    const RedComponent& rc = red.components[i];
    TensorType& o = out.parts[i];
    o.dtype = c.dtype;
    o.dims = c.dims;
    if (rc.repair != Repair::None) {
      // On the other axes the finished value depends on the components the
      // repair reads, as a nonlinear function of them.
      if (auto e = combine_repaired(rc, i, x.parts, dims, effective)) return fail(op, *e);
      o.delta = std::move(effective.delta);
    } else {
      o.delta = c.delta;
      // Combining coordinates of p with the base commutes with a partial of
      // the same base on another axis, not with one of another reduction.
      for (AxisState& a : o.delta)
        if (a.state.kind == StateKind::Partial && a.state.red != r.base_of(i)) a.state = ParState::local();
    }
    erase_axis(o.delta, p);
  }
  return TypeId::intern(out);
}

Result type_collect(Op op, const Attrs& attrs, const Type& x, DimTable& dims) {
  Axis p = attr_axis(attrs, 0);
  size_t n = x.parts.size();
  Symbol c = p.collected_dim();
  for (size_t i = 0; i < n; ++i) {
    const TensorType& t = x.parts[i];
    std::string whom = x.is_tuple ? "component " + std::to_string(i) : std::string("the operand");
    const ParState* s = nullptr;
    if (auto e = removable(t, p, whom, s)) return fail(op, *e);
    // Each coordinate's tile becomes one slice of the buffer; a tile that
    // holds a block of a dim would need that dim's blocks laid out too.
    if (is_blocked(*s))
      return fail(op,
                  "axis " + p.name() + " is " + state_text(*s) + " in " + whom +
                      "; expected partial, local or rep: a partitioned value is put together with combine");
    if (t.has_dim(c)) return fail(op, whom + " already has dim " + str(c) + "; expected a value without it");
  }
  dims.declare_collected(p);
  Type out = x;
  for (TensorType& t : out.parts) {
    erase_axis(t.delta, p);
    insert_dim(t.dims, c);
  }
  return TypeId::intern(out);
}

}  // namespace

Result type_parallel(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  const Type& x = *kids[0];
  switch (op) {
    case Op::Partition:
      return type_partition(op, attrs, x.tensor(), dims);
    case Op::Replicate:
      return type_replicate(op, attrs, x.tensor(), dims);
    case Op::Combine:
      return type_combine(op, attrs, x.tensor(), dims);
    case Op::PReduce:
      return type_preduce(op, attrs, x, dims);
    case Op::Collect:
      return type_collect(op, attrs, x, dims);
    default:
      return fail(op, "not a parallel-state op");
  }
}

}  // namespace eqf::typing
