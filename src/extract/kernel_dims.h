// Kernel-private dims: a dim that one kernel reduces away is renamed in it,
// so its block sizes are that kernel's own.
//
// Axes are canonical (ir/axis.h): the first split of dim k1 is `k1.0`
// wherever it happens, and block sizes are chosen per axis. So when one
// kernel writes a buffer over k1 in a grid of k1.0 blocks and the next one
// reads it in a loop over k1.0 blocks (rmsnorm + SwiGLU FFN at 16 tokens:
// the up-projection's columns and the down-projection's K loop), both
// kernels get the same block, though the buffer between them is written
// whole and the two choices are independent. The cost model priced that
// FFN's consumer at 23.4 us with the producer's 64-wide block, 17.9 us at
// its own 256.
//
// The rewrite: in a kernel whose result does not have dim d, every use of d
// (the axes d.l, the contraction or reduction over d, iota d) becomes a new
// dim d_<kernel> declared as `(d_<kernel> d)` (dims.h: the same extent, an
// axis space of its own), and every materialized tensor the kernel reads
// with dim d is read through `(rename d d_<kernel> X)`. That is exact: a
// rename is a view, and inside the kernel d only ever meets d. The first
// kernel that uses d (the one whose result has d, if any) keeps it.
#pragma once

#include <optional>

#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf::extract {

// p (type-checked, `lowered` its kernels) with every kernel-private dim that
// another kernel also uses renamed in the kernels after the first; nullopt
// when there is none. The result is type-checked.
std::optional<Program> separate_kernel_dims(const Program& p, const LoweredProgram& lowered);

}  // namespace eqf::extract
