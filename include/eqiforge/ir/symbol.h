// Interned symbols: dim names, input names, program names.
//
// A Symbol is a 32-bit id into one process-wide table. Interning is
// deterministic: ids are handed out in first-intern order, so the same
// inputs processed in the same order give the same ids (the e-graph's dumps
// rely on this). Comparing symbols compares ids; `str()` gives the text back.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace eqf {

class Symbol {
 public:
  constexpr Symbol() = default;
  static Symbol intern(std::string_view text);
  // The symbol with this raw id (as stored in node attributes).
  static constexpr Symbol from_raw(uint32_t id) { return Symbol(id); }

  std::string_view str() const;
  constexpr uint32_t raw() const { return id_; }
  constexpr bool valid() const { return id_ != kInvalid; }

  friend constexpr bool operator==(Symbol a, Symbol b) { return a.id_ == b.id_; }
  friend constexpr bool operator!=(Symbol a, Symbol b) { return a.id_ != b.id_; }
  friend constexpr bool operator<(Symbol a, Symbol b) { return a.id_ < b.id_; }

 private:
  static constexpr uint32_t kInvalid = 0xffffffffu;
  constexpr explicit Symbol(uint32_t id) : id_(id) {}
  uint32_t id_ = kInvalid;
};

}  // namespace eqf

template <>
struct std::hash<eqf::Symbol> {
  size_t operator()(eqf::Symbol s) const noexcept { return s.raw() * 0x9E3779B97F4A7C15ull; }
};
