// The cost model: hardware profiles, the memory/compute bound of a kernel,
// the parallelism cap on bandwidth, re-reads of replicated loads, loops that
// skip fully masked blocks, and block sizes whose tiles do not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/cost/target.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

const Target& h200() {
  static const Target t = load_target("h200");
  return t;
}

Axis axis(const char* name) { return *Axis::parse(name); }

// The same program over f32 tensors.
std::string replace_f16(const Program& p) {
  std::string text = print_program(p);
  for (size_t at = text.find(" f16 "); at != std::string::npos; at = text.find(" f16 ", at)) text.replace(at, 5, " f32 ");
  return text;
}

// ---- profiles ------------------------------------------------------------------------

TEST(CostTarget, ProfilesLoad) {
  for (const char* name : {"h200", "h100", "a100", "rtx5090"}) {
    Target t = load_target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_GT(t.sms, 0);
    EXPECT_GT(t.dram_bytes_per_s, 1e11) << name;
    EXPECT_LT(t.sm_bytes_per_s, t.dram_bytes_per_s) << name;
    EXPECT_GT(t.mma_flops_per_s, t.fp_flops_per_s) << name;
    EXPECT_GT(t.launch_s, 0) << name;
    EXPECT_GT(t.smem_bytes_per_program, 0) << name;
  }
}

TEST(CostTarget, H200FiguresAreTheMeasuredOnes) {
  const Target& t = h200();
  EXPECT_EQ(t.sms, 132);
  EXPECT_DOUBLE_EQ(t.dram_bytes_per_s, 4300e9);
  EXPECT_DOUBLE_EQ(t.mma_flops_per_s, 790e12);
  EXPECT_DOUBLE_EQ(t.launch_s, 2.8e-6);
  EXPECT_EQ(t.l2_bytes, int64_t(60) << 20);
  // bench/calibrate_bw.py (bench/results/h200-2026-11-29-calibrate).
  EXPECT_DOUBLE_EQ(t.kernel_bytes_per_s, 2550e9);
  EXPECT_DOUBLE_EQ(t.sm_bytes_per_s, 32e9);
  EXPECT_EQ(t.pipeline_stages, 3);
  EXPECT_DOUBLE_EQ(t.loop_iteration_s, 0.4e-6);
  EXPECT_DOUBLE_EQ(t.programs_per_sm, 2);
}

TEST(CostTarget, OptionalFiguresDefault) {
  Target t = parse_target(R"({"name": "x", "description": "", "sms": 10, "dram_GBps": 1000, "sm_GBps": 50,
    "mma_TFLOPs": 100, "fp32_TFLOPs": 10, "launch_us": 3, "l2_MiB": 4, "smem_per_program_KiB": 100,
    "registers_per_program_KiB": 64, "pipeline_stages": 2, "min_dot": 16, "max_tile_elements": 1024})",
                          "x.json");
  EXPECT_DOUBLE_EQ(t.kernel_bytes_per_s, t.dram_bytes_per_s);
  EXPECT_DOUBLE_EQ(t.loop_iteration_s, 0);
  EXPECT_DOUBLE_EQ(t.programs_per_sm, 1);
}

TEST(CostTarget, StageChoices) {
  EXPECT_EQ(h200().stage_choices, (std::vector<int>{2, 3, 4, 5}));
  const std::string base = R"({"name": "x", "description": "", "sms": 10, "dram_GBps": 1000, "sm_GBps": 50,
    "mma_TFLOPs": 100, "fp32_TFLOPs": 10, "launch_us": 3, "l2_MiB": 4, "smem_per_program_KiB": 100,
    "registers_per_program_KiB": 64, "pipeline_stages": 2, "min_dot": 16, "max_tile_elements": 1024)";
  // Without the field, only the profile's own count.
  EXPECT_EQ(parse_target(base + "}", "x.json").stage_choices, (std::vector<int>{2}));
  EXPECT_EQ(parse_target(base + R"(, "pipeline_stage_choices": [2, 4]})", "x.json").stage_choices,
            (std::vector<int>{2, 4}));
  for (const char* bad : {R"([])", R"([0])", R"([2.5])", R"("3")"}) {
    try {
      parse_target(base + ", \"pipeline_stage_choices\": " + bad + "}", "x.json");
      FAIL() << "expected an error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("pipeline_stage_choices"), std::string::npos) << e.what();
    }
  }
}

TEST(CostTarget, BadProfilesAreErrorsWithPositions) {
  try {
    parse_target("{\"name\": \"x\",\n \"sms\": \"many\"}", "bad.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json:"), std::string::npos) << e.what();
  }
  try {
    parse_target("{\"name\": \"x\", \"bandwidth\": 3}", "typo.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown field \"bandwidth\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_target("{\"name\": ", "cut.json"), Error);
  EXPECT_THROW(load_target("no-such-gpu"), Error);
}

// ---- memory-bound kernels ---------------------------------------------------------------

// z = x + y, rows on the grid.
std::string add_program(int64_t m, int64_t n) {
  return "(program add (dims (m " + std::to_string(m) + ") (n " + std::to_string(n) +
         "))\n"
         "  (input x f16 [m n]) (input y f16 [m n])\n"
         "  (output z [m n] (combine m.0 m (add (partition m.0 m x) (partition m.0 m y)))))";
}

// Kernels of one launch level run in one fused launch: one launch for a and
// b, one for y and z.
TEST(CostModel, KernelsOfOneLaunchLevelPayOneLaunch) {
  Program p = parse_and_check(R"((program three (dims (m 6) (k 20) (n 12))
      (input x f32 [m k]) (input w1 f32 [k n]) (input w2 f32 [k n])
      (let a (combine m.0 m (combine n.0 n (tile_matmul k (partition m.0 m (replicate n.0 x))
                                                          (partition n.0 n (replicate m.0 w1))))))
      (let b (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w2))))
      (output y [m n] (combine m.0 m (mul (partition m.0 m a) (partition m.0 m b))))
      (output z [n] (combine n.0 n (sum m (partition n.0 n b))))))", "three.eqf");
  CostModel cm(h200());
  ProgramEstimate e = cm.estimate(p);
  ASSERT_TRUE(e.feasible) << e.why_infeasible;
  ASSERT_EQ(e.kernels.size(), 4u);
  std::vector<double> launches;
  double sum = 0;
  for (const KernelEstimate& k : e.kernels) launches.push_back(k.launch_s), sum += k.seconds;
  EXPECT_EQ(launches, (std::vector<double>{h200().launch_s, 0, h200().launch_s, 0}));
  EXPECT_DOUBLE_EQ(e.seconds, sum);
  for (const KernelEstimate& k : e.kernels)
    EXPECT_NEAR(k.seconds, std::max({k.memory_s, k.mma_s, k.other_s, k.latency_s}) + k.launch_s, 1e-15) << k.name;
}

