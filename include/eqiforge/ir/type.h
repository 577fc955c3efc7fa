// Types: dtype[dims] @ delta, where delta maps each parallel axis in scope to
// a parallel state (DESIGN §2.3).
//
//   part(d)     the value is partitioned along dim d by this axis; the local
//               extent of d is the axis's block size
//   rep         the value is the same at every coordinate of the axis
//   partial(R)  the logical value is the R-reduction (+ or max) of the
//               coordinates' values; preduce(p, R, .) produces it
//   local       the value varies with the coordinate but is not the partial of
//               a known reduction: it appears when a tile uses a partial value
//               locally, as repaired reductions do (exp(S - m_i) with the
//               block's own max m_i). It can only feed repaired reductions,
//               tiles and collect; never combine or a plain preduce.
//   local(d)    local, and the tile holds a block of dim d (as part(d) does):
//               what a part(d) value becomes when it meets a partial or local
//               one, e.g. exp(S - m_i) with S part(t) and m_i partial(max).
//               Its blocks are not blocks of one logical tensor, so it cannot
//               be combined; reducing d makes it plain local.
//
// A tuple type (from `tuple`) is a list of tensor types, each with its own
// delta. Literal constants have a `literal` tensor type: dtype-polymorphic,
// no dims, no axes; they broadcast into any operand's dtype and parallel
// state without a replicate.
//
// Types are interned (TypeId), so the e-graph stores one id per e-class and
// `merge` compares ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eqiforge/ir/axis.h"
#include "eqiforge/ir/dtype.h"
#include "eqiforge/ir/reduction.h"
#include "eqiforge/ir/symbol.h"

namespace eqf {

class DimTable;

enum class StateKind : uint8_t { Part, Rep, Partial, Local };

struct ParState {
  StateKind kind = StateKind::Rep;
  Symbol dim;   // Part, and Local over a block (local(d)); invalid otherwise
  RedId red;    // Partial only: a plain reduction (+ or max)

  static ParState part(Symbol d) { return {StateKind::Part, d, {}}; }
  static ParState rep() { return {StateKind::Rep, {}, {}}; }
  static ParState partial(RedId r) { return {StateKind::Partial, {}, r}; }
  static ParState local() { return {StateKind::Local, {}, {}}; }
  static ParState local(Symbol d) { return {StateKind::Local, d, {}}; }
  friend bool operator==(const ParState& a, const ParState& b) {
    return a.kind == b.kind && a.dim == b.dim && a.red == b.red;
  }
};

struct AxisState {
  Axis axis;
  ParState state;
  friend bool operator==(const AxisState& a, const AxisState& b) {
    return a.axis == b.axis && a.state == b.state;
  }
};

struct TensorType {
  DType dtype = DType::F32;
  bool literal = false;
  std::vector<Symbol> dims;        // a set: sorted by Symbol id, no repeats
  std::vector<AxisState> delta;    // sorted by axis, one entry per axis in scope

  bool has_dim(Symbol d) const;
  const ParState* state(Axis p) const;  // nullptr if p is not in scope
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

struct Type {
  std::vector<TensorType> parts;  // one for a tensor, n for a tuple
  bool is_tuple = false;
  friend bool operator==(const Type&, const Type&) = default;
  const TensorType& tensor() const { return parts.front(); }  // requires !is_tuple
};

class TypeId {
 public:
  constexpr TypeId() = default;
  static TypeId intern(const Type& t);
  static constexpr TypeId from_raw(uint32_t v) { return TypeId(v); }
  const Type& get() const;
  uint32_t raw() const { return v_; }
  bool valid() const { return v_ != 0xffffffffu; }
  friend bool operator==(TypeId a, TypeId b) { return a.v_ == b.v_; }
  friend bool operator!=(TypeId a, TypeId b) { return a.v_ != b.v_; }

 private:
  constexpr explicit TypeId(uint32_t v) : v_(v) {}
  uint32_t v_ = 0xffffffffu;
};

// "f16[m k] @ {m.0: part(m), k.0: partial(+)}"; dims listed in the table's
// declaration order when a table is given, else by id.
std::string type_text(const Type& t, const DimTable* dims = nullptr);
std::string state_text(const ParState& s);

}  // namespace eqf
