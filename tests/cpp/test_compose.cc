// Composition along boundary tensors: the composed program computes what the
// two programs compute one after the other (reference interpreter, random
// inputs), tiles feed the consumer directly where the partitions undo the
// producer's combines (one kernel), and bad pairs are refused by name.
#include <gtest/gtest.h>

#include <string>

#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"
#include "eqiforge/partition/compose.h"

namespace eqf {
namespace {

// Two pieces of a row-normalization chain cut at b, untiled and tiled over
// rows (m.0), as extraction gives them.
constexpr const char* kProducer = R"((program p
  (dims (m 12) (h 4))
  (input x f32 [m h])
  (output b [m h] (div x (sum h x)))))";
constexpr const char* kConsumer = R"((program q
  (dims (m 12) (h 4))
  (input b f32 [m h])
  (input y f32 [m h])
  (output z [m h] (mul y (exp b)))))";
constexpr const char* kProducerTiled = R"((program p
  (dims (m 12) (h 4))
  (input x f32 [m h])
  (let t0 (partition m.0 m x))
  (output b [m h] (combine m.0 m (div t0 (sum h t0))))))";
constexpr const char* kConsumerTiled = R"((program q
  (dims (m 12) (h 4))
  (input b f32 [m h])
  (input y f32 [m h])
  (output z [m h] (combine m.0 m (mul (partition m.0 m y) (exp (partition m.0 m b)))))))";
// The consumer reading b whole (its rows summed over m): no tiles to take.
constexpr const char* kConsumerWhole = R"((program q
  (dims (m 12) (h 4))
  (input b f32 [m h])
  (input y f32 [m h])
  (output z [h] (sum m (mul y b)))))";

Program parsed(const char* text) { return parse_and_check(text, "<test>"); }

TEST(Compose, FeedsTheConsumerFromTheProducersValue) {
  Composed c = compose(parsed(kProducer), parsed(kConsumer));
  const Program& p = c.program;
  ASSERT_EQ(p.inputs().size(), 2u);
  EXPECT_EQ(p.inputs()[0].name.str(), "x");
  EXPECT_EQ(p.inputs()[1].name.str(), "y");
  ASSERT_EQ(p.outputs().size(), 1u);  // b is read by the consumer only
  EXPECT_EQ(p.outputs()[0].name.str(), "z");
  EXPECT_EQ(c.materialized, std::vector<std::string>{"b"});
  Program want = parsed(R"((program p_q
    (dims (m 12) (h 4))
    (input x f32 [m h])
    (input y f32 [m h])
    (output z [m h] (mul y (exp (div x (sum h x)))))))");
  EXPECT_TRUE(compare_programs(p, want, 7, 3).equivalent());
}

TEST(Compose, TilesUnderTheSamePartitionFeedTheConsumerDirectly) {
  Program producer = parsed(kProducerTiled), consumer = parsed(kConsumerTiled);
  EXPECT_EQ(lower_program(producer).kernels.size() + lower_program(consumer).kernels.size(), 2u);
  Composed c = compose(producer, consumer);
  EXPECT_EQ(c.fused, std::vector<std::string>{"b"});
  EXPECT_TRUE(c.materialized.empty());
  EXPECT_EQ(lower_program(c.program).kernels.size(), 1u) << print_program(c.program);
  Composed plain = compose(parsed(kProducer), parsed(kConsumer));
  EXPECT_TRUE(compare_programs(c.program, plain.program, 11, 4).equivalent()) << print_program(c.program);
}

TEST(Compose, AConsumerReadingTheBoundaryWholeKeepsTheProducersCombine) {
  Composed c = compose(parsed(kProducerTiled), parsed(kConsumerWhole));
  EXPECT_TRUE(c.fused.empty());
  EXPECT_EQ(c.materialized, std::vector<std::string>{"b"});
  Composed plain = compose(parsed(kProducer), parsed(kConsumerWhole));
  EXPECT_TRUE(compare_programs(c.program, plain.program, 3, 3).equivalent());
}

TEST(Compose, KeepsABoundaryOthersRead) {
  ComposeOptions o;
  o.keep = {"b"};
  Composed c = compose(parsed(kProducerTiled), parsed(kConsumerTiled), o);
  ASSERT_EQ(c.program.outputs().size(), 2u);
  EXPECT_EQ(c.program.outputs()[0].name.str(), "b");
  EXPECT_EQ(c.program.outputs()[1].name.str(), "z");
}

TEST(Compose, RefusesBoundariesAndInputsOfDifferentTypes) {
  Program half = parsed(R"((program q
    (dims (m 12) (h 4))
    (input b f16 [m h])
    (output z [m h] (exp b))))");
  try {
    compose(parsed(kProducer), half);
    FAIL() << "a boundary of another dtype was composed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b is output as f32[m h] but read as f16[m h]"), std::string::npos) << e.what();
  }
  Program other_extent = parsed(R"((program q
    (dims (m 8) (h 4))
    (input y f32 [m h])
    (output z [m h] (exp y))))");
  try {
    compose(parsed(kProducer), other_extent);
    FAIL() << "dims of one name and two extents were composed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dim m has extent 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace eqf
