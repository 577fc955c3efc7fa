// The e-graph core: congruence closure against a brute-force closure, the
// associativity + commutativity counts, determinism, limits, the analysis's
// refusals, loading and extraction.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "eqiforge/egraph/dot.h"
#include "eqiforge/egraph/ac_workload.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {
namespace {

// Scalar f32 inputs x0..x{n-1}: every pointwise term over them has type f32[].
std::vector<EClassId> scalar_inputs(EGraph& g, int n) {
  std::vector<EClassId> out;
  for (int i = 0; i < n; ++i) {
    Symbol name = Symbol::intern("x" + std::to_string(i));
    g.declare_input(InputDecl{name, DType::F32, {}, NodeId{}, {}});
    out.push_back(g.add(Op::Input, {name.raw(), 0, 0}, {}));
  }
  return out;
}

std::vector<Rewrite> ac_add_rules() {
  std::vector<Rewrite> r;
  r.push_back(rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)"));
  r.push_back(rewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)"));
  return r;
}

// ---- congruence closure vs brute force ---------------------------------------------------

struct Term {
  Op op;
  std::vector<int> kids;  // term indices
  int leaf = -1;          // input index for leaves
};

// The congruence closure of `unions` over `terms`, by repeated pairwise
// comparison until nothing changes: slow and obviously right.
std::vector<int> brute_force_closure(const std::vector<Term>& terms,
                                     const std::vector<std::pair<int, int>>& unions) {
  std::vector<int> parent(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) parent[i] = int(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x];
    return x;
  };
  auto unite = [&](int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return false;
    parent[std::max(a, b)] = std::min(a, b);
    return true;
  };
  for (auto [a, b] : unions) unite(a, b);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < terms.size(); ++i)
      for (size_t j = i + 1; j < terms.size(); ++j) {
        const Term &a = terms[i], &b = terms[j];
        if (a.op != b.op || a.leaf != b.leaf || a.kids.size() != b.kids.size()) continue;
        bool same = true;
        for (size_t k = 0; k < a.kids.size() && same; ++k) same = find(a.kids[k]) == find(b.kids[k]);
        if (same) changed |= unite(int(i), int(j));
      }
  }
  std::vector<int> rep(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) rep[i] = find(int(i));
  return rep;
}

TEST(EGraphCongruence, MatchesBruteForceOnRandomTermsAndUnions) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    EGraph g;
    const int num_inputs = 4;
    std::vector<EClassId> leaves = scalar_inputs(g, num_inputs);
    std::vector<Term> terms;
    std::vector<EClassId> cls;
    for (int i = 0; i < num_inputs; ++i) {
      terms.push_back({Op::Input, {}, i});
      cls.push_back(leaves[i]);
    }
    const Op ops[] = {Op::Add, Op::Mul, Op::Neg, Op::Exp};
    const int num_terms = 60 + int(rng() % 60);
    while (int(terms.size()) < num_terms) {
      Op op = ops[rng() % 4];
      Term t{op, {}, -1};
      int arity = op_info(op).arity;
      for (int k = 0; k < arity; ++k) t.kids.push_back(int(rng() % terms.size()));
      std::vector<EClassId> kids;
      for (int k : t.kids) kids.push_back(cls[k]);
      terms.push_back(t);
      cls.push_back(g.add(op, attrs_none(), kids));
    }
    // Unions in batches, with rebuilds between some of them (deferred
    // rebuilding must give the same closure as rebuilding after each).
    std::vector<std::pair<int, int>> unions;
    const int num_unions = 5 + int(rng() % 25);
    for (int u = 0; u < num_unions; ++u) {
      int a = int(rng() % terms.size()), b = int(rng() % terms.size());
      unions.push_back({a, b});
      g.merge(cls[a], cls[b]);
      if (rng() % 4 == 0) g.rebuild();
    }
    g.rebuild();
    ASSERT_TRUE(g.clean());
    std::vector<int> rep = brute_force_closure(terms, unions);
    std::vector<int> distinct;
    for (size_t i = 0; i < terms.size(); ++i) {
      for (size_t j = i + 1; j < terms.size(); ++j)
        ASSERT_EQ(rep[i] == rep[j], g.find(cls[i]) == g.find(cls[j]))
            << "seed " << seed << " terms " << i << ", " << j;
      if (rep[i] == int(i)) distinct.push_back(int(i));
    }
    EXPECT_EQ(g.num_classes(), distinct.size()) << "seed " << seed;
    // Hash-consing after rebuild: every live e-node is found by lookup in its
    // own class, and no two live e-nodes are equal.
    size_t live = 0;
    for (EClassId c : g.classes())
      for (ENodeId n : g.nodes(c)) {
        ASSERT_TRUE(g.live(n));
        ++live;
        std::optional<EClassId> found = g.lookup(g.op(n), g.attrs(n), g.children(n));
        ASSERT_TRUE(found.has_value());
        EXPECT_EQ(*found, c);
      }
    EXPECT_EQ(live, g.num_nodes());
  }
}

