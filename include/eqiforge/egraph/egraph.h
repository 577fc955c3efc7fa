// The e-graph (DESIGN §3): hash-consed e-nodes over the IR's operators,
// union-find over e-class ids, deferred rebuilding (egg-style), and an
// analysis that carries each e-class's type and constant facts.
//
// Invariants, stated where they bite:
//  - An e-node is (op, attrs, children) with e-class ids as children. Nodes
//    live in one flat arena; their children in one u32 pool.
//  - merge() only records the union. Congruence (f(a) = f(b) once a = b) and
//    the analysis are repaired in batches by rebuild(). Until rebuild() has
//    run after an add/merge, the queries that assume canonical children
//    (lookup, nodes(), nodes_with_op(), e-matching) are not valid: check
//    clean().
//  - Each class's data has one type; merging classes of different types is
//    refused with an eqf::Error that names the rule that tried it.
//  - Everything is deterministic: ids are handed out in order, classes keep
//    their nodes in stamp order, and nothing iterates a hashed container
//    where order matters. The same calls give the same dump().
//  - Every e-node remembers its origin: the rule that first created it, or
//    "input".
//  - Stamps: every e-node carries the clock value at which it was created or
//    last changed: content_stamp when its children were re-canonicalized,
//    stamp also when its class was merged into another. The matcher uses
//    them to skip matches a rule has already applied (ematch.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>  // part of x86-64: the hash-consing probe compares four slots at once
#endif

#include "eqiforge/egraph/analysis.h"
#include "eqiforge/egraph/huge_vector.h"
#include "eqiforge/egraph/id.h"
#include "eqiforge/ir/dims.h"
#include "eqiforge/ir/node.h"
#include "eqiforge/ir/program.h"

namespace eqf {

class EGraph {
 public:
  explicit EGraph(std::unique_ptr<Analysis> analysis = make_type_analysis());
  ~EGraph();
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;
  EGraph(EGraph&&) noexcept;
  EGraph& operator=(EGraph&&) noexcept;

  // ---- building ---------------------------------------------------------------

  // Adds op(attrs)(children), or finds the equal e-node, and returns its
  // class. Throws eqf::Error when the analysis refuses the node ("add: ...").
  EClassId add(Op op, const Attrs& attrs, std::span<const EClassId> children);
  // The same, but a refused node gives nullopt and the reason in *why.
  std::optional<EClassId> try_add(Op op, const Attrs& attrs, std::span<const EClassId> children,
                                  std::string* why = nullptr);
  // The class of the e-node equal to op(attrs)(children), if any.
  std::optional<EClassId> lookup(Op op, const Attrs& attrs, std::span<const EClassId> children) const;

  // The hash-consing fast path, for batched lookups that prefetch: children
  // must be canonical (find()).
  uint64_t node_hash(Op op, const Attrs& attrs, std::span<const EClassId> children) const {
    return hash_node(op, attrs, children);
  }
  void prefetch(uint64_t hash) const {
    __builtin_prefetch(&memo_[memo_home(uint32_t(hash) << 2, memo_.size() - 1)]);
  }
  std::optional<EClassId> lookup_canonical(uint64_t hash, Op op, const Attrs& attrs,
                                           std::span<const EClassId> children) const {
    EClassId c = memo_find(hash, op, attrs, children);
    if (!c.valid()) return std::nullopt;
    return c;
  }
  // The same probe for a key without attributes and with at most two
  // children (most keys: its whole key sits in the hash slot), taken apart so
  // a batched caller hashes, prefetches and probes in a few instructions:
  // small_seed() once per (op, child count), then small_hash() and
  // lookup_small() per key. They agree with node_hash() and
  // lookup_canonical() on such keys (c1, and c0 without children, are 0).
  static uint64_t small_seed(Op op, uint32_t num_children) {
    return mix(mix(uint64_t(op) | (uint64_t(num_children) << 8), 0), 0);
  }
  static uint64_t small_hash(uint64_t seed, uint32_t num_children, EClassId c0, EClassId c1) {
    uint64_t h = seed;
    if (num_children == 2)
      h = mix(h, uint64_t(c0.v) | (uint64_t(c1.v) << 32));
    else if (num_children == 1)
      h = mix(h, c0.v);
    return finish_hash(h);
  }
  // The class of the e-node op(c0, c1) (children as many as small_seed was
  // given, canonical), or an invalid id.
  EClassId lookup_small(uint64_t hash, Op op, uint32_t num_children, EClassId c0, EClassId c1) const {
    const uint32_t want_hash = (uint32_t(hash) << 2) | (1 + num_children);
    return memo_find_inline(want_hash, uint32_t(op) << kIdBits, c0.v, c1.v);
  }
  // add() for a node already typed: children canonical, `hash` from
  // node_hash(), `data` what analysis().make() gave for the children's
  // current data. Finds the equal e-node if there is one (an earlier add may
  // have made it), else adds the node without typing it again.
  EClassId add_typed(uint64_t hash, Op op, const Attrs& attrs, std::span<const EClassId> children,
                     const ClassData& data);

