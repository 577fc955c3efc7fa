// The typing rule of every operator (docs/ir.md lists them).
#pragma once

#include <span>
#include <string>
#include <variant>

#include "eqiforge/ir/node.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/ir/type.h"

namespace eqf {

// The type of op(attrs)(children), or an error text that names the problem
// and what was expected ("add: operand 2 is part(m) on axis m.0 but operand 1
// is rep and has dim m; replicate needs the operand without m"). Pure apart
// from interning; `dims` gains c_<p> when a collect is typed. The e-graph's
// analysis calls this for every new e-node.
struct TypeError {
  std::string message;
};
std::variant<TypeId, TypeError> infer_type(Op op, const Attrs& attrs, std::span<const TypeId> children,
                                           DimTable& dims);

// Types every node of p (stored with p.set_types) and checks inputs and
// outputs (an output must be a tensor with no parallel axes, its layout a
// permutation of its dims). Throws eqf::Error at the offending node.
void typecheck(Program& p);

}  // namespace eqf