// ---- hash-consing and class records ---------------------------------------------------------

// A random e-graph of pointwise terms over scalar inputs, with unions, rebuilt.
EGraph random_pointwise_egraph(uint32_t seed, std::vector<EClassId>& cls) {
  std::mt19937 rng(seed);
  EGraph g;
  cls = scalar_inputs(g, 4);
  const Op ops[] = {Op::Add, Op::Mul, Op::Neg, Op::Exp};
  while (cls.size() < 150) {
    Op op = ops[rng() % 4];
    std::vector<EClassId> kids;
    for (int k = 0; k < op_info(op).arity; ++k) kids.push_back(cls[rng() % cls.size()]);
    cls.push_back(g.add(op, attrs_none(), kids));
  }
  for (int u = 0; u < 20; ++u) g.merge(cls[rng() % cls.size()], cls[rng() % cls.size()]);
  g.rebuild();
  return g;
}

TEST(EGraphHashConsing, SmallKeyProbeAgreesWithTheGeneralOne) {
  size_t found = 0, absent = 0;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    std::vector<EClassId> cls;
    EGraph g = random_pointwise_egraph(seed, cls);
    std::mt19937 rng(seed * 31);
    std::vector<EClassId> canon = g.classes();
    // Every live e-node's key, and random keys (mostly absent), both ways.
    auto check = [&](Op op, std::span<const EClassId> kids) {
      const uint32_t nk = uint32_t(kids.size());
      EClassId c0 = nk > 0 ? kids[0] : EClassId(0), c1 = nk > 1 ? kids[1] : EClassId(0);
      uint64_t h = EGraph::small_hash(EGraph::small_seed(op, nk), nk, c0, c1);
      ASSERT_EQ(h, g.node_hash(op, attrs_none(), kids));
      std::optional<EClassId> want = g.lookup(op, attrs_none(), kids);
      EClassId got = g.lookup_small(h, op, nk, c0, c1);
      ASSERT_EQ(got.valid(), want.has_value()) << "seed " << seed;
      if (want) ASSERT_EQ(got, *want);
      ++(want ? found : absent);
    };
    for (EClassId c : canon)
      for (ENodeId n : g.nodes(c))
        if (g.op(n) != Op::Input) check(g.op(n), g.children(n));
    for (int i = 0; i < 300; ++i) {
      EClassId kids[] = {canon[rng() % canon.size()], canon[rng() % canon.size()]};
      Op op = rng() % 2 ? Op::Add : Op::Mul;
      check(op, kids);
      check(Op::Neg, std::span<const EClassId>(kids, 1));
    }
  }
  EXPECT_GT(found, 1000u);
  EXPECT_GT(absent, 1000u);
}

