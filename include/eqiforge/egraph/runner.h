// The Runner: applies rule sets to an e-graph under a schedule, with
// iteration, node and time limits and a backoff scheduler (egg's run.rs).
//
//   Runner runner(egraph);
//   runner.with_rules("algebraic", rule_set("ac")).with_node_limit(1'000'000).with_time_limit(5);
//   RunReport report = runner.run();            // (saturate (run algebraic))
//   report.stop == StopReason::Saturated
//
// One iteration of a (run SETS) step searches every rule of the sets on the
// rebuilt e-graph, then applies every match, then rebuilds. A rule finds only
// matches it has not applied before (see ematch.h), so the cost of an
// iteration follows what changed, not the size of the e-graph.
//
// Backoff: a rule that finds more than match_limit << times_banned new
// matches in one iteration applies none of them and is banned for
// ban_length << times_banned iterations (egg's defaults: 1000 and 5), so an
// explosive rule cannot starve the rest. A (saturate S) that changes nothing
// while rules are banned lifts the bans and goes on.
//
// Limits are checked between iterations and inside long search and apply
// phases; the apply phase also keeps back the time the rebuild it owes is
// expected to take, so a run with time limit T ends within about T. The
// defaults are egg's: 30 iterations, 10,000 e-nodes, 5 seconds.
//
// A memory cap (with_memory_limit, off by default) is checked where the node
// limit is, and while a search collects matches, against
// EGraph::memory_bytes(true) plus the runner's own match buffers: arrays
// about to grow are counted at their grown size, so a run stops before a
// growth would pass the cap. It ends at or below the cap (plus what one
// batch of applications adds), below it by up to half when the e-graph's
// large arrays are all due to double.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/egraph/schedule.h"

namespace eqf {

enum class StopReason { Saturated, IterationLimit, NodeLimit, TimeLimit, ScheduleDone, MemoryLimit };
// "saturated", "iteration-limit", "node-limit", "time-limit", "schedule-done", "memory-limit"
std::string_view stop_reason_name(StopReason r);

struct RuleStats {
  std::string name;
  std::string set;
  uint64_t searches = 0;
  uint64_t matches = 0;       // new matches found (those a search reported)
  uint64_t applications = 0;  // matches whose application changed the e-graph
  uint64_t nodes_added = 0;
  uint64_t type_rejected = 0;  // right sides refused by the analysis
  uint64_t times_banned = 0;
  double search_seconds = 0;
  double apply_seconds = 0;
};

struct IterationStats {
  int index = 0;
  std::string sets;  // "algebraic" or "a b"
  size_t nodes = 0;  // after the iteration's rebuild
  size_t classes = 0;
  uint64_t matches = 0;
  uint64_t applications = 0;
  size_t rebuild_unions = 0;
  int banned = 0;  // rules banned during this iteration
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;
};

struct RunReport {
  StopReason stop = StopReason::Saturated;
  int iterations = 0;
  double seconds = 0;
  size_t nodes = 0;
  size_t classes = 0;
  size_t memory_bytes = 0;       // held by the e-graph and the runner's buffers at the end
  size_t peak_memory_bytes = 0;  // the most held at the runner's checks (a search's matches included)
  std::vector<RuleStats> rules;
  std::vector<IterationStats> per_iteration;

  std::string text() const;  // a table for people
  std::string json() const;  // one JSON object
};

struct BackoffOptions {
  bool enabled = true;
  uint64_t match_limit = 1000;
  int ban_length = 5;
};

class Runner {
 public:
  explicit Runner(EGraph& g);
  ~Runner();

  Runner& with_iter_limit(int n);
  Runner& with_node_limit(size_t n);
  Runner& with_time_limit(double seconds);
  // Stops (StopReason::MemoryLimit) before the e-graph and the runner's
  // buffers would hold more than `bytes`; 0 (the default): no cap.
  Runner& with_memory_limit(size_t bytes);
  Runner& with_backoff(BackoffOptions b);
  Runner& with_simple_scheduler();  // no backoff: every match is applied
  // Adds a named rule set (appending if the name exists).
  Runner& with_rules(const std::string& set, std::vector<Rewrite> rules);
  // Without a schedule, the runner saturates the union of its sets.
  Runner& with_schedule(Schedule s);

  // Runs the schedule to its end or a limit. May be called again (limits
  // count from each call); stats accumulate per call.
  RunReport run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eqf
