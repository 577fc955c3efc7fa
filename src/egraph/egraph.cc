#include "eqiforge/egraph/egraph.h"

#include <algorithm>

#include "egraph/attr_syntax.h"
#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

// A node's children canonicalized into a buffer that never aliases the
// e-graph's child pool (which add() may grow).
class ChildBuf {
 public:
  explicit ChildBuf(size_t n) : n_(n) {
    if (n > kInline) heap_.resize(n);
  }
  EClassId* data() { return n_ > kInline ? heap_.data() : inline_; }
  std::span<const EClassId> span() { return {data(), n_}; }

 private:
  static constexpr size_t kInline = 8;
  size_t n_;
  EClassId inline_[kInline];
  std::vector<EClassId> heap_;
};

}  // namespace

EGraph::EGraph(std::unique_ptr<Analysis> analysis) : analysis_(std::move(analysis)) {
  memo_.assign(1024, MemoSlot{});
}
EGraph::~EGraph() = default;
EGraph::EGraph(EGraph&&) noexcept = default;
EGraph& EGraph::operator=(EGraph&&) noexcept = default;

// ---- hash-consing ---------------------------------------------------------------

// hash_node, node_equals, memo_key and memo_find are inline in egraph.h.

void EGraph::memo_insert(uint64_t h, ENodeId n) {
  if (n.v + 1 >= (1u << kIdBits)) throw Error("the e-graph is full: more than 2^26 e-nodes");
  if ((memo_size_ + 1) * 4 > memo_.size() * 3) memo_grow();  // load factor 3/4
  const NodeRec& r = nodes_[n.v];
  MemoSlot key = memo_key(h, r.op, r.attrs, r.kids(child_pool_));
  key.id_op |= ((key.hash & 3) != 0 ? node_class_[n.v].v : n.v) + 1;
  const size_t mask = memo_.size() - 1;
  size_t i = memo_home(key.hash, mask);
  while (memo_[i].id_op != 0) i = (i + 1) & mask;
  memo_[i] = key;
  ++memo_size_;
}

// The slot of live node n, whose content must be what it was when inserted
// (h its hash); memo_.size() if absent. Keys are unique in the table: an
// inline slot is found by its key, any other by the node id.
size_t EGraph::memo_slot_of(uint64_t h, ENodeId n) const {
  const NodeRec& r = nodes_[n.v];
  const MemoSlot key = memo_key(h, r.op, r.attrs, r.kids(child_pool_));
  const bool inline_key = (key.hash & 3) != 0;
  const uint32_t id_mask = (1u << kIdBits) - 1;
  const size_t mask = memo_.size() - 1;
  for (size_t i = memo_home(key.hash, mask);; i = (i + 1) & mask) {
    const MemoSlot& s = memo_[i];
    if (s.id_op == 0) return memo_.size();
    if (inline_key
            ? (s.hash == key.hash && (s.id_op & ~id_mask) == key.id_op && s.c0 == key.c0 && s.c1 == key.c1)
            : (s.hash & 3) == 0 && (s.id_op & id_mask) == n.v + 1)
      return i;
  }
}

// Backward-shift deletion keeps probe sequences unbroken without tombstones.
void EGraph::memo_erase(uint64_t h, ENodeId n) {
  size_t i = memo_slot_of(h, n);
  if (i == memo_.size()) return;  // not present (cannot happen for a live node)
  const size_t mask = memo_.size() - 1;
  size_t j = i;
  while (true) {
    j = (j + 1) & mask;
    const MemoSlot s = memo_[j];
    if (s.id_op == 0) break;
    size_t home = memo_home(s.hash, mask);
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    memo_[i] = s;
    i = j;
  }
  memo_[i] = MemoSlot{};
  --memo_size_;
}

