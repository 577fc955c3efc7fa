// A growable array for the e-graph's big flat arrays (hash-consing table,
// node arena, class ids) of trivially copyable elements.
//
// Blocks of 2 MiB or more are mapped directly and asked to be backed by
// transparent huge pages, because hash-consing touches them at random and
// with 4 KiB pages most lookups would also miss the TLB. They grow in place
// with mremap (Linux): the pages move, nothing is copied, and only pages
// that are written are ever faulted in and zeroed. A std::vector doubling
// into a fresh block copied the old one and had the kernel zero all of it:
// at AC n = 12 (1.9 M e-nodes added, the arena's capacity 128 MiB) a tenth of
// the run's time went to zeroing pages in its growth and the table's.
//
// Only what the e-graph uses is here: no insert in the middle, no element
// destructors, and push_back of an element of the array itself is fine (the
// value is copied before the array may move).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace eqf {

// Bytes mapped by every HugeVector in the process (what mallinfo does not
// see): the memory tests add it to the allocator's figure.
inline std::atomic<size_t> huge_vector_mapped{0};
inline size_t huge_vector_mapped_bytes() { return huge_vector_mapped.load(std::memory_order_relaxed); }

template <class T>
class HugeVector {
  static_assert(std::is_trivially_copyable_v<T>, "HugeVector moves its elements as bytes");

 public:
  static constexpr size_t kHuge = size_t(2) << 20;

  HugeVector() = default;
  // huge_pages = false: mapped and grown the same way, but left on 4 KiB
  // pages, so that only the pages written are zeroed (a buffer that is
  // filled front to back and mostly short, as a rule's match buffer is).
  explicit HugeVector(bool huge_pages) : huge_pages_(huge_pages) {}
  ~HugeVector() { release(); }
  HugeVector(HugeVector&& o) noexcept
      : p_(o.p_), size_(o.size_), cap_(o.cap_), bytes_(o.bytes_), mapped_(o.mapped_), huge_pages_(o.huge_pages_) {
    o.p_ = nullptr, o.size_ = o.cap_ = o.bytes_ = 0, o.mapped_ = false;
  }
  HugeVector& operator=(HugeVector&& o) noexcept {
    if (this != &o) {
      release();
      p_ = o.p_, size_ = o.size_, cap_ = o.cap_, bytes_ = o.bytes_, mapped_ = o.mapped_, huge_pages_ = o.huge_pages_;
      o.p_ = nullptr, o.size_ = o.cap_ = o.bytes_ = 0, o.mapped_ = false;
    }
    return *this;
  }
  HugeVector(const HugeVector&) = delete;
  HugeVector& operator=(const HugeVector&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  bool empty() const { return size_ == 0; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + size_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + size_; }

  void push_back(const T& v) {
    if (size_ == cap_) {
      T copy = v;  // v may live in the block that grow() moves
      grow(size_ + 1);
      p_[size_++] = copy;
      return;
    }
    p_[size_++] = v;
  }
  // Appends [first, last), which must not lie in this array.
  void append(const T* first, const T* last) {
    const size_t n = size_t(last - first);
    if (size_ + n > cap_) grow(size_ + n);
    // A few elements (a match's words) are copied here, not by a call.
    if (n <= 8)
      for (size_t i = 0; i < n; ++i) p_[size_ + i] = first[i];
    else
      std::memcpy(static_cast<void*>(p_ + size_), first, n * sizeof(T));
    size_ += n;
  }
  // New elements are value-initialized.
  void resize(size_t n) {
    if (n > cap_) grow(n);
    for (size_t i = size_; i < n; ++i) p_[i] = T{};
    size_ = n;
  }
  // Grows to size n, the new elements zero bytes, without writing the
  // ones that land in freshly mapped pages (they read as zero): a mapped
  // array grows in place and only what is written later is faulted in.
  void grow_zeroed(size_t n) {
    if (n <= size_) return;
    const size_t old_cap = cap_;
    const bool was_mapped = mapped_;
    if (n > cap_) grow(n);
    // Below the old capacity the elements may have been written before;
    // past it, pages that were just mapped are zero, realloc'd memory not.
    const size_t end = was_mapped || mapped_ ? std::min(n, old_cap) : n;
    if (end > size_) std::memset(static_cast<void*>(p_ + size_), 0, (end - size_) * sizeof(T));
    size_ = n;
  }
  // Size n, the elements past the old size left as they are (each must be
  // written before it is read): for an array that is refilled whole.
  void resize_for_overwrite(size_t n) {
    if (n > cap_) grow(n);
    size_ = n;
  }
  // n copies of v in fresh memory (the old contents are released). Freshly
  // mapped pages read as zero, so a value of all zero bytes is not written:
  // the pages are faulted in as the array is used.
  void assign(size_t n, const T& v) {
    const T copy = v;
    release();
    grow(n);
    static const unsigned char zero[sizeof(T)] = {};
    if (!mapped_ || std::memcmp(&copy, zero, sizeof(T)) != 0)
      for (size_t i = 0; i < n; ++i) p_[i] = copy;
    size_ = n;
  }
  void clear() { size_ = 0; }

 private:
  void grow(size_t need) {
    size_t cap = cap_ * 2;
    if (cap < need) cap = need;
    if (cap < 16) cap = 16;
    size_t bytes = cap * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHuge) {
      bytes = (bytes + kHuge - 1) / kHuge * kHuge;
      void* q;
      if (mapped_) {
        q = mremap(p_, bytes_, bytes, MREMAP_MAYMOVE);
      } else {
        q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q != MAP_FAILED && size_) std::memcpy(q, static_cast<void*>(p_), size_ * sizeof(T));
      }
      if (q == MAP_FAILED) throw std::bad_alloc();
      huge_vector_mapped.fetch_add(bytes - (mapped_ ? bytes_ : 0), std::memory_order_relaxed);
#if defined(MADV_HUGEPAGE)
      if (huge_pages_) madvise(q, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
      if (!mapped_) std::free(p_);
      p_ = static_cast<T*>(q);
      cap_ = bytes / sizeof(T);
      bytes_ = bytes;
      mapped_ = true;
      return;
    }
#endif
    void* q = std::realloc(static_cast<void*>(p_), bytes);
    if (!q) throw std::bad_alloc();
    p_ = static_cast<T*>(q);
    cap_ = cap;
  }
  void release() {
#if defined(__linux__)
    if (mapped_) {
      munmap(p_, bytes_);
      huge_vector_mapped.fetch_sub(bytes_, std::memory_order_relaxed);
      p_ = nullptr, size_ = cap_ = bytes_ = 0, mapped_ = false;
      return;
    }
#endif
    std::free(p_);
    p_ = nullptr, size_ = cap_ = 0;
  }

  T* p_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
  size_t bytes_ = 0;  // the mapping's length, when mapped_
  bool mapped_ = false;  // p_ came from mmap (bytes_ long, a multiple of kHuge)
  bool huge_pages_ = true;
};

}  // namespace eqf
