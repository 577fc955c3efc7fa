// Random well-typed programs (gen_program.h) through the front half of the
// core: print -> parse -> type-check -> evaluate. Every program must
// round-trip through the text format, type-check after the round trip, and
// evaluate without an error; its tile-level form must compute what its
// high-level form computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "eqiforge/interp/compare.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"
#include "gen_program.h"

namespace eqf {
namespace {

using testgen::GeneratedProgram;
using testgen::generate_program;
using testgen::GenOptions;

constexpr uint64_t kPrograms = 500;

bool same_bits(const Tensor64& a, const Tensor64& b) {
  return a.dims == b.dims && a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(double)) == 0);
}

// print -> parse -> print is a fixed point, the re-parsed program is the
// same program and type-checks, and both evaluate to the same bits.
void check_front_half(const Program& p, uint64_t seed, const char* which) {
  SCOPED_TRACE(std::string(which) + " of seed " + std::to_string(seed));
  const std::string text = print_program(p);
  SCOPED_TRACE(text);
  Program q;
  ASSERT_NO_THROW(q = parse_and_check(text, "<generated>"));
  EXPECT_TRUE(p.same_as(q));
  EXPECT_EQ(print_program(q), text);
  for (size_t i = 0; i < p.outputs().size(); ++i)
    EXPECT_EQ(p.type(p.outputs()[i].value), q.type(q.outputs()[i].value));

  const std::vector<Tensor64> inputs = random_inputs(p, seed);
  const BlockSizes blocks = random_block_sizes(p, seed);
  std::vector<Tensor64> a, b;
  ASSERT_NO_THROW(a = evaluate(p, inputs, blocks)) << block_sizes_text(blocks);
  ASSERT_NO_THROW(b = evaluate(q, inputs, blocks));
  ASSERT_EQ(a.size(), p.outputs().size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].dims, p.outputs()[i].layout);
    EXPECT_TRUE(same_bits(a[i], b[i])) << "output " << p.outputs()[i].name.str();
  }
}

TEST(RandomPrograms, RoundTripTypeCheckAndEvaluate) {
  int rewritten = 0;
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const GeneratedProgram g = generate_program(seed);
    rewritten += g.rewritten_terms > 0;
    check_front_half(g.program, seed, "program");
    check_front_half(g.plain, seed, "plain");
    if (HasFatalFailure()) return;
  }
  // Most programs hold at least one tile-level or repaired term.
  EXPECT_GT(rewritten, int(kPrograms) / 2);
}

// The tile-level and repaired terms are equivalent to their high-level
// twins: both forms agree to the interpreter's tolerance under random
// (mostly ragged) block sizes. Values stay finite (nonfinite_ops off): the
// forms are equivalent as real arithmetic, and where a whole row is -inf
// they legitimately differ (the exp-sum repair counts a side whose max is
// -inf as 0, the plain form computes exp(-inf - -inf) = NaN).
TEST(RandomPrograms, TiledFormsComputeThePlainForms) {
  GenOptions o;
  o.nonfinite_ops = false;
  int compared = 0;
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const GeneratedProgram g = generate_program(seed, o);
    if (g.rewritten_terms == 0) continue;
    ++compared;
    const EquivReport r = compare_programs(g.plain, g.program, seed, 2);
    EXPECT_TRUE(r.equivalent()) << "seed " << seed << ": max relative error " << r.max_rel_error << "\n"
                                << print_program(g.plain) << print_program(g.program);
  }
  EXPECT_GT(compared, int(kPrograms) / 2);
}

TEST(RandomPrograms, DeterministicInTheSeed) {
  std::set<std::string> distinct;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const std::string a = print_program(generate_program(seed).program);
    EXPECT_EQ(a, print_program(generate_program(seed).program)) << "seed " << seed;
    distinct.insert(a);
  }
  EXPECT_GE(distinct.size(), 45u);
}

// Every operator of ops.def appears in some generated program: a new
// operator fails here until the generator builds it.
TEST(RandomPrograms, CoverEveryOperator) {
  std::set<Op> seen;
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const GeneratedProgram g = generate_program(seed);
    for (const Program* p : {&g.program, &g.plain})
      for (uint32_t i = 0; i < p->size(); ++i) seen.insert(p->node(NodeId{i}).op);
  }
  for (int i = 0; i < kNumOps; ++i)
    EXPECT_TRUE(seen.count(Op(i))) << "no generated program uses " << op_info(Op(i)).name;
}

// Without the ops that can leave the finite range, every output is finite:
// programs for comparisons that must not be decided by NaN or Inf.
TEST(RandomPrograms, FiniteModeKeepsValuesFinite) {
  GenOptions o;
  o.nonfinite_ops = false;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const GeneratedProgram g = generate_program(seed, o);
    const std::vector<Tensor64> out = evaluate(g.plain, random_inputs(g.plain, seed));
    for (size_t i = 0; i < out.size(); ++i)
      for (double v : out[i].data)
        ASSERT_TRUE(std::isfinite(v)) << "seed " << seed << " output " << g.plain.outputs()[i].name.str() << "\n"
                                      << print_program(g.plain);
  }
}

// Options bound the size: no value above max_rank dims, no extent above
// max_extent, and the high-level-only mode writes no tile-level operator.
TEST(RandomPrograms, OptionsBoundTheProgram) {
  GenOptions o;
  o.max_rank = 2;
  o.max_extent = 5;
  o.tiled = false;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const GeneratedProgram g = generate_program(seed, o);
    EXPECT_EQ(g.rewritten_terms, 0);
    EXPECT_EQ(print_program(g.program), print_program(g.plain));
    for (const DimInfo& d : g.program.dims.all()) EXPECT_LE(d.extent, 5) << d.name.str();
    for (uint32_t i = 0; i < g.program.size(); ++i) {
      const NodeId id{i};
      EXPECT_FALSE(op_has(g.program.node(id).op, kParallel) || op_has(g.program.node(id).op, kStorage));
      for (const TensorType& t : g.program.type(id).get().parts) EXPECT_LE(t.dims.size(), 2u);
    }
  }
}

}  // namespace
}  // namespace eqf