  // Unites two classes; returns whether they were different. Throws
  // eqf::Error "rule R tried to merge T1 with T2" when the analysis refuses.
  bool merge(EClassId a, EClassId b);

  // Restores congruence and the analysis; returns the number of unions it
  // made. Cheap when clean().
  size_t rebuild();
  bool clean() const { return pending_.empty() && analysis_pending_.empty(); }
  // The work rebuild() has queued (e-nodes to re-canonicalize or re-analyze):
  // what the runner budgets time for before a time limit.
  size_t pending_work() const { return pending_.size() + analysis_pending_.size(); }

  // Canonical id of a class. Inline: the applier asks for every variable of
  // every match.
  EClassId find(EClassId c) const {
    uint32_t x = c.v;
    while (uf_parent_[x] != x) x = uf_parent_[x];
    return EClassId(x);
  }
  EClassId find_mut(EClassId c) {  // with path halving
    uint32_t x = c.v;
    while (uf_parent_[x] != x) {
      uf_parent_[x] = uf_parent_[uf_parent_[x]];
      x = uf_parent_[x];
    }
    return EClassId(x);
  }

  // ---- inspection -------------------------------------------------------------

  size_t num_classes() const { return num_classes_; }
  size_t num_nodes() const { return num_live_nodes_; }
  // Class records allocated: the live classes' and those freed by merges and
  // not yet taken again (merge gives a record back, add takes one).
  size_t class_records() const { return classes_.size() - 1; }
  // Canonical class ids in increasing order.
  std::vector<EClassId> classes() const;
  // A canonical class's e-nodes, in stamp order. Valid when clean().
  std::span<const ENodeId> nodes(EClassId c) const { return rec(c).nodes.span(); }
  // E-nodes that have `c` as a child (may repeat; may hold dead nodes).
  std::span<const ENodeId> parents(EClassId c) const { return rec(c).parents.span(); }
  const ClassData& data(EClassId c) const { return rec(find(c)).data; }
  // Whether canonical class c may hold an e-node of `op` (a false yes is
  // possible, a false no is not): the matcher skips a child class without
  // scanning it when the pattern's op cannot be there.
  bool may_have_op(EClassId c, Op op) const { return (rec(c).op_mask & op_bit(op)) != 0; }
  // The largest stamp of canonical class c's e-nodes (the last one's, as
  // nodes() is in stamp order), kept in the class record: the matcher asks
  // whether a class has any e-node new since a stamp for every e-node it
  // scans as a root, and without this it answered with a binary search
  // over the class's list, reading the stamp of a random e-node record at
  // each step, one dependent cache miss after another. Valid when clean().
  uint32_t newest_stamp(EClassId c) const { return rec(c).newest; }
  TypeId type(EClassId c) const { return data(c).type; }
  // The class's data as text ("f32[m k]", "literal = 2").
  std::string data_text(EClassId c) const { return analysis_->data_text(*this, data(c)); }