TEST(EGraphClassRecords, MergedAwayRecordsAreReusedAndStartEmpty) {
  // Every e-node a rule adds starts a class that is usually merged away at
  // once: records must not pile up, and a reused record must not keep its
  // previous owner's e-nodes, parents or facts.
  EGraph g;
  std::vector<EClassId> leaves = scalar_inputs(g, 3);
  EClassId sum;
  {
    EClassId k[] = {leaves[0], leaves[1]};
    sum = g.add(Op::Add, attrs_none(), k);
  }
  std::vector<EClassId> added;
  EClassId acc = leaves[2];
  for (int i = 0; i < 2000; ++i) {
    EClassId k[] = {acc, leaves[i % 2]};
    EClassId c = g.add(i % 3 ? Op::Mul : Op::Add, attrs_none(), k);
    added.push_back(c);
    if (i % 2 == 0) g.merge(c, sum);  // merged at once: its record is free again
    acc = c;
  }
  // Each add took the record the merge before it gave back.
  EXPECT_LE(g.class_records(), g.num_classes() + 1);
  g.rebuild();
  // Each canonical class holds exactly the live e-nodes whose class it is,
  // and lists as live parents exactly the live e-nodes with it as a child.
  std::vector<std::vector<ENodeId>> want_nodes(g.node_capacity()), want_parents(g.node_capacity());
  for (uint32_t i = 0; i < g.node_capacity(); ++i) {
    ENodeId n(i);
    if (!g.live(n)) continue;
    want_nodes[g.class_of(n).v].push_back(n);
    for (EClassId ch : g.children(n)) want_parents[g.find(ch).v].push_back(n);
  }
  for (EClassId c : g.classes()) {
    std::vector<ENodeId> nodes(g.nodes(c).begin(), g.nodes(c).end()), parents;
    for (ENodeId p : g.parents(c))
      if (g.live(p)) parents.push_back(p);
    std::sort(nodes.begin(), nodes.end());
    std::sort(parents.begin(), parents.end());
    parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
    std::vector<ENodeId>& wp = want_parents[c.v];
    std::sort(wp.begin(), wp.end());
    wp.erase(std::unique(wp.begin(), wp.end()), wp.end());
    EXPECT_EQ(nodes, want_nodes[c.v]) << "c" << c.v;
    EXPECT_EQ(parents, wp) << "c" << c.v;
    for (ENodeId n : nodes) EXPECT_TRUE(g.may_have_op(c, g.op(n)));
    EXPECT_FALSE(g.data(c).has_value);
  }
}

// ---- associativity and commutativity --------------------------------------------------------

uint64_t ipow(uint64_t b, int e) {
  uint64_t r = 1;
  while (e--) r *= b;
  return r;
}

TEST(EGraphAC, SumOfNLeavesSaturatesToTheClosedFormCounts) {
  for (int n = 3; n <= 10; ++n) {
    EGraph g;
    add_left_sum(g, n);
    Runner runner(g);
    runner.with_rules("ac", ac_add_rules())
        .with_node_limit(10'000'000)
        .with_time_limit(60)
        .with_iter_limit(1000);
    RunReport r = runner.run();
    EXPECT_EQ(r.stop, StopReason::Saturated) << "n = " << n;
    // Every non-empty subset of the leaves is one class; a subset of size k
    // has 2^k - 2 ordered splits, one add e-node each.
    EXPECT_EQ(g.num_classes(), ipow(2, n) - 1) << "n = " << n;
    EXPECT_EQ(g.nodes_with_op(Op::Add).size(), ipow(3, n) - ipow(2, n + 1) + 1) << "n = " << n;
    EXPECT_EQ(g.num_nodes(), ipow(3, n) - ipow(2, n + 1) + 1 + n) << "n = " << n;
  }
}

