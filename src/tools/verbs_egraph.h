// The e-graph's verbs of `eqiforge-opt` (rows in eqiforge_opt.cc's table).
#pragma once

#include "tools/cli.h"

namespace eqf::cli {

// saturate FILE: loads a program into an e-graph, runs a rule set (or a
// schedule) under limits, prints the sizes, stop reason and statistics.
int verb_saturate(const Args& args);
// bench-egraph --ac N: the associativity + commutativity workload over N
// leaves, timed; prints {"eclasses": ..., "enodes": ..., "seconds": ...}.
int verb_bench_egraph(const Args& args);

}  // namespace eqf::cli