// Doubles the table in place: the array grows (mremap, so the old slots are
// not copied and the new half is fresh zero pages), and every key moves, if
// at all, from its old home line h to h + old size. The keys are taken out
// and put back one by one in probe order, starting after an empty slot so
// each cluster is walked from its beginning. A key whose new home is in the
// lower half finds its own (just emptied) slot or an earlier one, so it
// never passes a key still to be moved; one whose new home is in the upper
// half meets only moved keys there. Only a probe that wraps from the end of
// the table to its start could pass keys not yet moved: such keys (rare)
// wait in `late` and go in last. Rehashing into a fresh table instead
// touched twice the memory (the kernel zeroing every page of it) and copied
// every key. Where keys sit does not change any lookup's answer.
void EGraph::memo_grow() {
  const size_t old = memo_.size();
  memo_.grow_zeroed(old * 2);
  const size_t old_mask = old - 1, mask = old * 2 - 1;
  size_t first_empty = 0;
  while (memo_[first_empty].id_op != 0) ++first_empty;  // the load is below 3/4
  std::vector<MemoSlot> late;
  for (size_t k = 1; k < old; ++k) {
    const size_t i = (first_empty + k) & old_mask;
    const MemoSlot s = memo_[i];
    if (s.id_op == 0) continue;
    memo_[i] = MemoSlot{};
    size_t j = memo_home(s.hash, mask);
    while (memo_[j].id_op != 0) {
      j = (j + 1) & mask;
      if (j == 0) break;
    }
    if (memo_[j].id_op != 0) {  // wrapped to the start: slot 0 is taken
      late.push_back(s);
      continue;
    }
    if (j < memo_home(s.hash, mask)) {  // wrapped to an empty slot 0
      late.push_back(s);
      continue;
    }
    memo_[j] = s;
  }
  for (const MemoSlot& s : late) {
    size_t j = memo_home(s.hash, mask);
    while (memo_[j].id_op != 0) j = (j + 1) & mask;
    memo_[j] = s;
  }
}

// ---- adding ---------------------------------------------------------------------

EClassId EGraph::add(Op op, const Attrs& attrs, std::span<const EClassId> children) {
  std::string why;
  std::optional<EClassId> c = try_add(op, attrs, children, &why);
  if (!c) throw Error(std::string(op_info(op).name) + ": " + why);
  return *c;
}

std::optional<EClassId> EGraph::try_add(Op op, const Attrs& attrs, std::span<const EClassId> children,
                                        std::string* why) {
  ChildBuf buf(children.size());
  for (size_t i = 0; i < children.size(); ++i) buf.data()[i] = find_mut(children[i]);
  return add_canonical(op, attrs, buf.span(), why);
}

std::optional<EClassId> EGraph::lookup(Op op, const Attrs& attrs, std::span<const EClassId> children) const {
  ChildBuf buf(children.size());
  for (size_t i = 0; i < children.size(); ++i) buf.data()[i] = find(children[i]);
  std::span<const EClassId> ch = buf.span();
  EClassId c = memo_find(hash_node(op, attrs, ch), op, attrs, ch);
  if (!c.valid()) return std::nullopt;
  return c;
}

std::optional<EClassId> EGraph::add_canonical(Op op, const Attrs& attrs, std::span<const EClassId> children,
                                              std::string* why) {
  // NodeRec keeps the child count in 16 bits (a small record is a fast
  // e-graph); a wider node is refused, never truncated.
  if (children.size() > UINT16_MAX) {
    if (why)
      *why = std::string(op_info(op).name) + " has " + std::to_string(children.size()) +
             " operands; the e-graph takes at most 65535";
    return std::nullopt;
  }
  uint64_t h = hash_node(op, attrs, children);
  EClassId found = memo_find(h, op, attrs, children);
  if (found.valid()) return found;
  // make() never re-enters add(), so the scratch buffer is free again by the
  // time modify() (which may add nodes) runs.
  scratch_data_.clear();
  for (EClassId c : children) scratch_data_.push_back(rec(c).data);
  ClassData d;
  std::string reason;
  if (!analysis_->make(*this, op, attrs, scratch_data_, d, reason)) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  }
  return add_new(op, attrs, children, d, h);
}

