// libFuzzer harness for the IR text format (docs/ir.md).
//
// Every input goes through parse -> print -> parse -> print -> typecheck and,
// when the program is small, the reference interpreter. Bad text must be an
// eqf::Error, never a crash, a hang or a sanitizer report; text that parses
// must round-trip:
//   - print(parse(text)) parses, to a program that is same_as the first, and
//     printing that again gives the same text (docs/ir.md, "Text format");
//   - the two programs agree on typing: both type-check or both fail, and
//     their outputs get the same (interned) types;
//   - evaluated on the same inputs and block sizes, they give bit-identical
//     outputs, or both fail with an eqf::Error.
// A broken property aborts with both texts on stderr, which libFuzzer
// records as a crash.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"

namespace {

using namespace eqf;

[[noreturn]] void broken(const char* property, std::string_view input, const std::string& printed,
                         const std::string& detail) {
  std::fprintf(stderr,
               "\n==== round-trip property broken: %s\n---- input\n%.*s\n---- printed\n%s\n---- detail\n%s\n",
               property, int(input.size()), input.data(), printed.c_str(), detail.c_str());
  std::abort();
}

// Evaluation is attempted only where it is cheap: every declared extent
// small, and a bound on the elements of every node's value (all of a value's
// dims at full extent, times the coordinates of each axis, which is at most
// the extent it splits) well under what a fuzzing iteration may spend.
constexpr int64_t kMaxExtent = 64;
constexpr int64_t kMaxNodeWork = int64_t(1) << 16;
constexpr int64_t kMaxProgramWork = int64_t(1) << 20;

int64_t saturating_mul(int64_t a, int64_t b) {
  if (a != 0 && b > kMaxProgramWork / a) return kMaxProgramWork + 1;
  return a * b;
}

int64_t dim_extent(const Program& p, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  if (!info) return kMaxProgramWork + 1;
  if (info->collected_from) {
    // At most extent(d) coordinates, whatever the level.
    const DimInfo* base = p.dims.find(info->collected_from->dim);
    return base && !base->collected_from ? base->extent : kMaxProgramWork + 1;
  }
  return info->extent;
}

bool cheap_to_evaluate(const Program& p) {
  for (const DimInfo& d : p.dims.all())
    if (!d.collected_from && d.extent > kMaxExtent) return false;
  int64_t total = 0;
  for (uint32_t i = 0; i < p.size(); ++i) {
    const Type& t = p.type(NodeId{i}).get();
    int64_t node = 0;
    for (const TensorType& part : t.parts) {
      int64_t n = 1;
      for (Symbol d : part.dims) n = saturating_mul(n, dim_extent(p, d));
      for (const AxisState& a : part.delta) n = saturating_mul(n, dim_extent(p, a.axis.dim));
      const Node& node_rec = p.node(NodeId{i});
      if (node_rec.op == Op::MatMul || node_rec.op == Op::TileMatMul)
        n = saturating_mul(n, dim_extent(p, attr_sym(node_rec.attrs, 0)));
      node += n;
    }
    // A reduction reads its operand: count the operand's size too.
    for (NodeId c : p.children(NodeId{i}))
      for (const TensorType& part : p.type(c).get().parts) {
        int64_t n = 1;
        for (Symbol d : part.dims) n = saturating_mul(n, dim_extent(p, d));
        for (const AxisState& a : part.delta) n = saturating_mul(n, dim_extent(p, a.axis.dim));
        node += n;
      }
    if (node > kMaxNodeWork) return false;
    total += node;
    if (total > kMaxProgramWork) return false;
  }
  return true;
}

bool same_bits(const Tensor64& a, const Tensor64& b) {
  return a.dims == b.dims && a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(double)) == 0);
}

struct Outcome {
  bool ok = false;
  std::vector<Tensor64> outputs;
  std::string error;
};

Outcome run(const Program& p, const std::vector<Tensor64>& inputs, const BlockSizes& blocks) {
  Outcome o;
  try {
    o.outputs = evaluate(p, inputs, blocks);
    o.ok = true;
  } catch (const Error& e) {
    o.error = e.message();
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  std::optional<Program> p;
  try {
    p.emplace(parse_program(input, "<fuzz>"));
  } catch (const Error&) {
    return 0;  // bad text: an error with a position is the correct outcome
  }

  const std::string printed = print_program(*p);
  std::optional<Program> q;
  try {
    q.emplace(parse_program(printed, "<printed>"));
  } catch (const Error& e) {
    broken("the printed text does not parse", input, printed, e.what());
  }
  if (!p->same_as(*q)) broken("parse(print(p)) is not the same program as p", input, printed, "");
  const std::string reprinted = print_program(*q);
  if (reprinted != printed) broken("printing twice gives different text", input, printed, reprinted);

  std::string p_error, q_error;
  bool p_typed = false, q_typed = false;
  try {
    typecheck(*p);
    p_typed = true;
  } catch (const Error& e) {
    p_error = e.message();
  }
  try {
    typecheck(*q);
    q_typed = true;
  } catch (const Error& e) {
    q_error = e.message();
  }
  if (p_typed != q_typed)
    broken("the program and its printed form disagree on typing", input, printed,
           "original: " + (p_typed ? std::string("typed") : p_error) +
               "\nprinted:  " + (q_typed ? std::string("typed") : q_error));
  if (!p_typed) return 0;
  for (size_t i = 0; i < p->outputs().size(); ++i)
    if (p->type(p->outputs()[i].value) != q->type(q->outputs()[i].value))
      broken("an output has a different type after the round trip", input, printed,
             "output " + std::string(p->outputs()[i].name.str()));
  if (print_program(*p) != printed) broken("type-checking changed the printed text", input, printed, "");

  if (!cheap_to_evaluate(*p)) return 0;
  std::vector<Tensor64> inputs;
  BlockSizes blocks;
  try {
    inputs = random_inputs(*p, 1);
    blocks = random_block_sizes(*p, 2);
  } catch (const Error&) {
    return 0;
  }
  const Outcome a = run(*p, inputs, blocks);
  const Outcome b = run(*q, inputs, blocks);
  if (a.ok != b.ok)
    broken("the program and its printed form disagree on evaluation", input, printed,
           "original: " + (a.ok ? std::string("evaluated") : a.error) +
               "\nprinted:  " + (b.ok ? std::string("evaluated") : b.error));
  if (a.ok)
    for (size_t i = 0; i < a.outputs.size(); ++i)
      if (!same_bits(a.outputs[i], b.outputs[i]))
        broken("the printed program computes different values", input, printed,
               "output " + std::string(p->outputs()[i].name.str()));
  return 0;
}
