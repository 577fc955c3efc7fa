// The partitioner: every subgraph is a valid program, running the subgraphs
// in order with the reference interpreter computes the original outputs, the
// bound holds, and identical layers hash alike.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/partition/partition.h"
#include "gen_program.h"

namespace eqf {
namespace {

// Runs the subgraphs in order on the original program's inputs and returns
// the original outputs, each subgraph re-parsed from its printed text (so the
// text the search receives is what is checked).
std::vector<Tensor64> run_partition(const Program& p, const Partition& part, const std::vector<Tensor64>& inputs) {
  std::vector<Tensor64> boundary(part.boundaries.size());
  std::vector<Tensor64> outputs(p.outputs().size());
  std::vector<bool> done(p.outputs().size(), false);
  for (size_t s = 0; s < part.subgraphs.size(); ++s) {
    const Subgraph& sg = part.subgraphs[s];
    Program q = parse_and_check(print_program(sg.program), "<subgraph>");
    std::vector<Tensor64> in;
    for (size_t k = 0; k < sg.inputs.size(); ++k) {
      const SubgraphInput& src = sg.inputs[k];
      if (src.boundary) {
        EXPECT_LT(part.boundaries[src.index].producer, int(s)) << "a boundary read before it is produced";
        // Read in the layout it was written in.
        EXPECT_EQ(sg.program.inputs()[k].layout, part.boundaries[src.index].layout) << part.boundaries[src.index].name;
        in.push_back(boundary[src.index]);
      } else {
        in.push_back(inputs[src.index]);
      }
    }
    std::vector<Tensor64> out = evaluate(q, in);
    for (size_t k = 0; k < sg.outputs.size(); ++k) {
      if (sg.outputs[k].boundary >= 0) {
        boundary[size_t(sg.outputs[k].boundary)] = out[k];
        EXPECT_EQ(sg.program.outputs()[k].layout, part.boundaries[size_t(sg.outputs[k].boundary)].layout);
      }
      if (sg.outputs[k].original_output >= 0) {
        outputs[size_t(sg.outputs[k].original_output)] = out[k];
        done[size_t(sg.outputs[k].original_output)] = true;
      }
    }
  }
  for (size_t o = 0; o < done.size(); ++o) EXPECT_TRUE(done[o]) << "output " << o << " is computed by no subgraph";
  return outputs;
}

// The value of a literal (a constant, or arithmetic on constants), NaN if
// it is none.
double literal_value(const Program& p, NodeId n) {
  const Node& node = p.node(n);
  auto kids = p.children(n);
  switch (node.op) {
    case Op::Const: return attr_f64(node.attrs);
    case Op::Add: return literal_value(p, kids[0]) + literal_value(p, kids[1]);
    case Op::Sub: return literal_value(p, kids[0]) - literal_value(p, kids[1]);
    case Op::Mul: return literal_value(p, kids[0]) * literal_value(p, kids[1]);
    case Op::Div: return literal_value(p, kids[0]) / literal_value(p, kids[1]);
    default: return std::nan("");
  }
}

bool is_literal(const Program& p, NodeId n, double value) { return literal_value(p, n) == value; }

// What the value of n is a mere copy of (x + 0, x * 1, a layout op of x,
// -(-x)): the search has no candidate for a program that outputs a copy of
// its input.
NodeId copied_value(const Program& p, NodeId n) {
  for (;;) {
    const Node& node = p.node(n);
    auto kids = p.children(n);
    if (op_has(node.op, kLayout)) n = kids[0];
    else if ((node.op == Op::Add || node.op == Op::Sub) && is_literal(p, kids[1], 0)) n = kids[0];
    else if (node.op == Op::Add && is_literal(p, kids[0], 0)) n = kids[1];
    else if ((node.op == Op::Mul || node.op == Op::Div) && is_literal(p, kids[1], 1)) n = kids[0];
    else if (node.op == Op::Mul && is_literal(p, kids[0], 1)) n = kids[1];
    else if (node.op == Op::Neg && p.node(kids[0]).op == Op::Neg) n = p.children(kids[0])[0];
    else return n;
  }
}

bool has_wide_dim(const Program& p, NodeId n) {
  const Type& t = p.type(n).get();
  if (t.is_tuple) return false;
  for (Symbol d : t.tensor().dims)
    if (p.dims.find(d)->extent > 1) return true;
  return false;
}

// A value the partitioner must not cut at: a tuple, a value without a dim of
// extent > 1, or one that may be a copy (a layout op, or arithmetic with a
// literal operand).
bool may_not_cross(const Program& p, NodeId n) {
  if (!has_wide_dim(p, n) || op_has(p.node(n).op, kLayout)) return true;
  for (NodeId c : p.children(n)) {
    const Type& t = p.type(c).get();
    if (!t.is_tuple && t.tensor().literal) return true;
    if (p.node(n).op == Op::Neg && p.node(c).op == Op::Neg) return true;
  }
  return false;
}

// Checks one partition of p and returns it.
Partition check_partition(const Program& p, int max_ops, uint64_t seed, const std::string& what) {
  SCOPED_TRACE(what + " with at most " + std::to_string(max_ops) + " ops");
  Partition part = partition_program(p, {.max_ops = max_ops});
  EXPECT_FALSE(part.subgraphs.empty());
  int ops = 0;
  for (const Subgraph& sg : part.subgraphs) {
    ops += sg.ops;
    bool forced = false;
    for (NodeId n : sg.nodes) forced = forced || may_not_cross(p, n);
    // A subgraph may exceed the bound only where a value must not cross a cut.
    if (!forced) {
      EXPECT_LE(sg.ops, max_ops) << sg.program.name.str();
    }
    // Every boundary it outputs has a dim of extent > 1, and no output is a
    // copy of one of its inputs (unless it is an original output copying an
    // original input: a copy in any subgraph).
    const Program& q = sg.program;
    for (size_t k = 0; k < sg.outputs.size(); ++k) {
      NodeId v = q.outputs()[k].value;
      if (sg.outputs[k].boundary >= 0) {
        EXPECT_TRUE(has_wide_dim(q, v)) << "boundary " << part.boundaries[size_t(sg.outputs[k].boundary)].name;
      }
      NodeId source = copied_value(q, v);
      if (q.node(source).op != Op::Input) continue;
      size_t in = 0;
      while (q.inputs()[in].node != source) ++in;
      EXPECT_TRUE(sg.outputs[k].boundary < 0 && !sg.inputs[in].boundary)
          << "output " << q.outputs()[k].name.str() << " of " << q.name.str() << " is a copy of its input "
          << q.inputs()[in].name.str();
    }
    EXPECT_EQ(sg.hash, structural_hash(sg.program));
    EXPECT_EQ(sg.program.inputs().size(), sg.inputs.size());
    EXPECT_EQ(sg.program.outputs().size(), sg.outputs.size());
  }
  EXPECT_EQ(ops, part.total_ops);
  EXPECT_EQ(part.total_ops, count_ops(p));
  std::vector<Tensor64> inputs = random_inputs(p, seed);
  std::vector<Tensor64> want = evaluate(p, inputs);
  std::vector<Tensor64> got = run_partition(p, part, inputs);
  for (size_t o = 0; o < want.size(); ++o) {
    EXPECT_EQ(got[o].dims, want[o].dims) << "output " << o;
    // The same float64 operations in the same order: equal up to rounding
    // that cannot happen, so a tight bound.
    EXPECT_LE(max_relative_error(got[o], want[o]), 1e-12) << "output " << o;
  }
  return part;
}

TEST(Partition, ExamplesEvaluateLikeTheWholeProgram) {
  int programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator("examples")) {
    std::filesystem::path naive = entry.path() / "naive.eqf";
    if (!std::filesystem::exists(naive)) continue;
    Program p = parse_and_check_file(naive.string());
    for (int max_ops : {1, 2, 3, 5, 1000}) check_partition(p, max_ops, 3, naive.string());
    ++programs;
  }
  EXPECT_GE(programs, 6);
}

TEST(Partition, RandomProgramsEvaluateLikeTheWholeProgram) {
  testgen::GenOptions options;
  options.tiled = false;
  options.nonfinite_ops = false;
  options.min_ops = 6;
  options.max_ops = 24;
  int split = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    testgen::GeneratedProgram g = testgen::generate_program(seed, options);
    for (int max_ops : {1, 2, 4, 7}) {
      Partition part = check_partition(g.plain, max_ops, seed, "random program " + std::to_string(seed));
      split += part.subgraphs.size() > 1;
    }
  }
  EXPECT_GT(split, 100) << "the random programs should mostly be cut";
}

