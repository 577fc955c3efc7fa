// Proving one program equal to another by saturation: after the rule
// library has saturated program A's e-graph, is every output term of B in
// the class of A's output of the same name? The proof shows which rules
// built the target's e-nodes (e-node provenance).
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/ir/program.h"

namespace eqf {

struct ProofReport {
  bool proved = false;
  // Per output of B: found, or the first of its nodes (bottom-up) that the
  // e-graph does not hold, printed as a term.
  std::vector<std::string> outputs;
  // The rules that created the e-nodes of B's terms, with counts ("input"
  // for nodes of A itself).
  std::map<std::string, int> rules;
  std::string text() const;
};

// Looks B's outputs up in g (which is not changed), matching them to
// `roots` (A's outputs, in A's order) by name. B's inputs and dims must be
// A's.
ProofReport find_in_class(const EGraph& g, std::span<const EClassId> roots,
                          std::span<const OutputDecl> root_decls, const Program& target);

}  // namespace eqf
