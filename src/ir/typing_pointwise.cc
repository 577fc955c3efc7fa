// Typing of pointwise ops (docs/ir.md, "Pointwise"), and the per-axis state
// combination that tile_matmul and repaired tuple reductions reuse.
//
// One rule covers every op with kPointwise; the differences between ops are
// the small tables below: the result dtype (predicates, cast, where), literal
// folding, and which partial states an op keeps (its linear cases).
#include <algorithm>

#include "ir/typing_rules.h"

namespace eqf::typing {
namespace {

// ---- per-op tables ---------------------------------------------------------------

// The partial state an op keeps when no operand holds a block on this axis and
// no operand is local: `states` holds every operand's state in order (literals
// as rep), at least one of them partial. Each case is an identity of the
// coordinate-wise evaluation, e.g. sum_c (a_c * r) = (sum_c a_c) * r and
// max_c (a_c + r) = (max_c a_c) + r. Anything else is local.
ParState kept_partial(Op op, std::span<const ParState> states) {
  const RedId plus = RedId::add(), max = RedId::max();
  int n = int(states.size()), n_plus = 0, n_max = 0, n_rep = 0;
  for (const ParState& s : states) {
    if (s.kind == StateKind::Rep) ++n_rep;
    if (s.kind == StateKind::Partial) (s.red == plus ? n_plus : n_max) += 1;
  }
  auto first_is = [&](RedId r) { return states[0].kind == StateKind::Partial && states[0].red == r; };
  // add, sub, neg: sums of partial sums (kLinear).
  if (op_has(op, kLinear) && n_plus == n) return ParState::partial(plus);
  switch (op) {
    case Op::Mul:  // a partial sum scaled by a replicated factor
      if (n_plus == 1 && n_rep == n - 1) return ParState::partial(plus);
      break;
    case Op::Div:  // ... or divided by one
      if (n_plus == 1 && first_is(plus) && n_rep == n - 1) return ParState::partial(plus);
      break;
    case Op::Max2:  // max is associative and idempotent: rep operands may join
      if (n_max >= 1 && n_max + n_rep == n) return ParState::partial(max);
      break;
    case Op::Add:  // a partial max shifted by a replicated value
      if (n_max == 1 && n_rep == n - 1) return ParState::partial(max);
      break;
    case Op::Sub:
      if (n_max == 1 && first_is(max) && n_rep == n - 1) return ParState::partial(max);
      break;
    default:
      break;
  }
  return ParState::local();
}

// The result dtype of `op` over operands whose non-literal ones are given;
// nullopt with `err` set when they do not fit the op.
std::optional<DType> result_dtype(Op op, const Attrs& attrs, std::span<const PwArg> args, std::string& err) {
  if (op == Op::Cast) return attr_dtype(attrs, 0);
  // where(c, a, b): c is bool, the value is a's and b's dtype.
  size_t first_value = 0;
  if (op == Op::Where) {
    const TensorType& c = *args[0].t;
    if (!c.literal && c.dtype != DType::Bool) {
      err = "the condition (operand 1) is " + std::string(dtype_name(c.dtype)) + "; expected bool";
      return std::nullopt;
    }
    first_value = 1;
  }
  const PwArg* seen = nullptr;
  for (size_t i = first_value; i < args.size(); ++i) {
    const TensorType& t = *args[i].t;
    if (t.literal) continue;
    if (seen && seen->t->dtype != t.dtype) {
      err = "operand " + std::to_string(seen->label) + " is " + std::string(dtype_name(seen->t->dtype)) +
            " but operand " + std::to_string(args[i].label) + " is " + std::string(dtype_name(t.dtype)) +
            "; operands must have one dtype: cast one explicitly";
      return std::nullopt;
    }
    if (!seen) seen = &args[i];
  }
  if (!seen) {  // only where's two branches can all be literal here
    err =
        "both branches are literal constants, so the result has no dtype; cast one branch, e.g. (cast f32 0)";
    return std::nullopt;
  }
  if (op_has(op, kPredicate)) return DType::Bool;
  return seen->t->dtype;
}

// The state of axis `p` of a pointwise combination; `states` in operand order.
std::optional<std::string> combine_axis(Op op, Axis p, std::span<const PwArg> args,
                                        std::span<const ParState> states, std::string_view noun,
                                        ParState& out) {
  auto who = [&](size_t i) { return std::string(noun) + " " + std::to_string(args[i].label); };
  // A block of one dim: every blocked operand must block the same dim.
  size_t blocked = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_blocked(states[i])) continue;
    if (blocked == args.size()) {
      blocked = i;
    } else if (states[i].dim != states[blocked].dim) {
      return who(blocked) + " is " + state_text(states[blocked]) + " on axis " + p.name() + " but " + who(i) +
             " is " + state_text(states[i]) +
             "; one axis partitions one dim, so both must be blocks of the same dim";
    }
  }
  if (blocked != args.size()) {
    Symbol d = states[blocked].dim;
    bool all_part_or_rep = true;
    for (size_t i = 0; i < args.size(); ++i) {
      const ParState& s = states[i];
      if (!is_blocked(s) && args[i].t->has_dim(d)) {
        std::string head = who(blocked) + " is " + state_text(states[blocked]) + " on axis " + p.name() +
                           " but " + who(i) + " is " + state_text(s) + " and has dim " + str(d);
        if (s.kind == StateKind::Rep)
          return head + ": replicate keeps the whole dim " + str(d) + " beside a block of " + str(d) +
                 "; partition the operand on " + p.name() + " too";
        return head + ": its tiles hold the whole dim " + str(d) + " beside a block of " + str(d) +
               "; expected it without " + str(d) + " or partitioned on " + p.name();
      }
      if (!(s.kind == StateKind::Rep || s.kind == StateKind::Part)) all_part_or_rep = false;
    }
    // Blocks of d beside replicated values are blocks of the result. Beside a
    // partial or local value they are blocks of nothing global: local(d).
    out = all_part_or_rep ? ParState::part(d) : ParState::local(d);
    return std::nullopt;
  }
  bool all_rep = true, any_local = false;
  for (const ParState& s : states) {
    all_rep &= s.kind == StateKind::Rep;
    any_local |= s.kind == StateKind::Local;
  }
  out = all_rep ? ParState::rep() : any_local ? ParState::local() : kept_partial(op, states);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> combine_pointwise(Op op, std::span<const PwArg> args, std::string_view noun,
                                             TensorType& out) {
  constexpr size_t kMaxArgs = 4;  // three operands, or a component and its refs
  ParState states[kMaxArgs];
  if (args.size() > kMaxArgs) return std::string("too many operands");  // unreachable: op arities are <= 3
  auto who = [&](size_t i) { return std::string(noun) + " " + std::to_string(args[i].label); };

  out.dims.clear();
  out.delta.clear();
  size_t ref = args.size();  // the first non-literal operand: its axes are the axes
  for (size_t i = 0; i < args.size(); ++i) {
    for (Symbol d : args[i].t->dims) insert_dim(out.dims, d);
    if (!args[i].t->literal && ref == args.size()) ref = i;
  }
  if (ref == args.size()) return std::nullopt;  // all literal: no dims, no axes

  // Every non-literal operand has the same axes (a broadcast operand is
  // replicated explicitly, so the grid and loops are visible in the term).
  const std::vector<AxisState>& axes = args[ref].t->delta;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& t = *args[i].t;
    if (t.literal || i == ref) continue;
    size_t a = 0, b = 0;
    while (a < axes.size() || b < t.delta.size()) {
      if (a < axes.size() && b < t.delta.size() && axes[a].axis == t.delta[b].axis) {
        ++a, ++b;
        continue;
      }
      // The smaller axis is the one only one side has.
      bool ref_has = b == t.delta.size() || (a < axes.size() && axes[a].axis < t.delta[b].axis);
      size_t has = ref_has ? ref : i, lacks = ref_has ? i : ref;
      Axis p = ref_has ? axes[a].axis : t.delta[b].axis;
      return who(has) + " has axis " + p.name() + " but " + who(lacks) + " does not; replicate " +
             who(lacks) + " on " + p.name() + " (non-literal " + std::string(noun) + "s need the same axes)";
    }
  }

