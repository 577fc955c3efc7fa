// The Triton emitter's pieces (code writer, Python names and numbers) and
// golden emitted modules. Golden files live in tests/golden/; run the tests
// with EQF_UPDATE_GOLDEN=1 to rewrite them after an intended change, and
// review the diff. Whether emitted modules compute the right values is
// checked end to end by tests/python/test_codegen.py (Triton's interpreter
// against the reference interpreter).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "codegen/py_names.h"
#include "eqiforge/codegen/code_writer.h"
#include "eqiforge/codegen/triton.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

TEST(CodeWriter, IndentsNestedBlocks) {
  CodeWriter w;
  w.line("def f(x):");
  {
    auto body = w.indent();
    w.line("for i in range(3):");
    {
      auto loop = w.indent();
      w.line("x = g(\n    x,\n)");
    }
    w.line("return x");
  }
  w.blank(2);
  w.line("y = 1");
  EXPECT_EQ(w.str(),
            "def f(x):\n    for i in range(3):\n        x = g(\n            x,\n        )\n    return "
            "x\n\n\ny = 1\n");
}

TEST(CodeWriter, BlankLinesDoNotPileUp) {
  CodeWriter w;
  w.blank();
  w.line("a");
  w.blank();
  w.blank();
  w.blank(2);
  w.blank(2);
  w.line("b");
  EXPECT_EQ(w.str(), "a\n\n\nb\n");
}

TEST(CodeWriter, WrapsComments) {
  CodeWriter w;
  auto in = w.indent();
  w.comment("one two three four five six seven eight nine ten eleven twelve", 40, 2);
  EXPECT_EQ(w.str(), "    # one two three four five six seven\n    #   eight nine ten eleven twelve\n");
}

TEST(PyNames, IdentifiersAndFreshNames) {
  using codegen::NameTable;
  using codegen::py_ident;
  EXPECT_EQ(py_ident("t.0"), "t0");
  EXPECT_EQ(py_ident("c_t.0"), "c_t0");
  EXPECT_EQ(py_ident("0x"), "_0x");
  EXPECT_EQ(codegen::py_upper("c_t.0"), "C_T0");
  NameTable names;
  EXPECT_EQ(names.fresh("acc"), "acc");
  EXPECT_EQ(names.fresh("acc"), "acc_2");
  EXPECT_EQ(names.fresh("lambda"), "lambda_2");  // keywords are reserved
  EXPECT_EQ(names.fresh("tl"), "tl_2");          // so is the triton.language alias
  EXPECT_FALSE(names.claim("acc"));
}

