// Partial programs: the filled classes (each with its option and the
// requirements it was filled under) and the holes (classes reached but not
// filled, oldest first), with the canonical key under ≈.
#pragma once

#include <cstdint>
#include <vector>

#include "extract/choice.h"
#include "extract/flat_set.h"
#include "extract/key.h"

namespace eqf::extract {

// The scope a class is computed in: the nearest loop (a preduce) or kernel
// root above the use that first reached it. A tile reached again from
// another scope is computed again there (kernel formation does not keep
// values across loops or kernels), which the guide charges.
inline constexpr uint32_t kNoScope = 0xFFFFFFFFu;

// The scope of the children of class c filled with option o, used from
// `scope`: a loop (preduce) or a kernel root opens a scope of its own.
inline uint32_t scope_below(EClassId c, const Option& o, uint32_t scope) {
  return o.kernel_root || o.op == Op::PReduce ? c.v : scope;
}

// A use also knows the kernel root above it (kNoScope above every kernel):
// a preduce over one of that kernel's grid axes has no kernel form.
// `weight`: how many times the kernel computes the class per computation of
// the whole program -- a tile replicated over a grid axis of its kernel is
// computed again by every program along that axis (see
// CostGuide::child_weight). The guide multiplies the class's prices by it.
struct Filled {
  uint32_t cls;
  uint32_t option;  // index into the class's options
  uint8_t req;
  uint32_t scope = kNoScope;
  uint32_t kernel = kNoScope;
  double weight = 1;
};
struct Hole {
  uint32_t cls;
  uint8_t req;
  uint32_t scope = kNoScope;
  uint32_t kernel = kNoScope;
  double weight = 1;
};

struct PartialProgram {
  std::vector<Filled> filled;  // sorted by class
  std::vector<Hole> holes;     // in the order they were reached
  Key key;
  uint32_t kernels = 0;        // kernel roots among the filled classes
  bool chained = false;        // some kernel root lies in another kernel's region (reads it: two launch levels)
  double input_bytes = 0;      // bytes of the inputs the filled classes read
  double spent = 0;            // the guide's prices of the filled classes (best-first)

  const Filled* find(uint32_t cls) const;
  Filled* find(uint32_t cls);
  bool complete() const { return holes.empty(); }
};

// The grid axes (packed) of the kernel whose root is class `kernel` in s;
// null above every kernel or while that root is still a hole.
const std::vector<uint32_t>* kernel_grid(OptionTable& table, const PartialProgram& s, uint32_t kernel);

// Whether class `target` is reachable from class `from` through the filled
// classes' fillings (a hole has no edges yet): filling `target` with an
// option that reads `from` would close a cycle. `stack` and `seen` are the
// caller's scratch.
bool reaches(OptionTable& table, const PartialProgram& s, uint32_t from, uint32_t target,
             std::vector<uint32_t>& stack, StampedSet& seen);

// Operations that need the e-graph's options.
class CostGuide;

class Filler {
 public:
  explicit Filler(OptionTable& table) : table_(table) {}
  // With a guide, each filling adds its price (at its weight) to the partial
  // program's `spent`, and a tile reached again from another scope its
  // cheapest subprogram's price.
  void set_guide(CostGuide* guide) { guide_ = guide; }

  // Adds requirement `req` on class c, used from `scope`: a filled class
  // must allow it (and passes it on to its children), a hole accumulates it,
  // a new class becomes a hole. False when a filled class's option is not
  // allowed.
  bool require(PartialProgram& s, EClassId c, uint8_t req, uint32_t scope = kNoScope, uint32_t kernel = kNoScope,
               double weight = 1);

  // Fills s's oldest hole with option `option` of its class. False when the
  // filling closes a cycle or breaks a requirement (s is then unusable).
  bool fill_first_hole(PartialProgram& s, uint32_t option, double input_bytes);

 private:
  // The guide's weight of option o's children in kernel `kernel` (1 without a guide).
  double share(EClassId child, double weight) const;
  double weight_below(const PartialProgram& s, EClassId c, const Option& o, uint32_t kernel) const;
  void charge_recompute(PartialProgram& s, EClassId c, uint8_t req, uint32_t first_scope, uint32_t scope,
                        uint32_t kernel, double weight);
  OptionTable& table_;
  CostGuide* guide_ = nullptr;
  std::vector<uint32_t> stack_;
  StampedSet visited_;
};

}  // namespace eqf::extract
