// Parallel axes.
//
// Axis names are canonical, not fresh: the axis that partitions dim `m` at
// nesting level 0 is `m.0`, the next level `m.1`. The same refinement reached
// from two places then builds the same term and the e-graph shares it.
// Level l > 0 splits the local extent left by level l-1 (its block size), so
// `m.1` may only appear where `m.0` is in scope.
//
// Block sizes are symbolic (B_p) in types and programs; the interpreter and
// the emitted kernels receive concrete values. The number of coordinates of
// `d.l` is ceil(size / B_{d.l}) where size is extent(d) for l = 0 and
// B_{d.(l-1)} otherwise; the last block may be ragged (masked).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "eqiforge/ir/symbol.h"

namespace eqf {

struct Axis {
  Symbol dim;
  uint8_t level = 0;

  static constexpr uint32_t kMaxLevel = 15;
  // Packs into one attribute slot: dim id in the high bits, level in the low 4.
  uint32_t pack() const { return (dim.raw() << 4) | level; }
  static Axis unpack(uint32_t bits) { return Axis{Symbol::from_raw(bits >> 4), uint8_t(bits & 15)}; }

  std::string name() const;                                   // "m.0"
  static std::optional<Axis> parse(std::string_view text);    // split at the last '.'
  // The dim a `collect` of this axis creates: "c_" + name(), e.g. c_t.0.
  Symbol collected_dim() const;

  friend bool operator==(Axis a, Axis b) { return a.dim == b.dim && a.level == b.level; }
  friend bool operator!=(Axis a, Axis b) { return !(a == b); }
  friend bool operator<(Axis a, Axis b) { return a.pack() < b.pack(); }
};

}  // namespace eqf
