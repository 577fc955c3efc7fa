// Derivations: after saturating a naive program with the rule library (the
// default schedule and limits), the tiled target term is in the root's
// e-class. The targets are the example files of each folder.
#include <gtest/gtest.h>

#include <string>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"
#include "eqiforge/rules/prove.h"

namespace eqf {
namespace {

struct Derivation {
  const char* naive;
  const char* target;
};

void expect_derived(const Derivation& d, double seconds = 60, const RuleOptions& rules = {}) {
  Program a = parse_and_check_file(d.naive);
  Program b = parse_and_check_file(d.target);
  // The target is a correct program in the first place.
  ASSERT_TRUE(compare_programs(a, b, 7, 2).equivalent()) << d.target;
  EGraph g;
  std::vector<EClassId> roots = load_program(g, a);
  Runner runner(g);
  runner.with_time_limit(seconds).with_node_limit(500'000).with_iter_limit(100000);
  add_rule_library(runner, rules);
  RunReport run = runner.run();
  EXPECT_EQ(run.stop, StopReason::Saturated) << d.naive << ": " << stop_reason_name(run.stop);
  ProofReport proof = find_in_class(g, roots, a.outputs(), b);
  EXPECT_TRUE(proof.proved) << d.naive << " => " << d.target << "\n" << proof.text();
  // The target's nodes were built by rules, not found in the input.
  if (proof.proved) {
    EXPECT_GT(proof.rules.size(), 3u) << proof.text();
  }
}

TEST(RuleDerivations, FlashAttentionFromNaiveAttention) {
  expect_derived({"examples/attention/naive.eqf", "examples/attention/flash.eqf"});
}

TEST(RuleDerivations, FlashDecodingFromNaiveDecode) {
  expect_derived({"examples/attention_decode/naive.eqf", "examples/attention_decode/flash_decoding.eqf"});
}

TEST(RuleDerivations, ChannelSplitDecodeFromNaiveDecode) {
  expect_derived({"examples/attention_decode/naive.eqf", "examples/attention_decode/split_channels.eqf"});
}

TEST(RuleDerivations, RmsnormMlpFactorAfterProjectionsFused) {
  expect_derived({"examples/rmsnorm_mlp/naive.eqf", "examples/rmsnorm_mlp/factor_after_fused.eqf"});
}

TEST(RuleDerivations, LoraTwoKernels) {
  expect_derived({"examples/lora/naive.eqf", "examples/lora/two_kernels.eqf"});
}

TEST(RuleDerivations, LoraOneKernel) {
  expect_derived({"examples/lora/naive.eqf", "examples/lora/one_kernel.eqf"});
}

// Through the one-pass variance, which is off by default (it cancels in
// floating point: RuleOptions::cancelling_algebra).
TEST(RuleDerivations, LayerNormOnePassByTupleFusion) {
  RuleOptions rules;
  rules.cancelling_algebra = true;
  expect_derived({"examples/layernorm/naive.eqf", "examples/layernorm/one_pass_tuple.eqf"}, 60, rules);
}

TEST(RuleDerivations, TheCancellingVarianceIsOffByDefault) {
  Program a = parse_and_check_file("examples/layernorm/naive.eqf");
  Program b = parse_and_check_file("examples/layernorm/one_pass_tuple.eqf");
  EGraph g;
  std::vector<EClassId> roots = load_program(g, a);
  Runner runner(g);
  runner.with_time_limit(60).with_node_limit(500'000).with_iter_limit(100000);
  add_rule_library(runner);
  runner.run();
  EXPECT_FALSE(find_in_class(g, roots, a.outputs(), b).proved);
}

TEST(RuleDerivations, LayerNormOnePassByWelfordRepair) {
  expect_derived({"examples/layernorm/naive.eqf", "examples/layernorm/one_pass_welford.eqf"});
}

TEST(RuleDerivations, MatmulSplitKOneAndTwoLevels) {
  expect_derived({"examples/matmul/naive.eqf", "examples/matmul/split_k.eqf"});
  expect_derived({"examples/matmul/naive.eqf", "examples/matmul/split_k_two_levels.eqf"});
}

// Multi-head latent attention: both up-projections absorbed (the key's onto
// the query, the value's after the attention) and the key scales moved onto
// the query and the logits, by the algebraic rules alone (the whole library
// does not saturate this program in a test's time; the pipeline's search
// stops at its node limit with the absorbed form found, see
// docs/architecture.md).
TEST(RuleDerivations, LatentAttentionAbsorbsItsUpProjections) {
  Program a = parse_and_check_file("examples/mla/naive.eqf");
  Program b = parse_and_check_file("examples/mla/absorbed.eqf");
  ASSERT_TRUE(compare_programs(a, b, 7, 2).equivalent());
  EGraph g;
  std::vector<EClassId> roots = load_program(g, a);
  Runner runner(g);
  runner.with_time_limit(60).with_node_limit(500'000).with_iter_limit(100000);
  runner.with_rules("algebraic", family_rules(Family::Algebraic));
  RunReport run = runner.run();
  EXPECT_EQ(run.stop, StopReason::Saturated) << stop_reason_name(run.stop);
  ProofReport proof = find_in_class(g, roots, a.outputs(), b);
  ASSERT_TRUE(proof.proved) << proof.text();
  EXPECT_EQ(proof.rules.count("matmul-reassoc-across"), 1u) << proof.text();
  EXPECT_EQ(proof.rules.count("factor-across-matmul"), 1u) << proof.text();
}

// Must not be provable: a target that computes something else.
TEST(RuleDerivations, AWrongTargetIsNotProved) {
  Program a = parse_and_check_file("examples/layernorm/naive.eqf");
  // The variance without the mean shift.
  Program b = parse_and_check(R"(
(program layernorm
  (dims (m 5) (k 23))
  (input x f32 [m k])
  (input g f32 [k])
  (input b f32 [k])
  (let mean (div (sum k x) 23))
  (let var (div (sum k (mul x x)) 23))
  (output y [m k] (add (mul (mul (sub x mean) (rsqrt (add var 1e-5))) g) b))))");
  EGraph g;
  std::vector<EClassId> roots = load_program(g, a);
  Runner runner(g);
  runner.with_time_limit(30).with_iter_limit(100000);
  add_rule_library(runner);
  runner.run();
  ProofReport proof = find_in_class(g, roots, a.outputs(), b);
  EXPECT_FALSE(proof.proved) << proof.text();
}

}  // namespace
}  // namespace eqf
