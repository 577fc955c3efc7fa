// Repetition in a linear order of a program's operators: the layers of a
// decoder stack, the iterations of an unrolled loop (see partition.h).
//
// A partition whose cuts repeat with the layers gives one distinct subgraph
// per piece of a layer, searched once for all layers; cuts placed without
// regard to the period straddle layers at shifting offsets and give up to
// one distinct subgraph per piece per layer. The partitioner finds the
// period here and then prices cuts that repeat with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf::partition {

// A run of `repeats` >= 2 copies of a block of `period` signatures starting
// at `start`.
struct Period {
  size_t start = 0;
  size_t period = 0;   // 0: none found
  size_t repeats = 0;
};

// The period whose repeats cover the most positions (ties: the shortest
// period, i.e. the fundamental one); period 0 when nothing repeats.
// Periods up to half the order are tried; O(n^2) comparisons of hashes.
Period find_period(const std::vector<uint64_t>& signatures);

// Keys of segments [a, b) of an order as subgraphs: equal keys for
// segments that are copies of one another -- operators, operands inside the
// segment by distance, operands outside it numbered in order of first use
// (each becomes an input of the subgraph), and which of its values are used
// after it or are outputs (they become its outputs). Nearly what
// structural_hash gives the subgraphs built from the segments, at a
// fraction of the cost, for comparing segmentations before building any.
class SegmentKeys {
 public:
  SegmentKeys(const Program& p, const std::vector<uint32_t>& order, const std::vector<bool>& is_op,
              const std::vector<bool>& is_output);
  uint64_t key(size_t a, size_t b);
  // One hash per position, for find_period: the node (operator, attributes
  // with dims as extents and input names dropped, type's dtype and
  // extents) and per operand its distance back in the order (an operator)
  // or its description (a leaf). Positions with equal signatures a fixed
  // distance apart compute the same thing from correspondingly placed
  // operands.
  std::vector<uint64_t> signatures() const;
  // Distinct keys among consecutive segments; `cuts` holds the segment
  // starts and the order's size at the end.
  size_t distinct(const std::vector<size_t>& cuts);

 private:
  struct Operand {
    uint32_t node;   // the program's node
    uint32_t pos;    // its position in the order; kNone for a leaf
    uint64_t sig;    // an operator's or input's type; another leaf's description
    bool input;      // an input leaf
  };
  std::vector<uint64_t> node_;        // per position: the node alone
  std::vector<uint64_t> type_;        // per position: its value's type alone
  std::vector<uint32_t> first_operand_;  // per position, into operands_ (one past the end at the end)
  std::vector<Operand> operands_;
  std::vector<uint32_t> last_use_;    // per position: the largest position that reads it
  std::vector<bool> output_;
  std::vector<uint32_t> stamp_, number_;  // per node: operands from outside numbered for the segment being keyed
  uint32_t generation_ = 0;
};

}  // namespace eqf::partition
