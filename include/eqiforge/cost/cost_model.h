// The optimistic latency bound of a tiled program (DESIGN §6), the static
// ranking of extraction's candidates.
//
// Kernels come from kernel formation (lower/kernel.h): the cost model reads
// the same grid axes, loops, loads with their re-read axes, and stores that
// code generation emits. Per kernel, for given block sizes:
//
//   time = max(memory, mma_flops / TC_eff, other_flops / FP_eff, latency) + launch
//   memory = max(DRAM bytes / BW_eff, bytes / L2 bandwidth), DRAM bytes
//            each divided by how well its rows use DRAM (contiguous runs
//            shorter than 128 bytes cost more; cost_model.cc)
//
//   bytes        every load's elements times the number of times they are
//                read (a load replicated over a grid axis, or over a loop it
//                sits inside, is re-read once per coordinate of that axis),
//                plus every store;
//   BW_eff       min(kernel bandwidth, busy SMs x one program's bandwidth):
//                what a generated kernel streams at best (kernel_GBps, below
//                a copy's DRAM bandwidth), and a grid with fewer programs
//                than SMs cannot use all of it. A kernel that loads in loops
//                streams at kernel bandwidth x F / (F + stream_half) instead
//                (Little's law, target.h): F the bytes its resident programs
//                keep in flight, each the tiles of stages - 1 iterations of
//                an innermost loop (no more than the loop has) or of one
//                iteration of a loop holding a loop (Triton pipelines only
//                innermost loops);
//   mma_flops    tile_matmul on two 2-D tiles (tl.dot), each of M, N, K
//                padded to the target's smallest dot; other contractions
//                and all pointwise work and reductions count as other_flops
//                (one per element, two per multiply-add); both peaks are
//                scaled by the fraction of SMs the grid keeps busy.
//
// Index masks bound loops: a `where(pred, X, c)` whose predicate compares
// iota indices (causal t <= s, sliding windows s - t < W, ...) and that every
// accumulator of a loop depends on makes the loop skip the blocks on which
// the predicate is false everywhere; only visited blocks are counted.
//
// A program's bound is the sum over its kernels, minimized over power-of-two
// block sizes (one size per axis for the whole program, as the emitted
// module takes them; unit axes stay 1) whose tiles fit: loaded tiles (times
// the pipeline stages inside loops) in shared memory, accumulators and the
// largest live tile in registers, no tile above Triton's element limit. A
// program with no legal choice is infeasible.
//
// A loop's iterations run one after another in each program: a kernel also
// takes at least (waves of resident programs) x (loop iterations per
// program) x the target's loop_iteration_us, so tiny blocks in long loops
// are not free ("latency" bound).
//
// Re-reads (a load replicated over some axes) of a slice that fits in a
// quarter of L2 -- the part of the source that the programs along the load's
// partitioned grid axes share -- are served by L2: DRAM moves the bytes L2
// does not hold, and every byte passes through L2 at l2_GBps.
//
// The bound is optimistic: L2 holds every such slice whatever the order in
// which programs run, no occupancy effects past the SM cap and the resident
// programs, perfect overlap of memory and compute.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eqiforge/cost/target.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {

struct KernelEstimate {
  std::string name;
  std::vector<Axis> grid;        // program_id order
  std::vector<Axis> loops;       // loop axes, in the kernel's loop order (outer before inner)
  double programs = 0;           // grid size
  double bytes = 0;
  double mma_flops = 0;
  double other_flops = 0;
  double memory_s = 0, mma_s = 0, other_s = 0, latency_s = 0, launch_s = 0;
  double seconds = 0;            // max of the four terms, plus launch
  double register_bytes = 0;     // one program's tiles in registers (what the budget is checked against)
  double smem_bytes = 0;         // one program's loaded tiles in shared memory
  std::string bound;             // "memory", "mma", "fp", "latency" (the largest term), or "launch" when all are 0
  bool masked = false;           // some loop skips fully masked blocks
};

struct ProgramEstimate {
  bool feasible = false;         // some legal block-size choice exists
  std::string why_infeasible;    // what does not fit, at the best choice found
  double seconds = 0;            // sum over kernels
  BlockSizes blocks;             // the choice of this estimate (every axis, unit axes = 1)
  int stages = 0;                // the pipeline stages it assumes (num_stages of the launch)
  std::vector<KernelEstimate> kernels;
  double combos_tried = 0;       // block-size choices evaluated
};

class CostModel {
 public:
  explicit CostModel(Target target) : target_(std::move(target)) {}
  const Target& target() const { return target_; }

  // The optimistic bound of a type-checked tiled program: lowers it, then
  // minimizes over block sizes. Throws eqf::Error when the program has no
  // kernel form (lowering's message).
  ProgramEstimate estimate(const Program& p) const;
  ProgramEstimate estimate(const Program& p, const LoweredProgram& lowered) const;

  // Kernel evaluations kept between estimates. The minimization evaluates
  // each kernel at hundreds of block-size choices, and the candidates of one
  // extraction share most of their kernels: a kernel's time at a choice of
  // the sizes it reads is the same in every program that has it. Equal
  // estimates with or without a cache; a cache used by another cost model
  // starts over.
  class EstimateCache {
   public:
    EstimateCache();
    ~EstimateCache();
    EstimateCache(const EstimateCache&) = delete;
    EstimateCache& operator=(const EstimateCache&) = delete;

   private:
    friend class CostModel;
    struct Tables;
    std::unique_ptr<Tables> tables_;
  };
  ProgramEstimate estimate(const Program& p, const LoweredProgram& lowered, EstimateCache& cache) const;

  // The bound at given block sizes (every axis of the program; unit axes are
  // forced to 1). `feasible` says whether those tiles fit.
  ProgramEstimate evaluate(const Program& p, const LoweredProgram& lowered, const BlockSizes& blocks) const;

  // The best of `at_default` (an estimate at the target's pipeline_stages)
  // and the estimates at the target's other stage_choices: more stages keep
  // more bytes in flight but take more shared memory, which can force
  // smaller tiles. Only kernels whose loops feed tl.dot are pipelined, so a
  // program without one prices the same at every count and keeps the
  // default. Extraction asks this of its best-ranked candidates only (each
  // choice is a minimization of its own).
  ProgramEstimate best_stages(const Program& p, const LoweredProgram& lowered, const ProgramEstimate& at_default) const;

  // The best estimate (blocks and stages) of the program with its GEMVs in
  // their tl.dot form (forward's gemv_dot): where that form's kernels start
  // tuning. nullopt when the program has no GEMV or no feasible choice.
  std::optional<ProgramEstimate> gemv_dot_estimate(const Program& p, const LoweredProgram& lowered) const;

  // Time to move `bytes` at the full bandwidth: the compulsory-traffic part
  // of extraction's lower bound for partial programs.
  double transfer_seconds(double bytes) const { return bytes / target_.dram_bytes_per_s; }
  double launch_seconds() const { return target_.launch_s; }

 private:
  Target target_;
};

}  // namespace eqf
