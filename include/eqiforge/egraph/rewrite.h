// Rewrite rules: a named left pattern, named conditions, and an applier
// (a right pattern, or a C++ function where the right side must be
// computed: a fresh canonical axis, a repair function).
//
//   rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)")
//   rewrite("factor-out-of-sum", "(sum ?d (mul ?s ?x))", "(mul ?s (sum ?d ?x))", "(not-has-dim ?s ?d)")
//   birewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)")  // two rules: name, name-rev
//
// Conditions are predicate factories looked up by name (register_condition
// adds more); they read the bound classes' types and facts. A right side that
// does not type-check is not applied: the rule's "type-rejected" counter
// counts it and nothing is added to the e-graph.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/pattern.h"
#include "eqiforge/ir/sexpr.h"

namespace eqf {

// A match: the substitution of one left pattern.
class Match {
 public:
  Match(const EGraph& g, const Pattern& lhs, const uint32_t* subst) : g_(&g), lhs_(&lhs), subst_(subst) {}
  EClassId root() const { return g_->find(EClassId(subst_[0])); }
  // A class variable's class; throws eqf::Error if `var` is not one.
  EClassId cls(std::string_view var) const;
  // An attribute variable's slots (an F64 one: both).
  Attrs attr(std::string_view var) const;
  const EGraph& egraph() const { return *g_; }
  const Pattern& lhs() const { return *lhs_; }
  const uint32_t* subst() const { return subst_; }

 private:
  const EGraph* g_;
  const Pattern* lhs_;
  const uint32_t* subst_;
};

struct Condition {
  std::string text;          // "(not-has-dim ?s ?d)"
  bool reads_facts = false;  // reads constant facts, which can change as classes merge
  std::function<bool(const Match&)> test;
};

// Builds a condition from its arguments (variables of the left side or
// literals); throws eqf::Error at an argument that does not fit.
using ConditionFactory =
    std::function<Condition(std::span<const SExpr> args, const Pattern& lhs, const std::string& file)>;
// Adds a named condition (replacing one of the same name).
void register_condition(const std::string& name, ConditionFactory factory);
// The registered names, sorted.
std::vector<std::string> condition_names();
// Parses "(name args...) (name args...)" against the left side's variables.
std::vector<Condition> parse_conditions(std::string_view text, const Pattern& lhs, const std::string& file);

// What a C++ applier sees: the match, and a typed add that refuses nodes
// whose type does not check (the rule's application is then rejected).
class ApplyContext {
 public:
  ApplyContext(EGraph& g, const Match& m) : g_(g), m_(m) {}
  const Match& match() const { return m_; }
  EGraph& egraph() { return g_; }
  EClassId cls(std::string_view var) const { return m_.cls(var); }
  Attrs attr(std::string_view var) const { return m_.attr(var); }
  // Adds op(attrs)(children); nullopt (and the reason recorded) if refused.
  std::optional<EClassId> add(Op op, const Attrs& attrs, std::span<const EClassId> children);
  size_t nodes_added() const { return nodes_added_; }
  const std::string& reject_reason() const { return reject_; }

 private:
  EGraph& g_;
  const Match& m_;
  size_t nodes_added_ = 0;
  std::string reject_;
};

// Returns the class to unite with the match's root, or nullopt when the
// rule does not apply to this match (e.g. a node was type-rejected).
using ApplyFn = std::function<std::optional<EClassId>(ApplyContext&)>;

class Rewrite {
 public:
  std::string name;
  Pattern lhs;
  std::vector<Condition> conditions;
  std::optional<Pattern> rhs;  // a pattern applier, or
  ApplyFn apply_fn;            // a C++ applier
  // Whether the runner may skip matches made only of e-nodes this rule has
  // already seen (ematch.h). False when a condition reads facts or when a C++
  // applier depends on more than its match.
  bool skip_seen = true;

