// The interpreter's evaluation loop, below `evaluate` (internal to
// src/interp): it returns the values of chosen nodes with their parallel
// axes, coordinate by coordinate, which white-box tests inspect (the padding
// of a ragged partition, the blocks before a combine).
#pragma once

#include <span>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "value.h"

namespace eqf::interp {

// Checks the block sizes and inputs as `evaluate` does, evaluates every node
// that a root depends on, and returns the roots' values in order; rounding
// as in `evaluate`.
std::vector<Value> evaluate_roots(const Program& p, const std::vector<Tensor64>& inputs,
                                  const BlockSizes& blocks, std::span<const NodeId> roots,
                                  const RoundingNoise& rounding = {});

}  // namespace eqf::interp
