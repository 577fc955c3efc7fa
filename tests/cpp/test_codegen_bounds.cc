// Loop bounds from index masks: a loop over key blocks visits only the
// blocks its causal or sliding-window mask can keep, and only when skipping
// a block is exact (the masked fill makes the block's contribution the
// identity); the blocks on which the mask holds everywhere are a pass of
// their own without it. The values of these kernels are checked end to end by
// tests/python/test_codegen_bounds.py.
#include <gtest/gtest.h>

#include <string>

#include "cost/index_mask.h"
#include "eqiforge/codegen/triton.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// Causal flash attention with the mask's fill and reduction swapped in.
std::string causal(const std::string& visible, const std::string& fill = "-inf") {
  return R"((program causal (dims (s 13) (t 11) (e 8) (f 6))
    (input q f32 [s e]) (input k f32 [t e]) (input v f32 [t f])
    (let q_tile (partition s.0 s (replicate t.0 q)))
    (let k_tile (partition t.0 t (replicate s.0 k)))
    (let v_tile (partition t.0 t (replicate s.0 v)))
    (let kt (partition t.0 t (replicate s.0 (iota t))))
    (let qs (partition s.0 s (replicate t.0 (iota s))))
    (let visible )" + visible + R"()
    (let scores (where visible (tile_matmul e q_tile k_tile) )" + fill + R"())
    (let m_blk (max t scores))
    (let p_blk (exp (sub scores m_blk)))
    (let state (preduce t.0 (max (exp-sum 0) (exp-sum 0))
                 (tuple m_blk (sum t p_blk) (tile_matmul t p_blk v_tile))))
    (output o [s f] (combine s.0 s (div (proj 2 state) (proj 1 state))))))";
}

TEST(IndexMaskTerms, NamesTheWhereAndTheGridAxis) {
  Program p = parse_and_check_file("examples/attention_causal/flash.eqf");
  LoweredProgram lp = lower_program(p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  std::optional<cost::LoopMaskTerms> m = cost::find_loop_mask_terms(p, lp.kernels[0], 0);
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->grid_axis.has_value());
  EXPECT_EQ(m->grid_axis->name(), "s.0");
  ASSERT_EQ(m->predicates.size(), 1u);
  EXPECT_EQ(p.node(m->predicates[0].where).op, Op::Where);
  EXPECT_EQ(m->predicates[0].predicate.cmp, cost::IndexPredicate::Cmp::Le);
  EXPECT_EQ(m->predicates[0].predicate.terms.size(), 2u);
}

TEST(IndexMaskTerms, UnmaskedLoopHasNone) {
  Program p = parse_and_check_file("examples/attention/flash.eqf");
  LoweredProgram lp = lower_program(p);
  EXPECT_FALSE(cost::find_loop_mask_terms(p, lp.kernels[0], 0).has_value());
}

TEST(LoopBounds, CausalLoopStopsAfterTheProgramsLastRow) {
  std::string m = emit_triton(parse_and_check_file("examples/attention_causal/flash.eqf"));
  EXPECT_TRUE(has(m, "hi_t0 = tl.minimum(tl.cdiv(T, BLOCK_T0), tl.cdiv(tl.minimum((pid_s0 + 1) * BLOCK_S0, S), "
                     "BLOCK_T0))"))
      << m;
  // The blocks wholly below the diagonal in a pass without the mask, the
  // diagonal's in a second pass with it.
  EXPECT_TRUE(has(m, "full_hi_t0 = tl.minimum(hi_t0, (pid_s0 * BLOCK_S0 + 1) // BLOCK_T0)")) << m;
  EXPECT_TRUE(has(m, "for t0 in range(0, full_hi_t0):")) << m;
  EXPECT_TRUE(has(m, "for t0 in range(full_hi_t0, hi_t0):")) << m;
  // Rows with no visible key yet: the terms are taken against 0, so they are
  // exp(-inf) = 0 and the state stays empty.
  EXPECT_TRUE(has(m, "m_shift = tl.where(m_new == float(\"-inf\"), 0.0, m_new)")) << m;
  EXPECT_TRUE(has(m, "state_1 = state_1 * alpha + state_1_blk")) << m;
}

TEST(LoopBounds, SlidingWindowAlsoStartsLate) {
  std::string m = emit_triton(parse_and_check(causal("(mul (le kt qs) (lt (sub qs kt) 4))"), "window.eqf"));
  EXPECT_TRUE(has(m, "lo_t0 = tl.maximum(pid_s0 * BLOCK_S0 - 3, 0) // BLOCK_T0")) << m;
  // Three passes: the window's start and end keep the mask, the blocks
  // between (every row sees every key) do not.
  EXPECT_TRUE(has(m, "full_lo_t0 = tl.minimum(tl.maximum(lo_t0, tl.cdiv(tl.maximum(tl.minimum((pid_s0 + 1) * "
                     "BLOCK_S0, S) - 4, 0), BLOCK_T0)), hi_t0)"))
      << m;
  EXPECT_TRUE(has(m, "full_hi_t0 = tl.maximum(tl.minimum(hi_t0, (pid_s0 * BLOCK_S0 + 1) // BLOCK_T0), full_lo_t0)"))
      << m;
  EXPECT_TRUE(has(m, "for t0 in range(lo_t0, full_lo_t0):")) << m;
  EXPECT_TRUE(has(m, "for t0 in range(full_lo_t0, full_hi_t0):")) << m;
  EXPECT_TRUE(has(m, "for t0 in range(full_hi_t0, hi_t0):")) << m;
}

