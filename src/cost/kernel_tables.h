// Kernel evaluations kept across block-size choices and across programs
// (CostModel::EstimateCache).
//
// The minimization over block sizes evaluates every kernel of a program at
// hundreds of choices of all the program's axes, and extraction estimates
// thousands of candidates, most of whose kernels appear in other candidates
// too. A kernel's time and overflow depend only on its rows and on the
// axes it reads (those its rows name and the axes their sizes come from), so
// they are kept in a table per kernel in canonical form -- its rows with
// those axes numbered by first appearance, and their rows -- indexed by the
// (power-of-two) block sizes of its free axes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/summary.h"

namespace eqf::cost {

// What the minimizer keeps of a kernel's evaluation at one choice.
struct KernelValue {
  double seconds = 0;
  double overflow = 0;
};

// One canonical kernel's values, by choice: a dense array when its free
// axes have few combinations (NaN seconds: not evaluated yet -- a NaN
// result is then evaluated again each time, never wrong), else a hash map
// of the choices tried.
class KernelTable {
 public:
  // `total` counts the values of every table (KernelTables::bound).
  KernelTable(size_t combinations, size_t* total);
  const KernelValue* find(size_t slot) const {
    if (!dense_.empty()) return std::isnan(dense_[slot].seconds) ? nullptr : &dense_[slot];
    auto it = sparse_.find(slot);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  void keep(size_t slot, const KernelValue& v);
 private:
  static constexpr size_t kMaxDense = 4096;
  std::vector<KernelValue> dense_;
  std::unordered_map<size_t, KernelValue> sparse_;
  size_t* total_;
};

// A kernel of one program bound to its table: `axes` are the program's
// indices of the kernel's free axes in canonical order, `levels` their sizes
// (log2 of the largest block + 1), `strides` their place in the slot.
struct KernelView {
  KernelTable* table = nullptr;
  std::vector<size_t> axes, levels, strides;

  // The slot of a (normalized) choice of the program's block sizes, given
  // as each axis's log2 (-1: not a power of two); kNone when some size is
  // not a power of two within the axis's range.
  static constexpr size_t kNone = ~size_t(0);
  size_t slot(const std::vector<int>& log2_blocks) const {
    size_t at = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      int level = log2_blocks[axes[i]];
      if (level < 0 || size_t(level) >= levels[i]) return kNone;
      at += size_t(level) * strides[i];
    }
    return at;
  }
};

class KernelTables {
 public:
  // Kernel k of program s; `max_block[i]`: the largest block of axis i (a
  // power of two), `free[i]`: whether the minimizer chooses axis i.
  KernelView view(const ProgramSummary& s, const KernelSummary& k, const std::vector<double>& max_block,
                  const std::vector<bool>& free);
  // Drops every table once they hold more than kMaxEntries values (call
  // between estimates: views into dropped tables dangle).
  void bound();

 private:
  static constexpr size_t kMaxEntries = size_t(1) << 22;
  std::unordered_map<std::string, std::unique_ptr<KernelTable>> tables_;
  size_t values_ = 0;
  std::vector<int> axes_;  // view()'s scratch
};

// The canonical form of kernel k (the key of its table) and the program's
// indices of the axes it reads, in canonical order.
std::string kernel_key(const ProgramSummary& s, const KernelSummary& k, std::vector<int>* axes);

}  // namespace eqf::cost
