// Typed ids of the e-graph: an e-class, an e-node, and the origin (rule) that
// created an e-node. Never bare integers, so a node id cannot be passed where
// a class id is expected.
#pragma once

#include <cstdint>
#include <functional>

namespace eqf {

struct EClassId {
  static constexpr uint32_t kInvalid = 0xffffffffu;
  uint32_t v = kInvalid;

  constexpr EClassId() = default;
  constexpr explicit EClassId(uint32_t raw) : v(raw) {}
  constexpr bool valid() const { return v != kInvalid; }
  friend constexpr bool operator==(EClassId a, EClassId b) { return a.v == b.v; }
  friend constexpr bool operator!=(EClassId a, EClassId b) { return a.v != b.v; }
  friend constexpr bool operator<(EClassId a, EClassId b) { return a.v < b.v; }
};

struct ENodeId {
  static constexpr uint32_t kInvalid = 0xffffffffu;
  uint32_t v = kInvalid;

  constexpr ENodeId() = default;
  constexpr explicit ENodeId(uint32_t raw) : v(raw) {}
  constexpr bool valid() const { return v != kInvalid; }
  friend constexpr bool operator==(ENodeId a, ENodeId b) { return a.v == b.v; }
  friend constexpr bool operator!=(ENodeId a, ENodeId b) { return a.v != b.v; }
  friend constexpr bool operator<(ENodeId a, ENodeId b) { return a.v < b.v; }
};

// Who created an e-node: 0 is "input" (loaded from a program or added by
// hand), any other value a rule name registered with EGraph::intern_origin.
struct OriginId {
  uint32_t v = 0;
  friend constexpr bool operator==(OriginId a, OriginId b) { return a.v == b.v; }
  friend constexpr bool operator!=(OriginId a, OriginId b) { return a.v != b.v; }
};
inline constexpr OriginId kInputOrigin{0};

}  // namespace eqf

template <>
struct std::hash<eqf::EClassId> {
  size_t operator()(eqf::EClassId c) const noexcept { return c.v * 0x9E3779B97F4A7C15ull; }
};
