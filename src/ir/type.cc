#include "eqiforge/ir/type.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "eqiforge/ir/dims.h"

namespace eqf {
namespace {

size_t hash_mix(size_t h, uint64_t v) { return (h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2))); }

size_t hash_type(const Type& t) {
  size_t h = t.is_tuple;
  for (const TensorType& p : t.parts) {
    h = hash_mix(h, uint64_t(p.dtype) | (uint64_t(p.literal) << 8));
    for (Symbol d : p.dims) h = hash_mix(h, d.raw());
    for (const AxisState& s : p.delta)
      h = hash_mix(h, (uint64_t(s.axis.pack()) << 32) ^ (uint64_t(s.state.kind) << 24) ^ s.state.dim.raw() ^
                          (uint64_t(s.state.red.raw()) << 40));
  }
  return h;
}

struct TypeTable {
  std::mutex mu;
  std::deque<Type> types;
  std::unordered_multimap<size_t, uint32_t> index;
};

TypeTable& table() {
  static TypeTable* t = new TypeTable;
  return *t;
}

}  // namespace

bool TensorType::has_dim(Symbol d) const { return std::find(dims.begin(), dims.end(), d) != dims.end(); }

const ParState* TensorType::state(Axis p) const {
  for (const AxisState& s : delta)
    if (s.axis == p) return &s.state;
  return nullptr;
}

TypeId TypeId::intern(const Type& t) {
  TypeTable& tab = table();
  size_t h = hash_type(t);
  std::lock_guard<std::mutex> lock(tab.mu);
  auto [lo, hi] = tab.index.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (tab.types[it->second] == t) return TypeId(it->second);
  tab.types.push_back(t);
  uint32_t id = uint32_t(tab.types.size() - 1);
  tab.index.emplace(h, id);
  return TypeId(id);
}

const Type& TypeId::get() const {
  TypeTable& tab = table();
  std::lock_guard<std::mutex> lock(tab.mu);
  return tab.types[v_];
}

std::string state_text(const ParState& s) {
  switch (s.kind) {
    case StateKind::Part:
      return "part(" + std::string(s.dim.str()) + ")";
    case StateKind::Rep:
      return "rep";
    case StateKind::Partial:
      return "partial(" + reduction_text(s.red) + ")";
    case StateKind::Local:
      return s.dim.valid() ? "local(" + std::string(s.dim.str()) + ")" : "local";
  }
  return "?";
}

namespace {

std::string tensor_text(const TensorType& t, const DimTable* dims) {
  if (t.literal) return "literal";
  std::vector<Symbol> order = t.dims;
  if (dims)
    std::stable_sort(order.begin(), order.end(),
                     [&](Symbol a, Symbol b) { return dims->order(a) < dims->order(b); });
  std::string out(dtype_name(t.dtype));
  out += "[";
  for (size_t i = 0; i < order.size(); ++i) out += (i ? " " : "") + std::string(order[i].str());
  out += "]";
  if (!t.delta.empty()) {
    out += " @ {";
    for (size_t i = 0; i < t.delta.size(); ++i)
      out += (i ? ", " : "") + t.delta[i].axis.name() + ": " + state_text(t.delta[i].state);
    out += "}";
  }
  return out;
}

}  // namespace

std::string type_text(const Type& t, const DimTable* dims) {
  if (!t.is_tuple) return tensor_text(t.tensor(), dims);
  std::string out = "(";
  for (size_t i = 0; i < t.parts.size(); ++i) out += (i ? ", " : "") + tensor_text(t.parts[i], dims);
  return out + ")";
}

}  // namespace eqf
