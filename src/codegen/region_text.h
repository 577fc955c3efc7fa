// The IR region a kernel implements, as text for its comment: the region's
// named values as `let`-style lines (dependencies first), the root last.
// Values from other kernels (collected states, intermediates) and inputs
// appear by name.
#pragma once

#include <string>
#include <vector>

#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf::codegen {

// Lines "name = (op ...)"; the root's line is "<root_name> = (...)".
std::vector<std::string> region_text(const Program& p, const LoweredProgram& lp, const Kernel& k,
                                     const std::string& root_name);

}  // namespace eqf::codegen
