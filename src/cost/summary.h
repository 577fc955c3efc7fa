// A lowered program compiled for fast evaluation at many block-size choices:
// every quantity of the cost model (loads, stores, flops, tile footprints,
// loop trip counts) as a product of per-axis factors, with the index masks
// that let loops skip blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eqiforge/cost/target.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf::cost {

// An axis of the program. What it splits: extent(dim) at level 0 (or the
// coordinate count of axis `collected_from` for a collected dim), the block
// of `parent` below.
struct AxisRow {
  Axis axis;
  int parent = -1;
  int64_t extent = 0;
  int collected_from = -1;
  bool unit = false;  // block size fixed to 1
};

// One dim of a tile.
struct DimRef {
  enum class Kind : uint8_t { One, Fixed, Collected, Blocked };
  Kind kind = Kind::One;
  int axis = -1;        // Blocked: the innermost axis blocking the dim; Collected: the collected axis
  int64_t extent = 1;   // Fixed: the whole dim's extent
};
using Tile = std::vector<DimRef>;

// A linear form over index dims: sum(coef[i] * dim i) + constant, compared
// with 0 (`where(pred, X, c)` keeps X where the comparison holds).
struct IndexPredicate {
  enum class Cmp : uint8_t { Lt, Le, Eq } cmp = Cmp::Le;
  struct Term {
    int role;           // 0: the loop's dim, 1: the grid-blocked dim, 2: a whole dim
    double coef;
    int64_t extent;     // role 2: the dim's extent
  };
  std::vector<Term> terms;
  double constant = 0;
};

// A loop skips the blocks where some predicate is false on the whole block.
struct LoopMask {
  int grid_axis = -1;   // the grid axis blocking role-1 dims (-1: none involved)
  std::vector<IndexPredicate> predicates;
};

struct LoopRow {
  int axis = -1;
  int parent = -1;                    // enclosing loop, -1 = the kernel's top
  std::vector<Tile> accumulators;     // fp32 running state
  double combine_weight = 1;          // flops per accumulator element per step (repairs cost more)
  std::optional<LoopMask> mask;
};

struct LoadRow {
  int scope = -1;
  double dtype_bytes = 0;  // 0 for an index (iota)
  Tile tile;
  // Axes over which the same elements are read again, and the kernel's grid
  // axes that partition the load (its programs read disjoint slices along
  // them): re-reads of a slice that fits in L2 are served from L2.
  std::vector<int> replicated;
  std::vector<int> partitioned_grid;
  // The tile's extent along the buffer's innermost (contiguous) dim: runs
  // shorter than a cache line use DRAM less well. Kind One: unknown (a view
  // between the tile and the buffer) or a single element.
  DimRef contiguous;
  bool contiguous_known = false;
};

struct ComputeRow {
  int scope = -1;
  double weight = 1;       // other flops per element of `tile`
  Tile tile;
};

// tl.dot on rows x k and k x cols tiles.
struct DotRow {
  int scope = -1;
  DimRef rows, k, cols;
  bool tensor_cores = true;  // f16/bf16 operands; fp32 dots run in "ieee" precision on the FP units
};

struct StoreRow {
  double dtype_bytes = 0;
  Tile whole;              // the buffer's dims, whole
};

struct KernelSummary {
  std::string name;
  std::vector<int> grid;
  std::vector<LoopRow> loops;  // parents before children
  std::vector<LoadRow> loads;
  std::vector<ComputeRow> computes;
  std::vector<DotRow> dots;
  std::vector<StoreRow> stores;
  // A grid index mask (index_mask.h: find_grid_mask): programs of grid axis
  // `grid_mask_axis` whose block fails a predicate (role 0: that axis's dim)
  // read nothing.
  std::optional<LoopMask> grid_mask;
  int grid_mask_axis = -1;
};

struct ProgramSummary {
  std::vector<AxisRow> axes;
  std::vector<KernelSummary> kernels;
  int axis_index(Axis a) const;  // -1 if unknown
  // Half-precision products of a vector and a matrix (the emitter's GEMVs,
  // which forward's gemv_dot makes tl.dots of the vector padded to 16 rows).
  int gemvs = 0;
};

// Compiles a lowered program. Throws eqf::Error if the program uses a
// construct the model cannot size (a dim with no extent).
// With `gemv_dot`, the GEMVs are priced as the emitter's tl.dot form
// (triton_ops.cc: gemv_dot_form), else as a multiply and sum.
ProgramSummary summarize(const Program& p, const LoweredProgram& lowered, bool gemv_dot = false);

}  // namespace eqf::cost
