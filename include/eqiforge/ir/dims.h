// The dim table of a program: every named dim and its extent.
//
// Dims are declared with a fixed extent in `(dims (m 16) (k 64))`, or with the
// extent of a dim declared before them, `(k_out k)`: a dim of its own (its
// axes are not k's) that is re-sized with k. A dim made
// by `collect(p, X)` (named c_<p>, e.g. c_t.0) has a symbolic extent, the
// number of coordinates of p; it is known only once block sizes are.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "eqiforge/ir/axis.h"
#include "eqiforge/ir/symbol.h"

namespace eqf {

struct DimInfo {
  Symbol name;
  int64_t extent = 0;                 // fixed extent; unused when collected_from is set
  std::optional<Axis> collected_from; // set for c_<axis> dims
  Symbol same_as;                     // declared as `(name same_as)`: same_as's extent (a fixed dim)
};

class DimTable {
 public:
  // Declares a dim; returns false if it exists already.
  bool declare(Symbol name, int64_t extent);
  // Declares a dim with the extent of `of`, a fixed dim declared before it;
  // returns false if `name` exists already or `of` is not such a dim.
  bool declare_same(Symbol name, Symbol of);
  // Declares a fixed dim as another table describes it: with the dim it is
  // declared with when that is here, else with its extent; false if it
  // exists already.
  bool declare_like(const DimInfo& d);
  // Declares (idempotently) the dim made by collecting axis p.
  Symbol declare_collected(Axis p);

  const DimInfo* find(Symbol name) const;   // nullptr if undeclared
  bool contains(Symbol name) const { return find(name) != nullptr; }
  // Dims in declaration order (the printer's order and the default layout).
  const std::vector<DimInfo>& all() const { return dims_; }
  // Position in declaration order; dims of a type are listed in this order.
  int order(Symbol name) const;

 private:
  std::vector<DimInfo> dims_;
};

}  // namespace eqf