TEST(Partition, WorkloadsAtFullSizeKeepTheBound) {
  // Paper sizes: too large to evaluate here, but the cuts and the
  // subprograms' types are checked.
  for (const auto& entry : std::filesystem::directory_iterator("examples/workloads")) {
    if (entry.path().extension() != ".eqf") continue;
    Program p = parse_and_check_file(entry.path().string());
    for (int max_ops : {1, 4}) {
      Partition part = partition_program(p, {.max_ops = max_ops});
      for (const Subgraph& sg : part.subgraphs) {
        // Beyond the bound only where a value must not cross a cut (the
        // split of a matmul's result stays with the matmul).
        bool forced = false;
        for (NodeId n : sg.nodes) forced = forced || may_not_cross(p, n);
        if (!forced) {
          EXPECT_LE(sg.ops, max_ops) << entry.path();
        }
        EXPECT_LE(sg.ops, max_ops + 1) << entry.path();
        EXPECT_NO_THROW(parse_and_check(print_program(sg.program))) << entry.path();
      }
    }
  }
}

TEST(Partition, WholeProgramWhenItFits) {
  Program p = parse_and_check_file("examples/attention_decode/naive.eqf");
  Partition part = partition_program(p, {.max_ops = 1000});
  ASSERT_EQ(part.subgraphs.size(), 1u);
  EXPECT_TRUE(part.boundaries.empty());
  EXPECT_EQ(part.boundary_bytes, 0);
}