  // The applier's prefetches for a canonical class it is about to read or
  // change, in three stages, each issued for a whole batch of classes
  // before the next reads what the previous one fetched: the class's slot
  // word, then its record (both of its cache lines), then the free ends of
  // its e-node and parent lists (where add and merge append). Hints only.
  void prefetch_class_slot(EClassId c) const { __builtin_prefetch(&class_slot_[c.v]); }
  // The union-find entry find(c) reads first (c any class id).
  void prefetch_find(EClassId c) const { __builtin_prefetch(&uf_parent_[c.v]); }
  void prefetch_class_record(EClassId c) const {
    const char* r = reinterpret_cast<const char*>(&rec(c));
    __builtin_prefetch(r);
    __builtin_prefetch(r + sizeof(ClassRec) - 1);
  }
  void prefetch_class_lists(EClassId c) const {
    const ClassRec& r = rec(c);
    __builtin_prefetch(r.nodes.end());
    __builtin_prefetch(r.parents.end());
  }

  // An e-node's record as the arena holds it (public: the matcher reads a
  // class's copies of them, node_records()). 32 bytes. Up to two children
  // are kept in the record itself (most nodes); more go to child_pool_ and
  // inline_kids[0] is their first index there.
  struct NodeRec {
    Op op;
    uint8_t dead = 0;
    uint16_t num_children = 0;
    uint32_t stamp = 0;          // created, re-canonicalized or moved to another class
    uint32_t content_stamp = 0;  // created or re-canonicalized
    Attrs attrs;
    EClassId inline_kids[2];

    bool pooled() const { return num_children > 2; }
    std::span<const EClassId> kids(const HugeVector<EClassId>& pool) const {
      return {pooled() ? pool.data() + inline_kids[0].v : inline_kids, num_children};
    }
    std::span<EClassId> kids(HugeVector<EClassId>& pool) {
      return {pooled() ? pool.data() + inline_kids[0].v : inline_kids, num_children};
    }
  };
  const NodeRec& record(ENodeId n) const { return nodes_[n.v]; }
  std::span<const EClassId> children(const NodeRec& r) const { return r.kids(child_pool_); }
  // Copies of canonical class c's e-node records, in the order of nodes(c)
  // (stamp order), laid out class after class in one array: the matcher
  // scans a child class's e-nodes in memory order instead of reading each
  // record at its own place in the arena (one cache miss per candidate: a
  // saturation reads tens of millions of them). Valid when clean(); built
  // on first use after a change, like nodes_with_op().
  std::span<const NodeRec> node_records(EClassId c) const {
    if (!view_valid_) build_view();
    const ClassRec& r = rec(c);
    return {view_.data() + r.view_start, r.nodes.size()};
  }

  size_t node_capacity() const { return nodes_.size(); }  // every ENodeId is below this
  // Asks for an e-node's record ahead of reading it: the matcher walks lists
  // of e-node ids whose records lie anywhere in the arena.
  void prefetch_node(ENodeId n) const { __builtin_prefetch(&nodes_[n.v]); }
  bool live(ENodeId n) const { return !nodes_[n.v].dead; }
  Op op(ENodeId n) const { return nodes_[n.v].op; }
  const Attrs& attrs(ENodeId n) const { return nodes_[n.v].attrs; }
  std::span<const EClassId> children(ENodeId n) const { return nodes_[n.v].kids(child_pool_); }
  EClassId class_of(ENodeId n) const { return node_class_[n.v]; }  // always canonical
  OriginId origin(ENodeId n) const { return node_origin_[n.v]; }
  uint32_t stamp(ENodeId n) const { return nodes_[n.v].stamp; }
  uint32_t content_stamp(ENodeId n) const { return nodes_[n.v].content_stamp; }

  // The live e-nodes of one op in (content_stamp, id) order: the matcher's
  // root scan.
  // Valid when clean(); built on first use after a change.
  std::span<const ENodeId> nodes_with_op(Op op) const;

  // ---- context ------------------------------------------------------------------

  // The one dim table of the e-graph (collect declares dims in it).
  DimTable& dims() { return dims_; }
  const DimTable& dims() const { return dims_; }
  // Declares an input: the type of (input name) and its layout for
  // extraction. Throws eqf::Error if declared before with another type.
  void declare_input(const InputDecl& decl);
  const InputDecl* input_decl(Symbol name) const;
  TypeId input_type(Symbol name) const;  // invalid TypeId if undeclared
  const std::vector<InputDecl>& inputs() const { return inputs_; }