EClassId EGraph::add_typed(uint64_t hash, Op op, const Attrs& attrs, std::span<const EClassId> children,
                           const ClassData& data) {
  EClassId found = memo_find(hash, op, attrs, children);
  if (found.valid()) return found;
  return add_new(op, attrs, children, data, hash);
}

EClassId EGraph::add_new(Op op, const Attrs& attrs, std::span<const EClassId> children, const ClassData& data,
                         uint64_t h) {
  ENodeId n(uint32_t(nodes_.size()));
  NodeRec r;
  r.op = op;
  r.num_children = uint16_t(children.size());
  if (children.size() > 2) {
    r.inline_kids[0] = EClassId(uint32_t(child_pool_.size()));
    child_pool_.append(children.data(), children.data() + children.size());
  } else {
    for (size_t i = 0; i < children.size(); ++i) r.inline_kids[i] = children[i];
  }
  r.stamp = clock_;
  r.content_stamp = clock_;
  r.attrs = attrs;
  nodes_.push_back(r);

  EClassId c(uint32_t(uf_parent_.size()));
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = uint32_t(classes_.size());
    classes_.emplace_back();
  }
  class_slot_.push_back(slot);
  ClassRec& cr = classes_[slot];
  cr.nodes.push_back(n);
  cr.op_mask = op_bit(op);
  cr.newest = clock_;
  cr.data = data;
  uf_parent_.push_back(c.v);
  ++num_classes_;
  node_class_.push_back(c);
  node_origin_.push_back(origin_);
  ++num_live_nodes_;
  for (EClassId ch : children) rec(ch).parents.push_back(n);
  memo_insert(h, n);
  op_index_valid_ = false;
  view_valid_ = false;
  analysis_->modify(*this, c);
  return find(c);
}

// ---- merging and rebuilding ---------------------------------------------------------

// The hash-consing slots of `moved` (inline keys hold the class) now name
// class a. Hashes first, each slot prefetched, then the updates: the probes'
// cache misses overlap.
void EGraph::retarget_slots(std::span<const ENodeId> moved, EClassId a) {
  const uint32_t id_mask = (1u << kIdBits) - 1;
  constexpr size_t kChunk = 16;
  for (size_t start = 0; start < moved.size(); start += kChunk) {
    size_t end = std::min(moved.size(), start + kChunk);
    uint64_t hashes[kChunk];
    for (size_t i = start; i < end; ++i) {
      const NodeRec& r = nodes_[moved[i].v];
      hashes[i - start] = hash_node(r.op, r.attrs, r.kids(child_pool_));
      prefetch(hashes[i - start]);
    }
    for (size_t i = start; i < end; ++i) {
      const NodeRec& r = nodes_[moved[i].v];
      if (r.dead || r.num_children > 2 || r.attrs[0] != 0 || r.attrs[1] != 0 || r.attrs[2] != 0) continue;
      size_t slot = memo_slot_of(hashes[i - start], moved[i]);
      if (slot == memo_.size()) continue;
      memo_[slot].id_op = (memo_[slot].id_op & ~id_mask) | (a.v + 1);
    }
  }
}

void EGraph::mark_dirty(EClassId c) {
  uint32_t& slot = class_slot_[c.v];
  if (slot == 0 || (slot & kDirty)) return;  // merged away (nothing to clean), or marked
  slot |= kDirty;
  dirty_classes_.push_back(c.v);
}

