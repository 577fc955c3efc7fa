// Reductions with repairs (internal to src/interp): `reduce(d, R, X)` along a
// dim and `preduce(p, R, X)` over the coordinates of an axis share one fold
// of R's components (include/eqiforge/ir/reduction.h).
#pragma once

#include "eqiforge/ir/reduction.h"
#include "eqiforge/ir/type.h"
#include "value.h"

namespace eqf::interp {

// reduce(d, R, X): combines X's states along dim d, element by element in
// index order; positions invalid along d (past the end of a ragged block)
// count as R's identity. `type` is the node's result type.
Value reduce_dim(Symbol d, RedId r, const Value& x, const Type& type, const Sizes& s);

// preduce(p, R, X): combines X's per-coordinate values in coordinate order.
Value reduce_axis(Axis p, RedId r, const Value& x, const Type& type, const Sizes& s);

}  // namespace eqf::interp