// A stack of residual layers x + W2 silu(W1 rmsnorm(x)), each with its own
// hidden dim name (as the front end names them) and weights.
std::string stack_text(int layers, int64_t hidden = 8, int64_t width = 16) {
  std::string dims = "(dims (m 4) (k " + std::to_string(hidden) + ")";
  std::string inputs = "  (input x f16 [m k])\n";
  std::string lets;
  std::string h = "x";
  for (int i = 0; i < layers; ++i) {
    std::string n = "n" + std::to_string(i), s = std::to_string(i);
    dims += " (" + n + " " + std::to_string(width) + ")";
    inputs += "  (input w1_" + s + " f16 [k " + n + "])\n  (input w2_" + s + " f16 [" + n + " k])\n";
    lets += "  (let r" + s + " (rsqrt (add (div (sum k (mul " + h + " " + h + ")) " + std::to_string(hidden) +
            ") 1e-6)))\n";
    lets += "  (let u" + s + " (silu (matmul k (mul " + h + " r" + s + ") w1_" + s + ")))\n";
    lets += "  (let h" + s + " (add " + h + " (matmul " + n + " u" + s + " w2_" + s + ")))\n";
    h = "h" + s;
  }
  return "(program stack\n  " + dims + ")\n" + inputs + lets + "  (output y [m k] " + h + "))\n";
}

TEST(Partition, IdenticalLayersHashAlike) {
  Program p = parse_and_check(stack_text(3), "<stack>");
  ASSERT_EQ(count_ops(p), 30);
  for (int max_ops : {10, 12, 14}) {
    Partition part = check_partition(p, max_ops, 5, "three layers");
    ASSERT_EQ(part.subgraphs.size(), 3u) << "one subgraph per layer with at most " << max_ops << " ops";
    EXPECT_EQ(part.subgraphs[0].hash, part.subgraphs[1].hash);
    EXPECT_EQ(part.subgraphs[1].hash, part.subgraphs[2].hash);
    // The cuts are the residual stream between layers: one [m k] tensor each.
    ASSERT_EQ(part.boundaries.size(), 2u);
    EXPECT_EQ(part.boundaries[0].bytes, 4 * 8 * 2);
  }
  // Different sizes are different subgraphs.
  Program q = parse_and_check(stack_text(1, 8, 32), "<wider>");
  Partition wider = partition_program(q, {.max_ops = 10});
  Partition narrow = partition_program(p, {.max_ops = 10});
  EXPECT_NE(wider.subgraphs[0].hash, narrow.subgraphs[0].hash);
}

