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

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
    __builtin_prefetch(&memo_[((uint32_t(hash) << 2) >> 2) & (memo_.size() - 1)]);
  }
  std::optional<EClassId> lookup_canonical(uint64_t hash, Op op, const Attrs& attrs,
                                           std::span<const EClassId> children) const {
    EClassId c = memo_find(hash, op, attrs, children);
    if (!c.valid()) return std::nullopt;
    return c;
  }

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

  // Canonical id of a class.
  EClassId find(EClassId c) const;
  EClassId find_mut(EClassId c);  // with path compression

  // ---- inspection -------------------------------------------------------------

  size_t num_classes() const { return num_classes_; }
  size_t num_nodes() const { return num_live_nodes_; }
  // Canonical class ids in increasing order.
  std::vector<EClassId> classes() const;
  // A canonical class's e-nodes, in stamp order. Valid when clean().
  std::span<const ENodeId> nodes(EClassId c) const { return classes_[c.v].nodes; }
  // E-nodes that have `c` as a child (may repeat; may hold dead nodes).
  std::span<const ENodeId> parents(EClassId c) const { return classes_[c.v].parents; }
  const ClassData& data(EClassId c) const { return classes_[find(c).v].data; }
  TypeId type(EClassId c) const { return data(c).type; }
  // The class's data as text ("f32[m k]", "literal = 2").
  std::string data_text(EClassId c) const { return analysis_->data_text(*this, data(c)); }

  size_t node_capacity() const { return nodes_.size(); }  // every ENodeId is below this
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
  // 32 bytes. Up to two children are kept in the record itself (most nodes),
  // so the matcher reads one record per candidate; more go to child_pool_
  // and inline[0] is their first index there.
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
  struct ClassRec {
    std::vector<ENodeId> nodes;
    std::vector<ENodeId> parents;
    ClassData data;
    bool dirty = false;  // needs its lists cleaned at the end of rebuild()
  };

  uint64_t hash_node(Op op, const Attrs& attrs, std::span<const EClassId> children) const;
  bool node_equals(ENodeId n, Op op, const Attrs& attrs, std::span<const EClassId> children) const;
  // The canonical class of the e-node equal to the key, or an invalid id.
  EClassId memo_find(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children) const;
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

  std::vector<ClassRec> classes_;  // indexed by class id; non-canonical ones are empty
  std::vector<uint32_t> uf_parent_;
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
  static MemoSlot memo_key(uint64_t h, Op op, const Attrs& attrs, std::span<const EClassId> children);
  HugeVector<MemoSlot> memo_;
  size_t memo_size_ = 0;

  std::vector<ENodeId> pending_;           // parents whose children changed class
  std::vector<ENodeId> analysis_pending_;  // parents whose children's data changed
  std::vector<uint32_t> dirty_classes_;

  mutable std::vector<ENodeId> op_nodes_;
  mutable std::array<uint32_t, kNumOps + 1> op_start_{};
  mutable bool op_index_valid_ = false;

  std::vector<std::string> origin_names_{"input"};
  OriginId origin_ = kInputOrigin;
  uint32_t clock_ = 1;

  std::vector<ClassData> scratch_data_;
};

}  // namespace eqf
