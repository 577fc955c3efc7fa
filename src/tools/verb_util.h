// Small helpers shared by the CLI's verbs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/ir/program.h"
#include "tools/cli.h"

namespace eqf::cli {

// A JSON string literal: quotes, backslashes and control characters escaped.
std::string json_quoted(std::string_view s);

// A number for JSON output (6 significant digits; null when not finite).
std::string json_number(double v);

// Parses and type-checks FILE, or standard input when the path is "-".
Program load_checked(const std::string& path);

// The block sizes given by --block AXIS=N (repeatable); a usage error names a
// malformed or repeated one.
BlockSizes parse_blocks(const Args& args);

// A positive number of seconds from option `name`, or `fallback` when the
// option is absent; anything else is a usage error naming the option.
double seconds_option(const Args& args, std::string_view name, double fallback);

// --memory-limit MB (MiB, a positive integer) in bytes; 0 when absent (no cap).
size_t memory_limit_option(const Args& args);

// ---- extraction (the `extract` and `emit --candidate` verbs) ---------------------

// What saturation did; `ran` is false under --rules none.
struct Saturation {
  bool ran = false;
  RunReport report;
};

// The e-graph of program `p` (read from args.operand(0)): its program, the
// --also programs united output by output, then saturated under --rules
// (default: the library's schedule; none; or a registered set) within
// --node-limit and --sat-time-limit. `roots` receives the outputs' classes.
Saturation build_egraph(const Args& args, const Program& p, EGraph& g, std::vector<EClassId>& roots);

// Extraction options from the command line (--mode, --order, --candidates,
// --max-states, --time-limit, --prune, --target, --no-cost). The cost model
// lives here so that options.cost stays valid: an ExtractSetup is not copied.
struct ExtractSetup {
  ExtractOptions options;
  std::unique_ptr<CostModel> cost;  // null under --no-cost
};
// `min_candidates`: a best-first search must not stop before this many
// (emit --candidate K needs K of them).
void read_extract_options(const Args& args, const Program& p, ExtractSetup& setup, size_t min_candidates = 0);

// The options above, for the rows of the verbs that extract: `own` followed
// by the e-graph's and extraction's options.
std::vector<OptionSpec> extract_option_specs();
std::vector<OptionSpec> with_extract_options(std::vector<OptionSpec> own);

}  // namespace eqf::cli
