// The extraction verb of `eqiforge-opt` (its row is in eqiforge_opt.cc's table).
#pragma once

#include "tools/cli.h"

namespace eqf::cli {

// extract FILE --mode early|after|none [--top K] [--target NAME] [--json]:
// builds FILE's e-graph (saturated with the rule library, and united with
// --also programs), extracts candidates and ranks them by the cost model.
int verb_extract(const Args& args);

}  // namespace eqf::cli
