// Running programs on random inputs and comparing two of them: the check
// behind `eqiforge-opt equiv`, the Python `equiv`, and tests that hold a tiled
// form against its naive form.
//
// Two programs are comparable when they have the same interface: the same
// inputs (by name, with the same dtype, dims and extents; layouts may differ)
// and the same outputs (by name, with the same dims and extents). Each trial
// draws fresh random inputs and fresh random block sizes for each program's
// axes from seed+trial, evaluates both and takes the largest relative error
// over the outputs (max_relative_error against program a's output, the
// reference). A NaN in one program's output where the other has a number
// counts as an infinite error, so padding that leaks out of a ragged block
// never passes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "eqiforge/interp/tensor.h"
#include "eqiforge/ir/program.h"

namespace eqf {

// The tolerance a tiled form must meet against its naive form: both run in
// float64, so only reassociation of sums separates them.
inline constexpr double kEquivTolerance = 1e-9;

// Block sizes for evaluating p: the `given` ones (each must be an axis that p
// uses and at least 1, else eqf::Error naming the axes p does use), the rest
// from random_block_sizes(p, seed).
BlockSizes complete_block_sizes(const Program& p, const BlockSizes& given, uint64_t seed);

// "m.0=4 t.0=3", or "-" when there are no axes.
std::string block_sizes_text(const BlockSizes& blocks);

// Throws eqf::Error (at b's declaration, naming what differs) unless a and b
// have the same interface, as described above.
void check_same_interface(const Program& a, const Program& b);

struct EquivTrial {
  uint64_t seed = 0;
  BlockSizes blocks_a, blocks_b;
  double max_rel_error = 0;  // over all outputs of this trial
};

struct EquivReport {
  std::vector<EquivTrial> trials;
  double max_rel_error = 0;  // over all trials
  bool equivalent(double tolerance = kEquivTolerance) const { return max_rel_error <= tolerance; }
};

// Compares two type-checked programs over `trials` trials (at least 1).
EquivReport compare_programs(const Program& a, const Program& b, uint64_t seed, int trials);

}  // namespace eqf
