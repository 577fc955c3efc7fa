// The engine's benchmark workload (issue 3, bench/egraph): scalar f32
// inputs x0..x{n-1} summed left to right, add(...add(add(x0, x1), x2)...,
// x{n-1}). Saturated with commutativity and associativity of add it has
// exactly 2^n - 1 e-classes and 3^n - 2^(n+1) + 1 e-nodes.
#pragma once

#include "eqiforge/egraph/egraph.h"

namespace eqf {

// Declares the n inputs in g, adds the sum and returns its class (n >= 1).
EClassId add_left_sum(EGraph& g, int n);

}  // namespace eqf
