// `eqiforge-opt estimate`: the cost model's bound of one tiled program, at
// its best block sizes or at given ones.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/lower/kernel.h"
#include "tools/verb_util.h"
#include "tools/verbs.h"

namespace eqf::cli {

int verb_estimate(const Args& args) {
  Program p = load_checked(args.operand(0));
  Target target = load_target(args.value("--target").value_or("h200"));
  if (args.has("--stages")) target.pipeline_stages = int(args.integer("--stages", target.pipeline_stages, 1, 16));
  const BlockSizes given = parse_blocks(args);
  LoweredProgram lowered = lower_program(p);
  CostModel cost(target);
  ProgramEstimate e;
  if (given.empty()) {
    e = cost.estimate(p, lowered);
    // Without --stages, the best of the target's stage choices, as
    // extraction's leading candidates get.
    if (!args.has("--stages")) e = cost.best_stages(p, lowered, e);
  } else {
    e = cost.evaluate(p, lowered, given);  // names the axes given no size
  }
  if (args.has("--json")) {
    std::ostringstream o;
    o << "{\"target\": " << json_quoted(target.name) << ", \"num_stages\": " << e.stages
      << ", \"feasible\": " << (e.feasible ? "true" : "false");
    if (!e.feasible) o << ", \"why_infeasible\": " << json_quoted(e.why_infeasible);
    o << ", \"estimated_us\": " << json_number(e.seconds * 1e6) << ", \"block_sizes\": {";
    size_t j = 0;
    for (const auto& [axis, b] : e.blocks) o << (j++ ? ", " : "") << json_quoted(axis.name()) << ": " << b;
    o << "}, \"kernels\": [";
    for (size_t k = 0; k < e.kernels.size(); ++k) {
      const KernelEstimate& ke = e.kernels[k];
      o << (k ? ", " : "") << "{\"name\": " << json_quoted(ke.name) << ", \"programs\": " << json_number(ke.programs)
        << ", \"estimated_us\": " << json_number(ke.seconds * 1e6) << ", \"bound\": " << json_quoted(ke.bound)
        << ", \"bytes\": " << json_number(ke.bytes) << ", \"memory_us\": " << json_number(ke.memory_s * 1e6)
        << ", \"mma_us\": " << json_number(ke.mma_s * 1e6) << ", \"fp_us\": " << json_number(ke.other_s * 1e6)
        << ", \"latency_us\": " << json_number(ke.latency_s * 1e6)
        << ", \"register_bytes\": " << json_number(ke.register_bytes)
        << ", \"smem_bytes\": " << json_number(ke.smem_bytes) << "}";
    }
    o << "]}\n";
    std::cout << o.str();
    return kExitOk;
  }
  std::printf("%s at %d stages: %.2f us%s\n", target.name.c_str(), e.stages, e.seconds * 1e6,
              e.feasible ? "" : ("  (infeasible: " + e.why_infeasible + ")").c_str());
  std::printf("blocks:");
  for (const auto& [axis, b] : e.blocks) std::printf(" %s=%lld", axis.name().c_str(), (long long)b);
  std::printf("\n");
  for (const KernelEstimate& ke : e.kernels)
    std::printf(
        "  kernel %s  %.0f programs  %.2f us (%s): memory %.2f, mma %.2f, fp %.2f, latency %.2f us; "
        "registers %.0f KiB, shared %.0f KiB\n",
        ke.name.c_str(), ke.programs, ke.seconds * 1e6, ke.bound.c_str(), ke.memory_s * 1e6, ke.mma_s * 1e6,
        ke.other_s * 1e6, ke.latency_s * 1e6, ke.register_bytes / 1024, ke.smem_bytes / 1024);
  return kExitOk;
}

}  // namespace eqf::cli