TEST(EGraphAC, BackoffBansExplosiveRulesAndStillSaturates) {
  const int n = 7;
  EGraph g;
  add_left_sum(g, n);
  Runner runner(g);
  BackoffOptions b;
  b.match_limit = 8;
  b.ban_length = 1;
  runner.with_rules("ac", ac_add_rules()).with_backoff(b).with_node_limit(1'000'000).with_iter_limit(10'000);
  RunReport r = runner.run();
  EXPECT_EQ(r.stop, StopReason::Saturated);
  uint64_t banned = 0;
  for (const RuleStats& s : r.rules) banned += s.times_banned;
  EXPECT_GT(banned, 0u);
  EXPECT_EQ(g.num_classes(), ipow(2, n) - 1);
  EXPECT_EQ(g.nodes_with_op(Op::Add).size(), ipow(3, n) - ipow(2, n + 1) + 1);
}

// ---- determinism ---------------------------------------------------------------------------

constexpr const char* kNormProgram = R"eqf(
(program norm
  (dims (m 4) (k 8))
  (input x f32 [m k])
  (input g f32 [k])
  (let r (rsqrt (add (div (sum k (mul x x)) 8) 1e-6)))
  (output y [m k] (mul (mul (add x 0) r) (sub g (neg g)))))
)eqf";

std::string saturated_dump(const char* program, const char* set, int iters) {
  Program p = parse_and_check(program);
  EGraph g;
  load_program(g, p);
  Runner runner(g);
  runner.with_rules(set, rule_set(set)).with_iter_limit(iters).with_node_limit(200'000).with_time_limit(60);
  runner.run();
  return g.dump();
}

// bench/egraph/layernorm4.eqf: 40 iterations of the arith rules under the
// backoff scheduler apply batches of three-variable matches (distribute,
// div-mul) that need new nodes, which overran the applier's prefetch list.
constexpr const char* kLayerNorm4 = R"eqf(
(program layernorm4
  (dims)
  (input x0 f32 []) (input x1 f32 []) (input x2 f32 []) (input x3 f32 [])
  (input g f32 []) (input b f32 []) (input eps f32 [])
  (let mean (mul (add (add (add x0 x1) x2) x3) 0.25))
  (let d0 (sub x0 mean)) (let d1 (sub x1 mean)) (let d2 (sub x2 mean)) (let d3 (sub x3 mean))
  (let var (mul (add (add (add (mul d0 d0) (mul d1 d1)) (mul d2 d2)) (mul d3 d3)) 0.25))
  (output y [] (add (mul (mul d0 (rsqrt (add var eps))) g) b)))
)eqf";

TEST(EGraphDeterminism, ArithFortyIterationsOnLayerNorm) {
  std::string a = saturated_dump(kLayerNorm4, "arith", 40);
  std::string b = saturated_dump(kLayerNorm4, "arith", 40);
  EXPECT_GT(a.size(), 100000u);
  EXPECT_EQ(a, b);
}

TEST(EGraphDeterminism, TwoRunsGiveIdenticalDumps) {
  std::string a = saturated_dump(kNormProgram, "arith", 6);
  std::string b = saturated_dump(kNormProgram, "arith", 6);
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, b);
  EGraph g1, g2;
  add_left_sum(g1, 6);
  add_left_sum(g2, 6);
  Runner(g1).with_rules("ac", rule_set("ac")).run();
  Runner(g2).with_rules("ac", rule_set("ac")).run();
  EXPECT_EQ(g1.dump(), g2.dump());
}

// ---- limits ----------------------------------------------------------------------------------

TEST(EGraphLimits, TimeLimitIsRespectedWithinTenPercent) {
  // AC over 16 leaves has 43 million e-nodes: no run finishes it in time.
  for (double limit : {0.4, 1.0}) {
    EGraph g;
    add_left_sum(g, 16);
    Runner runner(g);
    runner.with_rules("ac", ac_add_rules())
        .with_simple_scheduler()
        .with_time_limit(limit)
        .with_node_limit(size_t(1) << 40)
        .with_iter_limit(1'000'000);
    auto t0 = std::chrono::steady_clock::now();
    RunReport r = runner.run();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.stop, StopReason::TimeLimit);
    EXPECT_LT(took, limit * 1.1) << "limit " << limit << "\n" << r.text();
    EXPECT_TRUE(g.clean());
  }
}

