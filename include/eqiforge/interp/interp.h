// The reference interpreter (DESIGN §8): evaluates any well-typed program,
// high level or tiled, on the CPU in float64. It is the oracle of every test.
//
// Tiled values are evaluated coordinate by coordinate, as their types say.
// Ragged last blocks are legal: a partition load past the end of a dim reads
// NaN, and every reduction and contraction masks positions past the end with
// its identity, so padding that leaks into a result shows up as NaN.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "eqiforge/interp/tensor.h"
#include "eqiforge/ir/program.h"

namespace eqf {

// Concrete block size for each axis the program uses.
using BlockSizes = std::map<Axis, int64_t>;

// Axes used by a program (partition/replicate/combine/preduce/collect).
std::vector<Axis> axes_of(const Program& p);

// Block sizes chosen from a seed: for each axis a size in [1, size of the
// split dim], sometimes a power of two, often not dividing the extent
// (ragged), inner levels no larger than their outer level's block.
BlockSizes random_block_sizes(const Program& p, uint64_t seed);

// Random inputs (uniform in [-1, 1), never all zero), in declared layouts.
// Bool inputs are random 0/1; i32 inputs small integers.
std::vector<Tensor64> random_inputs(const Program& p, uint64_t seed);

// A model of the rounding a kernel does in the program's dtypes, for noise
// estimates (not for checking): with scale > 0, every element of a rounded
// node's floating result is multiplied by 1 + scale·u·r, u the unit roundoff
// of the node's dtype (f64 2^-53, f32 2^-24, f16 2^-11, bf16 2^-8) and r
// uniform in [-1, 1) from the seed and the node. Rounded nodes: arithmetic,
// casts, sums and contractions; leaves (inputs, constants, iota), neg,
// comparisons, selections (where, max2, min2, max reductions) and data
// movement are exact, and i32/bool values never change. scale 0 (the
// default) evaluates exactly as without it.
struct RoundingNoise {
  double scale = 0;
  uint64_t seed = 0;
};

// Evaluates a type-checked program. inputs: in declared order and layout.
// Returns outputs in declared order and layout. Throws eqf::Error when an
// axis lacks a block size or an input has the wrong shape.
std::vector<Tensor64> evaluate(const Program& p, const std::vector<Tensor64>& inputs,
                               const BlockSizes& blocks = {}, const RoundingNoise& rounding = {});

}  // namespace eqf
