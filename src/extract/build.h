// Complete partial programs to Programs.
#pragma once

#include <span>
#include <string>

#include "extract/partial.h"
#include "eqiforge/ir/program.h"

namespace eqf::extract {

// The program a complete partial program describes: the e-graph's dims and
// inputs (in their declared order), then each filled class's option as
// nodes, and the outputs. Type-checked; throws eqf::Error if it does not
// type-check (a bug in the e-graph's analysis, not in the program).
Program build_program(const EGraph& g, OptionTable& table, const PartialProgram& s, std::span<const EClassId> roots,
                      std::span<const OutputDecl> outputs, const std::string& name);

}  // namespace eqf::extract
