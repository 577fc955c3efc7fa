// Verbs that run the e-graph engine: saturate a program, benchmark the engine.
#include "tools/verbs_egraph.h"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "eqiforge/egraph/ac_workload.h"
#include "eqiforge/egraph/dot.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/egraph/schedule.h"
#include "eqiforge/ir/parse.h"
#include "tools/verb_util.h"

namespace eqf::cli {
namespace {

// Limits and the scheduler, shared by both verbs.
void configure(Runner& runner, const Args& args, int64_t node_default) {
  runner.with_node_limit(size_t(args.integer("--node-limit", node_default, 1, int64_t(1) << 40)))
      .with_iter_limit(int(args.integer("--iter-limit", 100000, 1, 1 << 30)))
      .with_time_limit(seconds_option(args, "--time-limit", 60))
      .with_memory_limit(memory_limit_option(args));
  std::string scheduler = args.value("--scheduler").value_or("backoff");
  if (scheduler == "simple")
    runner.with_simple_scheduler();
  else if (scheduler != "backoff")
    throw UsageError("--scheduler expects backoff or simple, got '" + scheduler + "'");
}

}  // namespace

int verb_saturate(const Args& args) {
  Program p = load_checked(args.operand(0));
  EGraph g;
  std::vector<EClassId> roots = load_program(g, p);
  size_t input_nodes = g.num_nodes(), input_classes = g.num_classes();

  Runner runner(g);
  configure(runner, args, 1'000'000);
  if (std::optional<std::string> sched = args.value("--schedule")) {
    Schedule s = Schedule::parse(*sched, "--schedule");
    for (const std::string& set : s.all_sets()) runner.with_rules(set, rule_set(set));
    runner.with_schedule(s);
  } else {
    std::string set = args.value("--rules").value_or("ac");
    runner.with_rules(set, rule_set(set));
  }
  RunReport report = runner.run();

  if (args.has("--json")) {
    std::cout << report.json() << "\n";
  } else if (args.has("--stats")) {
    std::cout << "input: " << input_nodes << " e-nodes, " << input_classes << " e-classes\n" << report.text();
  } else {
    std::printf("%zu e-nodes, %zu e-classes, %d iterations, stop: %s, %.3f s\n", report.nodes, report.classes,
                report.iterations, std::string(stop_reason_name(report.stop)).c_str(), report.seconds);
  }
  if (args.has("--dump")) std::cout << g.dump();
  if (std::optional<std::string> dot = args.value("--dot")) {
    // OUTPUT[:DEPTH]: the first output's class to a depth (default 2).
    int depth = 2;
    size_t colon = dot->find(':');
    std::string which = dot->substr(0, colon);
    if (colon != std::string::npos) {
      std::optional<int64_t> d = parse_integer(dot->substr(colon + 1), 0, 100);
      if (!d) throw UsageError("--dot expects OUTPUT[:DEPTH] with a depth from 0 to 100, got '" + *dot + "'");
      depth = int(*d);
    }
    bool found = false;
    for (size_t i = 0; i < p.outputs().size(); ++i) {
      if (p.outputs()[i].name.str() != which) continue;
      std::cout << to_dot(g, roots[i], depth);
      found = true;
    }
    if (!found) throw UsageError("--dot: the program has no output named '" + which + "'");
  }
  if (args.has("--extract")) {
    Program small = extract_smallest(g, roots, p.outputs());
    small.name = p.name;
    std::cout << print_program(small);
  }
  return kExitOk;
}

int verb_bench_egraph(const Args& args) {
  if (!args.has("--ac")) throw UsageError("bench-egraph needs --ac N (the number of leaves)");
  const int n = int(args.integer("--ac", 0, 2, 24));
  // Typed by the real analysis.
  EGraph g;
  add_left_sum(g, n);
  Runner runner(g);
  configure(runner, args, int64_t(1) << 40);
  runner.with_rules("ac", rule_set("ac"));
  RunReport report = runner.run();
  if (args.has("--json")) {
    std::printf(
        "{\"eclasses\": %zu, \"enodes\": %zu, \"seconds\": %.6f, \"iterations\": %d, \"stop\": \"%s\"}\n",
        report.classes, report.nodes, report.seconds, report.iterations,
        std::string(stop_reason_name(report.stop)).c_str());
  } else {
    std::printf("ac %d: %zu e-classes, %zu e-nodes, %d iterations, stop: %s, %.3f s\n", n, report.classes,
                report.nodes, report.iterations, std::string(stop_reason_name(report.stop)).c_str(),
                report.seconds);
    if (args.has("--stats")) std::cout << report.text();
  }
  return kExitOk;
}

}  // namespace eqf::cli
