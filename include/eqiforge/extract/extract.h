// Extraction with early compression (DESIGN §5; the paper's Algorithm 1).
//
// A candidate is a complete tiled program whose every computation lies in a
// kernel region: grid axes from `combine` chains (or a `collect`) at a
// kernel's top, loop axes from `preduce` inside, leaves materialized (inputs,
// collected buffers, global values computed by kernels of their own). Block
// sizes stay symbolic: a candidate is a parameterized program.
//
// Programs are extracted as choice functions: each e-class a program reaches
// is filled one way (an e-node, or a chain of e-nodes, see below), so a value
// used twice is computed once. The e-graph must be clean().
//
// Partial programs. Extraction expands partial programs from the result
// classes (in an order, below): a partial program has chosen how to fill some classes;
// the classes it reaches but has not filled yet are its holes. Expanding one
// fills its oldest hole every valid way. How a class may be filled depends on
// where it is used (validity.h: the requirements), which is what keeps every
// computation inside a kernel:
//   - a kernel's root: a global class filled by a chain of `combine`s (its
//     grid), or a `collect`;
//   - a load: a chain of `partition`/`replicate`/layout views ending at a
//     materialized value (replicate only: also at a tile computed in the
//     same kernel, or a scalar every program computes);
//   - everything else: tile-level operators, inside some kernel.
// A kernel whose body is only a load (a copy) is not built. Chains of views
// and chains of combines are taken as one step, so the classes in their
// middle are not choices. Before expanding, a fixpoint over the e-graph marks
// which (class, requirement) pairs have any finite filling; fillings that
// need a non-viable one are never generated.
//
// Equivalence. Two partial programs are equivalent (≈) when every filling of
// their holes gives programs that differ only in the operand order of
// commutative operators and contractions, in the order of the wrappers of a
// load chain, and in the order of a kernel's grid axes: same kernels, same
// loads, same cost. The canonical key of a partial program is a hash of its
// filled classes with each filling in canonical form; equal keys mean equal
// completions up to ≈.
//
// Modes (for measuring the compression):
//   none   expand every filling; every complete program is built and checked;
//   after  the same expansion, then complete programs are de-duplicated by key;
//   early  a partial program whose key was already seen is not expanded
//          (Algorithm 1): equivalent branches are cut before they grow.
// All three output the same ≈-classes of candidates; `none` and `after` stop
// at the state limit on e-graphs whose programs are too many to build.
//
// Order. Breadth-first is Algorithm 1 as the paper states it; it completes
// nothing until the frontier has filled every level, which on a saturated
// e-graph is never. Best-first (the default) takes the partial program with
// the smallest guide price first (extract/guide.h: the prices of its
// fillings plus the cheapest completion of its holes), so cheap candidates
// complete first and `max_candidates` ends the search. It runs one pass per
// pricing of the guide (each with half of the time limit; a candidate found
// by the first is not built again) and ranks the union with the cost model.
// Early compression works the same in every order: a key seen once in a
// pass is never expanded again in it.
//
// Cost pruning (with a cost model and prune_k > 0): a partial program whose
// optimistic bound -- one launch per kernel it already has plus the
// compulsory traffic of its inputs and outputs at full bandwidth -- exceeds
// the k-th best complete candidate is dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/extract/validity.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {

enum class ExtractMode { None, After, Early };
enum class ExtractOrder { BestFirst, BreadthFirst, DepthFirst };
std::string_view extract_order_name(ExtractOrder o);          // "best", "bfs", "dfs"
std::optional<ExtractOrder> parse_extract_order(std::string_view text);
std::string_view extract_mode_name(ExtractMode m);           // "none", "after", "early"
std::optional<ExtractMode> parse_extract_mode(std::string_view text);

