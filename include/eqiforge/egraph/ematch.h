// E-matching: finds every substitution under which a pattern matches an
// e-class. A backtracking matcher over the pattern's compiled atoms (see
// Pattern::atoms): it scans the root op's e-nodes, then the e-nodes of each
// child class in turn, binding and comparing variables in fixed registers.
// Nothing is allocated per match; buffers live in the Matcher and are reused.
//
// Incremental matching: with `new_since` set, only matches that use at least
// one e-node stamped at or after it are reported. A rule that applied every
// match it found at clock S may search from S on next time: any match made
// only of older e-nodes existed then, with the same classes, and was applied.
// Class e-node lists are kept in stamp order, so when every e-node bound so
// far is old the last atom scans only the new suffix of its class. The root
// e-node counts as new only if its content changed (content_stamp): a root
// that just moved class was applied to what is now that same class.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/pattern.h"

namespace eqf {

class MatchSink {
 public:
  virtual ~MatchSink() = default;
  // Called with the substitution (Pattern::subst_words() words); return
  // false to stop the search.
  virtual bool on_match(const uint32_t* subst) = 0;
};

struct SearchOptions {
  uint32_t new_since = 0;  // 0: every match
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

enum class SearchEnd { Complete, Stopped, Deadline };

class Matcher {
 public:
  // Every match of p in the e-graph (which must be clean()).
  SearchEnd search(const EGraph& g, const Pattern& p, const SearchOptions& opts, MatchSink& sink);
  // The matches rooted at one class.
  SearchEnd search_class(const EGraph& g, const Pattern& p, EClassId c, const SearchOptions& opts,
                         MatchSink& sink);

 private:
  SearchEnd run(const EGraph& g, const Pattern& p, std::span<const ENodeId> roots, bool roots_by_content,
                const SearchOptions& opts, MatchSink& sink);
  // Atom 0 scans e-node ids (the root candidates); deeper atoms scan their
  // class's records in EGraph::node_records(), which lie in order.
  struct Frame {
    const ENodeId* cur;
    const ENodeId* end;
    const EGraph::NodeRec* rcur;
    const EGraph::NodeRec* rend;
    bool any_new;  // some e-node bound at this atom or before is new
  };
  std::vector<uint32_t> subst_;
  std::vector<Frame> frames_;
  std::vector<uint32_t> atom_class_;
};

}  // namespace eqf
