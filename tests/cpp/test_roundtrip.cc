// print(parse(text)) parses to the same program, and printing that again
// gives the same text. The programs below together use every operator of
// ops.def; OpCoverage fails when an operator is added without a program here.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

struct RoundTripCase {
  const char* name;
  const char* text;
};
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.name; }

const RoundTripCase kPrograms[] = {
    {"rmsnorm", R"(
(program rmsnorm
  (dims (m 4) (k 8))
  (input x f16 [m k])
  (input g f16 [k])
  (let r (rsqrt (add (div (sum k (mul x x)) 8) 1e-6)))
  (output y [m k] (mul (mul x r) g)))
)"},

    {"pointwise", R"(
(program pointwise
  (dims (m 4) (n 3))
  (input a f32 [m n])
  (input b f32 [n])
  (input h f16 [m])
  (let s (sub (max2 a b) (min2 a b)))
  (let u (neg (exp (log (sqrt s)))))
  (let v (sigmoid (silu (gelu (tanh u)))))
  (let w (pow 2.5 (add v (cast f32 h))))
  (let mask (lt (iota m) 2))
  (output y [n m] (where mask w (div w 3)))
  (output z [m n] (cast f16 (where (le a b) a (where (eq a b) 0 b)))))
)"},

    {"layouts", R"(
(program layouts
  (dims (m 8) (k 6) (n 4) (m1 2) (m2 4) (k1 2) (k2 3) (j 4))
  (input a bf16 [m k])
  (input b bf16 [k n])
  (let c (matmul k a b))
  (let s (split m m1 m2 c))
  (output y [m j] (rename n j (merge m1 m2 m s)))
  (output z [k1 k2 n] (split k k1 k2 b)))
)"},

    {"tiled_matmul", R"(
(program tiled_matmul
  (dims (m 8) (k 16) (n 4))
  (input a f16 [m k])
  (input b f16 [k n])
  (let at (partition k.0 k (partition m.0 m a)))
  (let bt (partition k.0 k (replicate m.0 b)))
  (output y [m n] (combine m.0 m (preduce k.0 + (tile_matmul k at bt)))))
)"},

    // Repaired tuple reductions, tuples and projections; a key split whose
    // partial sums are stored by collect and summed over the stored dim.
    {"softmax_state", R"(
(program softmax_state
  (dims (m 4) (t 8) (c 3))
  (input s f32 [m t])
  (input v f32 [t c])
  (let e (exp s))
  (let st (reduce t (max (exp-sum 0) (exp-sum 0)) (tuple s e (mul e v))))
  (output o [m c] (div (proj 2 st) (proj 1 st)))
  (output z [m] (sum c_t.0 (collect t.0 (sum t (partition t.0 t s))))))
)"},

    {"welford", R"(
(program welford
  (dims (m 4) (k 16))
  (input x f32 [m k])
  (let xt (partition k.0 k x))
  (let st (reduce k (+ (welford-mean 0) (welford-m2 0 1)) (tuple (add (mul xt 0) 1) xt (mul xt 0))))
  (let full (preduce k.0 (+ (welford-mean 0) (welford-m2 0 1)) st))
  (output var [m] (div (proj 2 full) 16))
  (output mx [m] (max k x)))
)"},

    // Sugar, aliases, a shared unnamed subterm, constants at the edges of
    // double precision, and layouts left out.
    {"odds_and_ends", R"(
; comments are dropped
(program odds_and_ends
  (dims (m 3) (k 5))
  (input x f64 [k m])
  (let t0 (exp x))               ; a source name that a temporary must not reuse
  (let alias x)
  (output y (add (mul (sqrt alias) (sqrt x))
                 (reduce k max (add t0 (const 0.1)))))
  (output z [m] (sum k (add (sub x 5e-324) (add 1.7976931348623157e308 (add -0 (add inf (add -inf nan))))))))
)"},
};

class RoundTrip : public testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, PrintThenParseIsTheSameProgramAndPrintingIsStable) {
  Program first = parse_program(GetParam().text, GetParam().name);
  std::string text = print_program(first);
  Program second = parse_program(text, "printed");
  EXPECT_TRUE(first.same_as(second)) << "printed text:\n" << text;
  EXPECT_EQ(print_program(second), text);
  EXPECT_TRUE(second.same_as(first));
}

// The programs are meant to be well-typed, so that they also stand for
// programs the later stages see; the printed form types the same.
TEST_P(RoundTrip, ProgramsAreWellTyped) {
  Program first = parse_and_check(GetParam().text, GetParam().name);
  Program second = parse_and_check(print_program(first), "printed");
  ASSERT_EQ(first.outputs().size(), second.outputs().size());
  for (size_t i = 0; i < first.outputs().size(); ++i)
    EXPECT_EQ(first.type(first.outputs()[i].value), second.type(second.outputs()[i].value));
}

