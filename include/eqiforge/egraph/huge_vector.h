// An allocator for the e-graph's big flat arrays (hash-consing table, node
// arena, class ids): blocks of 2 MiB or more are asked to be backed by
// transparent huge pages, because hash-consing touches them at random and
// with 4 KiB pages most lookups would also miss the TLB.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace eqf {

template <class T>
struct HugeAlloc {
  using value_type = T;
  static constexpr size_t kHuge = size_t(2) << 20;

  HugeAlloc() = default;
  template <class U>
  HugeAlloc(const HugeAlloc<U>&) {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHuge)
      ::operator delete(p);
    else
      std::free(p);
  }
  template <class U>
  bool operator==(const HugeAlloc<U>&) const {
    return true;
  }
};

template <class T>
using HugeVector = std::vector<T, HugeAlloc<T>>;

}  // namespace eqf
