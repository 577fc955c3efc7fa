// Ranking at workload sizes (H200): the structures the design expects to
// win rank first. E-graphs hold a naive program and tiled forms of it; the
// forms written here are checked against the naive program at small sizes
// before they are ranked at large ones.
#include <gtest/gtest.h>

#include <algorithm>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/extract/canonical.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/interp/compare.h"
#include "extract_fixtures.h"

namespace eqf {
namespace {

using testing::read_text;
using testing::replace_all;
using testing::United;

const CostModel& h200() {
  static const CostModel cm(load_target("h200"));
  return cm;
}

ExtractResult ranked(United& u) {
  ExtractOptions o;
  o.cost = &h200();
  return extract_candidates(u.g, u.roots, u.naive.outputs(), o);
}

// Index of the candidate equal (under ≈) to `p`, or -1.
int rank_of(const ExtractResult& r, const Program& p) {
  uint64_t h = canonical_hash(p);
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (canonical_hash(r.candidates[i].program) == h) return int(i);
  return -1;
}

std::string f16(const std::string& text) { return replace_all(text, " f32 [", " f16 ["); }

// ---- attention prefill: the rolling softmax in one loop ranks first --------------------------

// M1 of DESIGN Appendix A: keys tiled on t.0 but the three reductions left
// dependent -- three loops over the keys in one kernel.
const char* kThreePass = R"((program attention
  (dims (h 2) (s 10) (t 13) (e 8) (f 6))
  (input q f32 [h s e])
  (input k f32 [h t e])
  (input v f32 [h t f])
  (let q_tile (partition s.0 s (partition h.0 h (replicate t.0 q))))
  (let k_tile (partition t.0 t (partition h.0 h (replicate s.0 k))))
  (let v_tile (partition t.0 t (partition h.0 h (replicate s.0 v))))
  (let scores (mul (tile_matmul e q_tile k_tile) (rsqrt 8)))
  (let m (preduce t.0 max (max t scores)))
  (let p (exp (sub scores (replicate t.0 m))))
  (let l (preduce t.0 + (sum t p)))
  (let pv (preduce t.0 + (tile_matmul t p v_tile)))
  (output o [h s f] (combine h.0 h (combine s.0 s (div pv l))))))";

TEST(ExtractRank, AttentionPrefillRollingSoftmaxRanksFirst) {
  const std::string small = "(dims (h 2) (s 10) (t 13) (e 8) (f 6))";
  const std::string large = "(dims (h 32) (s 4096) (t 4096) (e 128) (f 128))";
  std::string naive = read_text("examples/attention/naive.eqf");
  std::string flash = read_text("examples/attention/flash.eqf");
  ASSERT_TRUE(compare_programs(parse_and_check(naive), parse_and_check(kThreePass), 3, 4).equivalent());

  United u(f16(replace_all(naive, small, large)),
           {f16(replace_all(kThreePass, small, large)), f16(replace_all(flash, small, large))});
  ExtractResult r = ranked(u);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(rank_of(r, parse_and_check(f16(replace_all(flash, small, large)))), 0);
  const Candidate& best = r.candidates[0];
  ASSERT_EQ(best.lowered.kernels.size(), 1u);
  EXPECT_EQ(best.lowered.kernels[0].loops.size(), 1u);
}

// ---- attention decode, batch 1: more parallelism than a program per head ---------------------

TEST(ExtractRank, AttentionDecodeSplitsBeyondOneProgramPerHead) {
  const std::string decode_small = "(dims (h 3) (s 1) (t 29) (e 8) (f 8))";
  const std::string flash_small = "(dims (h 2) (s 10) (t 13) (e 8) (f 6))";
  const std::string large = "(dims (h 32) (s 1) (t 4096) (e 128) (f 128))";
  auto at = [&](const std::string& text, const std::string& dims) { return f16(replace_all(text, dims, large)); };
  // FlashAttention with one query row: one program per head.
  std::string per_head = at(read_text("examples/attention/flash.eqf"), flash_small);
  std::string split_keys = at(read_text("examples/attention_decode/flash_decoding.eqf"), decode_small);
  std::string split_channels = at(read_text("examples/attention_decode/split_channels.eqf"), decode_small);
  United u(at(read_text("examples/attention_decode/naive.eqf"), decode_small),
           {per_head, split_keys, split_channels});
  ExtractResult r = ranked(u);
  ASSERT_EQ(r.candidates.size(), 3u);
  int head = rank_of(r, parse_and_check(per_head));
  ASSERT_GE(head, 0);
  EXPECT_GT(head, 0) << "one program per head ranked first";
  // The winner runs more programs than there are heads.
  const ProgramEstimate& best = *r.candidates[0].estimate;
  double most = 0;
  for (const KernelEstimate& k : best.kernels) most = std::max(most, k.programs);
  EXPECT_GT(most, 32);
  EXPECT_LT(best.seconds, r.candidates[size_t(head)].estimate->seconds);
}

// ---- RMSNorm + gated MLP: the factor after the projections, one kernel ---------------------------

// The norm factor r by a kernel of its own (grid m.0, loop k.0), then the
// MLP kernel normalizes x before the projections.
const char* kNormFirst = R"((program rmsnorm_mlp
  (dims (m 4) (k 24) (n 20))
  (input x f32 [m k])
  (input g f32 [k])
  (input w1 f32 [k n])
  (input w2 f32 [k n])
  (let x_rk (partition k.0 k (partition m.0 m x)))
  (let r (combine m.0 m (rsqrt (add (div (preduce k.0 + (sum k (mul x_rk x_rk))) 24) 1e-6))))
  (let xn (mul (mul (partition k.0 k (replicate n.0 x)) (replicate k.0 (replicate n.0 r)))
               (partition k.0 k (replicate n.0 g))))
  (let h1 (preduce k.0 + (tile_matmul k xn (partition k.0 k (partition n.0 n w1)))))
  (let h2 (preduce k.0 + (tile_matmul k xn (partition k.0 k (partition n.0 n w2)))))
  (output y [m n] (combine n.0 n (mul (silu h1) h2)))))";

TEST(ExtractRank, RmsNormMlpFactorAfterOneKernelRanksFirst) {
  const std::string small = "(dims (m 4) (k 24) (n 20))";
  const std::string large = "(dims (m 16) (k 4096) (n 4096))";
  std::string naive = read_text("examples/rmsnorm_mlp/naive.eqf");
  std::string fused = read_text("examples/rmsnorm_mlp/factor_after_fused.eqf");
  ASSERT_TRUE(compare_programs(parse_and_check(naive), parse_and_check(kNormFirst), 5, 4).equivalent());
  auto at = [&](const std::string& text) {
    return f16(replace_all(replace_all(text, small, large), "24) 1e-6", "4096) 1e-6"));
  };
  United u(at(naive), {at(kNormFirst), at(fused)});
  ExtractResult r = ranked(u);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(rank_of(r, parse_and_check(at(fused))), 0);
  EXPECT_EQ(r.candidates[0].lowered.kernels.size(), 1u);
  EXPECT_EQ(r.candidates[1].lowered.kernels.size(), 2u);
}

}  // namespace
}  // namespace eqf