bool EGraph::merge(EClassId a, EClassId b) {
  a = find_mut(a);
  b = find_mut(b);
  if (a == b) return false;
  // The larger class stays the root, so each node moves O(log n) times.
  auto weight = [&](EClassId c) { return rec(c).nodes.size() + rec(c).parents.size(); };
  bool swapped = weight(b) > weight(a) || (weight(b) == weight(a) && b < a);
  if (swapped) std::swap(a, b);

  ClassRec& ra = rec(a);
  ClassRec& rb = rec(b);
  // Merged in the caller's order, so a refusal reads "merge <a> with <b>"
  // as the rule wrote it.
  ClassData merged = swapped ? rb.data : ra.data;
  MergeOutcome outcome;
  std::string why;
  if (!analysis_->merge(*this, merged, swapped ? ra.data : rb.data, outcome, why)) {
    std::string who = origin_ == kInputOrigin ? std::string("a merge of input terms")
                                              : "rule " + std::string(origin_name(origin_));
    EClassId first = swapped ? b : a, second = swapped ? a : b;
    throw Error(who + " tried to merge " + why + " (e-classes c" + std::to_string(first.v) + " and c" +
                std::to_string(second.v) + ")");
  }
  if (swapped) std::swap(outcome.into_changed, outcome.from_changed);
  ra.data = merged;
  uf_parent_[b.v] = a.v;
  --num_classes_;

  if (outcome.into_changed)
    analysis_pending_.insert(analysis_pending_.end(), ra.parents.begin(), ra.parents.end());
  if (outcome.from_changed)
    analysis_pending_.insert(analysis_pending_.end(), rb.parents.begin(), rb.parents.end());

  // b's nodes change class: they are new to the matcher (stamped now) and,
  // stamped with the newest clock value, stay in stamp order at the end.
  for (ENodeId n : rb.nodes) {
    node_class_[n.v] = a;
    nodes_[n.v].stamp = clock_;
  }
  retarget_slots(rb.nodes.span(), a);
  ra.nodes.append(rb.nodes.span());
  ra.op_mask |= rb.op_mask;
  // b's parents now point at a non-canonical id: re-canonicalize them.
  pending_.insert(pending_.end(), rb.parents.begin(), rb.parents.end());
  ra.parents.append(rb.parents.span());
  // b's record goes back to the pool, empty; b's id now reads slot 0.
  const uint32_t b_slot = class_slot_[b.v] & ~kDirty;
  rb = ClassRec{};
  free_slots_.push_back(b_slot);
  class_slot_[b.v] = 0;
  mark_dirty(a);
  op_index_valid_ = false;
  view_valid_ = false;
  analysis_->modify(*this, a);
  return true;
}

size_t EGraph::rebuild() {
  size_t unions = 0;
  while (!pending_.empty() || !analysis_pending_.empty()) {
    while (!pending_.empty()) {
      // Software pipeline over the e-nodes still to come (the back of the
      // stack, processed next unless a union pushes more): the record of the
      // one kNodeAhead places on is fetched, and the hash slot the one
      // kSlotAhead places on will erase, from its record fetched earlier.
      // Only prefetches: the order of the work, and so the result, is as
      // without them.
      constexpr size_t kNodeAhead = 16, kSlotAhead = 8;
      if (pending_.size() > kNodeAhead) prefetch_node(pending_[pending_.size() - 1 - kNodeAhead]);
      if (pending_.size() > kSlotAhead) {
        const NodeRec& ahead = nodes_[pending_[pending_.size() - 1 - kSlotAhead].v];
        prefetch(hash_node(ahead.op, ahead.attrs, ahead.kids(child_pool_)));
      }
      ENodeId n = pending_.back();
      pending_.pop_back();
      NodeRec& r = nodes_[n.v];
      if (r.dead) continue;
      EClassId* ch = r.kids(child_pool_).data();
      bool stale = false;
      for (uint16_t i = 0; i < r.num_children; ++i) stale |= uf_parent_[ch[i].v] != ch[i].v;
      if (!stale) continue;  // already re-canonicalized through another union
      std::span<const EClassId> children(ch, r.num_children);
      memo_erase(hash_node(r.op, r.attrs, children), n);
      for (uint16_t i = 0; i < r.num_children; ++i) ch[i] = find_mut(ch[i]);
      r.stamp = clock_;
      r.content_stamp = clock_;
      EClassId cls = node_class_[n.v];
      mark_dirty(cls);
      uint64_t h = hash_node(r.op, r.attrs, children);
      EClassId other = memo_find(h, r.op, r.attrs, children);
      if (!other.valid()) {
        memo_insert(h, n);
        continue;
      }
      // Congruent to m: n is a duplicate and leaves the e-graph.
      r.dead = 1;
      --num_live_nodes_;
      for (EClassId c : children) mark_dirty(c);
      if (merge(cls, other)) ++unions;
    }
    while (!analysis_pending_.empty()) {
      ENodeId n = analysis_pending_.back();
      analysis_pending_.pop_back();
      if (!nodes_[n.v].dead) repair_analysis(n);
    }
  }
  if (!dirty_classes_.empty()) clean_class_lists();
  return unions;
}

