// A Graphviz view of part of an e-graph, for debugging: an e-class and the
// classes below it, to a depth. Each class is a cluster (labelled with its id
// and data), each e-node a box inside it with edges to its children's
// clusters; classes at the frontier are drawn collapsed.
#pragma once

#include <string>

#include "eqiforge/egraph/egraph.h"

namespace eqf {

std::string to_dot(const EGraph& g, EClassId root, int depth);

}  // namespace eqf
