// How an e-class may be filled in a candidate program: its fillings
// ("options") and the requirements that select among them.
//
// Requirements come from where a class is used:
//   kMaterial   the value must be a buffer in memory: the bottom of a load
//               chain that partitions or reshapes, or a program output. A
//               global class is then an input or a kernel's result (a grid
//               chain of combines); a class with axes, a collect.
//   kNoChain    the class is the bottom of a load chain: no further views.
//   kCollect    only a collect (the tuple a material `proj` selects from).
//   kRoot       a program output: a kernel's result, not an input.
// A kernel's body (under its grid chain or a collect) takes kNoChain too: a
// kernel that only loads and stores a buffer is a copy, never worth a
// candidate.
// Without requirements a class is computed inside the kernel that uses it:
// tile operators, load chains, loads of collected buffers. A global class
// there (under a replicate-only chain) is still a leaf: an input, a kernel's
// result or a collected buffer -- every program computing a whole tensor is
// not a kernel region -- except a scalar, which every program may compute.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/extract/validity.h"

namespace eqf::extract {

enum Req : uint8_t { kMaterial = 1, kNoChain = 2, kCollect = 4, kRoot = 8 };

struct Option {
  enum class Kind : uint8_t { Node, Chain, Grid };
  Kind kind = Kind::Node;
  Op op = Op::Input;                // Node: the e-node's op
  std::vector<ENodeId> path;        // Node: the e-node; Chain/Grid: top to bottom
  std::vector<EClassId> children;   // Node: its children; Chain/Grid: the bottom/body class
  bool blocked = false;             // Chain: partitions or reshapes (its bottom must be material)
  bool kernel_root = false;         // Grid or collect: a kernel of its own
  bool input = false;               // an input leaf
  uint64_t canon = 0;               // hash of its canonical form under ≈
  // Grid: its axes; collect: the collected axis (packed). PReduce: the axis
  // it reduces, which must not be on the grid of the kernel it lies in.
  std::vector<uint32_t> grid_axes;
  uint32_t loop_axis = kNoAxis;
  static constexpr uint32_t kNoAxis = 0xFFFFFFFFu;
};

// Facts about a class that the rules read.
struct ClassFacts {
  bool literal = false;  // a literal constant
  bool global = false;   // no parallel axis (and not a literal)
  bool scalar = false;   // no dims
};

// Options of every class, computed on first use.
class OptionTable {
 public:
  OptionTable(const EGraph& g, const ExtractLimits& limits) : g_(g), limits_(limits) {}

  // Inline where the class's entry is built: the expansion and the guide ask
  // for a class's options at every step. Only canonical classes are ever
  // built, so a built entry is c's own.
  std::span<const Option> options(EClassId c) { return built_entry(c).options; }
  const ClassFacts& facts(EClassId c) { return built_entry(c).facts; }

  // Whether an option may fill its class under requirement `req`, and the
  // requirement it puts on its i-th child.
  bool allowed(EClassId c, const Option& o, uint8_t req);
  uint8_t child_req(const Option& o, uint8_t req) const;

  // Viability: whether a class has some finite filling under a requirement,
  // each child filled viably in turn (the least fixpoint over the classes
  // reachable from the roots; fillings shared between uses and cycles
  // through shared classes are left to the expansion). A filling with a
  // non-viable child can never complete, so expansion skips it.
  void analyze(std::span<const EClassId> roots, uint8_t root_req);
  bool viable(EClassId c, uint8_t req) { return (built_entry(c).viable >> req) & 1u; }
  bool viable(EClassId c, const Option& o, uint8_t req);
  // The (class, requirement) pairs analyze() found reachable from the roots.
  std::span<const std::pair<EClassId, uint8_t>> reached() const { return reached_; }

 private:
  struct Entry {
    bool built = false;
    ClassFacts facts;
    std::vector<Option> options;
    uint16_t viable = 0xFFFF;  // bit r: viable under requirement r (all until analyzed)
  };
  Entry& entry(EClassId c);
  // c's entry, built on first use (the inline path: already built).
  Entry& built_entry(EClassId c) {
    return c.v < entries_.size() && entries_[c.v].built ? entries_[c.v] : entry(c);
  }
  void build(EClassId c, Entry& e);
  void walk_chain(EClassId top, EClassId at, std::vector<ENodeId>& path, std::vector<EClassId>& seen,
                  std::vector<Option>& out);
  void walk_grid(EClassId at, std::vector<ENodeId>& path, std::vector<EClassId>& seen, std::vector<Option>& out);
  uint64_t canon_node(ENodeId n) const;

  const EGraph& g_;
  ExtractLimits limits_;
  std::vector<Entry> entries_;
  std::vector<std::pair<EClassId, uint8_t>> reached_;
};

}  // namespace eqf::extract