// Distinct structural hashes among a partition's subgraphs.
size_t distinct_subgraphs(const Partition& part) {
  std::set<uint64_t> hashes;
  for (const Subgraph& sg : part.subgraphs) hashes.insert(sg.hash);
  return hashes.size();
}

TEST(Partition, CutsRepeatWithTheLayers) {
  // Eight layers of 10 operators. Where a layer does not fit the bound, the
  // cheapest cuts alone fall at shifting offsets in the layers (at a bound
  // of 9: 6 distinct subgraphs, each a search); cuts that repeat with the
  // layers give one subgraph per piece of a layer, plus the first layer's
  // (it reads the program's input, not an operator) and the last's.
  Program p = parse_and_check(stack_text(8), "<stack8>");
  ASSERT_EQ(count_ops(p), 80);
  for (int max_ops : {4, 7, 9, 15, 25}) {
    Partition part = check_partition(p, max_ops, 7, "eight layers");
    size_t per_layer = size_t((10 + max_ops - 1) / max_ops);
    EXPECT_LE(distinct_subgraphs(part), per_layer + 2) << "bound " << max_ops;
    // Every piece of the middle layers is the same subgraph as the
    // matching piece of the next layer.
    if (part.period > 0) {
      EXPECT_EQ(part.period % 10, 0) << "bound " << max_ops;
      EXPECT_GE(part.units, 2);
    }
  }
  // At a bound of 9 the cheapest cuts straddle layers; the repeated ones win.
  Partition nine = partition_program(p, {.max_ops = 9});
  EXPECT_EQ(nine.period, 10);
  EXPECT_LE(distinct_subgraphs(nine), 4u);
}

TEST(Partition, NoRepeatNoPeriod) {
  Program p = parse_and_check_file("examples/attention_decode/naive.eqf");
  for (int max_ops : {1, 2, 3}) EXPECT_EQ(partition_program(p, {.max_ops = max_ops}).period, 0);
}

TEST(Partition, StructuralHashIgnoresNamesOnly) {
  const char* a = R"((program a (dims (m 4) (k 8)) (input x f32 [m k]) (input g f32 [k])
                      (let r (rsqrt (div (sum k (mul x x)) 8))) (output y [m k] (mul (mul x r) g))))";
  const char* b = R"((program other (dims (rows 4) (cols 8)) (input u f32 [rows cols]) (input w f32 [cols])
                      (let inv (rsqrt (div (sum cols (mul u u)) 8))) (output out [rows cols] (mul (mul u inv) w))))";
  const char* extent = R"((program a (dims (m 4) (k 16)) (input x f32 [m k]) (input g f32 [k])
                      (let r (rsqrt (div (sum k (mul x x)) 8))) (output y [m k] (mul (mul x r) g))))";
  const char* dtype = R"((program a (dims (m 4) (k 8)) (input x f16 [m k]) (input g f16 [k])
                      (let r (rsqrt (div (sum k (mul x x)) 8))) (output y [m k] (mul (mul x r) g))))";
  const char* layout = R"((program a (dims (m 4) (k 8)) (input x f32 [k m]) (input g f32 [k])
                      (let r (rsqrt (div (sum k (mul x x)) 8))) (output y [m k] (mul (mul x r) g))))";
  const char* op = R"((program a (dims (m 4) (k 8)) (input x f32 [m k]) (input g f32 [k])
                      (let r (sqrt (div (sum k (mul x x)) 8))) (output y [m k] (mul (mul x r) g))))";
  uint64_t h = structural_hash(parse_program(a));
  EXPECT_EQ(h, structural_hash(parse_program(b)));
  EXPECT_EQ(canonical_text(parse_program(a)), canonical_text(parse_program(b)));
  for (const char* other : {extent, dtype, layout, op}) EXPECT_NE(h, structural_hash(parse_program(other))) << other;
}

