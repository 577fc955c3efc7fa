// The rule library's tables: families, names, validation when loaded,
// registration with the e-graph's rule sets, determinism of saturation.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"
#include "rules/rule_table.h"

namespace eqf {
namespace {

TEST(RuleLibrary, EveryFamilyHasRulesAndNamesAreUnique) {
  std::set<std::string> names;
  size_t total = 0;
  for (Family f : kAllFamilies) {
    std::vector<Rewrite> rs = family_rules(f);
    EXPECT_FALSE(rs.empty()) << family_name(f);
    for (const Rewrite& r : rs) EXPECT_TRUE(names.insert(r.name).second) << r.name;
    total += rs.size();
    EXPECT_EQ(parse_family(family_name(f)), f);
  }
  EXPECT_EQ(all_rules().size(), total);
  EXPECT_EQ(rule_infos().size(), total);
  EXPECT_FALSE(parse_family("no-such-family").has_value());
}

TEST(RuleLibrary, DocsListTheCountsByFamily) {
  std::ifstream in("docs/rules.md");
  ASSERT_TRUE(in) << "docs/rules.md";
  std::stringstream text;
  text << in.rdbuf();
  std::map<Family, int> counts;
  for (const RuleInfo& r : rule_infos()) ++counts[r.family];
  for (Family f : kAllFamilies) {
    std::regex row("\\| " + std::string(family_name(f)) + " +\\| +([0-9]+) +\\|");
    std::smatch m;
    std::string s = text.str();
    ASSERT_TRUE(std::regex_search(s, m, row)) << "no count row for " << family_name(f);
    EXPECT_EQ(std::stoi(m[1]), counts[f]) << family_name(f) << ": docs/rules.md is out of date";
  }
}

// A malformed table entry is an error naming the rule when it is loaded.
std::string load_error(rules::RuleSpec s) {
  try {
    rules::validate({s});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

rules::RuleSpec spec(std::string name, std::string lhs, std::string rhs, std::string conditions = "") {
  rules::RuleSpec s;
  s.name = std::move(name);
  s.lhs = std::move(lhs);
  s.rhs = std::move(rhs);
  s.conditions = std::move(conditions);
  return s;
}

TEST(RuleLibrary, MalformedRulesAreRejectedWhenLoaded) {
  std::string e = load_error(spec("bad-op", "(frobnicate ?a ?b)", "?a"));
  EXPECT_NE(e.find("rule bad-op"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown operator `frobnicate`"), std::string::npos) << e;

  e = load_error(spec("unbound", "(exp ?a)", "(add ?a ?b)"));
  EXPECT_NE(e.find("rule unbound"), std::string::npos) << e;
  EXPECT_NE(e.find("?b is not bound by the left side"), std::string::npos) << e;

  e = load_error(spec("bad-arity", "(add ?a ?b)", "(exp ?a ?b)"));
  EXPECT_NE(e.find("rule bad-arity"), std::string::npos) << e;

  // A variable that is a dim on the left cannot be an axis on the right:
  // no instantiation of it could type-check.
  e = load_error(spec("bad-kind", "(sum ?d ?x)", "(preduce ?d + ?x)"));
  EXPECT_NE(e.find("rule bad-kind"), std::string::npos) << e;
  EXPECT_NE(e.find("different kind of attribute"), std::string::npos) << e;

  e = load_error(spec("bad-condition", "(exp ?a)", "?a", "(is-sunny ?a)"));
  EXPECT_NE(e.find("unknown condition `is-sunny`"), std::string::npos) << e;

  e = load_error(spec("Bad_Name", "(exp ?a)", "?a"));
  EXPECT_NE(e.find("kebab-case"), std::string::npos) << e;

  EXPECT_THROW(rules::validate({spec("twice", "(exp ?a)", "?a"), spec("twice", "(log ?a)", "?a")}), Error);
}

TEST(RuleLibrary, RuleSetsAreRegisteredForTheCli) {
  register_rule_sets();
  EXPECT_EQ(rule_set("all").size(), all_rules().size());
  for (Family f : kAllFamilies) EXPECT_EQ(rule_set(family_name(f)).size(), family_rules(f).size());
  std::set<std::string> sets;
  for (const RuleSetInfo& s : rule_sets()) sets.insert(s.name);
  EXPECT_TRUE(sets.count("reduction-fusion"));
  // The default schedule names only registered sets, each family once.
  std::vector<std::string> used = default_schedule().all_sets();
  EXPECT_EQ(used.size(), std::size(kAllFamilies));
  for (const std::string& s : used) EXPECT_TRUE(sets.count(s)) << s;
}

std::string saturated_dump(const char* file) {
  Program p = parse_and_check_file(file);
  EGraph g;
  load_program(g, p);
  Runner runner(g);
  runner.with_iter_limit(100000).with_time_limit(60);
  add_rule_library(runner);
  runner.run();
  return g.dump();
}

TEST(RuleLibrary, SaturationIsDeterministic) {
  EXPECT_EQ(saturated_dump("examples/rmsnorm_mlp/naive.eqf"),
            saturated_dump("examples/rmsnorm_mlp/naive.eqf"));
  EXPECT_EQ(saturated_dump("examples/attention_decode/naive.eqf"),
            saturated_dump("examples/attention_decode/naive.eqf"));
}

TEST(RuleLibrary, LimitsBoundNestingAndFusedArity) {
  RuleOptions tight;
  tight.max_nesting_per_dim = 1;
  tight.max_fused_arity = 2;
  Program p = parse_and_check_file("examples/rmsnorm_mlp/naive.eqf");
  EGraph g;
  load_program(g, p);
  Runner runner(g);
  runner.with_iter_limit(100000).with_time_limit(60);
  add_rule_library(runner, tight);
  EXPECT_EQ(runner.run().stop, StopReason::Saturated);
  for (EClassId c : g.classes()) {
    for (ENodeId n : g.nodes(c)) {
      if (op_has(g.op(n), kParallel) || op_has(g.op(n), kStorage)) {
        EXPECT_EQ(attr_axis(g.attrs(n), 0).level, 0);
      }
      // Fusion stops at the arity limit; a repair template's own state (the
      // mean shift's count, mean and M2) is what it is.
      if (g.op(n) == Op::PReduce && g.origin_name(g.origin(n)) == "fuse-independent") {
        EXPECT_LE(attr_red(g.attrs(n), 1).get().arity(), 2u);
      }
    }
  }
}

// The loops over dim `d` in the saturated e-graph of `text`.
int loops_over(const std::string& text, const char* d) {
  Program p = parse_and_check(text, "<test>");
  EGraph g;
  load_program(g, p);
  Runner runner(g);
  runner.with_iter_limit(100000).with_time_limit(60);
  add_rule_library(runner);
  EXPECT_EQ(runner.run().stop, StopReason::Saturated);
  int n = 0;
  for (EClassId c : g.classes())
    for (ENodeId e : g.nodes(c))
      n += g.op(e) == Op::PReduce && attr_axis(g.attrs(e), 0).dim == Symbol::intern(d);
  return n;
}

std::string reduce_program(int streams, int hidden) {
  return "(program p (dims (t " + std::to_string(streams) + ") (k " + std::to_string(hidden) +
         "))\n  (input x f32 [t k])\n  (output y [k] (sum t x)))";
}

// A loop over a few elements is never worth an iteration: in a program with
// real-sized dims its dims of fewer than 8 are not looped over (mHC's four
// streams), while small programs (tests, examples) keep every loop.
TEST(RuleLibrary, TinyDimsOfLargeProgramsAreNotLoopedOver) {
  EXPECT_EQ(loops_over(reduce_program(4, 4096), "t"), 0);
  EXPECT_GT(loops_over(reduce_program(8, 4096), "t"), 0);
  EXPECT_GT(loops_over(reduce_program(4, 64), "t"), 0);
}

}  // namespace
}  // namespace eqf