  // Origins: new e-nodes get the current origin; merge errors name it.
  OriginId intern_origin(std::string_view name);
  std::string_view origin_name(OriginId o) const { return origin_names_[o.v]; }
  void set_origin(OriginId o) { origin_ = o; }
  OriginId current_origin() const { return origin_; }

  // The stamp clock. New and changed e-nodes get clock(); tick() advances it.
  uint32_t clock() const { return clock_; }
  uint32_t tick() { return ++clock_; }

  Analysis& analysis() { return *analysis_; }

  // Every canonical class (ascending), its data, and its e-nodes with their
  // attributes, children and origin: the determinism check compares these.
  std::string dump() const;

 private:
  // A class's e-node or parent list, with room for two ids in the record
  // itself. Every e-node a rule adds starts a class of its own, which is
  // usually merged into the match's class at once (and later ones may get
  // one parent): over a saturation most classes never hold more than two
  // ids, and with this they never touch the allocator.
  class IdList {
   public:
    IdList() = default;
    IdList(IdList&& o) noexcept : heap_(o.heap_), size_(o.size_), cap_(o.cap_) {
      inline_[0] = o.inline_[0], inline_[1] = o.inline_[1];
      o.heap_ = nullptr, o.size_ = 0, o.cap_ = kInline;
    }
    IdList& operator=(IdList&& o) noexcept {
      if (this != &o) {
        release();
        heap_ = o.heap_, size_ = o.size_, cap_ = o.cap_;
        inline_[0] = o.inline_[0], inline_[1] = o.inline_[1];
        o.heap_ = nullptr, o.size_ = 0, o.cap_ = kInline;
      }
      return *this;
    }
    IdList(const IdList&) = delete;
    IdList& operator=(const IdList&) = delete;
    ~IdList() { release(); }

    ENodeId* begin() { return cap_ > kInline ? heap_ : inline_; }
    ENodeId* end() { return begin() + size_; }
    const ENodeId* begin() const { return cap_ > kInline ? heap_ : inline_; }
    const ENodeId* end() const { return begin() + size_; }
    std::span<const ENodeId> span() const { return {begin(), size_}; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    void push_back(ENodeId n) {
      if (size_ == cap_) reserve(size_t(cap_) * 2);
      begin()[size_++] = n;
    }
    void append(std::span<const ENodeId> ids) {
      if (size_ + ids.size() > cap_) reserve(std::max(size_t(cap_) * 2, size_ + ids.size()));
      std::copy(ids.begin(), ids.end(), begin() + size_);
      size_ += uint32_t(ids.size());
    }
    void truncate(const ENodeId* new_end) { size_ = uint32_t(new_end - begin()); }
    // Empties the list and gives its memory back.
    void release() {
      if (cap_ > kInline) std::free(heap_);
      heap_ = nullptr, size_ = 0, cap_ = kInline;
    }

   private:
    static constexpr uint32_t kInline = 2;
    void reserve(size_t cap) {
      auto* p = static_cast<ENodeId*>(std::malloc(cap * sizeof(ENodeId)));
      if (!p) throw std::bad_alloc();
      std::copy(begin(), end(), p);
      if (cap_ > kInline) std::free(heap_);
      heap_ = p;
      cap_ = uint32_t(cap);
    }
    ENodeId* heap_ = nullptr;
    ENodeId inline_[kInline];
    uint32_t size_ = 0;
    uint32_t cap_ = kInline;  // > kInline: the ids live in heap_
  };
  static uint64_t op_bit(Op op) { return uint64_t(1) << (uint32_t(op) & 63); }
  struct ClassRec {
    IdList nodes;
    IdList parents;
    uint64_t op_mask = 0;  // op_bit() of every e-node it has held (merges OR them)
    uint32_t newest = 0;   // the largest stamp of its e-nodes; valid when clean()
    mutable uint32_t view_start = 0;  // where node_records() starts in view_ (when view_valid_)
    ClassData data;
  };

