// Values of single terms, with their parallel axes: what the rule library's
// soundness check compares. `evaluate` returns only outputs, which are global;
// a rule's two sides are often tile-level values (partitioned, partial,
// local), equal coordinate by coordinate at every valid position. This
// evaluates chosen nodes of a program and returns their tiles flat, with a
// mask of the positions that hold values (not the padding of a ragged block).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "eqiforge/interp/tensor.h"
#include "eqiforge/ir/program.h"

namespace eqf {

// One tensor (or one component of a tuple) of a term's value: the coordinates
// of its axes outermost (in the type's axis order), then its local dims (in
// the type's dim order), row-major. Two terms of one type have one layout,
// so their values compare position by position.
struct TermTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  std::vector<uint8_t> valid;  // 1 where the position is inside every block it belongs to
};

struct TermValue {
  std::vector<TermTensor> parts;  // one for a tensor, n for a tuple
};

// Evaluates the given nodes of a type-checked program (outputs are not
// needed: a program of bare terms works). Throws eqf::Error as `evaluate`.
std::vector<TermValue> evaluate_terms(const Program& p, const std::vector<Tensor64>& inputs,
                                      const BlockSizes& blocks, std::span<const NodeId> roots);

// The largest relative difference between two values of one type over the
// positions valid in both: max |a-b| / max(max |b|, tiny). Positions where
// both are NaN, or both the same infinity, agree; a NaN on one side only
// is an infinite difference. `compared` (optional) gets the number of
// positions holding a finite value on both sides.
double term_difference(const TermValue& a, const TermValue& b, int64_t* compared = nullptr);

}  // namespace eqf
