// Row-major walks over an index space with one running offset per operand
// (internal to src/interp).
//
// Every operator of the interpreter is a loop over some index space (the
// coordinates of a value's axes, then its local dims) that reads and writes
// flat buffers through per-operand strides; a stride of 0 broadcasts. The
// walk keeps the offsets incrementally, so the body costs no index
// arithmetic and no allocation per element.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace eqf::interp {

// Calls body(offsets, idx) for every index of `shape` in row-major order.
// offsets[k] = base[k] + Σ_i idx[i] * strides[k][i]; idx is the full
// multi-index (nullptr for rank 0). Nothing is called when an extent is 0.
template <size_t N, class Body>
void walk(std::span<const int64_t> shape, const std::array<const int64_t*, N>& strides,
          const std::array<int64_t, N>& base, Body&& body) {
  const size_t r = shape.size();
  for (int64_t e : shape)
    if (e <= 0) return;
  std::array<int64_t, N> off = base;
  if (r == 0) {
    body(off, static_cast<const int64_t*>(nullptr));
    return;
  }
  // Ranks are small (a few axes and dims); the heap is used only past 16.
  int64_t small[16];
  std::vector<int64_t> big;
  int64_t* idx = small;
  if (r > 16) {
    big.resize(r);
    idx = big.data();
  }
  for (size_t i = 0; i < r; ++i) idx[i] = 0;
  const int64_t inner = shape[r - 1];
  for (;;) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      idx[r - 1] = i;
      body(static_cast<const std::array<int64_t, N>&>(o), static_cast<const int64_t*>(idx));
      for (size_t k = 0; k < N; ++k) o[k] += strides[k][r - 1];
    }
    idx[r - 1] = 0;
    // Carry into the outer positions; `off` tracks the offsets at inner index 0.
    size_t ax = r - 1;
    for (;;) {
      if (ax == 0) return;
      --ax;
      ++idx[ax];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][ax];
      if (idx[ax] < shape[ax]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][ax] * shape[ax];
      idx[ax] = 0;
    }
  }
}

template <size_t N, class Body>
void walk(std::span<const int64_t> shape, const std::array<const int64_t*, N>& strides, Body&& body) {
  walk<N>(shape, strides, std::array<int64_t, N>{}, static_cast<Body&&>(body));
}

}  // namespace eqf::interp
