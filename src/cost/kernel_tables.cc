// Kernel evaluations kept across choices and programs (see cost/kernel_tables.h).
#include "cost/kernel_tables.h"

#include <bit>
#include <cmath>
#include <limits>
#include <cstring>

namespace eqf::cost {
namespace {

// Writes a kernel's rows as bytes, the axes they name renumbered by first
// appearance. Every field eval_kernel reads is written (and the counts of
// every list), so equal keys evaluate equally at equal choices.
class KeyWriter {
 public:
  KeyWriter(const ProgramSummary& s, std::vector<int>& order) : s_(s), order_(order), canon_(s.axes.size(), -1) {
    order_.clear();
  }

  void num(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void real(double v) { num(std::bit_cast<int64_t>(v)); }
  void axis(int a) {
    if (a < 0) return num(-1);
    if (canon_[size_t(a)] < 0) {
      canon_[size_t(a)] = int(order_.size());
      order_.push_back(a);
    }
    num(canon_[size_t(a)]);
  }
  void dim(const DimRef& d) {
    num(int64_t(d.kind));
    num(d.extent);
    if (d.kind == DimRef::Kind::Blocked || d.kind == DimRef::Kind::Collected) axis(d.axis);
  }
  void tile(const Tile& t) {
    num(int64_t(t.size()));
    for (const DimRef& d : t) dim(d);
  }
  void axes(const std::vector<int>& v) {
    num(int64_t(v.size()));
    for (int a : v) axis(a);
  }

  void mask(const std::optional<LoopMask>& m) {
    num(m ? 1 : 0);
    if (!m) return;
    axis(m->grid_axis);
    num(int64_t(m->predicates.size()));
    for (const IndexPredicate& pr : m->predicates) {
      num(int64_t(pr.cmp));
      real(pr.constant);
      num(int64_t(pr.terms.size()));
      for (const IndexPredicate::Term& t : pr.terms) {
        num(t.role);
        real(t.coef);
        num(t.extent);
      }
    }
  }

  void kernel(const KernelSummary& k) {
    axes(k.grid);
    num(int64_t(k.loops.size()));
    for (const LoopRow& l : k.loops) {
      axis(l.axis);
      num(l.parent);  // a loop index
      num(int64_t(l.accumulators.size()));
      for (const Tile& acc : l.accumulators) tile(acc);
      real(l.combine_weight);
      mask(l.mask);
    }
    mask(k.grid_mask);
    axis(k.grid_mask_axis);
    num(int64_t(k.loads.size()));
    for (const LoadRow& ld : k.loads) {
      num(ld.scope);
      real(ld.dtype_bytes);
      tile(ld.tile);
      axes(ld.replicated);
      axes(ld.partitioned_grid);
      num(ld.contiguous_known ? 1 : 0);
      if (ld.contiguous_known) dim(ld.contiguous);
    }
    num(int64_t(k.computes.size()));
    for (const ComputeRow& c : k.computes) {
      num(c.scope);
      real(c.weight);
      tile(c.tile);
    }
    num(int64_t(k.dots.size()));
    for (const DotRow& d : k.dots) {
      num(d.scope);
      dim(d.rows), dim(d.k), dim(d.cols);
      num(d.tensor_cores ? 1 : 0);
    }
    num(int64_t(k.stores.size()));
    for (const StoreRow& st : k.stores) {
      real(st.dtype_bytes);
      tile(st.whole);
    }
    // The rows of the axes named, and of those their sizes come from (an
    // axis's size is its parent's block, or the coordinates of the axis a
    // collected dim counts); the list grows as they are numbered.
    num(-2);
    for (size_t i = 0; i < order_.size(); ++i) {
      const AxisRow& r = s_.axes[size_t(order_[i])];
      num(r.unit ? 1 : 0);
      num(r.extent);
      axis(r.parent);
      axis(r.collected_from);
    }
  }

  std::string take() { return std::move(out_); }

 private:
  const ProgramSummary& s_;
  std::vector<int>& order_;
  std::vector<int> canon_;  // program axis -> canonical number (-1: not read)
  std::string out_;
};

}  // namespace

std::string kernel_key(const ProgramSummary& s, const KernelSummary& k, std::vector<int>* axes) {
  std::vector<int> local;
  KeyWriter w(s, axes ? *axes : local);
  w.kernel(k);
  return w.take();
}

KernelTable::KernelTable(size_t combinations, size_t* total) : total_(total) {
  if (combinations <= kMaxDense)
    dense_.assign(combinations, KernelValue{std::numeric_limits<double>::quiet_NaN(), 0});
}

void KernelTable::keep(size_t slot, const KernelValue& v) {
  if (!dense_.empty()) {
    if (std::isnan(dense_[slot].seconds)) ++*total_;
    dense_[slot] = v;
    return;
  }
  if (sparse_.insert_or_assign(slot, v).second) ++*total_;
}

KernelView KernelTables::view(const ProgramSummary& s, const KernelSummary& k, const std::vector<double>& max_block,
                              const std::vector<bool>& free) {
  KernelView v;
  std::string key = kernel_key(s, k, &axes_);
  size_t combinations = 1;
  for (int a : axes_) {
    if (!free[size_t(a)]) continue;
    size_t levels = size_t(std::countr_zero(uint64_t(max_block[size_t(a)]))) + 1;
    if (combinations > (size_t(1) << 56) / levels) return KernelView{};  // not kept: evaluated every time
    v.axes.push_back(size_t(a));
    v.levels.push_back(levels);
    v.strides.push_back(combinations);
    combinations *= levels;
  }
  std::unique_ptr<KernelTable>& table = tables_[std::move(key)];
  if (!table) table = std::make_unique<KernelTable>(combinations, &values_);
  v.table = table.get();
  return v;
}

void KernelTables::bound() {
  if (values_ <= kMaxEntries) return;
  tables_.clear();
  values_ = 0;
}

}  // namespace eqf::cost
