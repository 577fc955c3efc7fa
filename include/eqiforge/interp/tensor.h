// A dense float64 tensor with named dims, row-major in `dims` order.
// The interpreter's inputs and outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "eqiforge/ir/symbol.h"

namespace eqf {

struct Tensor64 {
  std::vector<Symbol> dims;     // layout, outermost first
  std::vector<int64_t> shape;   // extents, same order
  std::vector<double> data;     // product(shape) values

  int64_t numel() const;
  // The same values with dims reordered to `layout` (a permutation of dims).
  Tensor64 transposed(const std::vector<Symbol>& layout) const;
};

// max |a-b| / max(max |b|, tiny) over matching dims (b's layout may differ).
double max_relative_error(const Tensor64& a, const Tensor64& b);
// A checksum that is stable across runs and printing: sum and sum of squares
// rounded to 10 significant digits.
std::string checksum_text(const Tensor64& t);

}  // namespace eqf
