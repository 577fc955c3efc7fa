// Which contractions are one tl.dot, and of what matrices (dot_shape.h).
#include "eqiforge/lower/dot_shape.h"

#include <algorithm>

namespace eqf {
namespace {

struct Run {
  std::vector<DimView> dims;
  bool k_first = false;
};

// The dims of one operand other than k, when k is at an end of them.
std::optional<Run> run_beside_k(const std::vector<DimView>& v, Symbol k) {
  if (v.size() < 2) return std::nullopt;
  if (v.front().dim == k) return Run{{v.begin() + 1, v.end()}, true};
  if (v.back().dim == k) return Run{{v.begin(), v.end() - 1}, false};
  return std::nullopt;
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

int64_t whole_tile(const Program& p, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  if (!info || info->collected_from || info->extent < 1) return 0;
  int64_t t = 1;
  while (t < info->extent) t *= 2;
  return t;
}

std::optional<DotShape> dot_shape(const Program& p, const std::vector<DimView>& a, const std::vector<DimView>& b,
                                  Symbol k) {
  std::optional<Run> ra = run_beside_k(a, k), rb = run_beside_k(b, k);
  if (!ra || !rb) return std::nullopt;
  for (const DimView& x : ra->dims)
    for (const DimView& y : rb->dims)
      if (x.dim == y.dim) return std::nullopt;  // a batch dim: not one matrix product
  if (!matrix_dim(p, ra->dims) || !matrix_dim(p, rb->dims)) return std::nullopt;
  auto order = [&](const DimView& v) { return p.dims.order(v.dim); };
  auto lowest = [&](const std::vector<DimView>& r) {
    int o = order(r.front());
    for (const DimView& v : r) o = std::min(o, order(v));
    return o;
  };
  auto highest = [&](const std::vector<DimView>& r) {
    int o = order(r.front());
    for (const DimView& v : r) o = std::max(o, order(v));
    return o;
  };
  DotShape s;
  if (highest(ra->dims) < lowest(rb->dims)) s.cols_first = false;
  else if (highest(rb->dims) < lowest(ra->dims)) s.cols_first = true;
  else return std::nullopt;  // interleaved: the result would need a permute
  s.rows = ra->dims;
  s.cols = rb->dims;
  s.k = a[ra->k_first ? 0 : a.size() - 1];
  s.a_k_first = ra->k_first;
  s.b_k_first = rb->k_first;
  return s;
}

}  // namespace eqf
