// Whether the tests are built with AddressSanitizer (CMake's EQF_SANITIZE,
// tests/run.sh's third stage), for the checks it changes: the allocator's
// figures, and the time limits of work that runs 10-20x slower under it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define EQF_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EQF_TEST_UNDER_ASAN 1
#endif
#endif

namespace eqf::testing {

// What a time limit set for an optimized build is multiplied by.
#ifdef EQF_TEST_UNDER_ASAN
inline constexpr double kTimeScale = 20;
#else
inline constexpr double kTimeScale = 1;
#endif

}  // namespace eqf::testing
