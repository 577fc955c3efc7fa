// Small helpers shared by the CLI's verbs.
#pragma once

#include <string>
#include <string_view>

#include "eqiforge/ir/program.h"
#include "tools/cli.h"

namespace eqf::cli {

// Parses and type-checks FILE, or standard input when the path is "-".
Program load_checked(const std::string& path);

// A positive number of seconds from option `name`, or `fallback` when the
// option is absent; anything else is a usage error naming the option.
double seconds_option(const Args& args, std::string_view name, double fallback);

}  // namespace eqf::cli
