// Constant folding: the value of a node whose type is a literal (a constant,
// or pointwise ops over constants), in float64 as the reference interpreter
// computes. Code generation writes such nodes as numbers; partitioning reads
// them to tell a copy (x + 0, x * 1) from a computation.
#pragma once

#include <span>

#include "eqiforge/ir/program.h"

namespace eqf {

// The value of node n, whose type must be a literal.
double fold_literal(const Program& p, NodeId n);
// The value of pointwise node n on constant operands `kids` (its children's
// values, in order). Throws eqf::Error (at the node) for an op that is not
// pointwise.
double constant_op(const Program& p, NodeId n, std::span<const double> kids);

// gelu(x) = x Phi(x) in float64, through erfc: 1 + erf(x / sqrt 2) cancels
// for negative x (2e-4 off at -7.4). The one formula of the reference
// interpreter and both constant folders.
double gelu_value(double x);

}  // namespace eqf
