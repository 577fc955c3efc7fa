// The command-line driver of `eqiforge-opt`: a table of verbs, each a name,
// an operand list, its options and one function, and a small argument parser
// that checks a command line against a verb's row before the verb runs.
//
// Adding a verb: write `int verb_NAME(const cli::Args&)` (a file per group of
// verbs, e.g. verbs_ir.cc), declare it in verbs.h, and add its row to the
// table in eqiforge_opt.cc. Help texts, option checking and exit codes come
// from the row; the verb only reads its Args.
//
// Exit codes: 0 success; 1 a negative answer (e.g. `equiv` found a
// difference); 2 bad input (an eqf::Error: bad text, types, files) or bad
// usage; 3 an internal error (any other exception: a bug).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eqf::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNo = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitInternal = 3;

struct Verb;

// A mistake in the command line itself: unknown verb or option, a missing or
// extra operand, a malformed number. Reported with the verb's usage line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string_view name;             // "--seed"
  std::string_view value_name = {};  // "N"; empty for a flag that takes no value
  std::string_view help;             // one line
  bool repeatable = false;           // may be given more than once (--block)
};

// A parsed command line: operands in order, options as given.
class Args {
 public:
  const std::vector<std::string>& operands() const { return operands_; }
  const std::string& operand(size_t i) const { return operands_.at(i); }

  bool has(std::string_view option) const;
  // Every value of a repeatable option, in the order given.
  std::vector<std::string> values(std::string_view option) const;
  std::optional<std::string> value(std::string_view option) const;

  // The option's value as an integer in [lo, hi], or `fallback` when absent.
  // Throws UsageError naming the option and the accepted range otherwise.
  int64_t integer(std::string_view option, int64_t fallback, int64_t lo, int64_t hi) const;
  uint64_t unsigned_integer(std::string_view option, uint64_t fallback) const;

 private:
  friend Args parse_args(const Verb& verb, std::span<const std::string_view> argv);
  std::vector<std::string> operands_;
  std::vector<std::pair<std::string, std::string>> options_;  // (name, value) in order
};

using VerbFn = int (*)(const Args&);

struct Verb {
  std::string_view name;          // "equiv"
  std::string_view operands;      // "A B", for the usage line
  int num_operands;               // exact count
  std::string_view summary;       // one line, for the overview
  std::string_view details = {};  // paragraphs for `eqiforge-opt VERB --help`
  std::vector<OptionSpec> options = {};
  VerbFn run = nullptr;
};

// Parses the arguments after the verb against its row. Accepts `--opt V`,
// `--opt=V`, and `--` to end options (so a file may start with '-'); a lone
// `-` is an operand (standard input). Throws UsageError.
Args parse_args(const Verb& verb, std::span<const std::string_view> argv);

// An integer in [lo, hi] from text (all of it), or nullopt.
std::optional<int64_t> parse_integer(std::string_view text, int64_t lo, int64_t hi);

void print_overview(std::span<const Verb> verbs, std::ostream& out);
void print_verb_help(const Verb& verb, std::ostream& out);

// The whole of main(): dispatches argv[1] through the table, handles --help,
// `help VERB`, and turns exceptions into messages and exit codes.
int run(std::span<const Verb> verbs, int argc, char** argv);

}  // namespace eqf::cli
