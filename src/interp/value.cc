#include "value.h"

#include <algorithm>
#include <limits>
#include <string>

#include "eqiforge/ir/diagnostic.h"
#include "walk.h"

namespace eqf::interp {

// 2^28 doubles (2 GiB): beyond any test size, and an error instead of an
// allocation failure when a tiny block size multiplies the coordinates.
constexpr int64_t kMaxElements = int64_t(1) << 28;

int64_t Sizes::block(Axis a) const {
  auto it = blocks_.find(a);
  if (it == blocks_.end()) {
    const std::string n = a.name();
    throw Error(p_.file, {}, "no block size for axis " + n + "; pass --block " + n + "=N");
  }
  if (it->second < 1)
    throw Error(
        p_.file, {},
        "block size of axis " + a.name() + " is " + std::to_string(it->second) + "; expected at least 1");
  return it->second;
}

int64_t Sizes::split_size(Axis a) const {
  if (a.level == 0) return extent(a.dim);
  return block(Axis{a.dim, uint8_t(a.level - 1)});
}

int64_t Sizes::coords(Axis a) const {
  const int64_t b = block(a);
  return (split_size(a) + b - 1) / b;
}

int64_t Sizes::extent(Symbol d) const {
  const DimInfo* info = p_.dims.find(d);
  if (!info) throw Error(p_.file, {}, "dim " + std::string(d.str()) + " is not declared");
  if (info->collected_from) return coords(*info->collected_from);
  return info->extent;
}

int Tile::axis_pos(Axis a) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == a) return int(i);
  return -1;
}

int Tile::dim_pos(Symbol d) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == d) return int(axes.size() + i);
  return -1;
}

Tile make_tile(const TensorType& t, const Sizes& s) {
  Tile tile;
  for (const AxisState& as : t.delta) {
    tile.axes.push_back(as.axis);
    tile.shape.push_back(s.coords(as.axis));
  }
  tile.dims = t.dims;
  for (Symbol d : t.dims) {
    ValidPrefix v;
    // The axes whose tiles hold a block of d (part(d), or local(d): a part(d)
    // tile that met a partial value), by level; the deepest sets the local extent.
    for (size_t i = 0; i < t.delta.size(); ++i) {
      const AxisState& as = t.delta[i];
      const bool blocked = as.state.kind == StateKind::Part || as.state.kind == StateKind::Local;
      if (!blocked || !as.state.dim.valid() || as.state.dim != d) continue;
      v.axes.push_back(as.axis);
      v.coord_pos.push_back(int(i));
    }
    std::vector<size_t> order(v.axes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return v.axes[a].level < v.axes[b].level; });
    ValidPrefix sorted;
    for (size_t i : order) {
      sorted.axes.push_back(v.axes[i]);
      sorted.coord_pos.push_back(v.coord_pos[i]);
      sorted.block.push_back(s.block(v.axes[i]));
      sorted.bound.push_back(s.split_size(v.axes[i]));
    }
    sorted.local = sorted.partitioned() ? sorted.block.back() : s.extent(d);
    tile.shape.push_back(sorted.local);
    tile.valid.push_back(std::move(sorted));
  }
  tile.strides.assign(tile.shape.size(), 1);
  int64_t n = 1;
  for (size_t i = tile.shape.size(); i-- > 0;) {
    tile.strides[i] = n;
    if (tile.shape[i] > 0 && n > kMaxElements / tile.shape[i])
      throw Error("interpreter: a value of type " + type_text(Type{{t}, false}) + " needs more than " +
                  std::to_string(kMaxElements) +
                  " elements at these block sizes; use smaller extents or larger blocks");
    n *= tile.shape[i];
  }
  tile.data.assign(size_t(n), std::numeric_limits<double>::quiet_NaN());
  return tile;
}

static std::string position_name(const Tile& t, size_t pos) {
  if (pos < t.axes.size()) return "axis " + t.axes[pos].name();
  return "dim " + std::string(t.dims[pos - t.axes.size()].str());
}

std::vector<int> positions_in(const Tile& from, const Tile& to, int skip) {
  std::vector<int> pos(to.rank(), -1);
  for (size_t i = 0; i < from.rank(); ++i) {
    if (int(i) == skip) continue;
    const int j =
        i < from.axes.size() ? to.axis_pos(from.axes[i]) : to.dim_pos(from.dims[i - from.axes.size()]);
    if (j < 0)
      throw Error("interpreter: an operand has " + position_name(from, i) +
                  " that the result lacks; the program disagrees with its types");
    if (to.shape[size_t(j)] != from.shape[i])
      throw Error("interpreter: " + position_name(from, i) + " has extent " + std::to_string(from.shape[i]) +
                  " in an operand but " + std::to_string(to.shape[size_t(j)]) +
                  " in the result; the program disagrees with its types");
    pos[size_t(j)] = int(i);
  }
  return pos;
}

std::vector<int64_t> remap(const std::vector<int64_t>& from_strides, const std::vector<int>& pos) {
  std::vector<int64_t> out(pos.size(), 0);
  for (size_t j = 0; j < pos.size(); ++j)
    if (pos[j] >= 0) out[j] = from_strides[size_t(pos[j])];
  return out;
}

ValidPrefix rebase(const ValidPrefix& v, const Tile& space) {
  ValidPrefix out = v;
  for (size_t l = 0; l < v.axes.size(); ++l) {
    out.coord_pos[l] = space.axis_pos(v.axes[l]);
    if (out.coord_pos[l] < 0)
      throw Error("interpreter: axis " + v.axes[l].name() +
                  " partitions an operand but is not in scope of the result");
  }
  return out;
}

std::vector<double> masked_along(const Tile& t, Symbol d, double fill) {
  std::vector<double> out = t.data;
  const int dpos = t.dim_pos(d);
  const ValidPrefix& v = t.valid_of(d);
  if (!v.partitioned()) return out;
  double* o = out.data();
  walk<1>(t.shape, {t.strides.data()}, [&](const std::array<int64_t, 1>& off, const int64_t* idx) {
    if (idx[dpos] >= v.length(idx)) o[off[0]] = fill;
  });
  return out;
}

}  // namespace eqf::interp
