// The equivalence ≈ of extraction, on whole programs: a hash that is equal
// for programs that differ only in the operand order of commutative
// operators and contractions, in the order of the partition/replicate
// wrappers of a load chain, and in the order of a kernel's grid combines.
// Programs with equal hashes have the same kernels, loads and cost.
//
// Extraction computes ≈ on partial programs from the e-graph (its keys);
// this program-level form is an independent statement of the same relation,
// against which tests compare extraction's modes.
#pragma once

#include <cstdint>

#include "eqiforge/ir/program.h"

namespace eqf {

uint64_t canonical_hash(const Program& p);

}  // namespace eqf
