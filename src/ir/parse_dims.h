// The dims of a value worked out from the structure of its term alone, before
// any type checking: what the parser needs to give an output written without
// a layout its default one (its dims in declaration order).
#pragma once

#include <optional>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf {

// The dims of `root`'s value in the dim table's declaration order, or nullopt
// if it is a tuple. Dims made by `collect` are declared in `p.dims` on the way.
// Ill-formed terms (which typecheck reports) give some set of dims, not an
// error: the result only picks a default layout.
std::optional<std::vector<Symbol>> structural_dims(Program& p, NodeId root);

}  // namespace eqf
