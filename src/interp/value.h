// The interpreter's values (internal to src/interp).
//
// A tensor value with parallel axes is a function from the coordinates of its
// axes to a local tile. A Tile stores it densely in one flat vector: the
// coordinates of the axes outermost (in the type's axis order), then the
// local dims (in the type's dim order), row-major. Axis d.l has
// ceil(size / B_{d.l}) coordinates (size = extent(d) for l = 0, B_{d.(l-1)}
// otherwise); a dim partitioned by d.0..d.l (state part(d) or local(d)) has
// local extent B_{d.l}, and the positions of a ragged block past the end of
// what it splits are invalid (ValidPrefix): partition loads put NaN there,
// reductions skip them, combine drops them.
#pragma once

#include <cstdint>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/ir/type.h"

namespace eqf::interp {

// Concrete extents of dims and axes once block sizes are known.
class Sizes {
 public:
  Sizes(const Program& p, const BlockSizes& blocks) : p_(p), blocks_(blocks) {}

  // B_a; throws eqf::Error naming the axis when it has none or it is < 1.
  int64_t block(Axis a) const;
  // What axis a splits: extent(d) for level 0, B_{d.(l-1)} otherwise.
  int64_t split_size(Axis a) const;
  // Number of coordinates of a: ceil(split_size / B_a).
  int64_t coords(Axis a) const;
  // Extent of a dim: declared, or the coordinate count of the axis it was
  // collected from.
  int64_t extent(Symbol d) const;

 private:
  const Program& p_;
  const BlockSizes& blocks_;
};

// The valid positions of one local dim form a prefix [0, n) of it; n depends
// on the coordinates of the axes that partition the dim. A position j is
// valid iff for every partitioning level l: Σ_{l' ≥ l} c_{l'}·B_{d.l'} + j <
// bound_l, where bound_0 = extent(d) and bound_l = B_{d.(l-1)}.
struct ValidPrefix {
  std::vector<Axis> axes;      // the partitioning axes, by level
  std::vector<int> coord_pos;  // their positions in the owning index space
  std::vector<int64_t> block;  // B of each
  std::vector<int64_t> bound;  // what each splits
  int64_t local = 0;           // local extent of the dim

  bool partitioned() const { return !axes.empty(); }
  // n for the coordinates in idx (a full multi-index of the owning space).
  int64_t length(const int64_t* idx) const {
    int64_t n = local;
    int64_t suffix = 0;
    for (size_t l = axes.size(); l-- > 0;) {
      suffix += idx[coord_pos[l]] * block[l];
      const int64_t m = bound[l] - suffix;
      if (m < n) n = m;
    }
    return n < 0 ? 0 : n;
  }
};

struct Tile {
  std::vector<Axis> axes;          // sorted, as in the type's delta
  std::vector<Symbol> dims;        // as in the type's dims
  std::vector<int64_t> shape;      // coordinate counts, then local extents
  std::vector<int64_t> strides;    // row-major strides of shape
  std::vector<ValidPrefix> valid;  // one per dim
  std::vector<double> data;

  size_t rank() const { return shape.size(); }
  int axis_pos(Axis a) const;   // position in shape, -1 if absent
  int dim_pos(Symbol d) const;  // position in shape, -1 if absent
  const ValidPrefix& valid_of(Symbol d) const { return valid[dim_pos(d) - axes.size()]; }
  int64_t size() const { return int64_t(data.size()); }
};

// A tile shaped by a tensor type, filled with NaN (so a position an operator
// forgets to write stays visibly wrong). A literal type gives a 0-rank tile.
Tile make_tile(const TensorType& t, const Sizes& s);

struct Value {
  std::vector<Tile> parts;  // one for a tensor, n for a tuple
  bool is_tuple = false;
  const Tile& tensor() const { return parts.front(); }
};

// For every position of `to`'s index space, the position of the same axis or
// dim in `from`, or -1 where `from` lacks it (a broadcast). Every position of
// `from` except `skip` must appear in `to` with the same extent; otherwise
// the operands disagree with their types and this throws.
std::vector<int> positions_in(const Tile& from, const Tile& to, int skip = -1);
// Strides of a buffer laid out in `from`'s index space, seen from `to`'s.
std::vector<int64_t> remap(const std::vector<int64_t>& from_strides, const std::vector<int>& pos);
inline std::vector<int64_t> broadcast_strides(const Tile& from, const Tile& to, int skip = -1) {
  return remap(from.strides, positions_in(from, to, skip));
}
// The same prefix rule with its coordinates read from another index space.
ValidPrefix rebase(const ValidPrefix& v, const Tile& space);

// A copy of t in which every position invalid along dim d holds `fill`.
std::vector<double> masked_along(const Tile& t, Symbol d, double fill);

}  // namespace eqf::interp