TEST(Partition, SoftmaxChainStaysWholeWhenTheBoundAllows) {
  // Sliding-window GQA decode as the front end writes it (15 operators):
  // query projection, masked softmax attention over t, output projection.
  // Every cut inside the attention holds a [.., t] value; the cheap cuts
  // are the projections' outputs.
  const char* text = R"((program sliding_window_gqa_decode
    (dims (m 2) (k 64) (n 64) (h 2) (t 48) (e 16) (f 16) (k1 64) (n1 64) (h1 2) (d 32) (d1 4))
    (input x f16 [m k]) (input wq f16 [k n]) (input k_cache f16 [m h t e]) (input v_cache f16 [m h t f])
    (input wo f16 [k1 n1])
    (let matmul_ (matmul k x wq))
    (let view (split d h1 e (split n h d matmul_)))
    (let div_ (div (matmul e view k_cache) 4))
    (let masked_fill (where (lt (iota t) 32) -inf div_))
    (let softmax_max (max t masked_fill))
    (let softmax_exp (exp (sub masked_fill softmax_max)))
    (let softmax (div softmax_exp (sum t softmax_exp)))
    (let reshape (merge d1 f k1 (merge h h1 d1 (matmul t softmax v_cache))))
    (output out [m n1] (matmul k1 reshape wo))))";
  Program p = parse_and_check(text, "<swa>");
  ASSERT_EQ(count_ops(p), 15) << "the mask (iota, lt) depends on no input: not an operator";
  Symbol t = Symbol::intern("t");
  for (int max_ops : {9, 10, 12, 14}) {
    Partition part = check_partition(p, max_ops, 11, "sliding-window attention");
    ASSERT_GE(part.subgraphs.size(), 2u);
    for (const BoundaryTensor& b : part.boundaries)
      EXPECT_EQ(std::find(b.layout.begin(), b.layout.end(), t), b.layout.end())
          << "boundary " << b.name << " holds the key dim t (bound " << max_ops << ")";
    // The mask is computed where it is used, next to its `where`.
    for (const Subgraph& sg : part.subgraphs)
      for (const InputDecl& in : sg.program.inputs()) EXPECT_EQ(in.name.str().find("lt"), std::string::npos);
  }
}

TEST(Partition, AnOutputThatCrossesACutIsDeclaredOnce) {
  // s is an original output and read by the next subgraph: its producer
  // declares it once (with both roles), in the output's layout, which the
  // consumer reads. The output is named as the boundary's name would be, as
  // in a subgraph that is partitioned again (bug 48: "duplicate output
  // `b0_s`").
  const char* text = R"((program dup (dims (m 3) (k 8)) (input x f32 [m k])
                      (let s (exp x))
                      (output b0_s [k m] s)
                      (output y [m k] (log s))))";
  Program p = parse_and_check(text, "<dup>");
  Partition part = check_partition(p, 1, 7, "an output read by a later subgraph");
  ASSERT_EQ(part.subgraphs.size(), 2u);
  ASSERT_EQ(part.boundaries.size(), 1u);
  const Subgraph& first = part.subgraphs[0];
  ASSERT_EQ(first.outputs.size(), 1u);
  EXPECT_EQ(first.outputs[0].original_output, 0);
  EXPECT_EQ(first.outputs[0].boundary, 0);
  EXPECT_EQ(first.program.outputs()[0].name.str(), "b0_s");
  std::vector<Symbol> km{Symbol::intern("k"), Symbol::intern("m")};
  EXPECT_EQ(part.boundaries[0].layout, km);
  EXPECT_EQ(part.subgraphs[1].program.inputs()[0].layout, km);
  EXPECT_NE(part.boundaries[0].name, "b0_s");
  EXPECT_EQ(first.bytes, 2 * 3 * 8 * 4) << "x read once, s written once";
}