TEST(CostModel, MemoryBoundKernelCostsItsBytesOverTheBandwidth) {
  Program p = parse_and_check(add_program(4096, 4096));
  CostModel cm(h200());
  ProgramEstimate e = cm.estimate(p);
  ASSERT_TRUE(e.feasible) << e.why_infeasible;
  ASSERT_EQ(e.kernels.size(), 1u);
  const double bytes = 3.0 * 4096 * 4096 * 2;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, bytes);
  EXPECT_EQ(e.kernels[0].bound, "memory");
  // The cap is what a generated kernel streams at best (kernel_GBps), below
  // the copy bandwidth.
  const double kernel_bw = h200().kernel_bytes_per_s;
  EXPECT_LT(kernel_bw, h200().dram_bytes_per_s);
  EXPECT_NEAR(e.seconds, bytes / kernel_bw + 2.8e-6, 1e-9);
  // The chosen block keeps at least enough programs busy for the full bandwidth.
  EXPECT_GE(e.kernels[0].programs * h200().sm_bytes_per_s, kernel_bw);
}

// A GEMV's tl.dot form (forward's gemv_dot) has an estimate of its own:
// pipelined loops over k whose tiles feed a dot of one row padded to 16,
// which stage in shared memory; a GEMM has no such form.
TEST(CostModel, AGemvsDotFormIsSizedOnItsOwn) {
  const std::string gemv =
      "(program gemv (dims (k 4096) (n 4096)) (input x f16 [k]) (input w f16 [k n])\n"
      "  (output y [n] (combine n.0 n (preduce k.0 + (tile_matmul k (partition k.0 k (replicate n.0 x))\n"
      "                                                              (partition k.0 k (partition n.0 n w)))))))";
  Program p = parse_and_check(gemv);
  LoweredProgram lowered = lower_program(p);
  CostModel cm(h200());
  std::optional<ProgramEstimate> dot = cm.gemv_dot_estimate(p, lowered);
  ASSERT_TRUE(dot.has_value());
  ASSERT_TRUE(dot->feasible) << dot->why_infeasible;
  ASSERT_EQ(dot->kernels.size(), 1u);
  // The dot's 16 rows (15 of them padding) are tensor-core flops; the
  // multiply and sum has none.
  EXPECT_DOUBLE_EQ(dot->kernels[0].mma_flops, 2.0 * 16 * 4096 * 4096);
  ProgramEstimate sum = cm.estimate(p, lowered);
  EXPECT_EQ(sum.kernels[0].mma_flops, 0);
  // Its tiles are staged: they fit the shared memory at its stages.
  EXPECT_GT(dot->kernels[0].smem_bytes, 0);
  EXPECT_LE(dot->kernels[0].smem_bytes, double(h200().smem_bytes_per_program));
  EXPECT_GE(dot->blocks.at(axis("n.0")), 16);

  Program gemm = parse_and_check(
      "(program gemm (dims (m 64) (k 256) (n 256)) (input x f16 [m k]) (input w f16 [k n])\n"
      "  (output y [m n] (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w)))))");
  EXPECT_FALSE(cm.gemv_dot_estimate(gemm, lower_program(gemm)).has_value());
}

TEST(CostModel, FewerProgramsThanSmsCannotUseAllTheBandwidth) {
  Program p = parse_and_check(add_program(4096, 64));
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  const double bytes = 3.0 * 4096 * 64 * 2;
  // 8 programs: each streams at one SM's rate.
  ProgramEstimate few = cm.evaluate(p, lp, {{axis("m.0"), 512}});
  EXPECT_DOUBLE_EQ(few.kernels[0].programs, 8);
  EXPECT_NEAR(few.kernels[0].memory_s, bytes / (8 * h200().sm_bytes_per_s), 1e-12);
  // 256 programs, more than the SMs: the full bandwidth of a generated kernel.
  ProgramEstimate many = cm.evaluate(p, lp, {{axis("m.0"), 16}});
  EXPECT_DOUBLE_EQ(many.kernels[0].programs, 256);
  EXPECT_NEAR(many.kernels[0].memory_s, bytes / h200().kernel_bytes_per_s, 1e-12);
  EXPECT_LT(many.seconds, few.seconds);
}

TEST(CostModel, ReplicationMultipliesBytes) {
  // Each program reads a block of rows of A and a block of columns of B: A
  // is re-read once per column block, B once per row block.
  Program p = parse_and_check(
      "(program mm (dims (m 1024) (k 512) (n 1024))\n"
      "  (input a f16 [m k]) (input b f16 [k n])\n"
      "  (output c [m n] (combine m.0 m (combine n.0 n\n"
      "    (tile_matmul k (partition m.0 m (replicate n.0 a)) (partition n.0 n (replicate m.0 b)))))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("n.0"), 128}});
  const double a = 1024.0 * 512 * 2, b = 512.0 * 1024 * 2, c = 1024.0 * 1024 * 2;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, a * (1024 / 128) + b * (1024 / 64) + c);
  // Twice the column block: A is read half as often.
  ProgramEstimate wider = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("n.0"), 256}});
  EXPECT_DOUBLE_EQ(wider.kernels[0].bytes, a * (1024 / 256) + b * (1024 / 64) + c);
  // tl.dot on f16 tiles: tensor-core flops, 2 m n k.
  EXPECT_DOUBLE_EQ(e.kernels[0].mma_flops, 2.0 * 1024 * 512 * 1024);
}

TEST(CostModel, LoadsInLoopsAndHoistedLoads) {
  // Split-K: A and B are loaded per k block inside the loop; A is re-read
  // per column block (a grid axis), B per row block.
  Program p = parse_and_check_file("examples/matmul/split_k.eqf");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("m.0"), 4}, {axis("n.0"), 2}, {axis("k.0"), 8}});
  const double a = 12.0 * 20 * 4, b = 20.0 * 10 * 4, c = 12.0 * 10 * 4;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, a * 5 + b * 3 + c);
  EXPECT_EQ(e.kernels[0].loops, std::vector<Axis>{axis("k.0")});
}

