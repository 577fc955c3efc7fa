// What makes a complete program a valid candidate (DESIGN §5, §6): it has a
// kernel form (lower/kernel.h), every computation lies in a kernel region,
// and its kernels stay within the configured axis limits. Extraction builds
// only programs of this shape; this check is the last word on each.
#pragma once

#include <optional>
#include <string>

#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {

struct ExtractLimits {
  int max_grid_axes = 3;    // tl.program_id(0..2)
  int max_loop_depth = 2;   // nested preduce loops in one kernel
  int max_chain = 8;        // wrappers in one load chain or grid chain
};

// Why a type-checked program is not a valid candidate, or nullopt if it is.
// On success, *lowered (when given) receives its kernels.
std::optional<std::string> check_candidate(const Program& p, const ExtractLimits& limits,
                                           LoweredProgram* lowered = nullptr);

}  // namespace eqf
