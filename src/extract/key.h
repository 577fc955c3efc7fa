// The canonical key of a partial program under ≈ (extract/partial.h).
#pragma once

#include <cstdint>

#include "eqiforge/egraph/egraph.h"

namespace eqf::extract {

// A 128-bit multiset hash: the sum of the filled classes' entry hashes, so
// it does not depend on the order in which classes were filled.
struct Key {
  uint64_t a = 0, b = 0;
  Key plus(EClassId c, uint64_t canon) const;
  friend bool operator==(const Key&, const Key&) = default;
};

}  // namespace eqf::extract
