// Comparing two programs on random inputs (interp/compare.h): the check that
// `eqiforge-opt equiv`, the Python `equiv` and the demo rest on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

const char* kNaive = R"(
(program mm
  (dims (m 3) (k 5) (n 2))
  (input a f32 [m k])
  (input b f32 [k n])
  (output c [m n] (matmul k a b))))";

// k split on k.0; blocks of 2, 3 and 4 leave a ragged last block.
const char* kSplitK = R"(
(program mm
  (dims (m 3) (k 5) (n 2))
  (input a f32 [m k])
  (input b f32 [k n])
  (output c [m n] (preduce k.0 + (tile_matmul k (partition k.0 k a) (partition k.0 k b))))))";

Program check(const std::string& text, const std::string& file = "<string>") {
  return parse_and_check(text, file);
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The message of the eqf::Error that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ComparePrograms, TiledFormIsEquivalentUnderRandomBlockSizes) {
  Program a = check(kNaive), b = check(kSplitK);
  EquivReport r = compare_programs(a, b, /*seed=*/3, /*trials=*/6);
  ASSERT_EQ(r.trials.size(), 6u);
  EXPECT_TRUE(r.equivalent()) << r.max_rel_error;
  for (size_t t = 0; t < r.trials.size(); ++t) {
    EXPECT_EQ(r.trials[t].seed, 3 + t);
    EXPECT_TRUE(r.trials[t].blocks_a.empty());
    ASSERT_EQ(r.trials[t].blocks_b.size(), 1u);
    int64_t block = r.trials[t].blocks_b.begin()->second;
    EXPECT_GE(block, 1);
    EXPECT_LE(block, 5);
  }
}

TEST(ComparePrograms, ADifferentFunctionIsNotEquivalent) {
  Program a = check(kNaive);
  Program b = check(with(kNaive, "(matmul k a b)", "(mul (matmul k a b) 2)"));
  EquivReport r = compare_programs(a, b, 0, 2);
  EXPECT_FALSE(r.equivalent());
  EXPECT_NEAR(r.max_rel_error, 1.0, 1e-12);  // relative to a, b is twice a
}

TEST(ComparePrograms, InputLayoutsMayDiffer) {
  Program a = check(kNaive);
  Program b = check(with(with(kNaive, "(input a f32 [m k])", "(input a f32 [k m])"), "[m n]", "[n m]"));
  EXPECT_EQ(compare_programs(a, b, 0, 2).max_rel_error, 0.0);
}

TEST(ComparePrograms, NaNInOneProgramOnlyIsAnInfiniteError) {
  const char* sqrt_x = "(program p (dims (m 16)) (input x f32 [m]) (output y [m] (sqrt x)))";
  Program a = check(sqrt_x);
  // Random inputs in [-1, 1): sqrt gives NaN for the negative ones, max2 clamps them.
  Program b = check(with(sqrt_x, "(sqrt x)", "(sqrt (max2 x 0))"));
  EquivReport r = compare_programs(a, b, 0, 1);
  EXPECT_TRUE(std::isinf(r.max_rel_error));
  EXPECT_FALSE(r.equivalent());
  // NaN in the same places in both is the same undefined value, not an error.
  Program c = check(with(sqrt_x, "(sqrt x)", "(combine m.0 m (sqrt (partition m.0 m x)))"));
  EXPECT_TRUE(compare_programs(a, c, 0, 4).equivalent());
}

TEST(ComparePrograms, NeedsTheSameInterface) {
  Program a = check(kNaive, "a.eqf");
  EXPECT_EQ(error_of([&] { compare_programs(a, check(with(kNaive, "(k 5)", "(k 6)"), "b.eqf"), 0, 1); }),
            "b.eqf:4:3: error: input 'a' has dims [m=3 k=6], expected [m=3 k=5] (comparing with a.eqf)");
  std::string half = with(with(kNaive, "(input a f32", "(input a f16"), "(input b f32", "(input b f16");
  EXPECT_EQ(error_of([&] { compare_programs(a, check(half, "b.eqf"), 0, 1); }),
            "b.eqf:4:3: error: input 'a' has dtype f16, expected f32 (comparing with a.eqf)");
  std::string renamed = with(with(kNaive, "(input b f32 [k n])", "(input w f32 [k n])"), "a b))", "a w))");
  EXPECT_EQ(error_of([&] { compare_programs(a, check(renamed, "b.eqf"), 0, 1); }),
            "b.eqf: error: input 'b' is missing; both programs must declare the same inputs (comparing with "
            "a.eqf)");
  std::string two_outputs = with(kNaive, "(output c", "(output d [m n] (matmul k a b))\n  (output c");
  EXPECT_EQ(error_of([&] { compare_programs(a, check(two_outputs, "b.eqf"), 0, 1); }),
            "b.eqf:6:3: error: output 'd' is not an output of the other program (comparing with a.eqf)");
  EXPECT_NE(error_of([&] { compare_programs(a, a, 0, 0); }).find("at least 1"), std::string::npos);
}

TEST(CompleteBlockSizes, KeepsGivenSizesAndFillsTheRest) {
  Program p = check(kSplitK);
  Axis k0 = *Axis::parse("k.0");
  EXPECT_EQ(complete_block_sizes(p, {{k0, 4}}, 0), (BlockSizes{{k0, 4}}));
  BlockSizes random = complete_block_sizes(p, {}, 7);
  ASSERT_EQ(random.size(), 1u);
  EXPECT_EQ(random, random_block_sizes(p, 7));
  EXPECT_EQ(block_sizes_text({{k0, 4}}), "k.0=4");
  EXPECT_EQ(block_sizes_text({}), "-");
}

TEST(CompleteBlockSizes, RejectsUnknownAxesAndNonPositiveSizes) {
  Program p = check(kSplitK, "t.eqf");
  EXPECT_EQ(error_of([&] {
              complete_block_sizes(p, {{*Axis::parse("m.0"), 2}}, 0);
            }),
            "t.eqf: error: block size given for axis m.0, which the program does not use (it uses k.0)");
  EXPECT_EQ(error_of([&] {
              complete_block_sizes(p, {{*Axis::parse("k.0"), 0}}, 0);
            }),
            "t.eqf: error: block size of axis k.0 is 0; expected a positive integer");
  EXPECT_NE(error_of([&] {
              complete_block_sizes(check(kNaive), {{*Axis::parse("k.0"), 2}}, 0);
            }).find("(it uses no parallel axes)"),
            std::string::npos);
}

}  // namespace
}  // namespace eqf