// z = x + v (v broadcast over rows): every program re-reads v, which fits
// in L2; only its first read comes from DRAM.
TEST(CostModel, ReReadsOfWhatFitsInL2ComeFromL2) {
  Program p = parse_and_check(
      "(program bias (dims (m 4096) (n 4096)) (input x f16 [m n]) (input v f16 [n])\n"
      "  (output z [m n] (combine m.0 m (add (partition m.0 m x) (replicate m.0 v)))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  const Target& t = h200();
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("m.0"), 16}});
  const double x = 4096.0 * 4096 * 2, v = 4096.0 * 2, z = x, reads = 256 * v;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, x + reads + z);
  const double dram = x + v + z;
  EXPECT_NEAR(e.kernels[0].memory_s, std::max(dram / t.kernel_bytes_per_s, (x + reads + z) / t.l2_bytes_per_s),
              1e-12);
  EXPECT_LT(e.kernels[0].memory_s, (x + reads + z) / t.kernel_bytes_per_s);
}

// A value replicated over an axis its kernel does not run over (n.0 here
// belongs to the consumer's kernel; the collect kernel's grid is m.0 alone)
// is read once: its kernel computes it once for every coordinate of n.0.
// Counted as 64 re-reads, x looked like L2 hits, 1/64 of it from DRAM.
TEST(CostModel, ReplicationOverAnotherKernelsAxisIsNoReRead) {
  Program p = parse_and_check(
      "(program rep (dims (m 65536) (n 4096)) (input x f16 [m]) (input y f16 [n])\n"
      "  (output z [n] (combine n.0 n (add (partition n.0 n y)\n"
      "    (sum c_m.0 (collect m.0 (sum m (partition m.0 m (replicate n.0 x)))))))))");
  LoweredProgram lp = lower_program(p);
  ASSERT_EQ(lp.kernels.size(), 2u);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("m.0"), 512}, {axis("n.0"), 64}});
  const double x = 65536.0 * 2;
  EXPECT_GE(e.kernels[0].memory_s, x / h200().kernel_bytes_per_s);
}

// v does not vary along k.0, so lowering hoists its load out of the loop:
// each program reads its rows of v once, not once per iteration. Counted as
// re-read over k.0, three quarters of v looked like L2 hits.
TEST(CostModel, ALoadHoistedOutOfALoopIsReadOnce) {
  Program p = parse_and_check(
      "(program hoist (dims (m 4096) (k 64) (n 4096)) (input x f16 [m k]) (input v f16 [m n])\n"
      "  (output y [m n] (combine m.0 m (preduce k.0 +\n"
      "    (sum k (mul (partition k.0 k (partition m.0 m x)) (replicate k.0 (partition m.0 m v))))))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("k.0"), 16}});
  const double v = 4096.0 * 4096 * 2;
  EXPECT_GE(e.kernels[0].memory_s, 2 * v / h200().kernel_bytes_per_s);  // v read, y written
}

// A weight streamed into tl.dot in [64, 16] tiles (k x n), stored [k n]
// (32-byte rows) or [n k] (128-byte rows): in a kernel with dots, short
// contiguous runs use DRAM less well.
TEST(CostModel, ShortContiguousRunsCostMoreInAKernelWithDots) {
  auto gemm = [](const std::string& w_dims) {
    return parse_and_check(
        "(program mm (dims (m 16) (k 4096) (n 4096)) (input x f16 [m k]) (input w f16 [" + w_dims + "])\n"
        "  (output y [m n] (combine n.0 n (preduce k.0 + (tile_matmul k (partition k.0 k (replicate n.0 x))\n"
        "                                                             (partition k.0 k (partition n.0 n w)))))))");
  };
  Program rows = gemm("k n"), columns = gemm("n k");
  CostModel cm(h200());
  const std::map<Axis, int64_t> blocks{{axis("k.0"), 64}, {axis("n.0"), 16}};
  ProgramEstimate narrow = cm.evaluate(rows, lower_program(rows), blocks);
  ProgramEstimate wide = cm.evaluate(columns, lower_program(columns), blocks);
  ASSERT_GT(narrow.kernels[0].mma_flops, 0);  // the product is a tl.dot
  EXPECT_DOUBLE_EQ(narrow.kernels[0].bytes, wide.kernels[0].bytes);
  EXPECT_GT(narrow.kernels[0].memory_s, 1.3 * wide.kernels[0].memory_s);
}

// The same bytes in tiles of 16 fp16 columns (32-byte rows) or 64 (128-byte
// rows), loaded into registers by a kernel without dots: the programs beside
// each other read the rest of each line while it is in L2, so DRAM is used as
// well; runs shorter than a 32-byte sector (one column: 2 bytes) make L2 move
// whole sectors.
TEST(CostModel, ShortRowsCostAKernelWithoutDotsOnlyL2Sectors) {
  Program p = parse_and_check(
      "(program add2 (dims (m 4096) (n 4096)) (input x f16 [m n]) (input y f16 [m n])\n"
      "  (output z [m n] (combine m.0 m (combine n.0 n (add (partition n.0 n (partition m.0 m x))\n"
      "                                                      (partition n.0 n (partition m.0 m y)))))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate narrow = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("n.0"), 16}});
  ProgramEstimate wide = cm.evaluate(p, lp, {{axis("m.0"), 16}, {axis("n.0"), 64}});
  ProgramEstimate column = cm.evaluate(p, lp, {{axis("m.0"), 1024}, {axis("n.0"), 1}});
  EXPECT_DOUBLE_EQ(narrow.kernels[0].bytes, wide.kernels[0].bytes);
  EXPECT_DOUBLE_EQ(narrow.kernels[0].programs, wide.kernels[0].programs);
  EXPECT_DOUBLE_EQ(narrow.kernels[0].memory_s, wide.kernels[0].memory_s);
  EXPECT_DOUBLE_EQ(column.kernels[0].bytes, wide.kernels[0].bytes);
  EXPECT_GT(column.kernels[0].memory_s, 1.3 * wide.kernels[0].memory_s);
}

// A load through views is as contiguous as the tile's piece of the
// buffer's innermost dim: a split's inner piece (a weight's columns cut into
// heads, a block of one column is a 2-byte run), a merge's inner dim; where
// that dim becomes a merge's outer dim, no dim of the tile is contiguous.
TEST(CostModel, ContiguousRunsFollowViews) {
  // `view` wraps the input's name: the [m h e] view of x [m n].
  auto both = [](const std::function<std::string(const std::string&)>& view) {
    auto tiled = [&](const std::string& x) {
      return "(partition e.0 e (partition h.0 h (partition m.0 m " + view(x) + ")))";
    };
    return "(program v (dims (m 1024) (n 4096) (n2 4096) (h 32) (e 128)) (input x f16 [m n]) (input y f16 [m n])\n"
           "  (output z [m h e] (combine m.0 m (combine h.0 h (combine e.0 e (add " +
           tiled("x") + " " + tiled("y") + "))))))";
  };
  Program p = parse_and_check(both([](const std::string& x) { return "(split n h e " + x + ")"; }));
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate narrow = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("h.0"), 16}, {axis("e.0"), 1}});
  ProgramEstimate wide = cm.evaluate(p, lp, {{axis("m.0"), 64}, {axis("h.0"), 1}, {axis("e.0"), 16}});
  EXPECT_DOUBLE_EQ(narrow.kernels[0].bytes, wide.kernels[0].bytes);
  EXPECT_DOUBLE_EQ(narrow.kernels[0].programs, wide.kernels[0].programs);
  EXPECT_GT(narrow.kernels[0].memory_s, 1.3 * wide.kernels[0].memory_s);

  // Renamed before the split: as contiguous as before.
  Program r = parse_and_check(both([](const std::string& x) { return "(split n2 h e (rename n n2 " + x + "))"; }));
  ProgramEstimate renamed =
      cm.evaluate(r, lower_program(r), {{axis("m.0"), 64}, {axis("h.0"), 1}, {axis("e.0"), 16}});
  EXPECT_DOUBLE_EQ(renamed.kernels[0].memory_s, wide.kernels[0].memory_s);
}

