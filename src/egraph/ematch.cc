#include "eqiforge/egraph/ematch.h"

#include <algorithm>

namespace eqf {
namespace {

constexpr ptrdiff_t kPrefetchAhead = 8;

}  // namespace

SearchEnd Matcher::search(const EGraph& g, const Pattern& p, const SearchOptions& opts, MatchSink& sink) {
  if (p.is_var()) {
    // A bare variable matches every class; there is no e-node to be new.
    subst_.assign(size_t(p.subst_words()), 0);
    for (EClassId c : g.classes()) {
      subst_[0] = subst_[1] = c.v;
      if (!sink.on_match(subst_.data())) return SearchEnd::Stopped;
    }
    return SearchEnd::Complete;
  }
  return run(g, p, g.nodes_with_op(p.atoms()[0].op), true, opts, sink);
}

SearchEnd Matcher::search_class(const EGraph& g, const Pattern& p, EClassId c, const SearchOptions& opts,
                                MatchSink& sink) {
  c = g.find(c);
  if (p.is_var()) {
    subst_.assign(size_t(p.subst_words()), 0);
    subst_[0] = subst_[1] = c.v;
    return sink.on_match(subst_.data()) ? SearchEnd::Complete : SearchEnd::Stopped;
  }
  return run(g, p, g.nodes(c), false, opts, sink);
}

SearchEnd Matcher::run(const EGraph& g, const Pattern& p, std::span<const ENodeId> roots,
                       bool roots_by_content, const SearchOptions& opts, MatchSink& sink) {
  using NodeRec = EGraph::NodeRec;
  const std::span<const Pattern::Atom> atoms = p.atoms();
  const Pattern::ChildOp* child_ops = p.child_ops().data();
  const size_t last = atoms.size() - 1;
  const uint32_t since = opts.new_since;
  subst_.assign(size_t(p.subst_words()), 0);
  frames_.resize(atoms.size());
  atom_class_.resize(atoms.size());
  uint32_t* subst = subst_.data();
  uint32_t* atom_class = atom_class_.data();

  frames_[0].cur = roots.data();
  frames_[0].end = roots.data() + roots.size();
  if (last == 0 && since != 0 && roots_by_content)
    frames_[0].cur = std::partition_point(frames_[0].cur, frames_[0].end,
                                          [&](ENodeId n) { return g.content_stamp(n) < since; });

  // Whether e-node record r fits the atom: its op, child count and
  // attributes, binding and comparing variables as it goes.
  auto fits = [&](const NodeRec& r, const Pattern::Atom& atom) {
    if (r.op != atom.op || r.num_children != atom.num_children) return false;
    for (uint8_t k = 0; k < atom.num_checks; ++k) {
      const Pattern::Atom::Check& c = atom.checks[k];
      uint32_t v = r.attrs[c.slot];
      if (c.mode == Pattern::kFixed) {
        if (v != c.value) return false;
      } else if (c.mode == Pattern::kBind) {
        subst[c.value] = v;
      } else if (subst[c.value] != v) {
        return false;
      }
    }
    const EClassId* ch = g.children(r).data();
    for (uint16_t k = 0; k < atom.num_children; ++k) {
      const Pattern::ChildOp& op = child_ops[atom.first_child + k];
      uint32_t c = ch[k].v;
      if (op.mode == Pattern::kBind)
        subst[op.value] = c;
      else if (op.mode == Pattern::kCompare) {
        if (subst[op.value] != c) return false;
      } else
        atom_class[op.value] = c;
    }
    return true;
  };

  uint32_t steps = 0;
  size_t j = 0;
  while (true) {
    Frame& f = frames_[j];
    const Pattern::Atom& atom = atoms[j];
    const NodeRec* found = nullptr;
    ENodeId root;
    if (j == 0) {
      while (f.cur != f.end) {
        // The records of the e-nodes a few places ahead are fetched while this
        // one is checked: each lies anywhere in the arena.
        if (f.end - f.cur > kPrefetchAhead) g.prefetch_node(f.cur[kPrefetchAhead]);
        const ENodeId n = *f.cur++;
        if ((++steps & 4095) == 0 && std::chrono::steady_clock::now() > opts.deadline)
          return SearchEnd::Deadline;
        const NodeRec& r = g.record(n);
        if (fits(r, atom)) {
          found = &r;
          root = n;
          break;
        }
      }
    } else {
      while (f.rcur != f.rend) {
        const NodeRec& r = *f.rcur++;
        if ((++steps & 4095) == 0 && std::chrono::steady_clock::now() > opts.deadline)
          return SearchEnd::Deadline;
        if (fits(r, atom)) {
          found = &r;
          break;
        }
      }
    }
    if (!found) {
      if (j == 0) return SearchEnd::Complete;
      --j;
      continue;
    }
    // The root's class only names where the right side goes: a root e-node
    // that merely moved to another class gives no new match (the class it
    // was applied to is that class now). Deeper e-nodes are new if they moved.
    f.any_new = j == 0 ? found->content_stamp >= since : frames_[j - 1].any_new || found->stamp >= since;
    if (j == 0) subst[0] = g.class_of(root).v;
    if (j == last) {
      if (!sink.on_match(subst)) return SearchEnd::Stopped;
      continue;
    }
    ++j;
    Frame& next = frames_[j];
    if (!g.may_have_op(EClassId(atom_class[j]), atoms[j].op)) {
      // No e-node of the atom's op in that class (e.g. `0` in (add ?a 0)
      // against a large class of sums): nothing to scan.
      next.rcur = next.rend = nullptr;
      next.any_new = false;
      continue;
    }
    const EClassId cls(atom_class[j]);
    if (j == last && since != 0 && !f.any_new && g.newest_stamp(cls) < since) {
      // Every e-node bound so far is old and so is every e-node of the
      // class: no new match here, and no binary search to find that out.
      next.rcur = next.rend = nullptr;
      next.any_new = false;
      continue;
    }
    std::span<const NodeRec> members = g.node_records(cls);
    next.rcur = members.data();
    next.rend = members.data() + members.size();
    if (j == last && since != 0 && !f.any_new)
      next.rcur = std::partition_point(next.rcur, next.rend, [&](const NodeRec& r) { return r.stamp < since; });
  }
}

}  // namespace eqf
