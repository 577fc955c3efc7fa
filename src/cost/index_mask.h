// Index masks that bound loops (DESIGN §6): a `where(pred, X, c)` inside a
// loop whose predicate compares iota indices, and that every accumulator of
// the loop depends on, lets the loop skip blocks on which pred is false
// everywhere (causal attention visits about half of the key blocks).
#pragma once

#include <optional>
#include <unordered_map>
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

// The value of a node on a block where one `where` takes its literal branch
// everywhere: a constant, or unknown. Only constants over the whole block
// count, so loads, contractions and nested loops are unknown. (Code
// generation proves loop skipping exact with it; grid masks below need it
// for the cost model as well.)
class BlockConstants {
 public:
  BlockConstants(const Program& p, NodeId where, int literal_child)
      : p_(p), where_(where), literal_child_(literal_child) {}
  std::optional<double> eval(NodeId n);

 private:
  std::optional<double> compute(NodeId n);
  const Program& p_;
  NodeId where_;
  int literal_child_;
  std::unordered_map<uint32_t, std::optional<double>> memo_;
};

// Grid index masks: a `where(pred, X, c)` whose predicate compares the index
// of a dim blocked by one of the kernel's grid axes (a sliding window's
// `t < T - W` on the key blocks of a scores kernel). On a program where a
// conjunct of pred fails at every position of its block, the where is c
// throughout; when every value the kernel stores is then a constant
// (BlockConstants), the program stores the same whatever its loads read, so
// its loads are masked off there and read nothing. Predicates: role 0 the
// grid axis's dim, role 2 a whole dim; only conjuncts with integral
// coefficients (the emitter writes them as integer forms). A program is
// live where every predicate can hold somewhere on its block.
struct GridMaskTerms {
  Axis axis;
  std::vector<IndexPredicate> predicates;
};
std::optional<GridMaskTerms> find_grid_mask_terms(const Program& p, const Kernel& k);
// The same for the cost model: the predicates as a LoopMask (no role-1
// terms) and the summary row of the grid axis in *axis.
std::optional<LoopMask> find_grid_mask(const Program& p, const Kernel& k, const ProgramSummary& summary, int* axis);

// Visited (grid-coordinate, loop-block) pairs of the masked axis pair:
// summed over the coordinates of the grid axis `g` (or, with g = -1, for a
// single program), given the extents and block sizes of the loop's dim (T,
// Bt) and of the grid axis's dim (S, Bg).
double visited_blocks(const LoopMask& mask, double T, double Bt, double S, double Bg);

}  // namespace eqf::cost
