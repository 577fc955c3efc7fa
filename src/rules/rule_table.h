// Internal to the rule library: how a rule is written down (RuleSpec), what
// a computed applier sees (RuleCtx), and the TermBuilder through which every
// right side is built.
//
// Every rule, pattern or computed, builds its right side into a TermBuilder:
// a small DAG of new nodes over existing e-classes, typed node by node by the
// e-graph's analysis, with nothing added to the e-graph until it is complete.
// The same applier then serves two masters:
//   - the runner (commit): the DAG is added to the e-graph and the recorded
//     equalities become unions; a right side whose type differs from its left
//     side's is not applied (the typing rules decide what is legal);
//   - the soundness check (verify.cc): the DAG is kept as terms, with the
//     left side rebuilt from the pattern, and both are evaluated.
#pragma once

#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/pattern.h"
#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/rules/library.h"

namespace eqf::rules {

// A value while a right side is being built: an e-class of the e-graph or a
// node built by this application. Invalid when a node did not type-check.
struct Ref {
  int32_t v = -1;
  bool valid() const { return v >= 0; }
  friend bool operator==(Ref a, Ref b) { return a.v == b.v; }
};

class TermBuilder {
 public:
  // reuse: an op over classes whose e-node already exists gives that class
  // (the runner). Off, every node built stays a node (the soundness check
  // must see the structure the rule built, not an equal class).
  TermBuilder(EGraph& g, bool reuse) : g_(g), reuse_(reuse) {}

  Ref cls(EClassId c);
  Ref add(Op op, const Attrs& attrs, std::span<const Ref> kids);
  Ref add(Op op, const Attrs& attrs, std::initializer_list<Ref> kids) {
    return add(op, attrs, std::span<const Ref>(kids.begin(), kids.size()));
  }

  const ClassData& data(Ref r) const { return entries_[size_t(r.v)].data; }
  const Type& type(Ref r) const { return data(r).type.get(); }
  // A tensor's type (the first part of a tuple).
  const TensorType& tensor(Ref r) const { return type(r).parts.front(); }
  bool is_literal(Ref r) const { return !type(r).is_tuple && tensor(r).literal; }
  bool is_class(Ref r) const { return entries_[size_t(r.v)].is_class; }
  EClassId class_of(Ref r) const { return entries_[size_t(r.v)].cls; }  // is_class only
  Op op(Ref r) const { return entries_[size_t(r.v)].op; }
  const Attrs& attrs(Ref r) const { return entries_[size_t(r.v)].attrs; }
  std::span<const Ref> kids(Ref r) const;
  size_t size() const { return entries_.size(); }
  const std::string& reject_reason() const { return reject_; }
  // The first node that did not type-check, when its operands were all
  // e-classes (so the engine can be shown the same refusal).
  struct Rejected {
    Op op = Op::Input;
    Attrs attrs{0, 0, 0};
    std::vector<EClassId> kids;
  };
  const std::optional<Rejected>& first_rejected() const { return rejected_; }

  EGraph& egraph() { return g_; }
  const EGraph& egraph() const { return g_; }

 private:
  struct Entry {
    bool is_class = false;
    EClassId cls;
    Op op = Op::Input;
    Attrs attrs{0, 0, 0};
    uint32_t first = 0, count = 0;  // into kids_
    ClassData data;
  };
  EGraph& g_;
  bool reuse_;
  std::vector<Entry> entries_;
  std::vector<Ref> kids_;
  std::unordered_map<uint32_t, Ref> class_refs_;
  std::unordered_map<uint64_t, std::vector<Ref>> node_refs_;  // dedup of built nodes
  std::vector<ClassData> scratch_;
  std::string reject_;
  std::optional<Rejected> rejected_;
};

// What an applier sees: the match, the builder, and where to put results.
class RuleCtx {
 public:
  RuleCtx(TermBuilder& b, const Match& m, const RuleOptions& opts, bool structural)
      : b(b), match(m), opts(opts), structural_(structural) {}

  TermBuilder& b;
  const Match& match;
  const RuleOptions& opts;
  Ref root;  // the left side's value

  Ref var(std::string_view name) { return b.cls(match.cls(name)); }
  Attrs attr(std::string_view name) const { return match.attr(name); }
  Axis axis(std::string_view name) const { return attr_axis(attr(name), 0); }
  Symbol dim(std::string_view name) const { return attr_sym(attr(name), 0); }
  RedId red(std::string_view name) const { return attr_red(attr(name), 0); }
  const EGraph& egraph() const { return b.egraph(); }

  // An existing e-node found by scanning (a fusion partner): its class for
  // the runner, its own structure over its children's classes for the check.
  Ref node(ENodeId n);

  // Records "a equals b"; a is usually `root`. Invalid refs are ignored.
  void equal(Ref a, Ref b_) {
    if (a.valid() && b_.valid()) equalities.push_back({a, b_});
  }
  std::vector<std::pair<Ref, Ref>> equalities;
  // Building terms for the soundness check (not for the e-graph).
  bool structural() const { return structural_; }