TEST(PyNames, FloatsReadBackExactly) {
  using codegen::py_float;
  EXPECT_EQ(py_float(2), "2.0");
  EXPECT_EQ(py_float(0.1), "0.1");
  EXPECT_EQ(py_float(1e-6), "1e-06");
  EXPECT_EQ(py_float(-0.5), "-0.5");
  EXPECT_EQ(py_float(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(py_float(-1.0 / 0.0), "float(\"-inf\")");
}

TEST(TritonEmit, UsesDotForTwoDimensionalTilesAndTheRepairInTheLoop) {
  Program p = parse_and_check_file("examples/attention/flash.eqf");
  std::string m = emit_triton(p);
  EXPECT_NE(m.find("tl.dot(q_tile, tl.trans(k_tile), input_precision=INPUT_PRECISION)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("for t0 in range(0, tl.cdiv(T, BLOCK_T0)):"), std::string::npos) << m;
  EXPECT_NE(m.find("m_new = tl.maximum(m, m_blk)"), std::string::npos) << m;
  // The block's terms are against the running max: only the state is rescaled.
  EXPECT_NE(m.find("p_blk = tl.exp(scores - m_shift[:, None])"), std::string::npos) << m;
  EXPECT_NE(m.find("alpha = tl.exp(m - m_shift)"), std::string::npos) << m;
  EXPECT_NE(m.find("state_2 = state_2 * alpha[:, None] + dot_2"), std::string::npos) << m;
  EXPECT_EQ(m.find("beta"), std::string::npos) << m;
  EXPECT_NE(m.find("def forward(q, k, v, *, block_s0=None, block_t0=None"), std::string::npos) << m;
  EXPECT_NE(m.find("UNIT_AXES = (\"h.0\",)"), std::string::npos) << m;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TritonEmit, ExpOfADifferenceIsExp2WhereItReadsHalfPrecisionData) {
  // exp(scores - max) as exp2(scores*log2(e) - max*log2(e)): one fused
  // multiply-add a score. Its rounding of max*log2(e) is small next to f16
  // inputs' own, not next to f32's: f32 keeps exp of the difference.
  std::string text = read_file("examples/attention/flash.eqf");
  std::string f32 = emit_triton(parse_and_check(text, "f32.eqf"));
  EXPECT_NE(f32.find("p_blk = tl.exp(scores - m_shift[:, None])"), std::string::npos) << f32;
  EXPECT_EQ(f32.find("tl.exp2"), std::string::npos) << f32;
  for (size_t at = text.find(" f32 "); at != std::string::npos; at = text.find(" f32 ", at))
    text.replace(at, 5, " f16 ");
  std::string f16 = emit_triton(parse_and_check(text, "f16.eqf"));
  EXPECT_NE(f16.find("p_blk = tl.exp2(scores * 1.4426950408889634 - (m_shift * 1.4426950408889634)[:, None])"),
            std::string::npos)
      << f16;
  // The rescaling of the state is a difference of two row values: no gain.
  EXPECT_NE(f16.find("alpha = tl.exp(m - m_shift)"), std::string::npos) << f16;
}

TEST(TritonEmit, KeepsTheBlockMaxWhenATermIsNotOfDegreeOneInIt) {
  // sum(p * p) scales with exp(-2 m): computed against the running max it
  // would be off by exp(m_blk - m_new) once more, so the block keeps its own
  // max and both sides are rescaled (alpha and beta).
  std::string text = read_file("examples/attention/flash.eqf");
  std::string from = "(sum t p_blk)";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "(sum t (mul p_blk p_blk))");
  std::string m = emit_triton(parse_and_check(text, "squared.eqf"));
  EXPECT_NE(m.find("p_blk = tl.exp(scores - m_blk[:, None])"), std::string::npos) << m;
  EXPECT_NE(m.find("beta = tl.where(m_blk == float(\"-inf\"), 0.0, tl.exp(m_blk - m_new))"), std::string::npos)
      << m;
  EXPECT_EQ(m.find("m_shift"), std::string::npos) << m;
}

TEST(TritonEmit, FallsBackToBroadcastProductForThreeDimensionalTiles) {
  Program p = parse_and_check_file("examples/attention/flash.eqf");
  TritonOptions options;
  options.lower.unit_axes = std::set<Axis>{};
  std::string m = emit_triton(p, options);
  EXPECT_EQ(m.find("tl.dot("), std::string::npos) << m;
  EXPECT_NE(m.find("tl.sum(q_tile[:, :, None, :] * k_tile[:, None, :, :], axis=3)"), std::string::npos) << m;
  EXPECT_NE(m.find("block_h0=None"), std::string::npos) << m;
}

TEST(TritonEmit, OpWithoutAKernelFormIsAnErrorNamingIt) {
  // A rename of a computed tile would need a register transpose: refused by
  // name rather than emitted wrong.
  Program p = parse_and_check(R"((program t (dims (m 4) (a 2) (c 2)) (input x f32 [m a])
      (let xr (partition m.0 m x))
      (output y [m c] (combine m.0 m (rename a c (mul xr 2))))))",
                              "bad.eqf");
  try {
    emit_triton(p);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.eqf:3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rename over a value computed inside the kernel"), std::string::npos)
        << e.what();
  }
}


// Two levels of two independent kernels: a (grid m.0, n.0) beside b (grid
// n.0), then y (grid m.0), which reads both, beside z (grid n.0).
constexpr const char* kTwoLevels = R"((program three (dims (m 6) (k 20) (n 12))
      (input x f32 [m k]) (input w1 f32 [k n]) (input w2 f32 [k n])
      (let a (combine m.0 m (combine n.0 n (tile_matmul k (partition m.0 m (replicate n.0 x))
                                                          (partition n.0 n (replicate m.0 w1))))))
      (let b (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w2))))
      (output y [m n] (combine m.0 m (mul (partition m.0 m a) (partition m.0 m b))))
      (output z [n] (combine n.0 n (sum m (partition n.0 n b))))))";

