// Kernel-private dims (extract/kernel_dims.h): a kernel that reduces away a
// dim another kernel also blocks gets a dim of its own, declared with the
// other's extent, so the two choose their block sizes apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/extract/validity.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"
#include "eqiforge/lower/kernel.h"
#include "eqiforge/rules/library.h"
#include "extract/kernel_dims.h"
#include "extract_fixtures.h"

namespace eqf {
namespace {

const CostModel& h200() {
  static const CostModel cm(load_target("h200"));
  return cm;
}

// RMSNorm + SwiGLU FFN as extraction found it at 16 tokens: the first kernel
// writes the activation over i in a grid of i.0 blocks, the second reads it
// in a loop over i.0 blocks, so both get one block size for i.0. EXTENTS is
// replaced by each test.
const char* kTied = R"(
(program ffn
  (dims EXTENTS)
  (input x f16 [m k]) (input g f16 [k]) (input wg f16 [k i]) (input wu f16 [k i]) (input wd f16 [i o])
  (let t0 (partition k.0 k (replicate i.0 (partition m.0 m x))))
  (let t1 (mul (mul (partition k.0 k (replicate i.0 (replicate m.0 g))) (rsqrt (replicate k.0 (add (div (preduce k.0 + (sum k (pow 2 t0))) 4096) 1e-06)))) t0))
  (let t2 (preduce k.0 (+ +) (tuple (tile_matmul k t1 (partition k.0 k (replicate m.0 (partition i.0 i wg)))) (tile_matmul k t1 (partition k.0 k (replicate m.0 (partition i.0 i wu)))))))
  (output y [m o] (combine o.0 o (combine m.0 m (preduce i.0 + (tile_matmul i (replicate o.0 (partition i.0 i (partition m.0 m (combine i.0 i (combine m.0 m (mul (silu (proj 0 t2)) (proj 1 t2))))))) (partition i.0 i (replicate m.0 (partition o.0 o wd)))))))))
)";

const char* kNaive = R"(
(program ffn
  (dims EXTENTS)
  (input x f16 [m k]) (input g f16 [k]) (input wg f16 [k i]) (input wu f16 [k i]) (input wd f16 [i o])
  (let xn (mul (mul x (rsqrt (add (div (sum k (mul x x)) 4096) 1e-6))) g))
  (let act (mul (silu (matmul k xn wg)) (matmul k xn wu)))
  (output y [m o] (matmul i act wd)))
)";

Program parsed(const char* text, const std::string& extents) {
  Program p = parse_program(testing::replace_all(text, "EXTENTS", extents), "ffn.eqf");
  typecheck(p);
  return p;
}

LoweredProgram lowered(const Program& p) {
  LoweredProgram l;
  std::optional<std::string> why = check_candidate(p, ExtractLimits{}, &l);
  EXPECT_FALSE(why) << *why;
  return l;
}

const Kernel& kernel_named(const LoweredProgram& l, const std::string& name) {
  for (const Kernel& k : l.kernels)
    if (k.name == name) return k;
  ADD_FAILURE() << "no kernel " << name;
  return l.kernels.front();
}

TEST(DimsSameAs, ADimDeclaredWithAnotherDimsExtent) {
  Program p = parse_program(R"(
(program copy
  (dims (k 8) (k_out k) (k_too k_out))
  (input x f32 [k])
  (output y [k_out] (rename k k_out x)))
)", "copy.eqf");
  typecheck(p);
  const DimInfo* d = p.dims.find(Symbol::intern("k_out"));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->extent, 8);
  EXPECT_EQ(d->same_as, Symbol::intern("k"));
  // A chain names its first dim.
  EXPECT_EQ(p.dims.find(Symbol::intern("k_too"))->same_as, Symbol::intern("k"));
  const std::string text = print_program(p);
  EXPECT_NE(text.find("(dims (k 8) (k_out k) (k_too k))"), std::string::npos) << text;
  Program again = parse_program(text, "again.eqf");
  EXPECT_EQ(again.dims.find(Symbol::intern("k_out"))->same_as, Symbol::intern("k"));
}

TEST(DimsSameAs, AnExtentThatIsNoDeclaredDimIsAnError) {
  for (const char* dims : {"(dims (k_out k) (k 8))", "(dims (k 8) (k_out kk))", "(dims (k 8) (k_out k_out))"}) {
    std::string text = std::string("(program p ") + dims + " (input x f32 [k]) (output y [k] x))";
    try {
      parse_program(text, "bad.eqf");
      ADD_FAILURE() << dims << " parsed";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bad.eqf:1:"), std::string::npos) << what;
      EXPECT_NE(what.find("expected a positive integer or a dim declared before it"), std::string::npos) << what;
    }
  }
}

