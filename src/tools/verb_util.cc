#include "tools/verb_util.h"

#include <charconv>
#include <iostream>
#include <iterator>
#include <optional>

#include "eqiforge/ir/parse.h"

namespace eqf::cli {

Program load_checked(const std::string& path) {
  if (path != "-") return parse_and_check_file(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  return parse_and_check(text, "<stdin>");
}

double seconds_option(const Args& args, std::string_view name, double fallback) {
  std::optional<std::string> text = args.value(name);
  if (!text) return fallback;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || ptr != text->data() + text->size() || !(v > 0))
    throw UsageError(std::string(name) + " expects a positive number of seconds, got '" + *text + "'");
  return v;
}

}  // namespace eqf::cli