TEST(CostModel, AMergesOuterDimHasNoContiguousRun) {
  auto merged = [](const std::string& order) {
    return "(program v (dims (m 64) (n 4096) (d 262144)) (input x f16 [m n]) (input y f16 [m n])\n"
           "  (output z [d] (combine d.0 d (add (partition d.0 d (merge " + order + " d x))\n"
           "                                   (partition d.0 d (merge " + order + " d y))))))";
  };
  Program inner = parse_and_check(merged("m n")), outer = parse_and_check(merged("n m"));
  CostModel cm(h200());
  ProgramEstimate rows = cm.evaluate(inner, lower_program(inner), {{axis("d.0"), 1024}});
  ProgramEstimate cols = cm.evaluate(outer, lower_program(outer), {{axis("d.0"), 1024}});
  EXPECT_DOUBLE_EQ(rows.kernels[0].bytes, cols.kernels[0].bytes);
  EXPECT_GT(cols.kernels[0].memory_s, 1.3 * rows.kernels[0].memory_s);
}

// Row sums of a 2048 x 8192 matrix: tiny blocks of k make a long loop whose
// iterations each wait for their loads; the latency term prices that, and
// the chosen blocks keep the loop short.
TEST(CostModel, LongLoopsOfTinyBlocksAreLatencyBound) {
  Program p = parse_and_check(
      "(program rowsum (dims (m 2048) (k 8192)) (input x f16 [m k])\n"
      "  (output y [m] (combine m.0 m (preduce k.0 + (sum k (partition k.0 k (partition m.0 m x)))))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  const Target& t = h200();
  ProgramEstimate tiny = cm.evaluate(p, lp, {{axis("m.0"), 16}, {axis("k.0"), 1}});
  // 128 programs on 132 SMs: one wave of 8192 iterations each.
  EXPECT_DOUBLE_EQ(tiny.kernels[0].programs, 128);
  EXPECT_NEAR(tiny.kernels[0].latency_s, 8192 * t.loop_iteration_s, 1e-12);
  // 32-byte tiles keep almost nothing in flight: the streaming bound says
  // as much as the latency term (both far above the bytes' time).
  EXPECT_GE(tiny.seconds, tiny.kernels[0].latency_s);
  EXPECT_GT(tiny.kernels[0].memory_s, 100 * 2048.0 * 8192 * 2 / t.kernel_bytes_per_s);
  ProgramEstimate best = cm.estimate(p, lp);
  ASSERT_TRUE(best.feasible);
  EXPECT_EQ(best.kernels[0].bound, "memory");
  EXPECT_LT(best.seconds, tiny.seconds / 10);
}

// A GEMV-like loop over a 4096 x 4096 fp16 weight (32 MiB), 16 rows: the
// bytes its programs keep in flight (tile x pipelined stages x resident
// programs) set the bandwidth (target.h, Little's law), as measured on the
// H200 (bench/results/h200-2026-12-02-stream-forms: 954 GB/s with 64 x 32
// tiles at 3 stages, 1947 with 256 x 64 at 5).
std::string gemv_program(bool nested) {
  std::string w = nested ? "(partition k.1 k (partition k.0 k (partition n.0 n w)))" : "(partition k.0 k (partition n.0 n w))";
  std::string x = nested ? "(partition k.1 k (partition k.0 k (replicate n.0 x)))" : "(partition k.0 k (replicate n.0 x))";
  std::string body = "(tile_matmul k " + x + " " + w + ")";
  body = nested ? "(preduce k.0 + (preduce k.1 + " + body + "))" : "(preduce k.0 + " + body + ")";
  return "(program gemv (dims (m 16) (k 4096) (n 4096)) (input x f16 [m k]) (input w f16 [k n])\n"
         "  (output y [m n] (combine n.0 n " + body + ")))";
}

TEST(CostModel, StreamingLoopsAreBoundByTheBytesInFlight) {
  Program p = parse_and_check(gemv_program(false));
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  const Target& t = h200();
  ASSERT_GT(t.stream_half_bytes, 0);
  const double weight = 4096.0 * 4096 * 2;
  // 64 programs of 64 x 64 weight tiles (and 16 x 64 of x), two of three
  // stages in flight: 64 x 2 x 10 KiB = 1.25 MiB.
  ProgramEstimate small = cm.evaluate(p, lp, {{axis("n.0"), 64}, {axis("k.0"), 64}});
  ASSERT_TRUE(small.feasible);
  ASSERT_DOUBLE_EQ(small.kernels[0].programs, 64);
  double flight = 64 * 2 * (64 * 64 * 2 + 16 * 64 * 2);
  double bw = t.kernel_bytes_per_s * flight / (flight + t.stream_half_bytes);
  // DRAM moves the weight, x once (its re-reads come from L2) and y.
  double dram = weight + 2 * (16 * 4096 * 2);
  EXPECT_NEAR(small.kernels[0].memory_s * bw, dram, 1e-6 * dram);
  EXPECT_LT(bw, 0.45 * t.kernel_bytes_per_s);
  // 256-deep tiles keep four times as much in flight: faster, near the cap.
  ProgramEstimate deep = cm.evaluate(p, lp, {{axis("n.0"), 64}, {axis("k.0"), 256}});
  ASSERT_TRUE(deep.feasible);
  EXPECT_LT(deep.kernels[0].memory_s, 0.6 * small.kernels[0].memory_s);
  EXPECT_GT(deep.kernels[0].memory_s, weight / t.kernel_bytes_per_s);
  // The chosen blocks keep enough in flight to come within 30% of the cap.
  ProgramEstimate best = cm.estimate(p, lp);
  ASSERT_TRUE(best.feasible);
  EXPECT_LT(best.kernels[0].memory_s, 1.3 * best.kernels[0].bytes / t.kernel_bytes_per_s);
}

// More stages keep more in flight and overlap more of each iteration's wait;
// best_stages takes the fastest stage count whose tiles still fit.
TEST(CostModel, BestStagesTakesTheFastestCountThatFits) {
  Program p = parse_and_check(gemv_program(false));
  LoweredProgram lp = lower_program(p);
  const Target& t = h200();
  Target five = t;
  five.pipeline_stages = 5;
  const BlockSizes small = {{axis("n.0"), 64}, {axis("k.0"), 64}};
  ProgramEstimate at3 = CostModel(t).evaluate(p, lp, small);
  ProgramEstimate at5 = CostModel(five).evaluate(p, lp, small);
  EXPECT_EQ(at3.stages, 3);
  EXPECT_EQ(at5.stages, 5);
  // Four tiles in flight instead of two: more bandwidth, half the latency.
  EXPECT_LT(at5.kernels[0].memory_s, at3.kernels[0].memory_s);
  EXPECT_NEAR(at5.kernels[0].latency_s, at3.kernels[0].latency_s / 2, 1e-12);
  CostModel cm(t);
  ProgramEstimate def = cm.estimate(p, lp);
  ProgramEstimate best = cm.best_stages(p, lp, def);
  ASSERT_TRUE(best.feasible);
  EXPECT_LE(best.seconds, def.seconds);
  EXPECT_GT(best.stages, 3);
  // The same as estimating at that count directly.
  Target chosen = t;
  chosen.pipeline_stages = best.stages;
  EXPECT_DOUBLE_EQ(CostModel(chosen).estimate(p, lp).seconds, best.seconds);
  // A profile whose shared memory holds two stages of the best tiles but
  // not more: its other choices are never taken at an infeasible size.
  Target tight = t;
  tight.smem_bytes_per_program = 48 * 1024;
  CostModel tm(tight);
  ProgramEstimate tight_best = tm.best_stages(p, lp, tm.estimate(p, lp));
  ASSERT_TRUE(tight_best.feasible);
  Target at = tight;
  at.pipeline_stages = tight_best.stages;
  EXPECT_TRUE(CostModel(at).evaluate(p, lp, tight_best.blocks).feasible);
  // A loop without dots keeps the target's count, estimate and all.
  Program rowsum = parse_and_check(
      "(program rowsum (dims (m 2048) (k 8192)) (input x f16 [m k])\n"
      "  (output y [m] (combine m.0 m (preduce k.0 + (sum k (partition k.0 k (partition m.0 m x)))))))");
  LoweredProgram rl = lower_program(rowsum);
  ProgramEstimate plain = cm.estimate(rowsum, rl);
  ProgramEstimate kept = cm.best_stages(rowsum, rl, plain);
  EXPECT_EQ(kept.stages, t.pipeline_stages);
  EXPECT_DOUBLE_EQ(kept.seconds, plain.seconds);
}

// Triton pipelines only innermost loops: the same reduction as a loop of
// 256-blocks holding a loop of one 256-block has one tile in flight, not two.
TEST(CostModel, ALoopHoldingALoopIsNotPipelined) {
  Program flat = parse_and_check(gemv_program(false));
  Program nested = parse_and_check(gemv_program(true));
  CostModel cm(h200());
  ProgramEstimate f = cm.evaluate(flat, lower_program(flat), {{axis("n.0"), 32}, {axis("k.0"), 256}});
  ProgramEstimate n = cm.evaluate(nested, lower_program(nested),
                                  {{axis("n.0"), 32}, {axis("k.0"), 256}, {axis("k.1"), 256}});
  ASSERT_TRUE(f.feasible && n.feasible);
  EXPECT_DOUBLE_EQ(f.kernels[0].bytes, n.kernels[0].bytes);
  EXPECT_GT(n.kernels[0].memory_s, 1.2 * f.kernels[0].memory_s);
  // With 16 inner trips of 16 the inner loop pipelines again.
  ProgramEstimate n16 = cm.evaluate(nested, lower_program(nested),
                                    {{axis("n.0"), 32}, {axis("k.0"), 4096}, {axis("k.1"), 256}});
  EXPECT_NEAR(n16.kernels[0].memory_s, f.kernels[0].memory_s, 0.05 * f.kernels[0].memory_s);
}

TEST(CostModel, TensorCoreFlopsAndTheComputeBound) {
  Program p = parse_and_check(
      "(program mm (dims (m 1024) (k 1024) (n 1024))\n"
      "  (input a f16 [m k]) (input b f16 [k n])\n"
      "  (output c [m n] (combine m.0 m (combine n.0 n (preduce k.0 +\n"
      "    (tile_matmul k (partition k.0 k (partition m.0 m (replicate n.0 a)))\n"
      "                   (partition k.0 k (partition n.0 n (replicate m.0 b)))))))))");
  LoweredProgram lp = lower_program(p);
  // 256 programs: every SM busy.
  const BlockSizes blocks = {{axis("m.0"), 64}, {axis("n.0"), 64}, {axis("k.0"), 64}};
  const double flops = 2.0 * 1024 * 1024 * 1024;
  // A device whose tensor cores are slow next to its memory: mma-bound.
  Target slow = h200();
  slow.mma_flops_per_s = 10e12;
  ProgramEstimate e = CostModel(slow).evaluate(p, lp, blocks);
  EXPECT_TRUE(e.feasible) << e.why_infeasible;
  EXPECT_DOUBLE_EQ(e.kernels[0].mma_flops, flops);
  EXPECT_EQ(e.kernels[0].bound, "mma");
  EXPECT_NEAR(e.seconds, flops / 10e12 + 2.8e-6, 1e-12);
  // tl.dot's smallest tile is 16: a k block of 8 costs the flops of 16.
  ProgramEstimate narrow =
      CostModel(slow).evaluate(p, lp, {{axis("m.0"), 64}, {axis("n.0"), 64}, {axis("k.0"), 8}});
  EXPECT_DOUBLE_EQ(narrow.kernels[0].mma_flops, 2 * flops);
  // 64 programs keep half the SMs idle: half the tensor-core throughput.
  ProgramEstimate few =
      CostModel(slow).evaluate(p, lp, {{axis("m.0"), 128}, {axis("n.0"), 128}, {axis("k.0"), 64}});
  EXPECT_NEAR(few.kernels[0].mma_s, flops / (10e12 * 64 / 132), 1e-12);
  // fp32 dots run on the FP units ("ieee" precision), not the tensor cores.
  Program q = parse_and_check(replace_f16(p));
  ProgramEstimate f32 = CostModel(slow).evaluate(q, lower_program(q), blocks);
  EXPECT_DOUBLE_EQ(f32.kernels[0].mma_flops, 0);
  EXPECT_GE(f32.kernels[0].other_flops, flops);
}

TEST(CostModel, TilesThatFitNothingAreInfeasible) {
  // A whole row of 2^21 elements in every tile exceeds Triton's tile limit
  // whatever the row block.
  Program p = parse_and_check(
      "(program wide (dims (m 4) (n 2097152)) (input x f32 [m n])\n"
      "  (output y [m n] (combine m.0 m (exp (partition m.0 m x)))))");
  CostModel cm(h200());
  ProgramEstimate e = cm.estimate(p);
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.why_infeasible.find("tile"), std::string::npos) << e.why_infeasible;
  // Tiling the row makes it fit.
  Program q = parse_and_check(
      "(program wide (dims (m 4) (n 2097152)) (input x f32 [m n])\n"
      "  (output y [m n] (combine m.0 m (combine n.0 n (exp (partition n.0 n (partition m.0 m x)))))))");
  EXPECT_TRUE(cm.estimate(q).feasible);
}

