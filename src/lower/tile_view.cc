// How a value's dims appear in its tiles, and the default unit axes.
#include <algorithm>

#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

// A state that makes the tile hold a block of its dim: part(d) or local(d).
bool blocks_dim(const ParState& s, Symbol d) {
  return (s.kind == StateKind::Part || s.kind == StateKind::Local) && s.dim == d;
}

int blocked_depth(const TensorType& t, Symbol d) {
  int depth = 0;
  for (const AxisState& as : t.delta) depth += blocks_dim(as.state, d) ? 1 : 0;
  return depth;
}

}  // namespace

std::vector<DimView> tile_view(const Program& p, const TensorType& t, const std::set<Axis>& unit_axes) {
  std::vector<DimView> out;
  for (Symbol d : t.dims) {
    DimView v{d, blocked_depth(t, d), false};
    const DimInfo* info = p.dims.find(d);
    // A dim of extent 1 has one valid position in any block; a unit innermost
    // axis leaves a block of one. Either way the tile needs no dimension.
    bool extent_one = info && !info->collected_from && info->extent == 1;
    bool unit_block = v.depth > 0 && unit_axes.count(Axis{d, uint8_t(v.depth - 1)}) > 0;
    v.squeezed = extent_one || unit_block;
    out.push_back(v);
  }
  std::sort(out.begin(), out.end(),
            [&](const DimView& a, const DimView& b) { return p.dims.order(a.dim) < p.dims.order(b.dim); });
  return out;
}

std::vector<DimView> tile_view(const Program& p, NodeId n, const std::set<Axis>& unit_axes) {
  return tile_view(p, p.type(n).get().parts.front(), unit_axes);
}

std::set<Axis> default_unit_axes(const Program& p) {
  std::set<Axis> unit;
  for (uint32_t i = 0; i < p.size(); ++i) {
    NodeId n{i};
    if (p.node(n).op != Op::TileMatMul) continue;
    Symbol k = attr_sym(p.node(n).attrs, 0);
    add_tile_matmul_unit_axes(p.type(p.children(n)[0]).get().tensor(), p.type(p.children(n)[1]).get().tensor(), k,
                              &unit);
  }
  return unit;
}

void add_tile_matmul_unit_axes(const TensorType& a, const TensorType& b, Symbol k, std::set<Axis>* out) {
  for (Symbol d : a.dims) {
    if (d == k || !b.has_dim(d)) continue;
    int depth = blocked_depth(a, d);
    if (depth > 0) out->insert(Axis{d, uint8_t(depth - 1)});
  }
}

}  // namespace eqf