  static uint64_t mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
  }
  static uint64_t finish_hash(uint64_t h) {
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
  }
  uint64_t hash_node(Op op, const Attrs& attrs, std::span<const EClassId> children) const;
  bool node_equals(ENodeId n, Op op, const Attrs& attrs, std::span<const EClassId> children) const;
  // The canonical class of the e-node equal to the key, or an invalid id.
  EClassId memo_find(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children) const;
  // memo_find for an inline key (the slot's hash word, op bits and children).
  EClassId memo_find_inline(uint32_t want_hash, uint32_t want_op, uint32_t c0, uint32_t c1) const;
  void memo_insert(uint64_t h, ENodeId n);
  void memo_erase(uint64_t h, ENodeId n);
  size_t memo_slot_of(uint64_t h, ENodeId n) const;
  void memo_grow();

  EClassId add_new(Op op, const Attrs& attrs, std::span<const EClassId> children, const ClassData& data,
                   uint64_t h);
  std::optional<EClassId> add_canonical(Op op, const Attrs& attrs, std::span<const EClassId> children,
                                        std::string* why);
  void mark_dirty(EClassId c);
  void retarget_slots(std::span<const ENodeId> moved, EClassId a);
  void repair_analysis(ENodeId n);
  void clean_class_lists();

  std::unique_ptr<Analysis> analysis_;
  DimTable dims_;
  std::vector<InputDecl> inputs_;
  std::vector<TypeId> input_types_;  // parallel to inputs_

  HugeVector<NodeRec> nodes_;
  HugeVector<EClassId> child_pool_;
  HugeVector<EClassId> node_class_;
  HugeVector<OriginId> node_origin_;
  size_t num_live_nodes_ = 0;

  // Class records live in a pool indexed through class_slot_: a class merged
  // away gives its record back (free_slots_) and its id maps to slot 0, an
  // empty record no class owns. Every e-node a rule adds starts a class, and
  // most of those are merged away at once: the pool stays as small as the
  // live classes (and warm in the cache), while ids keep counting up.
  // The top bit of a class's slot word marks it dirty (its lists need
  // cleaning at the end of rebuild()): rebuild marks the classes of every
  // e-node it touches, and the flag next to the slot costs no second miss.
  static constexpr uint32_t kDirty = 1u << 31;
  std::vector<ClassRec> classes_{1};  // the pool; [0] is the empty record
  // Indexed by class id, which every added e-node takes (AC n = 12: 2.2 M),
  // and read at random by find() and rec(): grown in place, on huge pages.
  HugeVector<uint32_t> class_slot_;  // class id -> pool slot (0: not canonical) | kDirty
  std::vector<uint32_t> free_slots_;
  ClassRec& rec(EClassId c) { return classes_[class_slot_[c.v] & ~kDirty]; }
  const ClassRec& rec(EClassId c) const { return classes_[class_slot_[c.v] & ~kDirty]; }
  HugeVector<uint32_t> uf_parent_;
  size_t num_classes_ = 0;

  // Hash-consing: open addressing with linear probing, 16-byte slots. An
  // e-node with at most two children and no attributes (most of them) has its
  // whole key in the slot (op, children) and, in place of its id, its
  // canonical class (merge() retargets the slots of the nodes that move). A
  // lookup is then decided inside the slot: one cache miss instead of three.
  // Other e-nodes keep their id and are compared in the arena.
  struct MemoSlot {
    uint32_t id_op = 0;  // (class id or node id) + 1, | op << kIdBits; 0 = empty
    uint32_t hash = 0;   // hash bits << 2 | kind (0: general, 1 + number of children: inline key)
    uint32_t c0 = 0, c1 = 0;
  };
  static constexpr int kIdBits = 26;
  // Where a key's probe starts: the first slot of the 64-byte line its hash
  // picks. The four slots of that line are searched before the probe moves
  // on (linearly), so a lookup mostly touches the one line prefetch()
  // fetched; starting mid-line, a quarter of them would cross into the next.
  static size_t memo_home(uint32_t slot_hash, size_t mask) {
    static_assert(sizeof(MemoSlot) == 16);
    return (size_t(slot_hash >> 2) & mask) & ~size_t(3);
  }
  static MemoSlot memo_key(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children);
  HugeVector<MemoSlot> memo_;
  size_t memo_size_ = 0;

