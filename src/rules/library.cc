// The rule library's public face: family tables, validation when loaded,
// registration with the e-graph's rule-set registry, the default schedule.
#include "eqiforge/rules/library.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "eqiforge/ir/diagnostic.h"
#include "rules/rule_table.h"

namespace eqf {

std::string_view family_name(Family f) {
  switch (f) {
    case Family::Algebraic:
      return "algebraic";
    case Family::Refinement:
      return "refinement";
    case Family::Propagation:
      return "propagation";
    case Family::ReductionFusion:
      return "reduction-fusion";
    case Family::Structural:
      return "structural";
    case Family::Storage:
      return "storage";
  }
  return "?";
}

std::optional<Family> parse_family(std::string_view name) {
  for (Family f : kAllFamilies)
    if (family_name(f) == name) return f;
  if (name == "fusion") return Family::ReductionFusion;
  return std::nullopt;
}

namespace rules {
namespace {

bool kebab(const std::string& s) {
  if (s.empty() || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace

// Checks a table as it is loaded: names, and every pattern, variable and
// condition (compile throws an eqf::Error naming the rule).
void validate(const std::vector<RuleSpec>& specs) {
  std::set<std::string> names;
  for (const RuleSpec& s : specs) {
    if (!kebab(s.name))
      throw Error("rule `" + s.name + "`: a rule name is kebab-case (lowercase letters, digits and dashes)");
    if (!names.insert(s.name).second) throw Error("rule `" + s.name + "` is defined twice");
    compile(s);
  }
}

std::vector<RuleSpec> family_specs(Family f, const RuleOptions& opts) {
  Table t(f, opts);
  switch (f) {
    case Family::Algebraic:
      algebraic_rules(t);
      break;
    case Family::Refinement:
      refinement_rules(t);
      break;
    case Family::Propagation:
      propagation_rules(t);
      break;
    case Family::ReductionFusion:
      reduction_fusion_rules(t);
      break;
    case Family::Structural:
      structural_rules(t);
      break;
    case Family::Storage:
      storage_rules(t);
      break;
  }
  std::vector<RuleSpec> specs = t.take();
  validate(specs);
  return specs;
}

std::vector<RuleSpec> all_specs(const RuleOptions& opts) {
  std::vector<RuleSpec> all;
  for (Family f : kAllFamilies)
    for (RuleSpec& s : family_specs(f, opts)) all.push_back(std::move(s));
  validate(all);
  return all;
}

}  // namespace rules

std::vector<Rewrite> family_rules(Family f, const RuleOptions& opts) {
  std::vector<Rewrite> out;
  for (const rules::RuleSpec& s : rules::family_specs(f, opts))
    out.push_back(rules::to_rewrite(rules::compile(s), opts));
  return out;
}

std::vector<Rewrite> all_rules(const RuleOptions& opts) {
  std::vector<Rewrite> out;
  for (const rules::RuleSpec& s : rules::all_specs(opts))
    out.push_back(rules::to_rewrite(rules::compile(s), opts));
  return out;
}

std::vector<RuleInfo> rule_infos(const RuleOptions& opts) {
  std::vector<RuleInfo> out;
  for (const rules::RuleSpec& s : rules::all_specs(opts)) {
    std::string text = s.lhs + " => " + (s.rhs.empty() ? "<computed: " + s.computes + ">" : s.rhs);
    if (!s.conditions.empty()) text += " if " + s.conditions;
    out.push_back({s.name, s.family, text});
  }
  return out;
}

Schedule default_schedule() {
  // Phases, each to saturation:
  //   1. algebra, on global values only;
  //   2. tiling: refinement, propagation and the structural laws;
  //   3. fusion over the tiled reductions at every level they exist (with
  //      the tuple laws), so no fused state needs propagating again;
  //   4. storage: a kernel boundary at every loop, left as it is (no
  //      propagation into the buffers it makes).
  auto run = [](std::initializer_list<Family> fs) {
    std::vector<std::string> sets;
    for (Family f : fs) sets.emplace_back(family_name(f));
    return Schedule::saturate(Schedule::run(sets));
  };
  return Schedule::seq({run({Family::Algebraic}),
                        run({Family::Refinement, Family::Propagation, Family::Structural}),
                        run({Family::ReductionFusion, Family::Structural}), run({Family::Storage})});
}

void register_rule_sets() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (Family f : kAllFamilies) {
      std::string name(family_name(f));
      register_rule_set(name, "the " + name + " rules of the rule library (docs/rules.md)",
                        [f] { return family_rules(f, RuleOptions{}); });
    }
    register_rule_set("all", "every family of the rule library (docs/rules.md)",
                      [] { return all_rules(RuleOptions{}); });
  });
}

void add_rule_library(Runner& runner, const RuleOptions& opts) {
  // Sets in the schedule's order of first use, as `saturate --schedule`
  // adds them: the order rules apply in within an iteration.
  Schedule s = default_schedule();
  for (const std::string& set : s.all_sets()) runner.with_rules(set, family_rules(*parse_family(set), opts));
  runner.with_schedule(s);
}

}  // namespace eqf
