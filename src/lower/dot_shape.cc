// Which contractions are one tl.dot, and of what matrices (dot_shape.h).
#include "eqiforge/lower/dot_shape.h"

namespace eqf {
namespace {

// k's position among an operand's dims, and the others in order.
std::optional<size_t> split_k(const std::vector<DimView>& v, Symbol k, std::vector<DimView>* run) {
  std::optional<size_t> at;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].dim == k) at = i;
    else run->push_back(v[i]);
  }
  if (!at || run->empty()) return std::nullopt;
  return at;
}

// One dim is padded to the smallest dot; several are flattened, which needs
// their tiles to be exactly their whole extents' and large enough together.
bool matrix_dim(const Program& p, const std::vector<DimView>& run) {
  if (run.size() == 1) return true;
  int64_t product = 1;
  for (const DimView& v : run) {
    int64_t tile = v.depth == 0 ? whole_tile(p, v.dim) : 0;
    if (tile == 0) return false;
    product *= tile;
  }
  return product >= kMinDotTile;
}

}  // namespace

std::optional<GemvShape> gemv_shape(const std::vector<DimView>& a, const std::vector<DimView>& b, Symbol k,
                                    DType dtype) {
  if (dtype != DType::F16 && dtype != DType::BF16) return std::nullopt;
  GemvShape s;
  s.vector_first = a.size() == 1;
  const std::vector<DimView>& vec = s.vector_first ? a : b;
  const std::vector<DimView>& mat = s.vector_first ? b : a;
  if (vec.size() != 1 || mat.size() != 2 || vec[0].dim != k) return std::nullopt;
  s.mat_k = mat[0].dim == k ? 0 : 1;
  if (mat[s.mat_k].dim != k) return std::nullopt;
  s.k = vec[0];
  s.cols = mat[1 - s.mat_k];
  return s;
}

int64_t whole_tile(const Program& p, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  if (!info || info->collected_from || info->extent < 1) return 0;
  int64_t t = 1;
  while (t < info->extent) t *= 2;
  return t;
}

std::optional<DotShape> dot_shape(const Program& p, const std::vector<DimView>& a, const std::vector<DimView>& b,
                                  Symbol k) {
  DotShape s;
  std::optional<size_t> ak = split_k(a, k, &s.rows), bk = split_k(b, k, &s.cols);
  if (!ak || !bk) return std::nullopt;
  for (const DimView& x : s.rows)
    for (const DimView& y : s.cols)
      if (x.dim == y.dim) return std::nullopt;  // a batch dim: not one matrix product
  if (!matrix_dim(p, s.rows) || !matrix_dim(p, s.cols)) return std::nullopt;
  s.k = a[*ak];
  s.a_k = *ak;
  s.b_k = *bk;
  return s;
}

}  // namespace eqf
