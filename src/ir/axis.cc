#include "eqiforge/ir/axis.h"

#include <charconv>

namespace eqf {

std::string Axis::name() const { return std::string(dim.str()) + "." + std::to_string(level); }

std::optional<Axis> Axis::parse(std::string_view text) {
  size_t dot = text.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
  std::string_view level_text = text.substr(dot + 1);
  unsigned level = 0;
  auto [end, ec] = std::from_chars(level_text.data(), level_text.data() + level_text.size(), level);
  if (ec != std::errc() || end != level_text.data() + level_text.size() || level > kMaxLevel)
    return std::nullopt;
  return Axis{Symbol::intern(text.substr(0, dot)), uint8_t(level)};
}

Symbol Axis::collected_dim() const { return Symbol::intern("c_" + name()); }

}  // namespace eqf