void EGraph::repair_analysis(ENodeId n) {
  const NodeRec& r = nodes_[n.v];
  scratch_data_.clear();
  for (EClassId c : children(n)) scratch_data_.push_back(rec(find(c)).data);
  ClassData made;
  std::string why;
  Attrs attrs = r.attrs;
  if (!analysis_->make(*this, r.op, attrs, scratch_data_, made, why))
    return;  // types never change; facts only grow
  EClassId cls = node_class_[n.v];
  ClassData merged = rec(cls).data;
  MergeOutcome outcome;
  if (!analysis_->merge(*this, merged, made, outcome, why))
    throw Error("the analysis of e-class c" + std::to_string(cls.v) + " became inconsistent: " + why);
  if (!outcome.into_changed) return;
  rec(cls).data = merged;
  const IdList& ps = rec(cls).parents;
  analysis_pending_.insert(analysis_pending_.end(), ps.begin(), ps.end());
  analysis_->modify(*this, cls);
}

void EGraph::clean_class_lists() {
  std::vector<uint32_t> dirty;
  dirty.swap(dirty_classes_);
  for (uint32_t c : dirty) {
    if (uf_parent_[c] != c) continue;  // merged away; its lists moved to the root
    class_slot_[c] &= ~kDirty;
    ClassRec& rec = classes_[class_slot_[c]];
    auto dead = [&](ENodeId n) { return nodes_[n.v].dead != 0; };
    rec.nodes.truncate(std::remove_if(rec.nodes.begin(), rec.nodes.end(), dead));
    // Merges append in stamp order; only the e-nodes rebuild() re-stamped
    // in place are out of it, and most lists have none.
    auto by_stamp = [&](ENodeId x, ENodeId y) { return nodes_[x.v].stamp < nodes_[y.v].stamp; };
    if (!std::is_sorted(rec.nodes.begin(), rec.nodes.end(), by_stamp))
      std::stable_sort(rec.nodes.begin(), rec.nodes.end(), by_stamp);
    // Stamps change only where a class is marked dirty (merge, rebuild) or
    // made (add_new), so only dirty classes need their newest stamp again.
    rec.newest = rec.nodes.empty() ? 0 : nodes_[rec.nodes.end()[-1].v].stamp;
    rec.parents.truncate(std::remove_if(rec.parents.begin(), rec.parents.end(), dead));
    std::sort(rec.parents.begin(), rec.parents.end());
    rec.parents.truncate(std::unique(rec.parents.begin(), rec.parents.end()));
  }
  op_index_valid_ = false;
  view_valid_ = false;
}

// ---- inspection ---------------------------------------------------------------------

std::vector<EClassId> EGraph::classes() const {
  std::vector<EClassId> out;
  out.reserve(num_classes_);
  for (uint32_t c = 0; c < uf_parent_.size(); ++c)
    if (uf_parent_[c] == c) out.push_back(EClassId(c));
  return out;
}

std::span<const ENodeId> EGraph::nodes_with_op(Op op) const {
  if (!op_index_valid_) {
    // Counting sort by content stamp (stable in id order), then by op
    // (stable): each op's nodes end up in (content_stamp, id) order in
    // O(nodes + clock).
    std::vector<uint32_t> by_stamp(size_t(clock_) + 2, 0);
    size_t live = 0;
    for (const NodeRec& r : nodes_)
      if (!r.dead) ++by_stamp[r.content_stamp + 1], ++live;
    for (size_t i = 1; i < by_stamp.size(); ++i) by_stamp[i] += by_stamp[i - 1];
    std::vector<ENodeId> sorted(live);
    for (uint32_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i].dead) sorted[by_stamp[nodes_[i].content_stamp]++] = ENodeId(i);
    op_start_.fill(0);
    for (ENodeId n : sorted) ++op_start_[size_t(nodes_[n.v].op) + 1];
    for (size_t i = 1; i < op_start_.size(); ++i) op_start_[i] += op_start_[i - 1];
    std::array<uint32_t, kNumOps + 1> next = op_start_;
    op_nodes_.resize(live);
    for (ENodeId n : sorted) op_nodes_[next[size_t(nodes_[n.v].op)]++] = n;
    op_index_valid_ = true;
  }
  size_t o = size_t(op);
  return {op_nodes_.data() + op_start_[o], op_start_[o + 1] - op_start_[o]};
}