TEST(CostModel, EvaluateNeedsEveryAxis) {
  Program p = parse_and_check(add_program(64, 64));
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  EXPECT_THROW(cm.evaluate(p, lp, {}), Error);
}

// ---- index masks ------------------------------------------------------------------------

// Causal FlashAttention: rows of queries on s.0, keys on the loop t.0; a
// key block later than the query block is entirely masked.
std::string causal_flash(const std::string& dims) {
  return "(program attn " + dims +
         "\n"
         "  (input q f32 [h s e]) (input k f32 [h t e]) (input v f32 [h t f])\n"
         "  (let q_tile (partition s.0 s (partition h.0 h (replicate t.0 q))))\n"
         "  (let k_tile (partition t.0 t (partition h.0 h (replicate s.0 k))))\n"
         "  (let v_tile (partition t.0 t (partition h.0 h (replicate s.0 v))))\n"
         "  (let vis (le (partition t.0 t (replicate s.0 (replicate h.0 (iota t))))\n"
         "               (partition s.0 s (replicate t.0 (replicate h.0 (iota s))))))\n"
         "  (let scores (where vis (mul (tile_matmul e q_tile k_tile) 0.5) -inf))\n"
         "  (let m_blk (max t scores))\n"
         "  (let p_blk (exp (sub scores m_blk)))\n"
         "  (let state (preduce t.0 (max (exp-sum 0) (exp-sum 0))\n"
         "               (tuple m_blk (sum t p_blk) (tile_matmul t p_blk v_tile))))\n"
         "  (output o [h s f] (combine h.0 h (combine s.0 s (div (proj 2 state) (proj 1 state))))))";
}

