// The partitioning verb of `eqiforge-opt` (its row is in eqiforge_opt.cc's table).
#pragma once

#include "tools/cli.h"

namespace eqf::cli {

// partition FILE [--max-ops N] [--target NAME] [--json]: splits FILE into
// subgraphs of at most N operators with little traffic across the cuts and
// reports them (with each subgraph's program under --json).
int verb_partition(const Args& args);

// compose A B [--keep NAME ...] [--name NAME] [--json]: one program that
// feeds B's inputs named like A's outputs from A's values (compose.h).
int verb_compose(const Args& args);

}  // namespace eqf::cli