void EGraph::build_view() const {
  // Record slots in pool order (deterministic, like everything else here);
  // a slot no class owns has no e-nodes. Each class's records are copied
  // with the ones a few places ahead prefetched: the ids are in hand, the
  // records anywhere in the arena.
  size_t total = 0;
  for (size_t s = 1; s < classes_.size(); ++s) total += classes_[s].nodes.size();
  view_.resize_for_overwrite(total);
  NodeRec* out = view_.data();
  uint32_t at = 0;
  constexpr size_t kAhead = 8;
  for (size_t s = 1; s < classes_.size(); ++s) {
    const ClassRec& r = classes_[s];
    r.view_start = at;
    const ENodeId* ids = r.nodes.begin();
    const size_t count = r.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      if (i + kAhead < count) __builtin_prefetch(&nodes_[ids[i + kAhead].v]);
      out[at + i] = nodes_[ids[i].v];
    }
    at += uint32_t(count);
  }
  view_valid_ = true;
}

// ---- context ------------------------------------------------------------------------

void EGraph::declare_input(const InputDecl& decl) {
  TensorType t;
  t.dtype = decl.dtype;
  t.dims = decl.layout;
  std::sort(t.dims.begin(), t.dims.end());
  Type ty;
  ty.parts.push_back(t);
  TypeId id = TypeId::intern(ty);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].name != decl.name) continue;
    if (input_types_[i] != id)
      throw Error("input " + std::string(decl.name.str()) + " is declared as " + type_text(ty, &dims_) +
                  " but the e-graph already has it as " + type_text(input_types_[i].get(), &dims_));
    return;
  }
  inputs_.push_back(decl);
  input_types_.push_back(id);
}

const InputDecl* EGraph::input_decl(Symbol name) const {
  for (const InputDecl& d : inputs_)
    if (d.name == name) return &d;
  return nullptr;
}

TypeId EGraph::input_type(Symbol name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name) return input_types_[i];
  return TypeId();
}

OriginId EGraph::intern_origin(std::string_view name) {
  for (uint32_t i = 0; i < origin_names_.size(); ++i)
    if (origin_names_[i] == name) return OriginId{i};
  origin_names_.emplace_back(name);
  return OriginId{uint32_t(origin_names_.size() - 1)};
}

std::string EGraph::dump() const {
  std::string out = "egraph: " + std::to_string(num_classes_) + " classes, " +
                    std::to_string(num_live_nodes_) + " nodes" + (clean() ? "" : " (not rebuilt)") + "\n";
  for (EClassId c : classes()) {
    const ClassRec& rec = this->rec(c);
    out += "c" + std::to_string(c.v) + " : " + analysis_->data_text(*this, rec.data) + "\n";
    for (ENodeId n : rec.nodes) {
      if (nodes_[n.v].dead) continue;
      Op o = op(n);
      out += "  n" + std::to_string(n.v) + " (" + std::string(op_info(o).name);
      for (int i = 0; i < 3 && op_info(o).attrs[i] != AttrKind::None; ++i)
        out += " " + attr_text(o, attrs(n), i);
      for (EClassId ch : children(n)) out += " c" + std::to_string(find(ch).v);
      out += ")  @" + std::to_string(stamp(n)) + " <- " + std::string(origin_name(origin(n))) + "\n";
    }
  }
  return out;
}

}  // namespace eqf
