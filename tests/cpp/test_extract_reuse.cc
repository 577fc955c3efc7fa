// Reuse twins: a candidate whose kernel recomputes another kernel's body
// gets a twin that loads the stored result, and the cost model ranks it.
#include <gtest/gtest.h>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"
#include "eqiforge/extract/validity.h"
#include "eqiforge/lower/kernel.h"
#include "eqiforge/rules/library.h"
#include "extract/reuse.h"
#include "extract_fixtures.h"

namespace eqf {
namespace {

// nGPT's normalized update at a small size, as the front end writes it.
const char* kNgpt = R"(
(program ngpt_update
  (dims (k 2048) (k1 2048))
  (input h f16 [k]) (input x f16 [k1]) (input w f16 [k1 k]) (input alpha f16 [k])
  (let mm (matmul k1 x w))
  (let d (div mm (sqrt (sum k (mul mm mm)))))
  (let a (add h (mul alpha (sub d h))))
  (output out [k] (div a (sqrt (sum k (mul a a))))))
)";

// One of extraction's candidates for it: the second kernel computes the
// partitioned matmul t1 again, next to reading the first kernel's result.
const char* kRecomputing = R"(
(program ngpt_update
  (dims (k 2048) (k1 2048))
  (input h f16 [k]) (input x f16 [k1]) (input w f16 [k1 k]) (input alpha f16 [k])
  (let t0 (partition k.0 k h))
  (let t1 (preduce k1.0 + (tile_matmul k1 (partition k1.0 k1 (replicate k.0 x)) (partition k1.0 k1 (partition k.0 k w)))))
  (let t2 (replicate k.0 (combine k.0 k t1)))
  (let t3 (rsqrt (sum k (mul t2 t2))))
  (let t4 (replicate k.0 h))
  (let t5 (add t4 (mul (replicate k.0 alpha) (sub (mul t2 t3) t4))))
  (output out [k] (combine k.0 k (mul (add t0 (mul (partition k.0 k alpha) (sub (mul t1 t3) t0))) (rsqrt (sum k (mul t5 t5)))))))
)";

const CostModel& h200() {
  static const CostModel cm(load_target("h200"));
  return cm;
}

// The kernels of a lowered candidate that read input `name`.
int kernels_reading(const LoweredProgram& l, const std::string& name) {
  int n = 0;
  for (const Kernel& k : l.kernels) {
    bool reads = false;
    for (const Load& ld : k.loads) reads = reads || (ld.buffer >= 0 && l.buffers[ld.buffer].name == name);
    n += reads;
  }
  return n;
}

int count_op(const Program& p, Op op) {
  int n = 0;
  for (uint32_t i = 0; i < p.size(); ++i) n += p.node(NodeId{i}).op == op;
  return n;
}

TEST(ReuseKernelResults, ARecomputedKernelBodyIsLoaded) {
  Program p = parse_program(kRecomputing, "recomputing.eqf");
  typecheck(p);
  std::optional<Program> twin = extract::reuse_kernel_results(p);
  ASSERT_TRUE(twin);
  // The matmul's tile is built once, under the first kernel's grid; the
  // second kernel partitions that kernel's result.
  EXPECT_EQ(count_op(p, Op::TileMatMul), 1);  // shared as one term, used by two kernels
  EXPECT_EQ(count_op(*twin, Op::TileMatMul), 1);
  const std::string text = print_program(*twin);
  EXPECT_NE(text.find("(partition k.0 k t"), std::string::npos) << text;
  Program naive = parse_program(kNgpt, "ngpt.eqf");
  typecheck(naive);
  EXPECT_TRUE(compare_programs(naive, *twin, 5, 2).equivalent()) << text;
  EXPECT_TRUE(compare_programs(p, *twin, 6, 1).equivalent());
  // Lowered, the twin's second kernel has no matmul left.
  LoweredProgram before, after;
  ASSERT_FALSE(check_candidate(p, ExtractLimits{}, &before));
  ASSERT_FALSE(check_candidate(*twin, ExtractLimits{}, &after));
  ASSERT_EQ(after.kernels.size(), 2u);
  EXPECT_EQ(kernels_reading(before, "w"), 2);
  EXPECT_EQ(kernels_reading(after, "w"), 1);
  EXPECT_LT(h200().estimate(*twin, after).seconds, 0.75 * h200().estimate(p, before).seconds);
}

TEST(ReuseKernelResults, NoTwinWithoutAnOutsideUse) {
  Program p = parse_program(testing::kTwoElementwiseKernels, "two.eqf");
  typecheck(p);
  EXPECT_FALSE(extract::reuse_kernel_results(p));
}

TEST(ReuseKernelResults, NgptsBestCandidateComputesTheMatmulOnce) {
  testing::Saturated s(kNgpt, "ngpt.eqf");
  testing::United& u = s.u;
  auto best = [&](bool reuse) {
    ExtractOptions o;
    o.order = ExtractOrder::BestFirst;
    o.cost = &h200();
    o.max_candidates = 64;
    o.time_limit_s = 60;
    o.reuse_kernel_results = reuse;
    return extract_candidates(u.g, u.roots, u.naive.outputs(), o);
  };
  ExtractResult with = best(true), without = best(false);
  ASSERT_FALSE(with.candidates.empty());
  ASSERT_FALSE(without.candidates.empty());
  EXPECT_GT(with.stats.reuse_twins, 0u);
  EXPECT_EQ(without.stats.reuse_twins, 0u);
  // The best reads the weight in one kernel. Without twins the search
  // finds a split-K form that does too (11.8 us on the H200's model; before
  // the acyclic own-weight passes its best read the weight in both kernels,
  // 16.6 us); the twin, which loads the first kernel's result, is cheaper.
  EXPECT_EQ(kernels_reading(with.candidates[0].lowered, "w"), 1);
  EXPECT_LT(with.candidates[0].estimate->seconds, without.candidates[0].estimate->seconds);
  EXPECT_TRUE(compare_programs(u.naive, with.candidates[0].program, 9, 2).equivalent());
}

}  // namespace
}  // namespace eqf