std::string causal_naive(const std::string& dims) {
  return "(program attn " + dims +
         "\n"
         "  (input q f32 [h s e]) (input k f32 [h t e]) (input v f32 [h t f])\n"
         "  (let scores (where (le (iota t) (iota s)) (mul (matmul e q k) 0.5) -inf))\n"
         "  (let p (exp (sub scores (max t scores))))\n"
         "  (output o [h s f] (matmul t (div p (sum t p)) v)))";
}

TEST(CostModel, CausalFlashProgramIsExact) {
  // The masked program the next test costs computes causal attention.
  const std::string dims = "(dims (h 2) (s 11) (t 11) (e 4) (f 3))";
  Program naive = parse_and_check(causal_naive(dims));
  Program flash = parse_and_check(causal_flash(dims));
  EquivReport r = compare_programs(naive, flash, 7, 6);
  EXPECT_TRUE(r.equivalent()) << r.max_rel_error;
}

TEST(CostModel, CausalMaskVisitsOnlyBlocksAtOrBelowTheDiagonal) {
  Program p = parse_and_check(causal_flash("(dims (h 2) (s 1024) (t 1024) (e 64) (f 64))"));
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("h.0"), 1}, {axis("s.0"), 64}, {axis("t.0"), 64}});
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_TRUE(e.kernels[0].masked);
  // 16 query blocks; query block i visits key blocks 0..i: 136 of 256 pairs.
  const double per_block_kv = 2.0 * 64 * 64 * 4;  // a block of K and of V, f32
  const double q = 2.0 * 1024 * 64 * 4, o = 2.0 * 1024 * 64 * 4;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, 2 * 136 * per_block_kv + q + o);
}

