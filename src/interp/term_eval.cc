// evaluate_terms: the interpreter's evaluation of chosen nodes, flattened
// with a validity mask (see eqiforge/interp/term_eval.h).
#include "eqiforge/interp/term_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "eqiforge/ir/diagnostic.h"
#include "evaluate.h"
#include "value.h"
#include "walk.h"

namespace eqf {

std::vector<TermValue> evaluate_terms(const Program& p, const std::vector<Tensor64>& inputs,
                                      const BlockSizes& blocks, std::span<const NodeId> roots) {
  const std::vector<interp::Value> vals = interp::evaluate_roots(p, inputs, blocks, roots);
  std::vector<TermValue> out(vals.size());
  for (size_t r = 0; r < vals.size(); ++r) {
    for (const interp::Tile& t : vals[r].parts) {
      TermTensor tt;
      tt.shape = t.shape;
      tt.data = t.data;
      tt.valid.assign(t.data.size(), 1);
      // A position is valid when, along every dim, it lies in the valid
      // prefix that the coordinates of the dim's partitioning axes leave.
      std::vector<std::pair<int, const interp::ValidPrefix*>> checks;
      for (size_t i = 0; i < t.dims.size(); ++i)
        if (t.valid[i].partitioned()) checks.push_back({int(t.axes.size() + i), &t.valid[i]});
      if (!checks.empty()) {
        uint8_t* v = tt.valid.data();
        interp::walk<1>(t.shape, {t.strides.data()}, [&](const auto& k, const int64_t* idx) {
          for (const auto& [pos, prefix] : checks)
            if (idx[pos] >= prefix->length(idx)) {
              v[k[0]] = 0;
              return;
            }
        });
      }
      out[r].parts.push_back(std::move(tt));
    }
  }
  return out;
}

double term_difference(const TermValue& a, const TermValue& b, int64_t* compared) {
  if (a.parts.size() != b.parts.size())
    throw Error("term_difference: values with " + std::to_string(a.parts.size()) + " and " +
                std::to_string(b.parts.size()) + " components");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double scale = 0, diff = 0;
  int64_t n = 0;
  for (size_t c = 0; c < a.parts.size(); ++c) {
    const TermTensor& x = a.parts[c];
    const TermTensor& y = b.parts[c];
    if (x.shape != y.shape || x.data.size() != y.data.size())
      throw Error("term_difference: component " + std::to_string(c) +
                  " has different shapes on the two sides");
    for (size_t i = 0; i < x.data.size(); ++i) {
      if (!x.valid[i] || !y.valid[i]) continue;
      const double u = x.data[i], v = y.data[i];
      if (std::isnan(u) || std::isnan(v)) {
        if (std::isnan(u) != std::isnan(v)) diff = kInf;
        continue;
      }
      if (std::isinf(u) || std::isinf(v)) {
        if (u != v) diff = kInf;
        continue;
      }
      ++n;
      scale = std::max(scale, std::fabs(v));
      diff = std::max(diff, std::fabs(u - v));
    }
  }
  if (compared) *compared = n;
  if (diff == kInf) return kInf;
  return diff / std::max(scale, 1e-300);
}

}  // namespace eqf