 private:
  bool structural_;
};

using Applier = std::function<void(RuleCtx&)>;

// One table row.
struct RuleSpec {
  Family family = Family::Algebraic;
  std::string name;        // kebab-case
  std::string lhs;         // pattern
  std::string rhs;         // pattern, or empty for a computed rule
  std::string conditions;  // "(name args...) ..."
  std::string computes;    // computed rules: what the applier builds, for listings
  Applier apply;           // computed rules
  // Computed rules that keep state about one e-graph between applications
  // (caches): a fresh applier per compiled rule.
  std::function<Applier()> make_apply;
  bool pure = true;  // the applier reads only the match (types, attributes)
};

// Table helpers: one call per rule line.
class Table {
 public:
  Table(Family f, const RuleOptions& opts) : family_(f), opts_(opts) {}
  // lhs => rhs
  void rule(std::string name, std::string lhs, std::string rhs, std::string conditions = "");
  // lhs <=> rhs: `name` and `name-rev`
  void birule(std::string name, std::string lhs, std::string rhs, std::string conditions = "");
  // lhs => computed
  void computed(std::string name, std::string lhs, std::string computes, Applier apply,
                std::string conditions = "", bool pure = true);
  // A computed rule with state about one e-graph: `make` gives each compiled
  // copy of the rule its own applier.
  void stateful(std::string name, std::string lhs, std::string computes, std::function<Applier()> make,
                std::string conditions = "");
  std::vector<RuleSpec> take() { return std::move(specs_); }
  const RuleOptions& opts() const { return opts_; }

 private:
  Family family_;
  const RuleOptions& opts_;
  std::vector<RuleSpec> specs_;
};

// The tables (one file each).
void algebraic_rules(Table& t);
void refinement_rules(Table& t);
void propagation_rules(Table& t);
void reduction_fusion_rules(Table& t);
void structural_rules(Table& t);
void storage_rules(Table& t);

// Checks specs as they are loaded: kebab-case unique names, and every
// pattern, variable and condition. Throws eqf::Error naming the rule.
void validate(const std::vector<RuleSpec>& specs);
// Every spec of a family / of all families, validated.
std::vector<RuleSpec> family_specs(Family f, const RuleOptions& opts);
std::vector<RuleSpec> all_specs(const RuleOptions& opts);

// A compiled rule: the engine's Rewrite plus what the soundness check needs.
// A stateful rule's applier is made fresh by compile().
struct CompiledRule {
  RuleSpec spec;
  Pattern lhs;
  std::optional<Pattern> rhs;
  std::vector<Condition> conditions;
};
CompiledRule compile(const RuleSpec& spec);
// The engine-facing rule: builds through a TermBuilder and commits.
Rewrite to_rewrite(const CompiledRule& rule, const RuleOptions& opts);

// Runs a rule's applier on one match: sets ctx.root (the left side: the
// matched class with reuse, the left pattern's instance without) and fills
// ctx.equalities.
void run_applier(const CompiledRule& rule, RuleCtx& ctx, bool instantiate_lhs);
// Instantiates a pattern under a match's substitution.
Ref instantiate(TermBuilder& b, const Pattern& p, const Match& m);

// Registers the conditions the tables use (conditions.cc). Idempotent.
void register_rule_conditions();

// ---- helpers for appliers ---------------------------------------------------------

// How many axes of t block dim d (part(d) or local(d)): the level a new axis
// on d gets.
int blocking_level(const TensorType& t, Symbol d);
// Whether a dim is made by collect (c_<axis>): never refined or partitioned.
bool is_collected_dim(const EGraph& g, Symbol d);
// Whether a new axis may split dim d: a declared dim of extent > 1 (a grid
// or loop over one element is the value itself) not made by collect.
bool splittable_dim(const EGraph& g, Symbol d);
inline Attrs axis_attrs(Axis p) { return {p.pack(), 0, 0}; }
inline Attrs axis_dim_attrs(Axis p, Symbol d) { return {p.pack(), d.raw(), 0}; }
inline Attrs axis_red_attrs(Axis p, RedId r) { return {p.pack(), r.raw(), 0}; }
inline Attrs dim_red_attrs(Symbol d, RedId r) { return {d.raw(), r.raw(), 0}; }
inline Attrs dim_attrs(Symbol d) { return {d.raw(), 0, 0}; }
// partition(p, d, x) if x has d, replicate(p, x) if not, x itself if it is a
// literal: how an operand follows its result onto a new axis.
Ref follow_partition(TermBuilder& b, Ref x, Axis p, Symbol d);
Ref follow_replicate(TermBuilder& b, Ref x, Axis p);
// "(partition ?p ?d (proj ?i (R ?q ?r ?t)))" (or replicate ?p) for R a
// preduce or a reduce, and its applier: for each tuple node in ?t's class,
// the same reduction of the tuple of its components followed onto ?p; with
// collect_components, also for a collect node of tuples in ?t's class, the
// tuple of its projections. Returns the reductions it made.
std::string tuple_reduction_pattern(Op reduction, bool partition);
std::vector<Ref> follow_into_tuple_reduction(RuleCtx& c, Op reduction, bool partition,
                                             bool collect_components = false);
// The attribute slot of an op's attribute `index` (F64 takes two).
int attr_slot_of(Op op, int index);
// "(op ?a0 ?a1 ?x0 ?x1)": an op applied to fresh variables, for the rules
// generated from the op table; generated_attrs / generated_kids read the
// match of such a pattern back.
std::string op_pattern(Op op, std::string_view attr_prefix = "?a", std::string_view child_prefix = "?x");
Attrs generated_attrs(const RuleCtx& c, Op op, std::string_view attr_prefix = "?a");
std::vector<Ref> generated_kids(RuleCtx& c, Op op, std::string_view child_prefix = "?x");
// An op's name in rule names: "tile-matmul".
std::string op_kebab(Op op);
// Joins condition texts with a space, skipping empty ones.
std::string conds(std::initializer_list<std::string_view> parts);

}  // namespace eqf::rules
