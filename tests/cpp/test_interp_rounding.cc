// The interpreter's rounding noise (RoundingNoise, for the fuzzer's noise
// floor): off is bit-identical to plain evaluation, on is deterministic in its
// seed, moves each rounded op's floating result by at most scale·u relative
// (u of the op's dtype), and leaves exact values -- i32, bool, selections,
// constants, inputs -- alone.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

// Every double of every output has the same bits (NaN payloads included).
bool same_bits(const std::vector<Tensor64>& a, const std::vector<Tensor64>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape != b[i].shape || a[i].data.size() != b[i].data.size()) return false;
    for (size_t j = 0; j < a[i].data.size(); ++j)
      if (std::bit_cast<uint64_t>(a[i].data[j]) != std::bit_cast<uint64_t>(b[i].data[j])) return false;
  }
  return true;
}

std::string with_dtype(std::string text, const std::string& dtype) {
  for (size_t at; (at = text.find("DT")) != std::string::npos;) text.replace(at, 2, dtype);
  return text;
}

// One rounded op per output, on inputs (and an exp-sum state whose max
// component is exact): each output is one rounding away from the exact value.
const char* kOneOpEach =
    "(program p (dims (m 5) (k 7) (n 6)) (input x DT [m k]) (input y DT [m k]) (input b DT [k n])"
    " (output add [m k] (add x y)) (output sub [m k] (sub x y)) (output mul [m k] (mul x y))"
    " (output div [m k] (div x 3)) (output exp [m k] (exp x)) (output tanh [m k] (tanh x))"
    " (output io [k] (cast DT (iota k))) (output sum [m] (sum k x)) (output mm [m n] (matmul k x b))"
    " (let r (reduce k (max (exp-sum 0)) (tuple x y)))"
    " (output l [m] (proj 1 r)))";

TEST(InterpRounding, OffIsBitIdentical) {
  const char* programs[] = {
      kOneOpEach,
      // tiled, ragged: padding, preduce, combine
      "(program p (dims (m 5) (k 7) (n 6)) (input a DT [m k]) (input b DT [k n])"
      " (output c [m n] (preduce k.0 + (tile_matmul k (partition k.0 k a) (partition k.0 k b))))"
      " (output e [m k] (combine k.0 k (exp (partition k.0 k a)))))",
  };
  for (const char* text : programs) {
    for (const char* dtype : {"f32", "f64", "bf16"}) {
      SCOPED_TRACE(std::string(dtype) + ": " + text);
      Program p = parse_and_check(with_dtype(text, dtype), "<test>");
      const auto inputs = random_inputs(p, 3);
      const BlockSizes blocks = random_block_sizes(p, 3);
      const auto exact = evaluate(p, inputs, blocks);
      EXPECT_TRUE(same_bits(evaluate(p, inputs, blocks, RoundingNoise{}), exact));
      EXPECT_TRUE(same_bits(evaluate(p, inputs, blocks, RoundingNoise{0, 12345}), exact));
    }
  }
}

TEST(InterpRounding, OnIsDeterministicInItsSeed) {
  Program p = parse_and_check(with_dtype(kOneOpEach, "f32"), "<test>");
  const auto inputs = random_inputs(p, 5);
  const auto exact = evaluate(p, inputs);
  const auto a = evaluate(p, inputs, {}, RoundingNoise{4, 1});
  EXPECT_TRUE(same_bits(evaluate(p, inputs, {}, RoundingNoise{4, 1}), a));
  EXPECT_FALSE(same_bits(evaluate(p, inputs, {}, RoundingNoise{4, 2}), a));
  EXPECT_FALSE(same_bits(a, exact));

  // Tiled and ragged: the padding of a partition stays masked (finite
  // results), and the draws do not depend on anything but the seed.
  Program t = parse_and_check(
      "(program p (dims (m 5) (k 7) (n 6)) (input a f32 [m k]) (input b f32 [k n])"
      " (output c [m n] (preduce k.0 + (tile_matmul k (partition k.0 k a) (partition k.0 k b)))))",
      "<tiled>");
  const auto tin = random_inputs(t, 5);
  const BlockSizes blocks = {{*Axis::parse("k.0"), 3}};
  const auto tc = evaluate(t, tin, blocks, RoundingNoise{4, 9});
  EXPECT_TRUE(same_bits(evaluate(t, tin, blocks, RoundingNoise{4, 9}), tc));
  EXPECT_FALSE(same_bits(tc, evaluate(t, tin, blocks)));
  for (double v : tc[0].data) EXPECT_TRUE(std::isfinite(v));
}

