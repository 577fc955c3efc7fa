// Triton code generation (DESIGN §6): a lowered program becomes one readable
// Python module with a `@triton.jit` function per kernel and a host function
//
//     forward(*inputs, *, block_<axis>=None, ..., num_warps=4, num_stages=2,
//             input_precision="ieee") -> tuple of outputs
//
// that takes the program's inputs in declared order (torch tensors of the
// declared dtypes and shapes, any strides), allocates the outputs and the
// intermediate buffers, launches the kernels in order and returns the outputs
// in their declared layouts.
//
// In the kernels: grid axes are tl.program_id dims; preduce axes are `for`
// loops with fp32 accumulators (repaired reductions keep running state and
// apply their repair at every step); loads and stores use the tensors'
// strides and mask ragged ends; dims whole inside a tile are padded to a power
// of two; tile_matmul is tl.dot for two 2-D operands (padded to at least 16)
// and a broadcast product with tl.sum otherwise. Block sizes, warps and stages
// are launch parameters, never baked in.
//
// The module also exposes, for tools and tests:
//   PROGRAM      the program's name
//   BLOCK_PARAMS {axis name: forward's keyword for its block size}
//   UNIT_AXES    axes fixed to block size 1 (squeezed out of the tiles)
#pragma once

#include <string>

#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {

struct TritonOptions {
  LowerOptions lower;
  std::string source;  // shown in the module's header comment (e.g. the file name)
};

// Lowers and emits a type-checked tiled program. Throws eqf::Error (from
// lowering or for an op the emitter has no form for) naming the node.
std::string emit_triton(const Program& p, const TritonOptions& options = {});
std::string emit_triton(const Program& p, const LoweredProgram& lowered, const std::string& source = "");

}  // namespace eqf