TEST(SeparateKernelDims, TheConsumerOfABufferLoopsOverItsOwnDim) {
  Program p = parsed(kTied, "(m 16) (k 4096) (i 4096) (o 4096)");
  LoweredProgram before = lowered(p);
  std::optional<Program> q = extract::separate_kernel_dims(p, before);
  ASSERT_TRUE(q);
  const std::string text = print_program(*q);
  EXPECT_NE(text.find("(dims (m 16) (k 4096) (i 4096) (i_y i) (o 4096))"), std::string::npos) << text;
  // The weight and the buffer are read through a rename; the first kernel
  // is untouched.
  EXPECT_NE(text.find("(rename i i_y wd)"), std::string::npos) << text;
  EXPECT_NE(text.find("(rename i i_y (combine i.0 i"), std::string::npos) << text;
  LoweredProgram after = lowered(*q);
  ASSERT_EQ(after.kernels.size(), 2u);
  const Kernel& producer = after.kernels[0];
  const Kernel& consumer = kernel_named(after, "y_kernel");
  ASSERT_EQ(consumer.loops.size(), 1u);
  EXPECT_EQ(consumer.loops[0].axis.name(), "i_y.0");
  EXPECT_NE(std::find(producer.grid.begin(), producer.grid.end(), *Axis::parse("i.0")), producer.grid.end());
  // Priced apart, the consumer's loop takes longer blocks than the
  // producer's grid and the program is cheaper.
  ProgramEstimate tied = h200().estimate(p, before), apart = h200().estimate(*q, after);
  EXPECT_LT(apart.seconds, 0.95 * tied.seconds);
  EXPECT_GT(apart.blocks.at(*Axis::parse("i_y.0")), apart.blocks.at(*Axis::parse("i.0")));
}

TEST(SeparateKernelDims, TheRewriteComputesTheSameValuesAtAnyBlocks) {
  // compare_programs draws each program's block sizes afresh, ragged ones
  // included: the two dims get different blocks.
  const std::string small = "(m 3) (k 40) (i 24) (o 12)";
  Program p = parsed(kTied, small);
  std::optional<Program> q = extract::separate_kernel_dims(p, lowered(p));
  ASSERT_TRUE(q);
  Program naive = parsed(kNaive, small);
  const uint64_t seed = std::random_device{}();  // fresh inputs and blocks each run
  EquivReport r = compare_programs(naive, *q, seed, 6);
  EXPECT_TRUE(r.equivalent()) << "seed " << seed << ": max relative error " << r.max_rel_error;
}

TEST(SeparateKernelDims, NothingToDoWhenKernelsShareOnlyTheirResultsDims) {
  Program p = parse_program(testing::kTwoElementwiseKernels, "two.eqf");
  typecheck(p);
  EXPECT_FALSE(extract::separate_kernel_dims(p, lowered(p)));
}

TEST(SeparateKernelDims, ExtractionRanksTheSeparatedFormOfTheFfn) {
  testing::Saturated s(testing::replace_all(kNaive, "EXTENTS", "(m 16) (k 4096) (i 4096) (o 4096)"), "ffn.eqf");
  testing::United& u = s.u;
  auto best = [&](bool separate) {
    ExtractOptions o;
    o.cost = &h200();
    o.max_candidates = 64;
    o.time_limit_s = 60 * testing::kTimeScale;
    o.separate_kernel_dims = separate;
    return extract_candidates(u.g, u.roots, u.naive.outputs(), o);
  };
  ExtractResult with = best(true), without = best(false);
  ASSERT_FALSE(with.candidates.empty());
  ASSERT_FALSE(without.candidates.empty());
  const Program& first = with.candidates[0].program;
  bool own_dim = false;
  for (const DimInfo& d : first.dims.all()) own_dim = own_dim || d.same_as.valid();
  EXPECT_TRUE(own_dim) << print_program(first);
  EXPECT_LT(with.candidates[0].estimate->seconds, without.candidates[0].estimate->seconds);
  for (const DimInfo& d : without.candidates[0].program.dims.all()) EXPECT_FALSE(d.same_as.valid());
}

}  // namespace
}  // namespace eqf
