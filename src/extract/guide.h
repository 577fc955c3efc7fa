// The cost guide of best-first extraction: a local price for every filling
// of a class and, for every (class, requirement) pair, the cheapest price of
// a whole subprogram below it.
//
// Saturated e-graphs hold far more valid programs than can be built, so
// extraction cannot enumerate them all. Best-first expansion takes the
// partial program with the smallest `spent + to_go` first: `spent` sums the
// prices of its filled classes, `to_go` the cheapest subprogram of each hole.
// The first complete programs are then the cheap ones, and the search stops
// after enough candidates for the exact cost model to rank.
//
// A partial program's price is `spent` plus each hole's `to_go`; a tile
// reached again from another loop or kernel (partial.h: scopes) is charged
// its `to_go` again, since kernel formation computes it again there.
//
// A price is an estimate in seconds on the target, additive over fillings,
// so that a fixpoint over the e-graph (the classic bottom-up extraction, with
// the requirements of choice.h as context) gives `to_go`:
//   - a load chain ending at a buffer reads its top's elements once per
//     coordinate of every axis in scope (replicated axes re-read it);
//   - an operator does one flop per element of its result over all
//     coordinates (reductions: of their operand; tile_matmul: 2 per
//     multiply-add, on the tensor cores for 16-bit operands);
//   - a kernel root (grid chain or collect) costs a launch and its store.
// A filling whose tile cannot fit for any block sizes (the dims no axis
// blocks already exceed the registers, the shared memory or Triton's tile
// limit) is priced +inf: no candidate through it is feasible.
// Block sizes are not chosen yet: every axis is priced at a nominal block
// (64 at level 0, a quarter of the enclosing block below). The sum ignores
// the overlap of memory and compute and the sharing of subprograms used
// twice; it only orders the search. The candidates it finds are ranked by
// the cost model proper.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eqiforge/cost/target.h"
#include "eqiforge/egraph/egraph.h"
#include "extract/choice.h"

namespace eqf::extract {

class CostGuide {
 public:
  CostGuide(const EGraph& g, OptionTable& table, const Target& target);

  // Computes to_go for every pair the table's analysis reached.
  void analyze();

  // The price of filling class c with its option i (its children excluded).
  double price(EClassId c, uint32_t option);
  // The cheapest subprogram filling c under requirement req; +inf if none.
  // A tree price: a class its subprogram reaches twice counts twice.
  double to_go(EClassId c, uint8_t req) const;

 private:
  double elements(const Type& t) const;        // over every coordinate of its axes
  double elements(const TensorType& t) const;
  // Elements of t's tile at the smallest blocks (`block_floor`, at most the
  // dim's extent): what the dims no axis blocks hold already.
  double min_elements(const TensorType& t, double block_floor = 1) const;
  // Whether t's tile fits `budget` bytes for some block sizes.
  bool fits(const TensorType& t, double element_bytes, int64_t budget, double block_floor = 1) const;
  double block(Axis a) const;                  // nominal block size
  double coords(Axis a) const;                 // coordinates of a, at nominal blocks
  double extent(Symbol dim) const;
  double compute_price(EClassId c, const Option& o) const;

  const EGraph& g_;
  OptionTable& table_;
  const Target& target_;
  std::vector<std::vector<double>> prices_;  // per class, per option; empty until asked
  std::vector<double> to_go_;                // class * 16 + requirement
};

}  // namespace eqf::extract
