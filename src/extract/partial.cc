#include "extract/partial.h"

#include "extract/guide.h"

#include <algorithm>

namespace eqf::extract {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

Key Key::plus(EClassId c, uint64_t canon) const {
  uint64_t e = splitmix(canon ^ (uint64_t(c.v) << 40) ^ c.v);
  return Key{a + e, b + splitmix(e ^ 0xD1B54A32D192ED03ull)};
}

const Filled* PartialProgram::find(uint32_t cls) const {
  auto it = std::lower_bound(filled.begin(), filled.end(), cls, [](const Filled& f, uint32_t c) { return f.cls < c; });
  return it != filled.end() && it->cls == cls ? &*it : nullptr;
}
Filled* PartialProgram::find(uint32_t cls) {
  return const_cast<Filled*>(static_cast<const PartialProgram*>(this)->find(cls));
}

void Filler::charge_recompute(PartialProgram& s, EClassId c, uint8_t req, uint32_t first_scope, uint32_t scope,
                              uint32_t kernel, double weight) {
  if (!guide_ || scope == first_scope || table_.facts(c).global || table_.facts(c).literal) return;
  s.spent += guide_->recompute_price(c, req, weight, kernel_grid(table_, s, kernel));
}

bool Filler::require(PartialProgram& s, EClassId c, uint8_t req, uint32_t scope, uint32_t kernel, double weight) {
  if (Filled* f = s.find(c.v)) {
    charge_recompute(s, c, f->req | req, f->scope, scope, kernel, weight);
    uint8_t now = f->req | req;
    if (now == f->req) return true;
    const Option& o = table_.options(c)[f->option];
    if (!table_.allowed(c, o, now)) return false;
    f->req = now;
    uint8_t child = table_.child_req(o, now);
    uint32_t child_scope = scope_below(c, o, f->scope);
    uint32_t child_kernel = o.kernel_root ? c.v : f->kernel;
    double child_weight = f->weight * weight_below(s, c, o, child_kernel);
    for (EClassId k : o.children)
      if (!require(s, k, child, child_scope, child_kernel, share(k, child_weight))) return false;
    return true;
  }
  for (Hole& h : s.holes)
    if (h.cls == c.v) {
      charge_recompute(s, c, h.req | req, h.scope, scope, kernel, weight);
      h.req |= req;
      return table_.viable(c, h.req);
    }
  s.holes.push_back(Hole{c.v, req, scope, kernel, weight});
  return table_.viable(c, req);
}

bool reaches(OptionTable& table, const PartialProgram& s, uint32_t from, uint32_t target,
             std::vector<uint32_t>& stack, StampedSet& seen) {
  stack.assign(1, from);
  seen.clear();
  while (!stack.empty()) {
    uint32_t c = stack.back();
    stack.pop_back();
    if (c == target) return true;
    if (!seen.insert(c)) continue;
    if (const Filled* f = s.find(c))
      for (EClassId k : table.options(EClassId(c))[f->option].children) stack.push_back(k.v);
  }
  return false;
}

bool Filler::fill_first_hole(PartialProgram& s, uint32_t option, double input_bytes) {
  Hole h = s.holes.front();
  EClassId c(h.cls);
  const Option& o = table_.options(c)[option];
  // A filling whose children lead back to the class would make the program
  // cyclic. Cycles close at the edge added last, so checking the new edges
  // against the filled classes finds every one.
  for (EClassId k : o.children)
    if (k.v == h.cls || reaches(table_, s, k.v, h.cls, stack_, visited_)) return false;
  // A preduce over a grid axis of its own kernel has no kernel form (its
  // coordinates are different programs): the kernel must end below it.
  if (o.loop_axis != Option::kNoAxis)
    if (const std::vector<uint32_t>* grid = kernel_grid(table_, s, h.kernel))
      if (std::find(grid->begin(), grid->end(), o.loop_axis) != grid->end()) return false;
  s.holes.erase(s.holes.begin());
  auto at = std::lower_bound(s.filled.begin(), s.filled.end(), h.cls,
                             [](const Filled& f, uint32_t cls) { return f.cls < cls; });
  // A kernel root is a kernel of its own, computed once (CostGuide::to_go).
  const double weight = guide_ ? guide_->filling_weight(h.weight, o) : h.weight;
  s.filled.insert(at, Filled{h.cls, option, h.req, h.scope, h.kernel, weight});
  s.key = s.key.plus(c, o.canon);
  s.kernels += o.kernel_root ? 1 : 0;
  s.chained = s.chained || (o.kernel_root && h.kernel != kNoScope);
  s.input_bytes += input_bytes;
  uint8_t child = table_.child_req(o, h.req);
  uint32_t child_scope = scope_below(c, o, h.scope);
  uint32_t child_kernel = o.kernel_root ? c.v : h.kernel;
  double child_weight = weight * weight_below(s, c, o, child_kernel);
  for (EClassId k : o.children)
    if (!require(s, k, child, child_scope, child_kernel, share(k, child_weight))) return false;
  if (guide_) s.spent += weight * guide_->price(c, option);
  return true;
}

double Filler::share(EClassId child, double weight) const {
  return guide_ ? guide_->child_share(child, weight) : 1;
}

double Filler::weight_below(const PartialProgram& s, EClassId c, const Option& o, uint32_t kernel) const {
  if (!guide_) return 1;
  const std::vector<uint32_t>* grid = kernel_grid(table_, s, kernel);
  return grid ? guide_->child_weight(c, o, grid) : 1;
}

const std::vector<uint32_t>* kernel_grid(OptionTable& table, const PartialProgram& s, uint32_t kernel) {
  if (kernel == kNoScope) return nullptr;
  const Filled* root = s.find(kernel);
  return root ? &table.options(EClassId(kernel))[root->option].grid_axes : nullptr;
}

}  // namespace eqf::extract