  std::vector<ENodeId> pending_;           // parents whose children changed class
  std::vector<ENodeId> analysis_pending_;  // parents whose children's data changed
  std::vector<uint32_t> dirty_classes_;

  void build_view() const;
  mutable HugeVector<NodeRec> view_;  // node_records(): every class's records, class after class
  mutable bool view_valid_ = false;

  mutable std::vector<ENodeId> op_nodes_;
  mutable std::array<uint32_t, kNumOps + 1> op_start_{};
  mutable bool op_index_valid_ = false;

  std::vector<std::string> origin_names_{"input"};
  OriginId origin_ = kInputOrigin;
  uint32_t clock_ = 1;

  std::vector<ClassData> scratch_data_;

 public:
  // Bytes the e-graph holds, for a memory cap (Runner::with_memory_limit):
  // its flat arrays by capacity (what is allocated, not what is used), and
  // the classes' e-node and parent lists estimated from the node count (one
  // list entry per e-node and per child slot, with the lists' doubling
  // slack). O(1). With `next_growth`, an array within 1/16 of its capacity
  // (the hash-consing table: of its growth threshold) is counted at the size
  // its next growth gives it: a cap compared with that between batches of
  // additions is not passed by the growth. Not counted: the analysis' own
  // tables (interned types) and the old buffer an array copies from while it
  // grows.
  size_t memory_bytes(bool next_growth = false) const {
    auto held = [next_growth](const auto& v) {
      size_t cap = v.capacity();
      if (next_growth && v.size() + cap / 16 >= cap) cap *= 2;
      return cap * sizeof(v[0]);
    };
    size_t memo = memo_.size() * sizeof(MemoSlot);
    if (next_growth && (memo_size_ + memo_.size() / 16) * 4 > memo_.size() * 3) memo *= 2;  // memo_grow's load
    const size_t list_entries = nodes_.size() * 3 + child_pool_.size();
    return held(nodes_) + held(child_pool_) + held(node_class_) + held(node_origin_) + held(classes_) +
           held(class_slot_) + held(free_slots_) + held(uf_parent_) + memo + held(pending_) +
           held(analysis_pending_) + held(op_nodes_) + held(view_) + held(dirty_classes_) + held(scratch_data_) +
           list_entries * sizeof(ENodeId) * 3 / 2;
  }
};

// ---- hash-consing, inline --------------------------------------------------------------
// Every rule application and every re-canonicalized e-node probes the table,
// most of them from the applier's batched lookups: inline, so those compile
// into one loop.

inline uint64_t EGraph::hash_node(Op op, const Attrs& attrs, std::span<const EClassId> children) const {
  uint64_t h =
      mix(uint64_t(op) | (uint64_t(children.size()) << 8), uint64_t(attrs[0]) | (uint64_t(attrs[1]) << 32));
  h = mix(h, attrs[2]);
  size_t i = 0;
  for (; i + 1 < children.size(); i += 2)
    h = mix(h, uint64_t(children[i].v) | (uint64_t(children[i + 1].v) << 32));
  if (i < children.size()) h = mix(h, children[i].v);
  return finish_hash(h);
}

inline bool EGraph::node_equals(ENodeId n, Op op, const Attrs& attrs, std::span<const EClassId> children) const {
  const NodeRec& r = nodes_[n.v];
  if (r.op != op || r.num_children != children.size() || r.attrs != attrs) return false;
  const EClassId* mine = r.kids(child_pool_).data();
  for (size_t i = 0; i < children.size(); ++i)
    if (mine[i] != children[i]) return false;
  return true;
}

inline EGraph::MemoSlot EGraph::memo_key(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children) {
  MemoSlot k;
  k.id_op = uint32_t(op) << kIdBits;
  bool inline_key = children.size() <= 2 && attrs[0] == 0 && attrs[1] == 0 && attrs[2] == 0;
  k.hash = (uint32_t(h) << 2) | (inline_key ? 1 + uint32_t(children.size()) : 0);
  if (inline_key) {
    if (children.size() > 0) k.c0 = children[0].v;
    if (children.size() > 1) k.c1 = children[1].v;
  }
  return k;
}

// A probe reads the table a 64-byte line (four slots) at a time: probes
// start at a line's first slot (memo_home), and keys are unique, so a slot of
// the line that holds the whole key is the answer wherever it sits, and an
// empty slot in a line without it ends the search (insertion takes the first
// empty slot from home, and backward-shift erasure keeps it so). The four
// slots are compared at once, without a branch per slot: slot by slot, the
// probe loop's exits were mispredicted about once per lookup, and at the
// table's usual load most lookups end in the home line.
inline EClassId EGraph::memo_find_inline(uint32_t want_hash, uint32_t want_op, uint32_t c0, uint32_t c1) const {
  const uint32_t id_mask = (1u << kIdBits) - 1;
  const size_t mask = memo_.size() - 1;
#if defined(__SSE2__)
  const __m128i key = _mm_setr_epi32(int(want_op), int(want_hash), int(c0), int(c1));
  const __m128i keep = _mm_setr_epi32(int(~id_mask), -1, -1, -1);  // a slot's id bits are its answer
  for (size_t i = memo_home(want_hash, mask);; i = (i + 4) & mask) {
    const MemoSlot* line = memo_.data() + i;
    const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line));
    const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 1));
    const __m128i s2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 2));
    const __m128i s3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 3));
    // Per word, whether it agrees (id bits masked off), narrowed to one
    // byte per word (packs keep 0 and -1) and read as one 16-bit mask, four
    // bits per slot: a slot holds the key where its four bits are set. One
    // movemask and a few shifts, where a movemask, compare and shift per
    // slot took twice the instructions (this runs ~55 M times at AC n = 12).
    const __m128i e0 = _mm_cmpeq_epi32(_mm_and_si128(s0, keep), key);
    const __m128i e1 = _mm_cmpeq_epi32(_mm_and_si128(s1, keep), key);
    const __m128i e2 = _mm_cmpeq_epi32(_mm_and_si128(s2, keep), key);
    const __m128i e3 = _mm_cmpeq_epi32(_mm_and_si128(s3, keep), key);
    const uint32_t m =
        uint32_t(_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3))));
    const uint32_t hit = m & (m >> 1) & (m >> 2) & (m >> 3) & 0x1111u;  // bit 4k: slot k
    if (hit) return EClassId((line[__builtin_ctz(hit) >> 2].id_op & id_mask) - 1);
    if (line[0].id_op == 0 || line[1].id_op == 0 || line[2].id_op == 0 || line[3].id_op == 0) return EClassId();
  }
#else
  for (size_t i = memo_home(want_hash, mask);; i = (i + 1) & mask) {
    const MemoSlot& s = memo_[i];
    if (s.id_op == 0) return EClassId();
    if (s.hash == want_hash && (s.id_op & ~id_mask) == want_op && s.c0 == c0 && s.c1 == c1)
      return EClassId((s.id_op & id_mask) - 1);
  }
#endif
}

inline EClassId EGraph::memo_find(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children) const {
  const MemoSlot key = memo_key(h, op, attrs, children);
  if ((key.hash & 3) != 0) return memo_find_inline(key.hash, key.id_op, key.c0, key.c1);
  const uint32_t id_mask = (1u << kIdBits) - 1;
  const size_t mask = memo_.size() - 1;
  for (size_t i = memo_home(key.hash, mask);; i = (i + 1) & mask) {
    const MemoSlot& s = memo_[i];
    if (s.id_op == 0) return EClassId();
    if (s.hash != key.hash || (s.id_op & ~id_mask) != key.id_op) continue;
    uint32_t id = (s.id_op & id_mask) - 1;
    if (node_equals(ENodeId(id), op, attrs, children)) return node_class_[id];
  }
}

}  // namespace eqf
