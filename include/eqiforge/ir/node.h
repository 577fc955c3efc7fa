// One operator application: op, up to three attribute slots, children.
// The same (op, attrs) pair is the e-graph's e-node key, with e-class ids as
// children; Program stores children as NodeIds.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "eqiforge/ir/axis.h"
#include "eqiforge/ir/dtype.h"
#include "eqiforge/ir/op.h"
#include "eqiforge/ir/reduction.h"
#include "eqiforge/ir/symbol.h"

namespace eqf {

using Attrs = std::array<uint32_t, 3>;

// Attribute encoding helpers; `slot` is the attribute's position in the op's
// signature (F64 always comes first and takes slots 0 and 1).
inline Attrs attrs_none() { return {0, 0, 0}; }
inline Attrs attrs_f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return {uint32_t(bits), uint32_t(bits >> 32), 0};
}
inline double attr_f64(const Attrs& a) {
  uint64_t bits = uint64_t(a[0]) | (uint64_t(a[1]) << 32);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
inline Symbol attr_sym(const Attrs& a, int slot) { return Symbol::from_raw(a[slot]); }
inline Axis attr_axis(const Attrs& a, int slot) { return Axis::unpack(a[slot]); }
inline RedId attr_red(const Attrs& a, int slot) { return RedId::from_raw(a[slot]); }
inline DType attr_dtype(const Attrs& a, int slot) { return DType(a[slot]); }

}  // namespace eqf
