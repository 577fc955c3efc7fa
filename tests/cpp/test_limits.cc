// Saturation limits under real workloads: the node, time and iteration
// limits hold on every bundled program with the rule library's schedule, and
// the memory cap (Runner::with_memory_limit) stops a run within 10% of it,
// on an e-graph whose size EGraph::memory_bytes() tracks against the heap.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "eqiforge/egraph/ac_workload.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"

#include "sanitizer.h"

namespace eqf {
namespace {

namespace fs = std::filesystem;

// Every bundled program: the benchmark workloads and the examples' naive and
// tiled forms (run from the repository root, as ctest does).
std::vector<std::string> bundled_programs() {
  std::vector<std::string> out;
  for (const fs::directory_entry& dir : fs::directory_iterator("examples")) {
    if (!dir.is_directory()) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(dir.path()))
      if (f.path().extension() == ".eqf") out.push_back(f.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<Rewrite> ac_rules() {
  std::vector<Rewrite> r;
  r.push_back(rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)"));
  r.push_back(rewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)"));
  return r;
}

// Bytes the allocator has handed out and not taken back (heap and mmap),
// and the e-graph's big arrays, which map their memory themselves.
size_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd + huge_vector_mapped_bytes();
}

constexpr size_t kMiB = size_t(1) << 20;

// ---- the limits on every bundled program -----------------------------------------------------

TEST(Limits, BundledProgramsExist) {
  // The loops below would pass vacuously on an empty list.
  std::vector<std::string> files = bundled_programs();
  EXPECT_GE(files.size(), 20u);
  EXPECT_TRUE(std::find(files.begin(), files.end(), "examples/workloads/attention_prefill.eqf") != files.end());
}

TEST(Limits, NodeLimitOvershootIsUnderTenPercentOnEveryProgram) {
  // Every bundled program saturates below 10k e-nodes with the library (in
  // 0.01 to 2 s): limits of 500 and 2000 stop most of them.
  int stopped = 0;
  for (const std::string& file : bundled_programs()) {
    for (size_t limit : {size_t(500), size_t(2000)}) {
      EGraph g;
      load_program(g, parse_and_check_file(file));
      const size_t start = g.num_nodes();
      Runner runner(g);
      add_rule_library(runner);
      RunReport r = runner.with_node_limit(limit).with_time_limit(120).with_iter_limit(1'000'000).run();
      SCOPED_TRACE(file + ", node limit " + std::to_string(limit) + ": " + std::string(stop_reason_name(r.stop)));
      EXPECT_EQ(r.nodes, g.num_nodes());
      if (r.stop == StopReason::NodeLimit)
        ++stopped;
      else  // the program saturated below the limit
        EXPECT_TRUE(r.stop == StopReason::Saturated || r.stop == StopReason::ScheduleDone);
      EXPECT_LE(double(r.nodes), 1.1 * double(std::max(limit, start)));
      EXPECT_TRUE(g.clean());
    }
  }
  EXPECT_GE(stopped, 20);
}

TEST(Limits, TimeLimitHoldsOnEveryProgram) {
  // The node limit is out of reach, so the clock is what stops the runs that
  // do not saturate first. Slack: 10% of T, plus 50 ms for the scheduler of a
  // loaded 2-core machine (a check between two batches of applications can
  // be delayed by a descheduled thread, and at T = 30 ms, 10% is 3 ms).
  for (double limit : {0.03, 0.2}) {
    int stopped_by_time = 0;
    for (const std::string& file : bundled_programs()) {
      EGraph g;
      load_program(g, parse_and_check_file(file));
      Runner runner(g);
      add_rule_library(runner);
      runner.with_node_limit(size_t(1) << 40).with_time_limit(limit).with_iter_limit(1'000'000);
      auto t0 = std::chrono::steady_clock::now();
      RunReport r = runner.run();
      const double took = seconds_since(t0);
      SCOPED_TRACE(file + ", time limit " + std::to_string(limit) + ": " + std::string(stop_reason_name(r.stop)) +
                   " after " + std::to_string(took) + " s, " + std::to_string(r.nodes) + " e-nodes");
      EXPECT_LE(took, limit * 1.1 + 0.05);
      EXPECT_LE(r.seconds, took);
      EXPECT_NE(r.stop, StopReason::NodeLimit);
      stopped_by_time += r.stop == StopReason::TimeLimit;
      EXPECT_TRUE(g.clean());
    }
    // Ten bundled programs take over 60 ms to saturate in a Release build
    // (0.06 to 0.5 s), all of them longer in Debug: 30 ms stops them.
    if (limit < 0.05) EXPECT_GE(stopped_by_time, 5);
  }
}

TEST(Limits, IterationLimitHoldsOnEveryProgram) {
  for (const std::string& file : bundled_programs()) {
    for (int limit : {1, 3}) {
      EGraph g;
      load_program(g, parse_and_check_file(file));
      Runner runner(g);
      add_rule_library(runner);
      RunReport r = runner.with_iter_limit(limit).with_node_limit(50'000).with_time_limit(120).run();
      SCOPED_TRACE(file + ", iteration limit " + std::to_string(limit) + ": " +
                   std::string(stop_reason_name(r.stop)));
      EXPECT_LE(r.iterations, limit);
      EXPECT_EQ(size_t(r.iterations), r.per_iteration.size());
      if (r.stop != StopReason::NodeLimit && r.stop != StopReason::Saturated) {
        EXPECT_EQ(r.stop, StopReason::IterationLimit);
      }
    }
  }
}

// ---- the memory cap --------------------------------------------------------------------------

TEST(MemoryLimit, StopsWithinTenPercentOfTheCap) {
  for (size_t cap_mib : {4, 16, 48}) {
    const size_t cap = cap_mib * kMiB;
    const size_t heap_before = heap_in_use();
    EGraph g;
    add_left_sum(g, 16);  // 43 million e-nodes when saturated: the cap is what stops it
    Runner runner(g);
    runner.with_rules("ac", ac_rules())
        .with_simple_scheduler()
        .with_node_limit(size_t(1) << 40)
        .with_time_limit(600)
        .with_iter_limit(1'000'000)
        .with_memory_limit(cap);
    RunReport r = runner.run();
    SCOPED_TRACE(std::to_string(cap_mib) + " MiB: " + std::to_string(r.memory_bytes) + " bytes, " +
                 std::to_string(r.nodes) + " e-nodes");
    EXPECT_EQ(r.stop, StopReason::MemoryLimit);
    // The peak counts the matches a search collected (the last search's are
    // dropped when they would pass the cap: the end holds less).
    EXPECT_LE(double(r.peak_memory_bytes), 1.1 * double(cap));
    EXPECT_LE(r.memory_bytes, r.peak_memory_bytes);
    EXPECT_LE(g.memory_bytes(), r.memory_bytes);
    // A ceiling, not a target, but not one that stops at nothing: an array due
    // to double is counted at its doubled size, so at worst about half is used.
    EXPECT_GE(double(r.peak_memory_bytes), 0.4 * double(cap));
#ifndef EQF_TEST_UNDER_ASAN
    // What the allocator has handed out, the runner's buffers included.
    EXPECT_LE(double(heap_in_use() - heap_before), 1.1 * double(cap));
#endif
    EXPECT_TRUE(g.clean());
    EXPECT_NE(r.text().find("stop: memory-limit"), std::string::npos);
    EXPECT_NE(r.json().find("\"stop\": \"memory-limit\""), std::string::npos);
  }
}

TEST(MemoryLimit, HoldsUnderTheRuleLibraryOnAWorkload) {
  // Saturated, this workload's e-graph holds about 1.8 MB (7300 e-nodes).
  const size_t cap = kMiB;
  EGraph g;
  load_program(g, parse_and_check_file("examples/workloads/rmsnorm_swiglu.eqf"));
  Runner runner(g);
  add_rule_library(runner);
  RunReport r = runner.with_node_limit(size_t(1) << 40)
                    .with_time_limit(600)
                    .with_iter_limit(1'000'000)
                    .with_memory_limit(cap)
                    .run();
  SCOPED_TRACE(r.text().substr(0, 200));
  EXPECT_EQ(r.stop, StopReason::MemoryLimit);
  EXPECT_LE(double(r.peak_memory_bytes), 1.1 * double(cap));
  EXPECT_GE(double(r.peak_memory_bytes), 0.4 * double(cap));
  EXPECT_GT(r.iterations, 0);
}

TEST(MemoryLimit, MemoryBytesTracksTheHeap) {
#ifdef EQF_TEST_UNDER_ASAN
  GTEST_SKIP() << "the sanitizer's allocator is not the one mallinfo2 reports on";
#endif
  // What the e-graph allocates, measured by the allocator, against its own
  // O(1) estimate, on saturated e-graphs of 19k and 57k e-nodes (the
  // runner's buffers are gone once it is). Measured: within 6% when earlier
  // tests ran in the same process; run alone (as ctest runs it) the
  // estimate is 24% below the heap at 19k e-nodes -- allocations of the
  // class lists and chunk overheads it does not model. The cap is in the
  // estimate's bytes; docs/reliability.md says so.
  for (int leaves : {9, 10}) {
    const size_t before = heap_in_use();
    size_t estimate = 0, heap = 0, nodes = 0;
    {
      EGraph g;
      add_left_sum(g, leaves);
      Runner(g)
          .with_rules("ac", ac_rules())
          .with_node_limit(size_t(1) << 40)
          .with_time_limit(600)
          .with_iter_limit(1000)
          .run();
      estimate = g.memory_bytes();
      nodes = g.num_nodes();
      heap = heap_in_use() - before;
    }
    SCOPED_TRACE(std::to_string(leaves) + " leaves, " + std::to_string(nodes) + " e-nodes: estimate " +
                 std::to_string(estimate) + ", heap " + std::to_string(heap));
    EXPECT_GT(nodes, 15'000u);
    EXPECT_GE(double(estimate), 0.7 * double(heap));
    EXPECT_LE(double(estimate), 1.25 * double(heap));
  }
}

TEST(MemoryLimit, NoCapByDefaultAndZeroMeansNone) {
  for (size_t cap : {size_t(0), size_t(1) << 40}) {
    EGraph g;
    add_left_sum(g, 8);
    Runner runner(g);
    runner.with_rules("ac", ac_rules()).with_node_limit(size_t(1) << 40).with_time_limit(600).with_iter_limit(1000);
    if (cap) runner.with_memory_limit(cap);
    RunReport r = runner.run();
    EXPECT_EQ(r.stop, StopReason::Saturated);
    EXPECT_EQ(r.classes, 255u);  // 2^8 - 1: every sum of a subset
    EXPECT_GT(r.memory_bytes, 0u);
  }
}

TEST(MemoryLimit, ACapBelowTheInputStopsBeforeTheFirstIteration) {
  EGraph g;
  load_program(g, parse_and_check_file("examples/workloads/attention_prefill.eqf"));
  const size_t start = g.num_nodes();
  Runner runner(g);
  add_rule_library(runner);
  RunReport r = runner.with_memory_limit(1024).run();
  EXPECT_EQ(r.stop, StopReason::MemoryLimit);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(g.num_nodes(), start);  // the e-graph is as loaded: extraction can still run on it
}

}  // namespace
}  // namespace eqf
