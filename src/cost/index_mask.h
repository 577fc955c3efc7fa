// Index masks that bound loops (DESIGN §6): a `where(pred, X, c)` inside a
// loop whose predicate compares iota indices, and that every accumulator of
// the loop depends on, lets the loop skip blocks on which pred is false
// everywhere (causal attention visits about half of the key blocks).
#pragma once

#include <optional>
#include <vector>

#include "cost/summary.h"

namespace eqf::cost {

// The mask of loop `loop` of kernel `k` with each predicate's `where` node
// and the grid axis by name: what code generation needs to bound the loop.
// The analysis is find_loop_mask's (which maps the axis to its summary row).
struct MaskedPredicate {
  // where(pred, X, literal) asserting the predicate, or where(not pred,
  // literal, X) (literal_child 1): the rules write the causal mask both ways.
  NodeId where;
  int literal_child = 2;
  IndexPredicate predicate;  // role 0: the loop's dim, 1: the grid axis's dim, 2: a whole dim
  // Every conjunct of the where's predicate has an entry: where they all hold,
  // the where takes its other branch.
  bool complete = false;
};
struct LoopMaskTerms {
  std::optional<Axis> grid_axis;  // the grid axis of the role-1 terms, if any
  std::vector<MaskedPredicate> predicates;
};
std::optional<LoopMaskTerms> find_loop_mask_terms(const Program& p, const Kernel& k, int loop);

// The mask of loop `loop` of kernel `k`, if any. `axis_index` maps an axis to
// its row in the program summary.
std::optional<LoopMask> find_loop_mask(const Program& p, const Kernel& k, int loop, const ProgramSummary& summary);

// Visited (grid-coordinate, loop-block) pairs of the masked axis pair:
// summed over the coordinates of the grid axis `g` (or, with g = -1, for a
// single program), given the extents and block sizes of the loop's dim (T,
// Bt) and of the grid axis's dim (S, Bg).
double visited_blocks(const LoopMask& mask, double T, double Bt, double S, double Bg);

}  // namespace eqf::cost
