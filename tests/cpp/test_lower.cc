// Kernel formation: which kernels a tiled program becomes (grids, loops,
// loads with their scopes and re-read axes, stores, buffers), and the errors
// for structures that have no kernel form.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

Axis ax(const char* name) { return *Axis::parse(name); }

std::vector<std::string> names(const std::vector<Axis>& axes) {
  std::vector<std::string> out;
  for (Axis a : axes) out.push_back(a.name());
  return out;
}

std::vector<std::string> loop_axes(const Kernel& k) {
  std::vector<std::string> out;
  for (const Loop& l : k.loops) out.push_back(l.axis.name());
  return out;
}

// The load of the node bound to `let` (or of input `let`), in kernel k.
std::vector<const Load*> loads_of(const Program& p, const Kernel& k, const std::string& let) {
  std::vector<const Load*> out;
  for (const Load& l : k.loads) {
    Symbol s = p.name_of(l.node);
    bool input = p.node(l.node).op == Op::Input && attr_sym(p.node(l.node).attrs, 0).str() == let;
    if ((s.valid() && s.str() == let) || input) out.push_back(&l);
  }
  return out;
}

LoweredProgram lower_file(const std::string& path, Program& p, const LowerOptions& options = {}) {
  p = parse_and_check_file(path);
  return lower_program(p, options);
}

// Lowering `text` must fail with a message containing `needle`.
void expect_lowering_error(const std::string& text, const std::string& needle) {
  Program p = parse_and_check(text, "bad.eqf");
  try {
    lower_program(p);
    FAIL() << "expected a lowering error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.eqf:"), std::string::npos) << "no position: " << e.what();
  }
}

TEST(Lower, SplitKIsOneKernelWithTheContractionAsLoop) {
  Program p;
  LoweredProgram lp = lower_file("examples/matmul/split_k.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  const Kernel& k = lp.kernels[0];
  // The innermost combine is program_id(0).
  EXPECT_EQ(names(k.grid), (std::vector<std::string>{"n.0", "m.0"}));
  EXPECT_EQ(loop_axes(k), (std::vector<std::string>{"k.0"}));
  ASSERT_EQ(k.loops[0].accumulators.size(), 1u);
  EXPECT_EQ(k.loops[0].accumulators[0].red.base, RedBase::Add);
  // Both operands are loaded inside the loop; a is re-read by every n.0 block.
  auto a = loads_of(p, k, "a_tile"), b = loads_of(p, k, "b_tile");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0]->scope, 0);
  EXPECT_EQ(names(a[0]->replicated_over), std::vector<std::string>{"n.0"});
  EXPECT_EQ(names(b[0]->replicated_over), std::vector<std::string>{"m.0"});
  // Buffers: inputs first, then the output, which the kernel writes.
  ASSERT_EQ(lp.buffers.size(), 3u);
  EXPECT_EQ(lp.buffers[2].kind, BufferKind::Output);
  EXPECT_EQ(lp.buffers[2].producer, 0);
  ASSERT_EQ(k.stores.size(), 1u);
  EXPECT_EQ(k.stores[0].buffer, 2);
  EXPECT_TRUE(lp.unit_axes.empty());
}

TEST(Lower, TwoLevelsNestTheInnerLoop) {
  Program p;
  LoweredProgram lp = lower_file("examples/matmul/split_k_two_levels.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  const Kernel& k = lp.kernels[0];
  EXPECT_EQ(names(k.grid), std::vector<std::string>{"m.0"});
  ASSERT_EQ(loop_axes(k), (std::vector<std::string>{"k.0", "k.1"}));
  // k.1 (index 1) runs inside k.0 (index 0), and the loads inside k.1.
  EXPECT_EQ(k.loops[0].parent, -1);
  EXPECT_EQ(k.loops[1].parent, 0);
  for (const Load& l : k.loads) EXPECT_EQ(l.scope, 1);
}

TEST(Lower, FlashAttentionHoistsQueriesAndCarriesTheRepairedState) {
  Program p;
  LoweredProgram lp = lower_file("examples/attention/flash.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  const Kernel& k = lp.kernels[0];
  EXPECT_EQ(names(k.grid), (std::vector<std::string>{"s.0", "h.0"}));
  ASSERT_EQ(loop_axes(k), std::vector<std::string>{"t.0"});
  const auto& acc = k.loops[0].accumulators;
  ASSERT_EQ(acc.size(), 3u);
  EXPECT_EQ(acc[0].red.base, RedBase::Max);
  EXPECT_EQ(acc[1].red.repair, Repair::ExpSum);
  EXPECT_EQ(acc[2].red.repair, Repair::ExpSum);
  // The P.V state has the channel dim f; m and l do not.
  EXPECT_EQ(acc[0].dims.size() + 1, acc[2].dims.size());
  // q does not vary with t.0: loaded once per program, before the loop.
  auto q = loads_of(p, k, "q_tile"), kt = loads_of(p, k, "k_tile");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0]->scope, -1);
  EXPECT_EQ(names(q[0]->replicated_over), std::vector<std::string>{"t.0"});
  ASSERT_EQ(kt.size(), 1u);
  EXPECT_EQ(kt[0]->scope, 0);
  EXPECT_EQ(names(kt[0]->replicated_over), std::vector<std::string>{"s.0"});
  // Heads are a batch dim of both contractions: h.0 is a unit axis.
  EXPECT_EQ(lp.unit_axes, std::set<Axis>{ax("h.0")});
}