  std::string text() const;  // "name: lhs => rhs if conditions"
};

// A rule from text; throws eqf::Error naming the rule on a bad pattern, an
// unbound right-side variable or an unknown condition.
Rewrite rewrite(std::string name, std::string_view lhs, std::string_view rhs,
                std::string_view conditions = "");
// Both directions, written once: `name` (lhs => rhs) and `name-rev`.
// Both sides must bind the same variables.
std::vector<Rewrite> birewrite(std::string name, std::string_view lhs, std::string_view rhs,
                               std::string_view conditions = "");
// A rule whose right side is computed. `pure`: the function depends only on
// the match's types and attributes (so seen matches may be skipped).
Rewrite rewrite_fn(std::string name, std::string_view lhs, ApplyFn fn, std::string_view conditions = "",
                   bool pure = false);

// The outcome of applying one match.
struct ApplyResult {
  bool applied = false;  // the right side was built (or found)
  bool changed = false;  // a node was added or two classes were united
  bool type_rejected = false;
  size_t nodes_added = 0;
  std::string reason;  // why it was rejected
};

// Instantiates a right pattern under a substitution of the left one, in two
// phases so a right side that does not type-check adds nothing: first every
// node is looked up or typed, then the missing ones are added. Reuses its
// buffers across calls.
class RhsBuilder {
 public:
  std::optional<EClassId> build(EGraph& g, const Pattern& rhs, const uint32_t* subst, ApplyResult& result);

  // Applies up to kBatch matches of a pattern rule (`words` per match) and
  // fills results[0..count). The right sides' nodes are looked up level by
  // level across the batch, each lookup's hash slot prefetched first, so the
  // cache misses of hash-consing overlap; a match that needs new nodes takes
  // build()'s path.
  static constexpr size_t kBatch = 16;
  void apply_batch(EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count,
                   ApplyResult* results);

  // Of up to kBatch matches of a pattern rule, found on the clean e-graph
  // (so their classes are canonical), drops those whose right side already
  // exists in the match's own class: applying them would change nothing.
  // Compacts the survivors to the front of `substs`, in order, and returns
  // their number. The search calls it as it goes, so a rule that keeps
  // re-deriving what the e-graph has (most matches of associativity, say)
  // neither stores those matches nor visits them again to apply them.
  // Up to kFilterBatch matches at a time: nothing is applied in between, so
  // more lookups can be in flight at once than in apply_batch.
  static constexpr size_t kFilterBatch = 64;
  size_t drop_applied(const EGraph& g, const Rewrite& rule, uint32_t* substs, size_t count);

 private:
  // Looks each match's right-side nodes up, level by level across the batch
  // (each hash slot prefetched before the probes); found_[b] tells whether
  // every node of match b exists, and batch_cls_[b * nodes + i] holds node
  // i's class. kCanonical: the substitutions need no find() (the search's
  // filter); a template parameter, so that copy has no branch per word.
  template <bool kCanonical>
  void lookup_batch(const EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count);

  // The right pattern as lookup_batch runs it: per node (children first)
  // either the substitution word of its variable, or its op, literal
  // attributes, which attribute slots come from which words, and its
  // children's node indices. Compiled per batch (a few steps), so no
  // allocation and no walk over the pattern's vectors per match.
  struct Step {
    static constexpr uint32_t kNoVar = 0xffffffffu;
    static constexpr size_t kMaxChildren = 8;
    uint32_t var_word = kNoVar;
    Op op = Op::Input;
    uint8_t num_copies = 0;
    uint8_t num_children = 0;
    Attrs attrs = {0, 0, 0};
    struct Copy {
      uint8_t slot;
      uint32_t word;
    } copies[3];
    uint16_t children[kMaxChildren];
  };
  // False when a node has more than kMaxChildren children.
  bool compile(const Pattern& rhs);
  std::vector<Step> prog_;
  bool compiled_ = false;  // prog_ holds the last lookup_batch's right side

  // After lookup_batch in apply_batch: prefetches, in stages across the
  // batch, the class records the matches that change the e-graph will read
  // and write (EGraph::prefetch_class_*), so that their cache misses overlap
  // instead of coming one after another inside build() and merge().
  void prefetch_changes(const EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count);
  static constexpr size_t kPrefetchClasses = 4 * kBatch;
  EClassId prefetch_cls_[kPrefetchClasses];

  std::vector<EClassId> batch_cls_;  // kFilterBatch x rhs nodes
  uint64_t batch_hash_[kFilterBatch];
  EClassId batch_kid_[2][kFilterBatch];  // a small key's children (EGraph::lookup_small)
  bool found_[kFilterBatch];
  std::vector<EClassId> cls_;
  std::vector<ClassData> data_;
  std::vector<Attrs> attrs_;
  std::vector<EClassId> children_;
  std::vector<ClassData> child_data_;
};

// Applies a rule to one match: builds the right side and unites it with the
// match's root. Throws eqf::Error naming the rule if the union is refused.
ApplyResult apply_rewrite(EGraph& g, const Rewrite& rule, const uint32_t* subst, RhsBuilder& builder);

}  // namespace eqf