TEST(InterpRounding, EachOpMovesByAtMostScaleTimesItsUnitRoundoff) {
  struct D {
    const char* name;
    double u;
  };
  for (const D& d : {D{"f32", 0x1p-24}, D{"f64", 0x1p-53}, D{"f16", 0x1p-11}, D{"bf16", 0x1p-8}}) {
    Program p = parse_and_check(with_dtype(kOneOpEach, d.name), "<test>");
    const auto inputs = random_inputs(p, 11);
    const auto exact = evaluate(p, inputs);
    for (double scale : {4.0, 64.0}) {  // (f64 at scale 1 moves a value by less than its ulp)
      for (uint64_t seed : {0, 1, 2}) {
        const auto got = evaluate(p, inputs, {}, RoundingNoise{scale, seed});
        const double bound = scale * d.u;
        for (size_t o = 0; o < exact.size(); ++o) {
          SCOPED_TRACE(std::string(d.name) + " " + std::string(p.outputs()[o].name.str()) + " scale " +
                       std::to_string(scale) + " seed " + std::to_string(seed));
          double largest = 0;
          for (size_t j = 0; j < exact[o].data.size(); ++j) {
            const double want = exact[o].data[j], change = std::abs(got[o].data[j] - want);
            // plus the float64 rounding of the product itself
            EXPECT_LE(change, (bound + 0x1p-52) * std::abs(want)) << "element " << j;
            if (want != 0) largest = std::max(largest, change / std::abs(want));
          }
          // Every output has 5 or more elements with independent draws in [-1, 1).
          EXPECT_GT(largest, bound / 8);
        }
      }
    }
  }
}

TEST(InterpRounding, ExactValuesAreLeftAlone) {
  // i32 arithmetic and casts, bools, neg, max2/min2, where (of an input and
  // a constant), max reductions, the max component of a tuple reduction,
  // data movement and inputs: nothing a kernel rounds.
  Program p = parse_and_check(
      "(program p (dims (m 5) (k 7) (s 3) (t 3)) (input x f32 [m k]) (input y f32 [m k]) (input i i32 [m k])"
      " (input c bool [m k]) (input z f32 [s])"
      " (output ia [m k] (add i (mul i i))) (output ic [m k] (add (cast i32 c) i))"
      " (output lt [m k] (lt x y)) (output cw [m k] (where c (lt y x) (le x 0)))"
      " (output ng [m k] (neg x)) (output mx [m k] (max2 x (min2 y 0.5)))"
      " (output w [m k] (where (lt x 0) 0.5 y)) (output rmax [m] (max k x))"
      " (let r (reduce k (max (exp-sum 0)) (tuple x (exp y))))"
      " (output rm [m] (proj 0 r)) (output rn [s t] (sub z (rename s t z)))"
      " (output sp [m k] (where (eq (iota m) 2) x (neg y))))",
      "<test>");
  const auto inputs = random_inputs(p, 21);
  const auto exact = evaluate(p, inputs);
  for (uint64_t seed : {0, 1, 2}) {
    const auto got = evaluate(p, inputs, {}, RoundingNoise{1e6, seed});  // huge: any change would show
    for (size_t o = 0; o < exact.size(); ++o) {
      const std::string name(p.outputs()[o].name.str());
      if (name == "rn") {
        // one sub of exact values: rounded, but 0 where s = t (the same input)
        for (size_t j = 0; j < 9; j += 4) EXPECT_EQ(got[o].data[j], 0.0) << "rn [" << j << "]";
        continue;
      }
      EXPECT_TRUE(same_bits({got[o]}, {exact[o]})) << name << " seed " << seed;
    }
  }
}

}  // namespace
}  // namespace eqf