TEST(Lower, FlashDecodingCollectsStatesThenMerges) {
  Program p;
  LoweredProgram lp = lower_file("examples/attention_decode/flash_decoding.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 2u);
  const Kernel& split = lp.kernels[0];
  const Kernel& merge = lp.kernels[1];
  EXPECT_EQ(p.node(split.root).op, Op::Collect);
  EXPECT_EQ(names(split.grid), (std::vector<std::string>{"t.0", "h.0"}));
  EXPECT_TRUE(split.loops.empty());
  ASSERT_EQ(split.stores.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const Store& s = split.stores[i];
    EXPECT_EQ(s.component, int(i));
    ASSERT_TRUE(s.collected.has_value());
    EXPECT_EQ(s.collected->name(), "t.0");
    const Buffer& b = lp.buffers[size_t(s.buffer)];
    EXPECT_EQ(b.kind, BufferKind::Intermediate);
    EXPECT_EQ(b.producer, 0);
    EXPECT_EQ(b.dtype, DType::F32);
    EXPECT_EQ(b.layout.front().str(), "c_t.0");  // one row per key block
  }
  EXPECT_EQ(lp.buffers[size_t(split.stores[2].buffer)].layout.size(), 4u);  // c_t.0 h s f
  EXPECT_EQ(names(merge.grid), std::vector<std::string>{"h.0"});
  ASSERT_EQ(merge.loads.size(), 1u);
  EXPECT_EQ(merge.loads[0].buffer, split.stores[0].buffer);
  EXPECT_EQ(p.node(merge.loads[0].source).op, Op::Collect);
}

TEST(Lower, GlobalValueReadByAnotherKernelIsAnIntermediateBuffer) {
  Program p;
  LoweredProgram lp = lower_file("examples/lora/two_kernels.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 2u);
  EXPECT_EQ(names(lp.kernels[0].grid), std::vector<std::string>{"r.0"});
  EXPECT_EQ(names(lp.kernels[1].grid), std::vector<std::string>{"n.0"});
  auto it =
      std::find_if(lp.buffers.begin(), lp.buffers.end(), [](const Buffer& b) { return b.name == "xa"; });
  ASSERT_NE(it, lp.buffers.end());
  EXPECT_EQ(it->kind, BufferKind::Intermediate);
  EXPECT_EQ(it->producer, 0);
  // The second kernel reads xa whole for every block of n.
  const Load* xa = nullptr;
  for (const Load& l : lp.kernels[1].loads)
    if (l.buffer == int(it - lp.buffers.begin())) xa = &l;
  ASSERT_NE(xa, nullptr);
  EXPECT_EQ(names(xa->replicated_over), std::vector<std::string>{"n.0"});
}

TEST(Lower, TwoPreducesOverOneAxisAreTwoLoopsEachLoadingTheirOperands) {
  Program p;
  LoweredProgram lp = lower_file("examples/lora/one_kernel.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  const Kernel& k = lp.kernels[0];
  EXPECT_EQ(loop_axes(k), (std::vector<std::string>{"k.0", "k.0"}));
  auto x = loads_of(p, k, "x_tile");
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NE(x[0]->scope, x[1]->scope);
}

TEST(Lower, WholeRowAndBlockedRowOfOneInputAreSeparateLoads) {
  Program p;
  LoweredProgram lp = lower_file("examples/layernorm/one_pass_tuple.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  const Kernel& k = lp.kernels[0];
  auto rows = loads_of(p, k, "x_rows"), tile = loads_of(p, k, "x_tile");
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(tile.size(), 1u);
  EXPECT_EQ(rows[0]->scope, -1);
  EXPECT_EQ(tile[0]->scope, 0);
  // In its tiles, k is whole in x_rows (depth 0) and a k.0 block in x_tile.
  auto depth_of_k = [&](NodeId n) {
    for (const DimView& v : tile_view(p, n, lp.unit_axes))
      if (v.dim.str() == "k") return v.depth;
    return -1;
  };
  EXPECT_EQ(depth_of_k(rows[0]->node), 0);
  EXPECT_EQ(depth_of_k(tile[0]->node), 1);
}

TEST(Lower, UnitAxesCanBeChosen) {
  Program p;
  LowerOptions none;
  none.unit_axes = std::set<Axis>{};
  LoweredProgram lp = lower_file("examples/attention/flash.eqf", p, none);
  EXPECT_TRUE(lp.unit_axes.empty());
  // With h.0 not a unit axis, h is a dim of the tiles.
  auto view = tile_view(p, lp.kernels[0].loads[0].node, lp.unit_axes);
  EXPECT_TRUE(std::none_of(view.begin(), view.end(), [](const DimView& v) { return v.squeezed; }));
}

TEST(Lower, ExtentOneDimsAreSqueezed) {
  Program p = parse_and_check_file("examples/attention_decode/split_channels.eqf");
  LoweredProgram lp = lower_program(p);
  bool seen = false;
  for (const DimView& v : tile_view(p, lp.kernels[0].loads[0].node, lp.unit_axes)) {
    if (v.dim.str() != "s") continue;
    seen = true;
    EXPECT_TRUE(v.squeezed);  // s has extent 1
  }
  EXPECT_TRUE(seen);
}

TEST(Lower, EveryExampleLowers) {
  for (const char* path :
       {"examples/matmul/split_k.eqf", "examples/matmul/split_k_two_levels.eqf",
        "examples/attention/flash.eqf", "examples/attention_decode/flash_decoding.eqf",
        "examples/attention_decode/split_channels.eqf", "examples/rmsnorm_mlp/factor_after_fused.eqf",
        "examples/lora/two_kernels.eqf", "examples/lora/one_kernel.eqf",
        "examples/layernorm/one_pass_tuple.eqf", "examples/layernorm/one_pass_welford.eqf",
        "examples/matmul/naive.eqf", "examples/attention/naive.eqf"}) {
    Program p = parse_and_check_file(path);
    LoweredProgram lp = lower_program(p);
    EXPECT_FALSE(lp.kernels.empty()) << path;
    for (const Kernel& k : lp.kernels) EXPECT_FALSE(k.stores.empty()) << path;
  }
}

TEST(Lower, NaiveProgramIsOneProgramOnWholeTiles) {
  Program p;
  LoweredProgram lp = lower_file("examples/matmul/naive.eqf", p);
  ASSERT_EQ(lp.kernels.size(), 1u);
  EXPECT_TRUE(lp.kernels[0].grid.empty());
  EXPECT_TRUE(lp.kernels[0].loops.empty());
}

// ---- errors -----------------------------------------------------------------------

TEST(LowerErrors, CombineInsideALoop) {
  expect_lowering_error(R"((program t (dims (m 4) (k 6)) (input x f32 [m k])
      (output y [m] (preduce k.0 + (combine m.0 m (sum k (partition m.0 m (partition k.0 k x))))))))",
                        "combine of m.0 inside a kernel");
}

TEST(LowerErrors, PartitionOfAComputedTile) {
  expect_lowering_error(R"((program t (dims (m 4) (k 6)) (input x f32 [m k])
      (let xr (partition m.0 m x))
      (output y [m k] (combine m.0 m (combine k.0 k (partition k.0 k (mul xr 2)))))))",
                        "partition of k.0 over a value computed inside the kernel (mul)");
}

TEST(LowerErrors, MoreThanThreeGridAxes) {
  expect_lowering_error(R"((program t (dims (a 2) (b 2) (c 2) (d 2)) (input x f32 [a b c d])
      (output y [a b c d] (combine a.0 a (combine b.0 b (combine c.0 c (combine d.0 d
        (partition d.0 d (partition c.0 c (partition b.0 b (partition a.0 a x)))))))))))",
                        "needs 4 grid axes (d.0 c.0 b.0 a.0); at most 3 are supported");
}

TEST(LowerErrors, OutputThatIsAnInput) {
  expect_lowering_error(R"((program t (dims (m 4)) (input x f32 [m]) (output y [m] x)))",
                        "output y is the input x itself");
}

TEST(LowerErrors, UntypedProgram) {
  Program p = parse_program("(program t (dims (m 4)) (input x f32 [m]) (output y [m] (exp x)))");
  EXPECT_THROW(lower_program(p), Error);
}

}  // namespace
}  // namespace eqf
