// Rule sets and schedules, kept apart from the rules (egglog-style): a rule
// belongs to a named set; a schedule says which sets run, how often and in
// what order, so phase ordering changes without touching a rule.
//
//   (run algebraic)                         one iteration of a set (or of several: (run a b))
//   (saturate S)                            repeat S until it changes nothing
//   (repeat 3 S)                            S three times
//   (seq S1 S2 ...)                         in order
//   (repeat 2 (seq (saturate (run algebraic)) (run refinement)))
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/rewrite.h"

namespace eqf {

class Schedule {
 public:
  enum class Kind { Run, Saturate, Repeat, Seq };

  static Schedule run(std::vector<std::string> sets);
  static Schedule saturate(Schedule body);
  static Schedule repeat(int times, Schedule body);
  static Schedule seq(std::vector<Schedule> parts);
  // Parses the text form above; throws eqf::Error at the bad position.
  static Schedule parse(std::string_view text, const std::string& file = "<schedule>");

  Kind kind() const { return kind_; }
  int times() const { return times_; }
  const std::vector<std::string>& sets() const { return sets_; }  // Run
  const std::vector<Schedule>& parts() const { return parts_; }   // Saturate/Repeat: one; Seq: many
  // Every set named anywhere in the schedule, in first-use order.
  std::vector<std::string> all_sets() const;
  std::string text() const;

 private:
  Kind kind_ = Kind::Run;
  int times_ = 1;
  std::vector<std::string> sets_;
  std::vector<Schedule> parts_;
};

// The registry of named rule sets: the extension point through which rule
// families (src/rules) make their tables available to the CLI and the API.
// Factories run on each lookup, so every caller gets fresh rules.
using RuleSetFactory = std::function<std::vector<Rewrite>()>;
// Adds or replaces a set.
void register_rule_set(const std::string& name, const std::string& summary, RuleSetFactory factory);
// The rules of a set; throws eqf::Error naming the known sets if unknown.
std::vector<Rewrite> rule_set(std::string_view name);
struct RuleSetInfo {
  std::string name;
  std::string summary;
};
std::vector<RuleSetInfo> rule_sets();  // sorted by name

// Built in (registered before any lookup):
//   none   no rules
//   ac     commutativity and associativity of add and mul
//   arith  a small algebraic set (ac, distributivity both ways, units and
//          zero, sub/neg/div laws) used by the engine's benchmark

}  // namespace eqf
