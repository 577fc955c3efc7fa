// The word mixer of extraction's hashes (canonical forms and ≈-keys): the
// running hash combined with the next word, then the splitmix64 finalizer.
#pragma once

#include <cstdint>

namespace eqf::extract {

inline uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace eqf::extract