TEST(LoopBounds, EqualityBoundsBothEnds) {
  std::string m = emit_triton(parse_and_check(causal("(eq kt qs)"), "diagonal.eqf"));
  EXPECT_TRUE(has(m, "for t0 in range(lo_t0, hi_t0):")) << m;
  EXPECT_FALSE(has(m, "full_")) << m;  // t == s never holds on a whole block of more than one key
}

TEST(LoopBounds, NoBoundsWhenTheFillIsNotEmpty) {
  // A fill of 0 gives exp(0 - 0) = 1 per masked key: masked blocks add to the
  // sums, so they must be visited.
  std::string m = emit_triton(parse_and_check(causal("(le kt qs)", "0"), "fill.eqf"));
  EXPECT_TRUE(has(m, "hi_t0 = tl.cdiv(T, BLOCK_T0)")) << m;
  EXPECT_FALSE(has(m, "only the blocks where")) << m;
  // Every block is visited, and where the mask holds everywhere it is left out.
  EXPECT_TRUE(has(m, "for t0 in range(0, full_hi_t0):")) << m;
  EXPECT_TRUE(has(m, "for t0 in range(full_hi_t0, hi_t0):")) << m;
}

TEST(LoopBounds, NoBoundsForAPlainSumOfAMaskedNonzeroFill) {
  std::string text = R"((program masked_sum (dims (s 9) (t 7)) (input x f32 [s t])
    (let xt (partition t.0 t (partition s.0 s x)))
    (let visible (le (partition t.0 t (replicate s.0 (iota t))) (partition s.0 s (replicate t.0 (iota s)))))
    (output y [s] (combine s.0 s (preduce t.0 + (sum t (where visible xt FILL)))))))";
  std::string zero = text, one = text;
  zero.replace(zero.find("FILL"), 4, "0");
  one.replace(one.find("FILL"), 4, "1");
  std::string with_zero = emit_triton(parse_and_check(zero, "zero.eqf"));
  std::string with_one = emit_triton(parse_and_check(one, "one.eqf"));
  EXPECT_TRUE(has(with_zero, "for t0 in range(full_hi_t0, hi_t0):")) << with_zero;  // zeros add nothing
  EXPECT_TRUE(has(with_zero, "hi_t0 = tl.minimum(")) << with_zero;
  EXPECT_TRUE(has(with_one, "hi_t0 = tl.cdiv(T, BLOCK_T0)")) << with_one;  // ones do
}

// The rules also write the causal mask negated, with the fill first:
// where(eq(cast(le(t - s, 0)), 0), -inf, X) bounds the loop just the same.
TEST(LoopBounds, NegatedMaskWithTheFillFirst) {
  std::string text = causal("(eq (cast i32 (le (sub kt qs) 0)) 0)");
  const std::string plain = "(where visible (tile_matmul e q_tile k_tile) -inf)";
  ASSERT_TRUE(has(text, plain));
  text.replace(text.find(plain), plain.size(), "(where visible -inf (tile_matmul e q_tile k_tile))");
  Program p = parse_and_check(text, "negated.eqf");
  LoweredProgram lp = lower_program(p);
  std::optional<cost::LoopMaskTerms> m = cost::find_loop_mask_terms(p, lp.kernels[0], 0);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->predicates.size(), 1u);
  EXPECT_EQ(m->predicates[0].literal_child, 1);
  EXPECT_EQ(m->predicates[0].predicate.cmp, cost::IndexPredicate::Cmp::Le);
  std::string code = emit_triton(p);
  EXPECT_TRUE(has(code, "for t0 in range(full_hi_t0, hi_t0):")) << code;
  // The fill first under a plain comparison: X where not(t - s < 0), i.e.
  // t >= s, a lower bound.
  std::string later = causal("(lt (sub kt qs) 0)");
  later.replace(later.find(plain), plain.size(), "(where visible -inf (tile_matmul e q_tile k_tile))");
  EXPECT_TRUE(has(emit_triton(parse_and_check(later, "later.eqf")), "for t0 in range(lo_t0, full_lo_t0):"))
      << later;
  // eq(a * b, 0) with the fill first keeps X where a and b: both bounds.
  std::string both = causal("(eq (mul (le kt qs) (le qs kt)) 0)");
  both.replace(both.find(plain), plain.size(), "(where visible -inf (tile_matmul e q_tile k_tile))");
  EXPECT_TRUE(has(emit_triton(parse_and_check(both, "both.eqf")), "for t0 in range(lo_t0, full_lo_t0):"));
  // With the fill last the same mask keeps X where not(a and b), a
  // disjunction: no bound.
  EXPECT_TRUE(has(emit_triton(parse_and_check(causal("(eq (mul (le kt qs) (le qs kt)) 0)"), "either.eqf")),
                  "for t0 in range(0, tl.cdiv(T, BLOCK_T0)):"));
}

TEST(LoopBounds, NonUnitSlopeKeepsTheFullLoop) {
  // 2t <= s would need a floor division of signed values: not bounded.
  std::string m = emit_triton(parse_and_check(causal("(le (mul kt 2) qs)"), "slope.eqf"));
  EXPECT_TRUE(has(m, "for t0 in range(0, tl.cdiv(T, BLOCK_T0)):")) << m;
}

TEST(RegionText, IotaIsShownAsAnIndex) {
  std::string m = emit_triton(parse_and_check_file("examples/attention_causal/flash.eqf"));
  EXPECT_TRUE(has(m, "# key_index = (partition t.0 t (replicate h.0 (replicate s.0 (iota t))))")) << m;
  EXPECT_FALSE(has(m, "iota from another kernel")) << m;
}

}  // namespace
}  // namespace eqf
