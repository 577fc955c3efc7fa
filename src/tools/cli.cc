#include "tools/cli.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <iostream>
#include <limits>

#include "eqiforge/ir/diagnostic.h"

namespace eqf::cli {
namespace {

constexpr std::string_view kProgram = "eqiforge-opt";

const OptionSpec* find_option(const Verb& verb, std::string_view name) {
  for (const OptionSpec& o : verb.options)
    if (o.name == name) return &o;
  return nullptr;
}

const Verb* find_verb(std::span<const Verb> verbs, std::string_view name) {
  for (const Verb& v : verbs)
    if (v.name == name) return &v;
  return nullptr;
}

std::string usage_line(const Verb& verb) {
  std::string line = std::string(kProgram) + " " + std::string(verb.name);
  if (!verb.operands.empty()) line += " " + std::string(verb.operands);
  for (const OptionSpec& o : verb.options) {
    line += " [" + std::string(o.name);
    if (!o.value_name.empty()) line += " " + std::string(o.value_name);
    line += o.repeatable ? " ...]" : "]";
  }
  return line;
}

bool is_help(std::string_view arg) { return arg == "--help" || arg == "-h"; }

}  // namespace

bool Args::has(std::string_view option) const {
  return std::any_of(options_.begin(), options_.end(), [&](const auto& kv) { return kv.first == option; });
}

std::vector<std::string> Args::values(std::string_view option) const {
  std::vector<std::string> out;
  for (const auto& [name, value] : options_)
    if (name == option) out.push_back(value);
  return out;
}

std::optional<std::string> Args::value(std::string_view option) const {
  std::optional<std::string> out;
  for (const auto& [name, value] : options_)
    if (name == option) out = value;
  return out;
}

int64_t Args::integer(std::string_view option, int64_t fallback, int64_t lo, int64_t hi) const {
  std::optional<std::string> text = value(option);
  if (!text) return fallback;
  std::optional<int64_t> v = parse_integer(*text, lo, hi);
  if (!v)
    throw UsageError(std::string(option) + " expects an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + *text + "'");
  return *v;
}

uint64_t Args::unsigned_integer(std::string_view option, uint64_t fallback) const {
  std::optional<std::string> text = value(option);
  if (!text) return fallback;
  uint64_t v = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (text->empty() || ec != std::errc() || ptr != end)
    throw UsageError(std::string(option) + " expects a non-negative integer, got '" + *text + "'");
  return v;
}

std::optional<int64_t> parse_integer(std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) return std::nullopt;
  return v;
}

Args parse_args(const Verb& verb, std::span<const std::string_view> argv) {
  Args args;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view arg = argv[i];
    if (options_done || arg == "-" || !arg.starts_with("-")) {
      args.operands_.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* spec = find_option(verb, name);
    if (!spec)
      throw UsageError("unknown option '" + std::string(name) + "' for '" + std::string(verb.name) + "'");
    std::string value;
    if (spec->value_name.empty()) {
      if (inline_value) throw UsageError(std::string(name) + " takes no value");
    } else if (inline_value) {
      value = std::string(*inline_value);
    } else if (i + 1 < argv.size()) {
      value = std::string(argv[++i]);
    } else {
      throw UsageError(std::string(name) + " expects a value (" + std::string(spec->value_name) + ")");
    }
    if (!spec->repeatable && args.has(spec->name))
      throw UsageError(std::string(name) + " given more than once");
    args.options_.emplace_back(std::string(spec->name), std::move(value));
  }
  if (int(args.operands_.size()) != verb.num_operands) {
    throw UsageError("'" + std::string(verb.name) + "' expects " + std::to_string(verb.num_operands) +
                     " operand" + (verb.num_operands == 1 ? "" : "s") + " (" + std::string(verb.operands) +
                     "), got " + std::to_string(args.operands_.size()));
  }
  return args;
}

void print_overview(std::span<const Verb> verbs, std::ostream& out) {
  out << "usage: " << kProgram << " VERB [ARGS...]\n\n"
      << "eqiforge's command-line tool: reads IR programs (docs/ir.md) and works on them.\n\n"
      << "verbs:\n";
  size_t width = 0;
  for (const Verb& v : verbs) width = std::max(width, v.name.size());
  for (const Verb& v : verbs)
    out << "  " << v.name << std::string(width - v.name.size() + 2, ' ') << v.summary << "\n";
  out << "\n'" << kProgram << " VERB --help' (or '" << kProgram << " help VERB') describes one verb.\n"
      << "Exit status: 0 success, 1 a negative answer (equiv: not equivalent), 2 bad input or usage,\n"
      << "3 internal error.\n";
}

void print_verb_help(const Verb& verb, std::ostream& out) {
  out << "usage: " << usage_line(verb) << "\n\n" << verb.summary << "\n";
  if (!verb.details.empty()) out << "\n" << verb.details << "\n";
  if (!verb.options.empty()) {
    out << "\noptions:\n";
    for (const OptionSpec& o : verb.options) {
      std::string head = std::string(o.name);
      if (!o.value_name.empty()) head += " " + std::string(o.value_name);
      out << "  " << head << std::string(head.size() < 18 ? 18 - head.size() : 1, ' ') << o.help << "\n";
    }
  }
}

int run(std::span<const Verb> verbs, int argc, char** argv) {
  std::vector<std::string_view> all(argv + 1, argv + argc);
  if (all.empty()) {
    print_overview(verbs, std::cerr);
    return kExitError;
  }
  if (is_help(all[0])) {
    print_overview(verbs, std::cout);
    return kExitOk;
  }
  if (all[0] == "help") {
    if (all.size() == 1) {
      print_overview(verbs, std::cout);
      return kExitOk;
    }
    if (const Verb* v = find_verb(verbs, all[1])) {
      print_verb_help(*v, std::cout);
      return kExitOk;
    }
    std::cerr << kProgram << ": unknown verb '" << all[1] << "'; '" << kProgram
              << " --help' lists the verbs\n";
    return kExitError;
  }
  const Verb* verb = find_verb(verbs, all[0]);
  if (!verb) {
    std::cerr << kProgram << ": unknown verb '" << all[0] << "'; '" << kProgram
              << " --help' lists the verbs\n";
    return kExitError;
  }
  std::span<const std::string_view> rest(all.begin() + 1, all.end());
  // --help anywhere before `--` wins over everything else on the line.
  for (std::string_view arg : rest) {
    if (arg == "--") break;
    if (is_help(arg)) {
      print_verb_help(*verb, std::cout);
      return kExitOk;
    }
  }
  try {
    Args args = parse_args(*verb, rest);
    int rc = verb->run(args);
    std::cout.flush();
    return rc;
  } catch (const UsageError& e) {
    std::cerr << kProgram << " " << verb->name << ": " << e.what() << "\nusage: " << usage_line(*verb)
              << "\n";
    return kExitError;
  } catch (const Error& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << kProgram << " " << verb->name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace eqf::cli
