// Extraction: which programs are candidates (every computation inside a
// kernel region, leaves materialized), that the tiled forms of the examples
// are found and compute what the naive program computes, the equivalence ≈,
// and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "eqiforge/extract/canonical.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/diagnostic.h"
#include "extract_fixtures.h"

namespace eqf {
namespace {

using testing::United;

ExtractResult run(United& u, ExtractMode mode = ExtractMode::Early, const CostModel* cost = nullptr) {
  ExtractOptions o;
  o.mode = mode;
  o.cost = cost;
  o.order = cost ? ExtractOrder::BestFirst : ExtractOrder::BreadthFirst;
  return extract_candidates(u.g, u.roots, u.naive.outputs(), o);
}

// What "every computation lies in a kernel region" means for a program:
// outputs are kernel results (a grid of combines), no global contraction,
// and it lowers to kernels that each have a grid.
void expect_valid(const Program& p) {
  for (const OutputDecl& o : p.outputs()) EXPECT_EQ(p.node(o.value).op, Op::Combine) << print_program(p);
  for (uint32_t i = 0; i < p.size(); ++i) EXPECT_NE(p.node(NodeId{i}).op, Op::MatMul) << print_program(p);
  LoweredProgram lp;
  std::optional<std::string> why = check_candidate(p, ExtractLimits{}, &lp);
  ASSERT_FALSE(why) << *why << "\n" << print_program(p);
  for (const Kernel& k : lp.kernels) EXPECT_FALSE(k.grid.empty());
}

// ---- validity ------------------------------------------------------------------------

TEST(ExtractValidity, NaiveProgramAloneHasNoCandidate) {
  United u(testing::read_text("examples/matmul/naive.eqf"), {});
  ExtractResult r = run(u);
  EXPECT_TRUE(r.candidates.empty());
  EXPECT_EQ(r.stats.distinct, 0u);
}

TEST(ExtractValidity, ComputedGlobalValuesAreNotLoadedInBlocks) {
  // partition over exp(x): the blocks of a value no kernel writes.
  const std::string naive = "(program p (dims (m 8) (n 4)) (input x f32 [m n]) (output y [m n] (add (exp x) 1)))";
  United u(naive, {"(program p (dims (m 8) (n 4)) (input x f32 [m n])\n"
                   "  (output y [m n] (combine m.0 m (add (partition m.0 m (exp x)) 1))))"});
  ExtractResult none = run(u);
  EXPECT_TRUE(none.candidates.empty());
  EXPECT_EQ(none.stats.distinct, 0u);
  // Once exp(x) has a kernel of its own, its blocks are loads of a buffer.
  United v(naive, {"(program p (dims (m 8) (n 4)) (input x f32 [m n])\n"
                   "  (let e (combine n.0 n (exp (partition n.0 n x))))\n"
                   "  (output y [m n] (combine m.0 m (add (partition m.0 m e) 1))))"});
  ExtractResult r = run(v);
  ASSERT_EQ(r.candidates.size(), 1u);
  expect_valid(r.candidates[0].program);
  EXPECT_EQ(r.candidates[0].lowered.kernels.size(), 2u);
  EXPECT_TRUE(compare_programs(v.naive, r.candidates[0].program, 2, 3).equivalent());
}

TEST(ExtractValidity, ReplicatedGlobalValuesAreLeaves) {
  // exp(c) has no axes: under a replicate every program would compute the
  // whole tensor, outside any tiling. Not a candidate...
  const std::string decls = "(dims (m 8) (n 4)) (input x f32 [m n]) (input c f32 [n]) (input s f32 [])";
  United u("(program p " + decls + " (output y [m n] (add x (exp c))))",
           {"(program p " + decls + "\n  (output y [m n] (combine m.0 m (add (partition m.0 m x) (replicate m.0 (exp c))))))"});
  EXPECT_TRUE(run(u).candidates.empty());
  // ... but a scalar is: every program may compute exp(s).
  United v("(program p " + decls + " (output y [m n] (add x (exp s))))",
           {"(program p " + decls + "\n  (output y [m n] (combine m.0 m (add (partition m.0 m x) (replicate m.0 (exp s))))))"});
  ExtractResult r = run(v);
  ASSERT_EQ(r.candidates.size(), 1u);
  expect_valid(r.candidates[0].program);
  EXPECT_TRUE(compare_programs(v.naive, r.candidates[0].program, 3, 4).equivalent());
}

TEST(ExtractValidity, KernelsStayWithinTheAxisLimits) {
  Program p = parse_and_check_file("examples/matmul/split_k_two_levels.eqf");
  ExtractLimits limits;
  EXPECT_FALSE(check_candidate(p, limits));
  limits.max_loop_depth = 1;
  std::optional<std::string> why = check_candidate(p, limits);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("nests 2 loops"), std::string::npos) << *why;
  // The naive program is not a candidate at all.
  std::optional<std::string> naive = check_candidate(parse_and_check_file("examples/matmul/naive.eqf"), {});
  ASSERT_TRUE(naive);
  EXPECT_NE(naive->find("matmul"), std::string::npos) << *naive;
}

// ---- the examples -----------------------------------------------------------------------

// Every tiled form of each example is found, is valid, and computes the
// naive program's outputs (random inputs and random block sizes).
TEST(Extract, FindsEveryTiledFormOfTheExamples) {
  for (const std::string& folder : testing::example_folders()) {
    SCOPED_TRACE(folder);
    std::vector<std::string> variants = testing::example_variants(folder);
    United u(testing::read_text("examples/" + folder + "/naive.eqf"), variants);
    ExtractResult r = run(u);
    std::set<uint64_t> want, got;
    for (const std::string& text : variants) want.insert(canonical_hash(parse_and_check(text)));
    for (const Candidate& c : r.candidates) {
      got.insert(canonical_hash(c.program));
      expect_valid(c.program);
      EquivReport eq = compare_programs(u.naive, c.program, 11, 4);
      EXPECT_TRUE(eq.equivalent()) << eq.max_rel_error << "\n" << print_program(c.program);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(r.stats.distinct, variants.size());
  }
}

// Extraction restricted to one tiled form's e-nodes (what `eqiforge-opt
// extract --explain` does) builds that form and nothing else; a program the
// e-graph does not hold is reported with its first missing term.
TEST(Extract, RestrictedToOneProgramsENodes) {
  std::string naive = testing::read_text("examples/attention_decode/naive.eqf");
  std::string flash = testing::read_text("examples/attention_decode/flash_decoding.eqf");
  std::string split = testing::read_text("examples/attention_decode/split_channels.eqf");
  United u(naive, {flash, split});
  u.add_redundant_forms(2);
  ASSERT_EQ(run(u).candidates.size(), 2u);
  for (const std::string& text : {flash, split}) {
    Program p = parse_and_check(text);
    std::optional<std::vector<ENodeId>> nodes = find_program_nodes(u.g, p);
    ASSERT_TRUE(nodes);
    ExtractOptions o;
    o.order = ExtractOrder::BreadthFirst;
    o.only_nodes.assign(u.g.node_capacity(), false);
    for (ENodeId n : *nodes) o.only_nodes[n.v] = true;
    ExtractResult r = extract_candidates(u.g, u.roots, u.naive.outputs(), o);
    ASSERT_EQ(r.candidates.size(), 1u);
    EXPECT_EQ(canonical_hash(r.candidates[0].program), canonical_hash(p));
  }
  // The same tiling with a different scale constant is not in the e-graph.
  std::string other = testing::replace_all(flash, "(rsqrt 8)", "(rsqrt 9)");
  ASSERT_NE(other, flash);
  std::string missing;
  EXPECT_FALSE(find_program_nodes(u.g, parse_and_check(other), &missing));
  EXPECT_EQ(missing, "9");  // the first node of the program the e-graph lacks
}

// With redundant forms in the e-graph (reassociated and commuted arithmetic,
// reordered wrappers), every candidate still evaluates equal to the naive
// program.
TEST(Extract, EveryCandidateComputesTheNaiveProgram) {
  for (const std::string& folder : testing::example_folders()) {
    SCOPED_TRACE(folder);
    United u(testing::read_text("examples/" + folder + "/naive.eqf"), testing::example_variants(folder));
    u.add_redundant_forms(3);
    ExtractResult r = run(u);
    ASSERT_FALSE(r.candidates.empty());
    uint64_t seed = 100;
    for (const Candidate& c : r.candidates) {
      expect_valid(c.program);
      EquivReport eq = compare_programs(u.naive, c.program, seed++, 3);
      EXPECT_TRUE(eq.equivalent()) << eq.max_rel_error << "\n" << print_program(c.program);
    }
  }
}

TEST(Extract, SeveralOutputs) {
  const std::string dims = "(dims (m 6) (n 5)) (input x f32 [m n])";
  United u("(program p " + dims + " (output a [m n] (exp x)) (output b [m n] (neg x)))",
           {"(program p " + dims +
            "\n  (output a [m n] (combine m.0 m (exp (partition m.0 m x))))\n"
            "  (output b [m n] (combine n.0 n (neg (partition n.0 n x)))))"});
  ExtractResult r = run(u);
  ASSERT_EQ(r.candidates.size(), 1u);
  expect_valid(r.candidates[0].program);
  EXPECT_EQ(r.candidates[0].lowered.kernels.size(), 2u);
  EXPECT_TRUE(compare_programs(u.naive, r.candidates[0].program, 5, 3).equivalent());
}

TEST(Extract, BadRequestsAreErrors) {
  United u(testing::read_text("examples/matmul/naive.eqf"), testing::example_variants("matmul"));
  ExtractOptions o;
  EXPECT_THROW(extract_candidates(u.g, u.roots, {}, o), Error);
  EXPECT_THROW(extract_candidates(u.g, {}, {}, o), Error);
  // A root with parallel axes is not an output.
  EClassId x = u.g.lookup(Op::Input, {Symbol::intern("a").raw(), 0, 0}, {}).value();
  EClassId part = u.g.add(Op::Partition, {Axis{Symbol::intern("m"), 0}.pack(), Symbol::intern("m").raw(), 0},
                          std::vector<EClassId>{x});
  u.g.rebuild();
  std::vector<EClassId> roots{part};
  EXPECT_THROW(extract_candidates(u.g, roots, u.naive.outputs(), o), Error);
}

// ---- the equivalence -----------------------------------------------------------------------

TEST(ExtractCanonical, OperandAndWrapperOrderDoNotMatter) {
  const std::string head = "(program mm (dims (m 12) (k 20) (n 10)) (input a f32 [m k]) (input b f32 [k n])\n";
  Program p = parse_and_check(head +
                              "(output c [m n] (combine m.0 m (combine n.0 n (preduce k.0 + (tile_matmul k\n"
                              "  (partition k.0 k (partition m.0 m (replicate n.0 a)))\n"
                              "  (partition k.0 k (partition n.0 n (replicate m.0 b)))))))))");
  Program q = parse_and_check(head +
                              "(output c [m n] (combine n.0 n (combine m.0 m (preduce k.0 + (tile_matmul k\n"
                              "  (partition k.0 k (replicate m.0 (partition n.0 n b)))\n"
                              "  (replicate n.0 (partition k.0 k (partition m.0 m a)))))))))");
  Program other = parse_and_check_file("examples/matmul/split_k_two_levels.eqf");
  EXPECT_EQ(canonical_hash(p), canonical_hash(q));
  EXPECT_NE(canonical_hash(p), canonical_hash(other));
  const std::string pw = "(program p (dims (m 4)) (input x f32 [m]) (input y f32 [m])\n";
  EXPECT_EQ(canonical_hash(parse_and_check(pw + "(output z [m] (combine m.0 m (sub (partition m.0 m x) (partition m.0 m y)))))")),
            canonical_hash(parse_and_check(pw + "(output z [m] (combine m.0 m (sub (partition m.0 m x) (partition m.0 m y)))))")));
  // sub is not commutative.
  EXPECT_NE(canonical_hash(parse_and_check(pw + "(output z [m] (combine m.0 m (sub (partition m.0 m x) (partition m.0 m y)))))")),
            canonical_hash(parse_and_check(pw + "(output z [m] (combine m.0 m (sub (partition m.0 m y) (partition m.0 m x)))))")));
}

}  // namespace
}  // namespace eqf