TEST(Lower, LaunchLevelsFollowTheBuffersKernelsRead) {
  Program p = parse_and_check(kTwoLevels, "three.eqf");
  LoweredProgram lp = lower_program(p);
  ASSERT_EQ(lp.kernels.size(), 4u);
  EXPECT_EQ(launch_levels(lp), (std::vector<int>{0, 0, 1, 1}));
}

TEST(TritonEmit, IndependentKernelsOfALevelShareAFusedLaunch) {
  std::string m = emit_triton(parse_and_check(kTwoLevels, "three.eqf"));
  EXPECT_NE(m.find("def fused0_kernel("), std::string::npos) << m;
  EXPECT_NE(m.find("def fused1_kernel("), std::string::npos) << m;
  EXPECT_NE(m.find("\"fused0_kernel\": (\"a_ptr\", \"b_ptr\"), \"fused1_kernel\": (\"y_ptr\", \"z_ptr\")"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("LAUNCH_FORMS = (\"separate_launches\",)"), std::string::npos) << m;
  EXPECT_NE(m.find("separate_launches=False"), std::string::npos) << m;
  // a's programs (grid n.0, m.0; axis 0 fastest) first, then b's; then y's and z's.
  EXPECT_NE(m.find("    if pid < GRID_N0 * GRID_M0:"), std::string::npos) << m;
  EXPECT_NE(m.find("pid_n0 = pid % GRID_N0"), std::string::npos) << m;
  EXPECT_NE(m.find("pid_m0 = pid // GRID_N0"), std::string::npos) << m;
  EXPECT_NE(m.find("pid_n0_2 = pid - (GRID_N0 * GRID_M0)"), std::string::npos) << m;
  EXPECT_NE(m.find("fused0_kernel[(n_n0 * n_m0 + n_n0,)]("), std::string::npos) << m;
  EXPECT_NE(m.find("GRID_N0=n_n0, GRID_M0=n_m0"), std::string::npos) << m;
  EXPECT_NE(m.find("    if pid < GRID_M0:"), std::string::npos) << m;
  EXPECT_NE(m.find("pid_n0 = pid - GRID_M0"), std::string::npos) << m;
}

TEST(TritonEmit, ADependentChainHasNoFusedLaunch) {
  std::string m = emit_triton(parse_and_check_file("examples/attention_decode/flash_decoding.eqf"));
  EXPECT_EQ(m.find("fused"), std::string::npos) << m;
  EXPECT_NE(m.find("LAUNCH_FORMS = ()"), std::string::npos) << m;
}

// ---- golden modules -------------------------------------------------------------------

void check_golden(const std::string& example, const std::string& golden) {
  Program p = parse_and_check_file(example);
  TritonOptions options;
  options.source = example;
  std::string got = emit_triton(p, options);
  const char* update = std::getenv("EQF_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream out(golden);
    out << got;
    ASSERT_TRUE(out.flush()) << "cannot write " << golden;
    GTEST_SKIP() << "rewrote " << golden;
  }
  std::string want = read_file(golden);
  ASSERT_FALSE(want.empty()) << golden << " is missing; run with EQF_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(got, want) << "the module emitted for " << example << " differs from " << golden
                       << "; if the change is intended, rerun with EQF_UPDATE_GOLDEN=1 and review the diff";
}

TEST(TritonGolden, AttentionFlash) {
  check_golden("examples/attention/flash.eqf", "tests/golden/attention_flash.py");
}
TEST(TritonGolden, AttentionDecodeFlashDecoding) {
  check_golden("examples/attention_decode/flash_decoding.eqf",
               "tests/golden/attention_decode_flash_decoding.py");
}
TEST(TritonGolden, RmsnormMlpFactorAfterFused) {
  check_golden("examples/rmsnorm_mlp/factor_after_fused.eqf",
               "tests/golden/rmsnorm_mlp_factor_after_fused.py");
}

}  // namespace
}  // namespace eqf
