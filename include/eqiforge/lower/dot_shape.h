// How a contraction's tiles reach tl.dot. The Triton emitter and the cost
// model decide it with this one rule, so the model prices the kernel the
// emitter writes.
#pragma once

#include <optional>
#include <vector>

#include "eqiforge/ir/program.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {

// The smallest tl.dot: every matrix dim of a dot is at least this (the
// emitter pads a single dim's tile to it).
inline constexpr int kMinDotTile = 16;

// A contraction over k as one tl.dot of a (rows x k) by a (k x cols) matrix.
// Each side's dims other than k (in kernel order, k anywhere among them) are
// its matrix dim; several are flattened into one (tl.permute moving k to the
// end it takes, then tl.reshape), which takes whole dims with static extents
// whose tiles multiply to at least kMinDotTile (a flattened run cannot be
// padded). A run of one dim is padded.
struct DotShape {
  std::vector<DimView> rows, cols;  // kernel order
  DimView k;
  size_t a_k = 0, b_k = 0;  // k's position among each operand's dims
  bool flattened() const { return rows.size() > 1 || cols.size() > 1; }
};

// a and b: the operands' live tile dims (squeezed ones left out) in kernel
// order. nullopt when the contraction is a broadcast product and a sum
// (k missing from one side, a dim on both sides, a run that cannot be
// flattened).
std::optional<DotShape> dot_shape(const Program& p, const std::vector<DimView>& a, const std::vector<DimView>& b,
                                  Symbol k);

// A contraction that dot_shape leaves to a multiply and sum but that has a
// tl.dot form of its own (the emitter's GEMV_DOT, the cost model's
// gemv_dot): a half-precision product over k of a vector (k alone) and a
// matrix (k and one other dim), in either order; the vector is padded to
// kMinDotTile rows.
struct GemvShape {
  bool vector_first = true;  // a is the vector
  size_t mat_k = 0;          // k's position among the matrix's two dims
  DimView k, cols;           // the vector's k, the matrix's other dim
};

// a and b as for dot_shape; `dtype` the contraction's result. nullopt when
// it is not such a GEMV.
std::optional<GemvShape> gemv_shape(const std::vector<DimView>& a, const std::vector<DimView>& b, Symbol k,
                                    DType dtype);

// The tile size of a whole dim with a static extent (next power of two);
// 0 for a dim whose extent is not static.
int64_t whole_tile(const Program& p, Symbol d);

}  // namespace eqf
