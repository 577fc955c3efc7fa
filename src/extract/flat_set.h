// Hash sets of extraction's hot loop without an allocation per element:
// open addressing with linear probing in one power-of-two array.
//   KeySet      the ≈-keys seen in a pass (early compression), 128 bits each;
//   StampedSet  64-bit values, emptied in O(1) by a new stamp: the scratch
//               set of CostGuide::remaining, emptied once per partial program
//               (and, never emptied, the pairs fuse-independent has fused);
//   IndexMap    64-bit keys to 32-bit indices, never erased: fuse-independent's
//               regions by (axis, body class).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "extract/key.h"

namespace eqf::extract {

class KeySet {
 public:
  // True when k was not in the set (and is now).
  bool insert(const Key& k) {
    if (k.a == 0 && k.b == 0) {  // the empty slot's pattern, kept aside
      bool added = !has_zero_;
      has_zero_ = true;
      size_ += added;
      return added;
    }
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = slot_of(k);
    for (;; i = (i + 1) & (slots_.size() - 1)) {
      Key& s = slots_[i];
      if (s == k) return false;
      if (s.a == 0 && s.b == 0) {
        s = k;
        ++size_;
        return true;
      }
    }
  }
  size_t size() const { return size_; }
  void clear() {
    slots_.clear();
    size_ = 0;
    has_zero_ = false;
  }
  // What the table holds, for the memory limit.
  size_t bytes() const { return slots_.capacity() * sizeof(Key); }

 private:
  size_t slot_of(const Key& k) const { return size_t(k.a ^ (k.b >> 7)) & (slots_.size() - 1); }
  void grow() {
    std::vector<Key> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : 2 * old.size(), Key{});
    for (const Key& k : old)
      if (k.a != 0 || k.b != 0)
        for (size_t i = slot_of(k);; i = (i + 1) & (slots_.size() - 1))
          if (slots_[i].a == 0 && slots_[i].b == 0) {
            slots_[i] = k;
            break;
          }
  }
  std::vector<Key> slots_;
  size_t size_ = 0;
  bool has_zero_ = false;
};

class StampedSet {
 public:
  void clear() {
    if (++stamp_ == 0) {  // wrapped: old stamps would read as current
      for (Slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
    size_ = 0;
  }
  bool insert(uint64_t v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot_of(v);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.stamp != stamp_) {
        s = Slot{v, stamp_};
        ++size_;
        return true;
      }
      if (s.value == v) return false;
    }
  }
  bool contains(uint64_t v) const {
    if (slots_.empty()) return false;
    for (size_t i = slot_of(v);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.stamp != stamp_) return false;
      if (s.value == v) return true;
    }
  }

 private:
  struct Slot {
    uint64_t value = 0;
    uint32_t stamp = 0;
  };
  size_t slot_of(uint64_t v) const {
    v *= 0x9E3779B97F4A7C15ull;
    return size_t(v >> 32) & (slots_.size() - 1);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    const uint32_t live = stamp_;
    for (const Slot& s : old)
      if (s.stamp == live)
        for (size_t i = slot_of(s.value);; i = (i + 1) & (slots_.size() - 1))
          if (slots_[i].stamp != live) {
            slots_[i] = s;
            break;
          }
  }
  std::vector<Slot> slots_;
  uint32_t stamp_ = 1;
  size_t size_ = 0;
};

class IndexMap {
 public:
  static constexpr uint32_t kAbsent = 0xffffffffu;
  uint32_t find(uint64_t k) const {
    if (slots_.empty()) return kAbsent;
    for (size_t i = slot_of(k);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.value == kAbsent || s.key == k) return s.value;
    }
  }
  // k must be absent; v must not be kAbsent.
  void insert(uint64_t k, uint32_t v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(Slot{k, v});
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = kAbsent;
  };
  size_t slot_of(uint64_t k) const {
    k *= 0x9E3779B97F4A7C15ull;
    return size_t(k >> 32) & (slots_.size() - 1);
  }
  void place(const Slot& s) {
    for (size_t i = slot_of(s.key);; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].value == kAbsent) {
        slots_[i] = s;
        return;
      }
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    for (const Slot& s : old)
      if (s.value != kAbsent) place(s);
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace eqf::extract