INSTANTIATE_TEST_SUITE_P(Programs, RoundTrip, testing::ValuesIn(kPrograms),
                         [](const testing::TestParamInfo<RoundTripCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(RoundTripCoverage, EveryOpOfTheTableAppearsInSomeProgram) {
  std::set<Op> seen;
  for (const RoundTripCase& c : kPrograms) {
    Program p = parse_program(c.text, c.name);
    for (uint32_t i = 0; i < p.size(); ++i) seen.insert(p.node(NodeId{i}).op);
  }
  for (int i = 0; i < kNumOps; ++i)
    EXPECT_TRUE(seen.count(Op(i)))
        << "op `" << op_info(Op(i)).name
        << "` has no round-trip program in test_roundtrip.cc; add one that uses it";
}

// The canonical text, spelled out: lets in dependency order, sugar for plain
// reductions, layouts always written, comments and aliases gone.
TEST(Print, CanonicalText) {
  Program p = parse_program(kPrograms[0].text);
  EXPECT_EQ(print_program(p),
            "(program rmsnorm\n"
            "  (dims (m 4) (k 8))\n"
            "  (input x f16 [m k])\n"
            "  (input g f16 [k])\n"
            "  (let r (rsqrt (add (div (sum k (mul x x)) 8) 1e-06)))\n"
            "  (output y [m k] (mul (mul x r) g)))\n");
}

TEST(Print, SharedUnnamedSubtermsGetFreshLets) {
  Program p = parse_program(R"(
(program p
  (dims (m 4))
  (input x f32 [m])
  (input t0 f32 [m])
  (let t2 (neg x))
  (output y (mul (exp (add x t0)) (exp (add x t0))))
  (output t1 [m] (add (sum m (log t2)) (sum m (log t2)))))
)");
  EXPECT_EQ(print_program(p),
            "(program p\n"
            "  (dims (m 4))\n"
            "  (input x f32 [m])\n"
            "  (input t0 f32 [m])\n"
            "  (let t2 (neg x))\n"
            "  (let t3 (exp (add x t0)))\n"
            "  (let t4 (sum m (log t2)))\n"
            "  (output y [m] (mul t3 t3))\n"
            "  (output t1 [m] (add t4 t4)))\n");
}

TEST(Print, LetsThatAreNeverUsedAreKept) {
  Program p =
      parse_program("(program p (dims (m 4)) (input x f32 [m]) (let unused (exp x)) (output y [m] x))");
  EXPECT_EQ(print_program(p),
            "(program p\n"
            "  (dims (m 4))\n"
            "  (input x f32 [m])\n"
            "  (let unused (exp x))\n"
            "  (output y [m] x))\n");
}

TEST(Print, NamedLeavesKeepTheirLetsButUnnamedLeavesAreInlined) {
  Program p = parse_program(
      "(program p (dims (m 4)) (input x f32 [m]) (let two 2) (let i (iota m))\n"
      "  (output y [m] (add (mul x two) (mul (mul x 3) (mul 3 (cast f32 (add i (iota m))))))))");
  EXPECT_EQ(print_program(p),
            "(program p\n"
            "  (dims (m 4))\n"
            "  (input x f32 [m])\n"
            "  (let two 2)\n"
            "  (let i (iota m))\n"
            "  (output y [m] (add (mul x two) (mul (mul x 3) (mul 3 (cast f32 (add i i)))))))\n");
}

TEST(Print, TermInlinesLets) {
  Program p = parse_program(kPrograms[0].text);
  EXPECT_EQ(print_term(p, p.outputs()[0].value),
            "(mul (mul x (rsqrt (add (div (sum k (mul x x)) 8) 1e-06))) g)");
}

TEST(Print, ProgramsBuiltInCodePrintAndParseBack) {
  Program p;
  p.name = Symbol::intern("built");
  Symbol m = Symbol::intern("m"), k = Symbol::intern("k");
  p.dims.declare(m, 2);
  p.dims.declare(k, 3);
  NodeId x = p.add_input(Symbol::intern("x"), DType::F32, {m, k});
  NodeId e = p.add(Op::Exp, attrs_none(), std::vector<NodeId>{x});
  NodeId third = p.add(Op::Const, attrs_f64(1.0 / 3.0), {});
  NodeId scaled = p.add(Op::Mul, attrs_none(), std::vector<NodeId>{e, third});
  NodeId red = p.add(Op::Reduce, Attrs{k.raw(), RedId::max().raw(), 0}, std::vector<NodeId>{scaled});
  p.add_output(Symbol::intern("y"), {m}, red);
  std::string text = print_program(p);
  EXPECT_EQ(text,
            "(program built\n"
            "  (dims (m 2) (k 3))\n"
            "  (input x f32 [m k])\n"
            "  (output y [m] (max k (mul (exp x) 0.3333333333333333))))\n");
  EXPECT_TRUE(parse_program(text).same_as(p));
}

}  // namespace
}  // namespace eqf