TEST(CostModel, MaskOnlyBoundsLoopsItDominates) {
  // The same loop also sums the unmasked keys: no block may be skipped.
  Program p = parse_and_check(
      "(program m (dims (s 256) (t 256)) (input x f32 [s t])\n"
      "  (let xt (partition t.0 t (partition s.0 s x)))\n"
      "  (let vis (le (partition t.0 t (replicate s.0 (iota t))) (partition s.0 s (replicate t.0 (iota s)))))\n"
      "  (let r (preduce t.0 (+ +) (tuple (sum t (where vis xt 0)) (sum t xt))))\n"
      "  (output y [s] (combine s.0 s (add (proj 0 r) (proj 1 r)))))");
  LoweredProgram lp = lower_program(p);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lp, {{axis("s.0"), 16}, {axis("t.0"), 16}});
  EXPECT_FALSE(e.kernels[0].masked);
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, 256.0 * 256 * 4 + 256 * 4);
}

// Flash-decoding over a sliding window (examples/attention_window): key
// blocks on the grid axis t.0; the scores before `first` are -inf.
std::string window_decoding(const std::string& dims, int first, bool masked = true) {
  std::string raw = "(mul (tile_matmul e q_tile k_tile) 0.5)";
  std::string scores = masked ? "(where (lt pos " + std::to_string(first) + ") -inf " + raw + ")" : raw;
  return "(program w " + dims +
         "\n"
         "  (input q f32 [h e]) (input k f32 [h t e]) (input v f32 [h t f])\n"
         "  (let q_tile (replicate t.0 (partition h.0 h q)))\n"
         "  (let k_tile (partition t.0 t (partition h.0 h k)))\n"
         "  (let v_tile (partition t.0 t (partition h.0 h v)))\n"
         "  (let pos (partition t.0 t (replicate h.0 (iota t))))\n"
         "  (let scores " + scores + ")\n"
         "  (let m_blk (max t scores))\n"
         "  (let p_blk (exp (sub scores m_blk)))\n"
         "  (let states (collect t.0 (tuple m_blk (sum t p_blk) (tile_matmul t p_blk v_tile))))\n"
         "  (let merged (reduce c_t.0 (max (exp-sum 0) (exp-sum 0)) states))\n"
         "  (output o [h f] (combine h.0 h (div (proj 2 merged) (proj 1 merged)))))";
}

TEST(CostModel, GridMaskedProgramsReadNothing) {
  // 4096 keys in blocks of 256, the first 3000 masked: blocks 0..10 lie
  // wholly before the window (11 * 256 = 2816 <= 3000), 5 of 16 are live.
  const std::string dims = "(dims (h 2) (t 4096) (e 64) (f 64))";
  Program p = parse_and_check(window_decoding(dims, 3000));
  Program dense = parse_and_check(window_decoding(dims, 3000, false));
  CostModel cm(h200());
  const std::map<Axis, int64_t> blocks{{axis("h.0"), 1}, {axis("t.0"), 256}};
  ProgramEstimate e = cm.evaluate(p, lower_program(p), blocks);
  ProgramEstimate d = cm.evaluate(dense, lower_program(dense), blocks);
  ASSERT_EQ(e.kernels.size(), 2u);
  EXPECT_TRUE(e.kernels[0].masked);
  EXPECT_FALSE(d.kernels[0].masked);
  const double stores = 2.0 * 16 * (1 + 1 + 64) * 4;  // every program stores its state
  const double loads = d.kernels[0].bytes - stores;
  EXPECT_DOUBLE_EQ(e.kernels[0].bytes, loads * 5 / 16 + stores);
  EXPECT_DOUBLE_EQ(e.kernels[1].bytes, d.kernels[1].bytes);  // the merge reads every state
}

TEST(CostModel, AGridMaskNeedsTheStatesReadOnlyByTheirMerge) {
  // The window's states are merged, and their sums also read raw (an empty
  // state's sum is garbage there): the key blocks before the window must be read.
  std::string text = window_decoding("(dims (h 2) (t 4096) (e 64) (f 64))", 3000);
  const std::string out = "(output o [h f] (combine h.0 h (div (proj 2 merged) (proj 1 merged)))))";
  ASSERT_NE(text.find(out), std::string::npos);
  text.replace(text.find(out), out.size(),
               "(output o [h f] (combine h.0 h (div (proj 2 merged) (proj 1 merged))))\n"
               "  (output raw [h] (combine h.0 h (sum c_t.0 (proj 1 states)))))");
  Program p = parse_and_check(text);
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lower_program(p), {{axis("h.0"), 1}, {axis("t.0"), 256}});
  EXPECT_FALSE(e.kernels[0].masked);
}

TEST(CostModel, AGridMaskNeedsEveryStoreDecided) {
  // The kernel also stores the unmasked sum of the keys' scores: a program
  // before the window must still read its keys.
  Program p = parse_and_check(
      "(program w (dims (h 2) (t 1024) (e 64)) (input q f32 [h e]) (input k f32 [h t e])\n"
      "  (let s (tile_matmul e (replicate t.0 (partition h.0 h q)) (partition t.0 t (partition h.0 h k))))\n"
      "  (let pos (partition t.0 t (replicate h.0 (iota t))))\n"
      "  (let st (collect t.0 (tuple (max t (where (lt pos 900) -inf s)) (sum t s))))\n"
      "  (let r (reduce c_t.0 (max +) st))\n"
      "  (output o [h] (combine h.0 h (add (proj 0 r) (proj 1 r)))))");
  CostModel cm(h200());
  ProgramEstimate e = cm.evaluate(p, lower_program(p), {{axis("h.0"), 1}, {axis("t.0"), 128}});
  EXPECT_FALSE(e.kernels[0].masked);
}

}  // namespace
}  // namespace eqf