TEST(EGraphLimits, NodeAndIterationLimits) {
  {
    EGraph g;
    add_left_sum(g, 10);
    Runner runner(g);
    RunReport r = runner.with_rules("ac", ac_add_rules()).with_node_limit(1000).with_iter_limit(1000).run();
    EXPECT_EQ(r.stop, StopReason::NodeLimit);
    // It stops right after the application that crossed the limit (the
    // final rebuild may then drop congruent duplicates).
    EXPECT_LE(g.num_nodes(), 1003u);
    EXPECT_GT(g.num_nodes(), 500u);
  }
  {
    EGraph g;
    add_left_sum(g, 10);
    Runner runner(g);
    RunReport r = runner.with_rules("ac", ac_add_rules()).with_node_limit(1'000'000).with_iter_limit(3).run();
    EXPECT_EQ(r.stop, StopReason::IterationLimit);
    EXPECT_EQ(r.iterations, 3);
    EXPECT_EQ(r.per_iteration.size(), 3u);
  }
}

// ---- schedules -------------------------------------------------------------------------------

TEST(EGraphSchedule, ParsesPrintsAndRuns) {
  Schedule s = Schedule::parse("(repeat 2 (seq (saturate (run algebraic)) (run refinement)))");
  EXPECT_EQ(s.text(), "(repeat 2 (seq (saturate (run algebraic)) (run refinement)))");
  EXPECT_EQ(s.all_sets(), (std::vector<std::string>{"algebraic", "refinement"}));
  EXPECT_THROW(Schedule::parse("(repeat x (run a))"), Error);
  EXPECT_THROW(Schedule::parse("(forever (run a))"), Error);

  EGraph g;
  add_left_sum(g, 5);
  Runner runner(g);
  runner.with_rules("comm", {rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)")})
      .with_rules("assoc", {rewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)")})
      .with_schedule(Schedule::parse("(repeat 2 (run comm))"))
      .with_node_limit(100000);
  RunReport r = runner.run();
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(r.rules[1].searches, 0u);  // assoc never ran
  // Alternating phases reach the same closure as running both together.
  Runner again(g);
  again.with_rules("comm", {rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)")})
      .with_rules("assoc", {rewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)")})
      .with_schedule(Schedule::parse("(saturate (seq (saturate (run comm)) (run assoc)))"))
      .with_node_limit(100000);
  r = again.run();
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_EQ(g.num_classes(), 31u);
  EXPECT_THROW(Runner(g).with_rules("a", {}).with_schedule(Schedule::parse("(run b)")).run(), Error);
}

// ---- the analysis -----------------------------------------------------------------------------

TEST(EGraphAnalysis, MergeOfDifferentTypesNamesTheRule) {
  Program p = parse_and_check(R"eqf(
(program bad
  (dims (m 4) (k 8))
  (input x f32 [m k])
  (input y f32 [m])
  (output z [m k] (add x y)))
)eqf");
  EGraph g;
  load_program(g, p);
  Runner runner(g);
  runner.with_rules("bad", {rewrite("drop-left", "(add ?a ?b)", "?b")});
  try {
    runner.run();
    FAIL() << "merging f32[m k] with f32[m] must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rule drop-left tried to merge f32[m k] with f32[m]"),
              std::string::npos)
        << e.what();
  }
}

TEST(EGraphAnalysis, IllTypedRightSidesAreRejectedAndAddNothing) {
  EGraph g;
  EClassId s = add_left_sum(g, 2);
  (void)s;
  size_t nodes = g.num_nodes();
  Runner runner(g);
  // A contraction over a dim the scalars do not have does not type-check.
  runner.with_rules("bad", {rewrite("to-matmul", "(add ?a ?b)", "(add (neg ?a) (matmul k ?a ?b))")});
  RunReport r = runner.run();
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_EQ(r.rules[0].type_rejected, 1u);
  EXPECT_EQ(r.rules[0].applications, 0u);
  EXPECT_EQ(g.num_nodes(), nodes);  // not even (neg ?a) was added
}

TEST(EGraphAnalysis, FoldsLiteralConstants) {
  EGraph g;
  EClassId one = g.add(Op::Const, attrs_f64(1), {});
  EClassId two = g.add(Op::Const, attrs_f64(2), {});
  EClassId kids[] = {one, two};
  EClassId sum = g.add(Op::Add, attrs_none(), kids);
  g.rebuild();
  EXPECT_TRUE(g.data(sum).has_value);
  EXPECT_EQ(g.data(sum).value, 3.0);
  EXPECT_EQ(g.find(sum), g.find(g.add(Op::Const, attrs_f64(3), {})));
  // Two different literals are never one class.
  EXPECT_THROW(g.merge(one, two), Error);
}

TEST(EGraphAnalysis, UndeclaredInputsAreRefused) {
  EGraph g;
  EXPECT_THROW(g.add(Op::Input, {Symbol::intern("nowhere").raw(), 0, 0}, {}), Error);
  std::string why;
  EXPECT_FALSE(g.try_add(Op::Input, {Symbol::intern("nowhere").raw(), 0, 0}, {}, &why).has_value());
  EXPECT_NE(why.find("not declared"), std::string::npos);
}

// ---- provenance, dumps --------------------------------------------------------------------------

TEST(EGraphProvenance, NodesRememberTheRuleThatCreatedThem) {
  EGraph g;
  EClassId root = add_left_sum(g, 3);
  Runner(g).with_rules("ac", ac_add_rules()).run();
  size_t from_input = 0, from_comm = 0, from_assoc = 0;
  for (EClassId c : g.classes())
    for (ENodeId n : g.nodes(c)) {
      std::string_view o = g.origin_name(g.origin(n));
      from_input += o == "input";
      from_comm += o == "comm-add";
      from_assoc += o == "assoc-add";
    }
  EXPECT_EQ(from_input, 5u);  // three leaves, two adds
  EXPECT_GT(from_comm, 0u);
  EXPECT_GT(from_assoc, 0u);
  EXPECT_EQ(from_input + from_comm + from_assoc, g.num_nodes());
  std::string dot = to_dot(g, root, 1);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("cluster_" + std::to_string(g.find(root).v)), std::string::npos);
  EXPECT_NE(dot.find("comm-add"), std::string::npos);
}

// ---- programs in and out ------------------------------------------------------------------------

TEST(EGraphProgram, ExtractsTheSmallestEquivalentProgram) {
  Program p = parse_and_check(kNormProgram);
  EGraph g;
  std::vector<EClassId> roots = load_program(g, p);
  Runner(g).with_rules("arith", rule_set("arith")).with_iter_limit(4).with_node_limit(100000).run();
  Program small = extract_smallest(g, roots, p.outputs());
  // (add x 0) became x: the smallest term drops the addition.
  std::string text = print_program(small);
  EXPECT_EQ(text.find("(add x 0)"), std::string::npos) << text;
  // And it computes the same values.
  std::vector<Tensor64> in = random_inputs(p, 7);
  std::vector<Tensor64> want = evaluate(p, in), got = evaluate(small, in);
  ASSERT_EQ(want.size(), got.size());
  EXPECT_LT(max_relative_error(got[0], want[0]), 1e-9);
  // Extraction without output declarations names them out0...
  Program anon = extract_smallest(g, roots);
  EXPECT_EQ(anon.outputs()[0].name.str(), "out0");
}

}  // namespace
}  // namespace eqf
