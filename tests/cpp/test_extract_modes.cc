// The three extraction modes cover the same ≈-classes of candidates; early
// compression gets there expanding far fewer partial programs; cost pruning
// keeps the best candidates.
#include <gtest/gtest.h>

#include <set>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/extract/canonical.h"
#include "eqiforge/extract/extract.h"
#include "extract_fixtures.h"

namespace eqf {
namespace {

using testing::United;

ExtractResult run(United& u, ExtractMode mode, bool depth_first = false, const CostModel* cost = nullptr,
                  size_t prune = 0) {
  ExtractOptions o;
  o.mode = mode;
  o.order = depth_first ? ExtractOrder::DepthFirst : ExtractOrder::BreadthFirst;
  o.cost = cost;
  o.prune_k = prune;
  return extract_candidates(u.g, u.roots, u.naive.outputs(), o);
}

std::set<uint64_t> classes(const ExtractResult& r) {
  std::set<uint64_t> out;
  for (const Candidate& c : r.candidates) out.insert(canonical_hash(c.program));
  return out;
}

TEST(ExtractModes, CoverTheSameClassesOfCandidates) {
  for (const std::string& folder : testing::example_folders()) {
    SCOPED_TRACE(folder);
    United u(testing::read_text("examples/" + folder + "/naive.eqf"), testing::example_variants(folder));
    // Kept small enough that plain enumeration finishes in a test.
    u.add_redundant_forms(folder == "rmsnorm_mlp" ? 1 : 2);
    ExtractResult none = run(u, ExtractMode::None);
    ExtractResult after = run(u, ExtractMode::After);
    ExtractResult early = run(u, ExtractMode::Early);
    ASSERT_FALSE(none.stats.limit_hit);
    // The same classes, checked on the programs themselves.
    std::set<uint64_t> all = classes(none);
    EXPECT_EQ(classes(after), all);
    EXPECT_EQ(classes(early), all);
    // `after` builds what `none` builds, then keeps one per class; early
    // keeps the same number without building the rest.
    EXPECT_EQ(after.stats.complete_built, none.stats.complete_built);
    EXPECT_EQ(after.stats.distinct, all.size());
    EXPECT_EQ(early.stats.distinct, all.size());
    EXPECT_EQ(early.stats.complete_built, all.size());
    EXPECT_EQ(none.candidates.size(), none.stats.distinct);
    EXPECT_GT(none.stats.complete_built, early.stats.complete_built);
    // The e-graph's redundancy multiplies the states of plain enumeration.
    EXPECT_GE(none.stats.states_expanded, 5 * early.stats.states_expanded)
        << none.stats.states_expanded << " vs " << early.stats.states_expanded;
    EXPECT_GT(early.stats.skipped_equivalent, 0u);
  }
}

TEST(ExtractModes, DepthFirstFindsTheSameClasses) {
  for (const std::string& folder : {std::string("layernorm"), std::string("lora")}) {
    SCOPED_TRACE(folder);
    United u(testing::read_text("examples/" + folder + "/naive.eqf"), testing::example_variants(folder));
    u.add_redundant_forms(3);
    ExtractResult bfs = run(u, ExtractMode::Early);
    ExtractResult dfs = run(u, ExtractMode::Early, true);
    EXPECT_EQ(classes(bfs), classes(dfs));
    // Keys are independent of the order of expansion.
    EXPECT_EQ(bfs.stats.states_expanded, dfs.stats.states_expanded);
  }
}

TEST(ExtractModes, StateLimitStopsPlainEnumeration) {
  United u(testing::read_text("examples/rmsnorm_mlp/naive.eqf"), testing::example_variants("rmsnorm_mlp"));
  u.add_redundant_forms(3);
  ExtractOptions o;
  o.mode = ExtractMode::None;
  o.order = ExtractOrder::BreadthFirst;
  o.max_states = 100;
  ExtractResult r = extract_candidates(u.g, u.roots, u.naive.outputs(), o);
  EXPECT_TRUE(r.stats.limit_hit);
  EXPECT_EQ(r.stats.limit, "states");
  EXPECT_EQ(r.stats.states_expanded, 100u);
}

TEST(ExtractPruning, KeepsTheBestCandidates) {
  CostModel cm(load_target("h200"));
  for (const std::string& folder : {std::string("lora"), std::string("attention_decode")}) {
    SCOPED_TRACE(folder);
    United u(testing::read_text("examples/" + folder + "/naive.eqf"), testing::example_variants(folder));
    u.add_redundant_forms(2);
    ExtractResult full = run(u, ExtractMode::Early, true, &cm);
    ExtractResult pruned = run(u, ExtractMode::Early, true, &cm, 1);
    ASSERT_FALSE(full.candidates.empty());
    ASSERT_FALSE(pruned.candidates.empty());
    EXPECT_EQ(canonical_hash(pruned.candidates[0].program), canonical_hash(full.candidates[0].program));
    EXPECT_DOUBLE_EQ(pruned.candidates[0].estimate->seconds, full.candidates[0].estimate->seconds);
    EXPECT_LE(pruned.stats.states_expanded, full.stats.states_expanded);
    if (folder == "lora") {
      // Depth-first finds the one-kernel form first; the two-kernel form's
      // partial programs, one kernel reading the other's result, cost two
      // launches, more than it: they are cut.
      EXPECT_GT(pruned.stats.pruned, 0u);
      EXPECT_LT(pruned.stats.states_expanded, full.stats.states_expanded);
      EXPECT_EQ(pruned.candidates.size(), 1u);
    }
  }
}

}  // namespace
}  // namespace eqf