namespace eqf {
namespace {

// tl.dot pads each blocked dim of its operands to 16 in shared memory: two
// full-K operand tiles of 4096 (f16) cannot fit whatever the row block, which
// triton 3.6 confirmed by refusing such kernels as out of resources.
TEST(CostModel, DotOperandsArePaddedToTheSmallestDotInSharedMemory) {
  Program p = parse_and_check(
      "(program mm (dims (m 16) (k 4096) (n 4096))\n"
      "  (input a f16 [m k]) (input b f16 [k n])\n"
      "  (output c [m n] (combine m.0 m (combine n.0 n\n"
      "    (tile_matmul k (partition m.0 m (replicate n.0 a)) (partition n.0 n (replicate m.0 b)))))))");
  CostModel cm(load_target("h200"));
  ProgramEstimate e = cm.estimate(p);
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.why_infeasible.find("shared memory"), std::string::npos) << e.why_infeasible;
}

// A whole dim is padded too (the emitter's TILE constexprs are
// max(16, next_power_of_2)): 8 rows kept whole occupy 16 x 4096 next to the
// 4096 x 16 block of the other operand, 256 KiB (rmsnorm_swiglu_ffn at
// batch 8: triton 3.6 asked for 262144 bytes of shared memory). Unpadded,
// 8 rows would have counted 192 KiB and fit.
TEST(CostModel, AWholeDimOfADotIsPaddedToo) {
  Program p = parse_and_check(
      "(program mm (dims (m 8) (k 4096) (n 4096))\n"
      "  (input a f16 [m k]) (input b f16 [k n])\n"
      "  (output c [m n] (combine n.0 n (tile_matmul k (replicate n.0 a) (partition n.0 n b)))))");
  CostModel cm(load_target("h200"));
  ProgramEstimate e = cm.estimate(p);
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.why_infeasible.find("shared memory 256 KiB"), std::string::npos) << e.why_infeasible;
}


// A run of whole dims beside k is one matrix dim of tl.dot (dot_shape.h):
// w's n split into h x e (4 x 4) gives 16 columns, priced as a dot on the
// tensor cores with neither dim padded, not as a broadcast product; h x e of
// 2 x 4 cannot be flattened and stays a product on the FP units.
TEST(CostModel, AFlattenedRunOfWholeDimsIsOneDot) {
  auto program = [](const std::string& dims) {
    return parse_and_check("(program mm (dims (m 64) (k 1024) " + dims +
                           ")\n"
                           "  (input x f16 [m k]) (input w f16 [k n])\n"
                           "  (output y [m h e] (combine m.0 m (tile_matmul k (partition m.0 m x)\n"
                           "    (replicate m.0 (split n h e w))))))");
  };
  CostModel cm(h200());
  Program p = program("(n 16) (h 4) (e 4)");
  ProgramEstimate e = cm.evaluate(p, lower_program(p), {{axis("m.0"), 16}});
  ASSERT_TRUE(e.feasible) << e.why_infeasible;
  EXPECT_DOUBLE_EQ(e.kernels[0].mma_flops, 2.0 * 64 * 1024 * 16);
  Program q = program("(n 8) (h 2) (e 4)");
  ProgramEstimate f = cm.evaluate(q, lower_program(q), {{axis("m.0"), 16}});
  EXPECT_DOUBLE_EQ(f.kernels[0].mma_flops, 0);
  EXPECT_GE(f.kernels[0].other_flops, 2.0 * 64 * 1024 * 8);
}

// A dot on fewer rows than a warp-group MMA takes runs as mma.sync, which
// reads both operand tiles from registers (ptxas: bench/results/
// registers-2026-12-06.md). 16 rows against a whole k of 2048 and 16
// columns hold 64 + 64 KiB of fp16 operands and the product: past the 128
// KiB of registers, which the product alone (1 KiB) and the shared memory
// both fit. With k blocked in a loop the operands fit; on 64 rows the dot is
// a warp-group MMA, whose operands (here 128 KiB with a 16 KiB product) the
// registers do not hold.
TEST(CostModel, AnMmaSyncDotHoldsItsOperandsInRegisters) {
  auto program = [](const std::string& m, const std::string& k, const std::string& body) {
    return parse_and_check("(program mm (dims (m " + m + ") (k " + k + ") (n 64))\n"
                           "  (input x f16 [m k]) (input w f16 [k n])\n"
                           "  (output y [m n] (combine n.0 n " + body + ")))");
  };
  const std::string whole_k = "(tile_matmul k (replicate n.0 x) (partition n.0 n w))";
  CostModel cm(h200());
  Program p = program("16", "2048", whole_k);
  ProgramEstimate e = cm.evaluate(p, lower_program(p), {{axis("n.0"), 16}});
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.why_infeasible.find("registers 129 KiB > 128 KiB"), std::string::npos) << e.why_infeasible;
  EXPECT_EQ(e.kernels[0].register_bytes, (16.0 * 2048 + 2048 * 16) * 2 + 4 * 16 * 16);
  Program looped = program(
      "16", "2048", "(preduce k.0 + (tile_matmul k (partition k.0 k (replicate n.0 x)) (partition k.0 k (partition n.0 n w))))");
  ProgramEstimate f = cm.evaluate(looped, lower_program(looped), {{axis("n.0"), 16}, {axis("k.0"), 256}});
  EXPECT_TRUE(f.feasible) << f.why_infeasible;
  Program wide = program("64", "512", whole_k);  // [64, 512] and [512, 64]: 128 KiB, and the product's 16
  ProgramEstimate g = cm.evaluate(wide, lower_program(wide), {{axis("n.0"), 64}});
  EXPECT_TRUE(g.feasible) << g.why_infeasible;
}

// A cache of kernel evaluations shared by many estimates (extraction's
// candidates) changes no estimate: every tiled example, estimated in turn
// through one cache (twice, so the second round reads only kept values),
// gets the blocks and seconds of an estimate of its own. The examples share
// kernels (the flash and naive attentions' projections, the matmuls'
// tiles), so the cache serves one program values another computed.
TEST(CostModel, SharedEstimateCacheChangesNoEstimate) {
  CostModel cm(load_target("h200"));
  CostModel::EstimateCache cache;
  std::vector<std::string> files;
  for (const char* dir : {"attention", "attention_causal", "attention_decode", "layernorm", "lora", "matmul",
                          "rmsnorm_mlp"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string("examples/") + dir))
      if (entry.path().filename() != "naive.eqf") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 10u);
  for (int round = 0; round < 2; ++round)
    for (const std::string& f : files) {
      Program p = parse_and_check_file(f);
      LoweredProgram lp = lower_program(p);
      ProgramEstimate alone = cm.estimate(p, lp);
      ProgramEstimate shared = cm.estimate(p, lp, cache);
      EXPECT_EQ(shared.feasible, alone.feasible) << f;
      EXPECT_EQ(shared.seconds, alone.seconds) << f;  // bit for bit: the same sums of the same values
      EXPECT_EQ(shared.blocks, alone.blocks) << f;
      EXPECT_EQ(shared.combos_tried, alone.combos_tried) << f;
      EXPECT_EQ(shared.why_infeasible, alone.why_infeasible) << f;
    }
}

}  // namespace
}  // namespace eqf
