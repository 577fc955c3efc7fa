// The rule library's verbs of `eqiforge-opt` (rows in eqiforge_opt.cc's table).
#pragma once

#include "tools/cli.h"

namespace eqf::cli {

// rules [--family F] [--verify [--json]]: lists every rule with its family,
// or runs the soundness check on every rule.
int verb_rules(const Args& args);
// prove A B: saturates A's e-graph with the rule library and checks that B's
// output terms land in A's output classes.
int verb_prove(const Args& args);

}  // namespace eqf::cli