TEST(Partition, BoundaryNamesAreNoneOfTheProgramsNames) {
  // The boundary of s would be b0_s, the name of an input that its
  // consumer reads too, and b1_t, a let's name.
  const char* text = R"((program names (dims (k 8)) (input x f32 [k]) (input b0_s f32 [k])
                      (let s (exp x))
                      (let b1_t (log s))
                      (output y [k] (mul b1_t (add s b0_s)))))";
  Program p = parse_and_check(text, "<names>");
  Partition part = check_partition(p, 1, 9, "boundary names");
  ASSERT_EQ(part.subgraphs.size(), 4u);
  std::set<std::string> names;
  for (const BoundaryTensor& b : part.boundaries) {
    EXPECT_TRUE(names.insert(b.name).second) << b.name;
    EXPECT_NE(b.name, "b0_s");
    EXPECT_NE(b.name, "b1_t");
  }
}

TEST(Partition, NoCutAtAValueWithoutAWideDim) {
  // A 1-D layer norm: the mean and the variance are rank 0, and with a dim
  // of extent 1 they are [o=1]. A subgraph that outputs such a value has no
  // candidate (bug 45: boundaries f32[] at --max-ops 3, and optimize found
  // no candidate for a subgraph's single operator).
  for (const char* text : {R"((program m3 (dims (k 7)) (input x f32 [k])
                              (let mean (div (sum k x) 7)) (let c (sub x mean))
                              (let var (div (sum k (mul c c)) 7))
                              (output y [k] (mul c (rsqrt (add var 1e-05))))))",
                           R"((program m3 (dims (o 1) (k 7)) (input x f32 [o k])
                              (let mean (div (sum k x) 7)) (let c (sub x mean))
                              (let var (div (sum k (mul c c)) 7))
                              (output y [o k] (mul c (rsqrt (add var 1e-05))))))"}) {
    Program p = parse_and_check(text, "<m3>");
    for (int max_ops : {1, 2, 3, 4, 5, 8}) {
      Partition part = check_partition(p, max_ops, 13, text);
      EXPECT_GE(part.subgraphs.size(), 2u) << "c and c * c can be cut at";
      for (const BoundaryTensor& b : part.boundaries)
        EXPECT_TRUE(std::find(b.shape.begin(), b.shape.end(), 7) != b.shape.end())
            << "boundary " << b.name << " at most " << max_ops;
    }
  }
}

TEST(Partition, NoCutAtACopy) {
  // c, c2 and c3 are copies of a (plus 0, times a folded 1, renamed): a
  // subgraph that outputs one of them without computing a would be a mere
  // copy of its input, which has no candidate; z is an output that copies a.
  const char* text = R"((program copies (dims (k 8) (j 8)) (input x f32 [k])
                      (let a (exp x))
                      (let c (add a 0))
                      (let c2 (mul (div 2 2) (neg (neg a))))
                      (let c3 (rename k j a))
                      (output z [j] c3)
                      (output y [k] (mul (mul (log c) (sqrt c)) (mul (tanh c2) (rename j k (sigmoid c3)))))))";
  Program p = parse_and_check(text, "<copies>");
  for (int max_ops : {1, 2, 3, 4}) {
    Partition part = check_partition(p, max_ops, 17, "copies");
    EXPECT_GE(part.subgraphs.size(), 2u);
  }
}

TEST(Partition, RefusesTiledProgramsAndBadBounds) {
  Program p = parse_and_check_file("examples/layernorm/naive.eqf");
  EXPECT_THROW(partition_program(p, {.max_ops = 0}), Error);
  for (const auto& entry : std::filesystem::directory_iterator("examples/layernorm")) {
    if (entry.path().filename() == "naive.eqf" || entry.path().extension() != ".eqf") continue;
    Program tiled = parse_and_check_file(entry.path().string());
    EXPECT_THROW(partition_program(tiled, {.max_ops = 4}), Error) << entry.path();
    return;
  }
  FAIL() << "examples/layernorm has no tiled variant";
}

}  // namespace
}  // namespace eqf
