// Attribute values as text, the way docs/ir.md writes them: the e-graph's
// dumps print them and the pattern parser reads them.
#pragma once

#include <string>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/node.h"
#include "eqiforge/ir/sexpr.h"

namespace eqf {

// The shortest text that reads back as the same double ("2", "-0.5", "inf").
std::string number_text(double v);

// The text of attribute `index` (a position in the op's signature) of op.
std::string attr_text(Op op, const Attrs& attrs, int index);

// The slot of attribute `index` in Node::attrs (F64 takes two slots).
int attr_slot(Op op, int index);
int attr_width(AttrKind k);  // slots taken: 2 for F64, else 1

// Reads one attribute of kind k from `e` into attrs[slot..]. Throws
// eqf::Error at e's position naming `where` and what was expected.
void parse_attr(const SExpr& e, AttrKind k, Attrs& attrs, int slot, const std::string& file,
                const std::string& where);

// A literal number (2, -0.5, 1e-6, inf, -inf), or false.
bool parse_number_atom(const std::string& text, double& out);

}  // namespace eqf
