#include "eqiforge/interp/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "eqiforge/ir/diagnostic.h"

namespace eqf {

int64_t Tensor64::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Tensor64 Tensor64::transposed(const std::vector<Symbol>& layout) const {
  if (layout.size() != dims.size()) throw Error("transposed: layout has " + std::to_string(layout.size()) +
                                               " dims, the tensor " + std::to_string(dims.size()));
  const size_t rank = dims.size();
  std::vector<size_t> src_axis(rank);  // for each output axis, the source axis
  for (size_t i = 0; i < rank; ++i) {
    auto it = std::find(dims.begin(), dims.end(), layout[i]);
    if (it == dims.end()) throw Error("transposed: the tensor has no dim " + std::string(layout[i].str()));
    src_axis[i] = size_t(it - dims.begin());
  }
  std::vector<int64_t> src_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) src_stride[i - 1] = src_stride[i] * shape[i];
  Tensor64 out;
  out.dims = layout;
  for (size_t i = 0; i < rank; ++i) out.shape.push_back(shape[src_axis[i]]);
  out.data.resize(data.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < int64_t(out.data.size()); ++flat) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src += idx[i] * src_stride[src_axis[i]];
    out.data[flat] = data[src];
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < out.shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

double max_relative_error(const Tensor64& a, const Tensor64& b) {
  Tensor64 bt = b.dims == a.dims ? b : b.transposed(a.dims);
  if (bt.shape != a.shape) throw Error("max_relative_error: shapes differ");
  double scale = 0, err = 0;
  for (double v : bt.data)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));  // infinities are compared exactly below
  scale = std::max(scale, 1e-300);
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = bt.data[i];
    if (x == y) continue;                              // equal values, equal infinities included
    if (std::isnan(x) && std::isnan(y)) continue;      // NaN where the reference has NaN
    if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y))
      return std::numeric_limits<double>::infinity();
    err = std::max(err, std::fabs(x - y) / scale);
  }
  return err;
}

std::string checksum_text(const Tensor64& t) {
  double sum = 0, sq = 0;
  for (double v : t.data) {
    sum += v;
    sq += v * v;
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "sum=%.10g sumsq=%.10g", sum, sq);
  return buf;
}

}  // namespace eqf