  out.delta.resize(axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    for (size_t i = 0; i < args.size(); ++i)
      states[i] = args[i].t->literal ? ParState::rep() : args[i].t->delta[k].state;
    out.delta[k].axis = axes[k].axis;
    if (auto err =
            combine_axis(op, axes[k].axis, args, std::span(states, args.size()), noun, out.delta[k].state))
      return err;
  }
  return std::nullopt;
}

Result type_pointwise(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  (void)dims;
  PwArg args[3];
  bool all_literal = true;
  for (size_t i = 0; i < kids.size(); ++i) {
    args[i] = PwArg{&kids[i]->tensor(), int(i + 1)};
    all_literal &= args[i].t->literal;
  }
  std::span<const PwArg> operands(args, kids.size());
  TensorType out;
  if (all_literal) {
    // Literal folding: an op of literals is a literal (still dtype-free),
    // except cast, which gives a scalar of its dtype -- the way to give a
    // constant a dtype, e.g. both branches of a where.
    if (op == Op::Cast) {
      out.dtype = attr_dtype(attrs, 0);
      return make(std::move(out));
    }
    out.literal = true;
    return make(std::move(out));
  }
  std::string err;
  std::optional<DType> dtype = result_dtype(op, attrs, operands, err);
  if (!dtype) return fail(op, err);
  out.dtype = *dtype;
  if (auto e = combine_pointwise(op, operands, "operand", out)) return fail(op, *e);
  return make(std::move(out));
}

}  // namespace eqf::typing
