// The verbs of `eqiforge-opt`, one function each; their rows (operands,
// options, help) are in the table in eqiforge_opt.cc.
#pragma once

#include "tools/cli.h"

namespace eqf::cli {

// verbs_ir.cc: reading, checking, printing and evaluating programs.
int verb_check(const Args& args);
int verb_print(const Args& args);
int verb_eval(const Args& args);
int verb_equiv(const Args& args);

// verbs_codegen.cc: generating code.
int verb_emit(const Args& args);

// verbs_cost.cc: the cost model's bound of a tiled program.
int verb_estimate(const Args& args);

// verbs_gen.cc: random programs for fuzzing.
int verb_gen_program(const Args& args);

}  // namespace eqf::cli
