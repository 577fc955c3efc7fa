#include "eqiforge/extract/validity.h"

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"

namespace eqf {

std::optional<std::string> check_candidate(const Program& p, const ExtractLimits& limits, LoweredProgram* lowered) {
  if (p.types().size() != p.size()) return "the program is not type-checked";
  for (uint32_t i = 0; i < p.size(); ++i)
    if (p.node(NodeId{i}).op == Op::MatMul)
      return "matmul " + print_term(p, NodeId{i}).substr(0, 60) +
             " is a global contraction; inside kernels contractions are tile_matmul";
  LoweredProgram lp;
  try {
    lp = lower_program(p);
  } catch (const Error& e) {
    return e.message();
  }
  for (const Kernel& k : lp.kernels) {
    if (k.grid.empty())
      return "kernel " + k.name + " has no grid axis: its root is computed outside any kernel region";
    if (int(k.grid.size()) > limits.max_grid_axes)
      return "kernel " + k.name + " has " + std::to_string(k.grid.size()) + " grid axes (limit " +
             std::to_string(limits.max_grid_axes) + ")";
    for (size_t i = 0; i < k.loops.size(); ++i) {
      int depth = 1;
      for (int l = k.loops[i].parent; l >= 0; l = k.loops[size_t(l)].parent) ++depth;
      if (depth > limits.max_loop_depth)
        return "kernel " + k.name + " nests " + std::to_string(depth) + " loops (limit " +
               std::to_string(limits.max_loop_depth) + ")";
    }
  }
  if (lowered) *lowered = std::move(lp);
  return std::nullopt;
}

}  // namespace eqf
