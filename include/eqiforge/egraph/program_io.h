// Programs in and out of the e-graph.
//
// Loading adds every node of a program (its inputs declared first, so the
// analysis knows their types) and returns the classes of its outputs.
// Extraction builds a Program back from classes: the term with the fewest
// e-nodes in each (ties go to the class's first e-node in stamp order, so the
// result is deterministic).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/ir/program.h"

namespace eqf {

// Declares p's dims (an existing dim must have the same extent) and inputs
// in g, adds its nodes and returns its outputs' classes, in order. Throws
// eqf::Error when a node does not type-check.
std::vector<EClassId> load_program(EGraph& g, const Program& p);

// The e-nodes of g that p's nodes are, one per node of p (in p's order), or
// nullopt when some node of p is not in g; then *missing (when given) names
// the first such node. g must be clean(); nothing is added.
std::optional<std::vector<ENodeId>> find_program_nodes(const EGraph& g, const Program& p,
                                                       std::string* missing = nullptr);

// For each class, the size (e-node count) of its smallest term; saturates at
// UINT64_MAX for classes with no finite term (only cycles).
std::vector<uint64_t> smallest_term_sizes(const EGraph& g);

// A program computing the smallest term of each root. `outputs`, when given,
// names the outputs and their layouts (one per root, e.g. the loaded
// program's); else they are out0, out1, ... with dims in declaration order.
// The e-graph must be clean(). The result is type-checked.
Program extract_smallest(const EGraph& g, std::span<const EClassId> roots,
                         std::span<const OutputDecl> outputs = {});

}  // namespace eqf