struct ExtractOptions {
  ExtractMode mode = ExtractMode::Early;
  ExtractLimits limits;
  // Expansion order: best-first by the cost guide (extract/guide.h: cheap
  // programs complete first; needs a cost model), breadth-first (the
  // paper's), or depth-first.
  ExtractOrder order = ExtractOrder::BestFirst;
  // Stop once this many feasible candidates were found (0: no limit); with
  // best-first order, in each of its passes.
  size_t max_candidates = 0;
  // Stop after this many partial programs were expanded, or this much time
  // (the stats say which limit was hit).
  uint64_t max_states = 5'000'000;
  double time_limit_s = 600;
  // Stop once the partial programs waiting for expansion and the keys of
  // those seen hold more than this many bytes (0: no limit), checked every
  // 64 expansions. Best-first's frontier grows with every state it does not
  // take; this bounds it where max_states would take too long to.
  size_t memory_limit_bytes = 0;
  // Ranking (and feasibility: tiles must fit for some block sizes) when set.
  const CostModel* cost = nullptr;
  // Cost pruning with the k-th best candidate's estimate; 0 = off.
  size_t prune_k = 0;
  // With a cost model: each candidate whose kernels compute a value another
  // kernel stores gets a twin that loads it instead (extract/reuse.h),
  // ranked with the rest.
  bool reuse_kernel_results = true;
  // Best-first with a cost model: a complete program one of whose kernels
  // needs more shared memory for its loads than the target has, at any
  // block sizes (CostGuide::least_staging_bytes), is infeasible without
  // an estimate. Off: every candidate is estimated (the same results, slower).
  bool staging_bound = true;
  // Best-first with the staging bound: where the first pass met partial
  // programs some kernel of which already cannot stage its loads, a second
  // pass with the same pricing expands those last (their completions are
  // infeasible but for reuse twins), so that it reaches the programs that
  // fit behind a region of staged-out ones (mHC's MLP).
  bool defer_staged_out = true;
  // With a cost model: the best-ranked this many are estimated again at each
  // of the target's stage_choices (CostModel::best_stages) and re-ranked
  // among themselves; 0 = every candidate at the target's pipeline_stages.
  // The same leaders get their kernel-private dims first (below).
  size_t stage_refine_top = 32;
  // With a cost model: each of the stage_refine_top leaders whose kernels
  // share a dim that a later one reduces away is rewritten to give that
  // kernel a dim of its own (extract/kernel_dims.h: block sizes no longer
  // tied across the buffer between them), and the rewrite replaces it when
  // the cost model prices it lower.
  bool separate_kernel_dims = true;
  // The extracted programs' name; empty: "extracted".
  std::string program_name;
  // When not empty (indexed by ENodeId): fillings may use only these
  // e-nodes. Extraction restricted to one program's e-nodes (program_io.h:
  // find_program_nodes) shows whether that program is a candidate and, if
  // not, which step drops it.
  std::vector<bool> only_nodes;
};

struct ExtractStats {
  uint64_t states_expanded = 0;    // partial programs expanded (holes filled)
  uint64_t skipped_equivalent = 0; // partial programs not expanded: key already seen (early)
  uint64_t pruned = 0;             // partial programs dropped by the cost bound
  uint64_t dead_ends = 0;          // fillings refused by a requirement or a cycle
  uint64_t complete_built = 0;     // complete programs built
  uint64_t invalid = 0;            // complete programs without a kernel form within the limits
  uint64_t distinct = 0;           // valid candidates distinct under ≈ (none: not de-duplicated)
  uint64_t reuse_twins = 0;        // candidates added by reuse_kernel_results (not in `distinct`)
  uint64_t infeasible = 0;         // valid candidates whose tiles fit no block sizes
  uint64_t staged_out = 0;         //   of which known from their loads' shared memory, not estimated
  uint64_t deferred = 0;           // partial programs expanded last: their loads already exceed shared memory
  bool limit_hit = false;          // max_states, time_limit_s or memory_limit_bytes stopped the expansion
  std::string limit;               // which: "states", "time" or "memory"
  uint64_t peak_memory_bytes = 0;  // the most the memory limit's check counted (0 without a limit)
  std::string first_invalid;       // why the first invalid complete program is not a candidate
  std::string first_infeasible;    // why the first infeasible one fits no block sizes
  bool enough = false;             // max_candidates feasible candidates were found
  double enumerate_seconds = 0;    // expansion, building, de-duplication and validity (and estimates, below)
  double build_seconds = 0;        //   of which building complete programs and checking their validity
  double estimate_seconds = 0;     //   of which cost estimates of complete ones (best-first counts feasible ones)
  double rank_seconds = 0;         // cost estimates and sorting
  double seconds = 0;              // both
};

struct Candidate {
  Program program;                        // type-checked, block sizes symbolic
  LoweredProgram lowered;                 // its kernels
  uint64_t key = 0;                       // its ≈-class (equal keys, equivalent candidates)
  std::optional<ProgramEstimate> estimate;  // with a cost model
  double guide_seconds = 0;               // the guide's price (best-first order; extract/guide.h)
  // Found by one of the acyclic best-first passes (extract/guide.h:
  // Completion::Acyclic, Program). At equal estimates the other passes'
  // candidates rank first: the acyclic passes complement them, and their
  // ties are not the same kernels on a GPU (rmsnorm + SwiGLU FFN at batch 1:
  // with them, the 16 candidates tuned, all tied with the best at 65.3 us
  // by the model, ran at 130 us at best on an H100; the earlier passes'
  // best at 68 us).
  bool acyclic_pass = false;
  // The estimate with the GEMVs in their tl.dot form (CostModel::
  // gemv_dot_estimate), for the leading candidates that have GEMVs.
  std::optional<ProgramEstimate> gemv_dot;
};

struct ExtractResult {
  ExtractStats stats;
  // Valid candidates: ranked by estimate (fastest first, then the other
  // passes' before the acyclic ones', then by key) with a
  // cost model, infeasible ones left out; else in the order they were found.
  std::vector<Candidate> candidates;
};

// Extracts candidates computing `roots` (one per output, named and laid out
// by `outputs`). Throws eqf::Error when the e-graph is not clean or the
// outputs do not match the roots.
ExtractResult extract_candidates(const EGraph& g, std::span<const EClassId> roots,
                                 std::span<const OutputDecl> outputs, const ExtractOptions& options);

}  // namespace eqf
