// Reuse of kernel results: a candidate whose kernel computes a value that
// another kernel already stores loads it instead.
//
// Extraction fills each e-class once per candidate, with the requirements
// of all its uses together. The body of a kernel (the tile under its grid of
// combines) is therefore also what every other kernel using the same class
// computes: nGPT's normalizing kernel computed x@W again from the weight
// rather than loading the buffer the first kernel wrote. Filling a class
// once per use kind would let the two differ, but multiplies the partial
// programs (5x for nGPT) and the guide still ranks the recomputation first.
// So the reuse is a rewrite of the complete candidate instead, which the
// cost model ranks next to the original: B = partition(combine(B)) for any
// tile B, so every use of a kernel's body outside that kernel (and outside
// what it depends on) may read the kernel's result through the inverse
// partition chain.
#pragma once

#include <optional>

#include "eqiforge/ir/program.h"

namespace eqf::extract {

// The candidate with every kernel body's outside uses loading the kernel's
// result, one kernel at a time (each rewrite keeps the program acyclic), or
// nullopt when no kernel body has such a use. The result is typechecked.
std::optional<Program> reuse_kernel_results(const Program& p);

}  // namespace eqf::extract
