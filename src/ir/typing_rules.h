// Internal to the type checker: the typing rules of each op family
// (typing_*.cc) and the pieces they share. The public face is
// eqiforge/ir/typecheck.h; docs/ir.md ("Operators and their typing rules") is
// the specification these files implement.
//
// Conventions of every rule:
// - Child types come in as pointers into the interned type table (stable: the
//   table never moves a type), already checked for arity and for tuples where
//   the op takes tensors.
// - A result is built once and interned once; errors are built only on the
//   failing path, so the well-typed path allocates just the result's vectors.
// - Messages start with the op's name and say what was expected.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "eqiforge/ir/dims.h"
#include "eqiforge/ir/node.h"
#include "eqiforge/ir/type.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf::typing {

using Result = std::variant<TypeId, TypeError>;
using Kids = std::span<const Type* const>;

// ---- messages -------------------------------------------------------------------

inline std::string_view op_name(Op op) { return op_info(op).name; }
inline std::string str(Symbol s) { return std::string(s.str()); }
TypeError fail(Op op, const std::string& message);
// "[m k]", in the table's declaration order.
std::string dims_text(const std::vector<Symbol>& dims, const DimTable& table);
std::string tensor_text(const TensorType& t, const DimTable& table);

// ---- small helpers on types ---------------------------------------------------

inline Result make(TensorType t) {
  Type out;  // not Type{{t}}: an initializer list would copy the vectors
  out.parts.push_back(std::move(t));
  return TypeId::intern(out);
}
// A state whose tile holds a block of a dim: part(d) or local(d).
inline bool is_blocked(const ParState& s) {
  return (s.kind == StateKind::Part || s.kind == StateKind::Local) && s.dim.valid();
}
// Inserts d into a sorted dim set (no-op if present).
void insert_dim(std::vector<Symbol>& dims, Symbol d);
void erase_dim(std::vector<Symbol>& dims, Symbol d);
// Inserts an axis into a sorted delta; p must not be in it.
void insert_axis(std::vector<AxisState>& delta, Axis p, ParState s);
void erase_axis(std::vector<AxisState>& delta, Axis p);
// The axes of `t` that partition dim d (part(d) or local(d)).
int blocked_count(const TensorType& t, Symbol d);
// The next level of p's dim in scope (p.dim.(level+1)), if any: an axis can be
// removed only when no deeper level of its dim is in scope.
std::optional<Axis> deeper_level(const TensorType& t, Axis p);

// ---- the pointwise combination ------------------------------------------------

// One operand of a pointwise combination. `label` names it in messages
// ("operand 2", "component 0").
struct PwArg {
  const TensorType* t;
  int label;
};

// Combines the dims (union, broadcast by name) and the parallel states of a
// pointwise application of `op` to `args`, axis by axis (docs/ir.md,
// "Pointwise"), into out.dims and out.delta. Literal operands take no part in
// the axis-set agreement and count as rep on every axis. `op` selects which
// partial states survive (the linear cases); pass Op::Exp for a combination
// that keeps none. Returns an error text (without the op prefix) or nullopt.
std::optional<std::string> combine_pointwise(Op op, std::span<const PwArg> args, std::string_view noun,
                                             TensorType& out);

// The state on one axis after reducing dim d with base reduction `base` (+ or
// max). `repaired`: the component carries a repair, so its per-coordinate
// value is not a plain partial of its base.
ParState reduce_state(const ParState& s, Symbol d, RedId base, bool repaired);

// The components a repaired reduction component reads (exp-sum's max,
// welford's count and mean); returns how many were written to `out`.
int repair_refs(const RedComponent& c, uint8_t out[2]);

// Checks that a repaired component can read the components it refers to
// (their dims a subset of its dims, the same axes) and combines their states
// into the component's effective states (`out.delta`): the repair makes the
// component's value depend on theirs. nullopt when fine.
std::optional<std::string> combine_repaired(const RedComponent& c, size_t i,
                                            const std::vector<TensorType>& comps, const DimTable& table,
                                            TensorType& out);

// ---- the op families (one file each) -------------------------------------------

Result type_pointwise(Op op, const Attrs& attrs, Kids kids, DimTable& dims);
Result type_reduce(Op op, const Attrs& attrs, Kids kids, DimTable& dims);
Result type_contraction(Op op, const Attrs& attrs, Kids kids, DimTable& dims);
Result type_layout(Op op, const Attrs& attrs, Kids kids, DimTable& dims);
Result type_parallel(Op op, const Attrs& attrs, Kids kids, DimTable& dims);  // and storage (collect)

}  // namespace eqf::typing
