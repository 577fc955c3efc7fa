// Partitioning a large program into subgraphs of bounded size (DESIGN §5,
// "large programs").
//
// One e-graph over a whole decoder layer explodes; the search instead runs on
// subprograms of at most `max_ops` operators each. A partition is a sequence
// of subgraphs in execution order: each is a valid, type-checked Program
// whose inputs are inputs of the original program or boundary tensors that
// earlier subgraphs output, so evaluating them in order computes the
// original program's outputs. Boundaries are materialized tensors.
//
// Cut points are chosen by dynamic programming over a linear order of the
// operators: among all segmentations of that order into segments of at most
// `max_ops` operators, the one with the fewest bytes crossing the cuts
// (written by the producer and read by each consumer) wins, then the one
// with fewer segments. Where the order repeats (the layers of a stack, an
// unrolled loop: partition/period.h), cuts that repeat with it are priced
// too, from every phase, and win when they give fewer distinct subgraphs:
// each distinct subgraph is one search, and cuts that straddle layers at
// shifting offsets give a distinct piece per layer. Small tensors are cheap to cut (reduction and matmul
// outputs, the residual stream between layers); the [.., t]-sized values
// inside a softmax chain are dear, so the chain stays whole when the bound
// allows it. Two linear orders are tried (the program's node order and a
// depth-first post-order from the outputs, which keeps each operand's
// subterm together) and the cheaper partition is kept.
//
// Not operators, and so never cut: leaves (inputs, constants, iotas) and
// every node that depends on no input (masks built from iotas, folded
// literals). Such nodes are copied into each subgraph that uses them, so a
// mask and the `where` that reads it stay in one program. Tuple-typed nodes
// never cross a cut (a tuple cannot be an output), and neither do values the
// search has no candidate for as a subgraph's output: values without a dim
// of extent > 1 (the mean of a 1-D row), and mere copies of a value the
// subgraph does not compute (x + 0, x * 1, -(-x), split, merge, rename of
// it; an original output that is one stays with what it copies). A segment
// may exceed `max_ops` by what that takes (one subgraph of everything, when
// no cut is allowed).
//
// Identical subgraphs (same structure, dtypes, dim extents and layouts, up to
// the names of inputs, outputs, lets and dims) have the same structural hash;
// their inputs and outputs are declared in the same canonical order, so one
// subgraph's search result serves the others positionally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf {

struct PartitionOptions {
  // Operators per subgraph (the tunable trade-off: bigger, more joint
  // optimization; smaller, faster search).
  int max_ops = 16;
  // For the estimated time of each subgraph (roofline: the larger of bytes
  // over bandwidth and flops over peak, matmuls at the tensor-core peak);
  // 0 leaves the estimate at 0.
  double bytes_per_s = 0;
  double flops_per_s = 0;
  double mma_flops_per_s = 0;
};

// A tensor computed by one subgraph and read by later ones.
struct BoundaryTensor {
  // The consumers' input name, and the producer's output name unless the
  // value is also an original output: the producer then declares it once,
  // under the original output's name and in its layout. Unique among the
  // original program's input, output and let names and the other boundaries.
  std::string name;
  NodeId node;                  // the original program's node
  DType dtype = DType::F32;
  std::vector<Symbol> layout;   // the original program's dims, in a structural order (or the output's layout)
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int producer = -1;            // subgraph index
  std::vector<int> consumers;   // subgraph indices, increasing
};

// Where a subgraph's input comes from, and what a subgraph's output is.
struct SubgraphInput {
  bool boundary = false;
  uint32_t index = 0;           // boundary: into Partition::boundaries; else into the original inputs
};
struct SubgraphOutput {
  int original_output = -1;     // index into the original program's outputs, or -1
  int boundary = -1;            // index into Partition::boundaries, or -1
};

struct Subgraph {
  Program program;              // type-checked; name <original>_part<i>
  std::vector<NodeId> nodes;    // the original program's operators it computes, in order
  std::vector<SubgraphInput> inputs;    // one per program input, in declared order
  std::vector<SubgraphOutput> outputs;  // one per program output, in declared order
  uint64_t hash = 0;            // structural_hash(program)
  int ops = 0;                  // operators (nodes.size())
  double flops = 0;             // arithmetic: 2 per multiply-add of a matmul, 1 per element elsewhere
  double mma_flops = 0;         // the matmuls' part of flops
  int64_t bytes = 0;            // every input read once and every output written once
  int64_t boundary_in_bytes = 0;
  int64_t boundary_out_bytes = 0;
  double estimate_s = 0;        // roofline time with the options' rates (0 without them)
};

// Where each original output is found after the subgraphs ran.
struct OutputSource {
  int subgraph = -1;            // -1: the output is an original input passed through
  int output = -1;              // index into that subgraph's outputs (or into the original inputs)
};

struct Partition {
  std::vector<Subgraph> subgraphs;          // in execution order
  std::vector<BoundaryTensor> boundaries;   // in order of production
  std::vector<OutputSource> outputs;        // one per original output
  int max_ops = 0;
  int total_ops = 0;
  int64_t boundary_bytes = 0;   // Σ over boundaries of bytes · (1 write + one read per consumer)
  std::string order;            // the linear order that won: "node" or "depth-first"
  // Operators of the block the cuts repeat with (0: they do not repeat), and
  // how many times it repeats.
  int period = 0;
  int units = 0;
};

// Splits a type-checked, high-level program (no parallel, storage or tile
// operators: partitioning comes before the search). A program with at most
// max_ops operators gives one subgraph equal to it (renamed). Throws
// eqf::Error for a tiled program or max_ops < 1.
Partition partition_program(const Program& p, const PartitionOptions& options = {});

// The operators of a program in the sense of the partitioner: nodes that
// depend on an input and are not leaves.
int count_ops(const Program& p);

// A 64-bit hash of the program's canonical text, where inputs, outputs and
// dims are renamed in order of first appearance and lets unnamed: equal for
// programs that differ only in names. High-level programs only (eqf::Error
// otherwise); the program need not be type-checked.
uint64_t structural_hash(const Program& p);

// The canonical text structural_hash hashes (for tests and debugging).
std::string canonical_text(const Program& p);

}  // namespace eqf
