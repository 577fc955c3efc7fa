// Index masks that bound loops (DESIGN §6): a `where(pred, X, c)` inside a
// loop whose predicate compares iota indices, and that every accumulator of
// the loop depends on, lets the loop skip blocks on which pred is false
// everywhere (causal attention visits about half of the key blocks).
#pragma once

#include <optional>

#include "cost/summary.h"

namespace eqf::cost {

// The mask of loop `loop` of kernel `k`, if any. `axis_index` maps an axis to
// its row in the program summary.
std::optional<LoopMask> find_loop_mask(const Program& p, const Kernel& k, int loop, const ProgramSummary& summary);

// Visited (grid-coordinate, loop-block) pairs of the masked axis pair:
// summed over the coordinates of the grid axis `g` (or, with g = -1, for a
// single program), given the extents and block sizes of the loop's dim (T,
// Bt) and of the grid axis's dim (S, Bg).
double visited_blocks(const LoopMask& mask, double T, double Bt, double S, double Bg);

}  // namespace eqf::cost
