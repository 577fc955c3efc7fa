#include "eqiforge/ir/dims.h"

namespace eqf {

bool DimTable::declare(Symbol name, int64_t extent) {
  if (find(name)) return false;
  dims_.push_back(DimInfo{name, extent, std::nullopt, Symbol()});
  return true;
}

bool DimTable::declare_same(Symbol name, Symbol of) {
  const DimInfo* base = find(of);
  if (find(name) || !base || base->collected_from) return false;
  // A chain of such dims names its first: each is re-sized with that one.
  Symbol root = base->same_as.valid() ? base->same_as : of;
  dims_.push_back(DimInfo{name, base->extent, std::nullopt, root});
  return true;
}

bool DimTable::declare_like(const DimInfo& d) {
  if (d.same_as.valid() && declare_same(d.name, d.same_as)) return true;
  return declare(d.name, d.extent);
}

Symbol DimTable::declare_collected(Axis p) {
  Symbol name = p.collected_dim();
  if (!find(name)) dims_.push_back(DimInfo{name, 0, p, Symbol()});
  return name;
}

const DimInfo* DimTable::find(Symbol name) const {
  for (const DimInfo& d : dims_)
    if (d.name == name) return &d;
  return nullptr;
}

int DimTable::order(Symbol name) const {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].name == name) return int(i);
  return -1;
}

}  // namespace eqf
