// `eqiforge-opt extract`: e-graph, extraction with early compression, ranking.
#include "tools/verbs_extract.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "eqiforge/cost/cost_model.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/egraph/schedule.h"
#include "eqiforge/extract/extract.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"
#include "tools/verb_util.h"

namespace eqf::cli {
namespace {

std::string axes_json(const std::vector<Axis>& axes) {
  std::string out = "[";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + json_quoted(axes[i].name());
  return out + "]";
}

// An estimate's launch parameters: "block_sizes": {...}, "num_stages": N.
std::string launch_json(const ProgramEstimate& e) {
  std::string out = "\"block_sizes\": {";
  size_t j = 0;
  for (const auto& [axis, b] : e.blocks) out += (j++ ? ", " : "") + json_quoted(axis.name()) + ": " + std::to_string(b);
  return out + "}, \"num_stages\": " + std::to_string(e.stages);
}

std::string axes_text(const std::vector<Axis>& axes) {
  std::string out;
  for (Axis a : axes) out += (out.empty() ? "" : " ") + a.name();
  return out.empty() ? "-" : out;
}

}  // namespace

int verb_extract(const Args& args) {
  Program p = load_checked(args.operand(0));
  // Options, e-graph and extraction as `emit --candidate` builds them (verb_util.h).
  ExtractSetup setup;
  read_extract_options(args, p, setup);
  ExtractOptions& opt = setup.options;
  const CostModel* cost = setup.cost.get();
  const size_t top = size_t(args.unsigned_integer("--top", 10));

  EGraph g;
  std::vector<EClassId> roots;
  Saturation sat = build_egraph(args, p, g, roots);
  if (std::optional<std::string> path = args.value("--explain")) {
    Program tiled = parse_and_check_file(*path);
    std::string missing;
    std::optional<std::vector<ENodeId>> nodes = find_program_nodes(g, tiled, &missing);
    if (!nodes) {
      std::printf("%s is not in the e-graph: no e-node for %s\n", path->c_str(), missing.c_str());
      return 1;
    }
    opt.only_nodes.assign(g.node_capacity(), false);
    for (ENodeId n : *nodes) opt.only_nodes[n.v] = true;
  }
  ExtractResult res = extract_candidates(g, roots, p.outputs(), opt);
  const ExtractStats& st = res.stats;
  const bool programs = args.has("--programs");

  if (args.has("--json")) {
    std::ostringstream o;
    o << "{\"mode\": " << json_quoted(extract_mode_name(opt.mode)) << ", \"order\": " << json_quoted(extract_order_name(opt.order))
      << ", \"enough\": " << (st.enough ? "true" : "false") << ", \"states_expanded\": " << st.states_expanded
      << ", \"complete_built\": " << st.complete_built << ", \"distinct\": " << st.distinct
      << ", \"reuse_twins\": " << st.reuse_twins << ", \"seconds\": " << json_number(st.seconds)
      << ", \"enumerate_seconds\": " << json_number(st.enumerate_seconds)
      << ", \"build_seconds\": " << json_number(st.build_seconds) << ", \"estimate_seconds\": " << json_number(st.estimate_seconds)
      << ", \"rank_seconds\": " << json_number(st.rank_seconds) << ", \"skipped_equivalent\": " << st.skipped_equivalent
      << ", \"pruned\": " << st.pruned << ", \"dead_ends\": " << st.dead_ends << ", \"invalid\": " << st.invalid
      << ", \"infeasible\": " << st.infeasible << ", \"staged_out\": " << st.staged_out << ", \"deferred\": " << st.deferred << ", \"limit_hit\": " << (st.limit_hit ? "true" : "false");
    if (st.limit_hit) o << ", \"limit\": " << json_quoted(st.limit);
    if (opt.memory_limit_bytes) o << ", \"extract_peak_memory_bytes\": " << st.peak_memory_bytes;
    o << ", \"egraph\": {\"enodes\": " << g.num_nodes() << ", \"eclasses\": " << g.num_classes();
    if (sat.ran)
      o << ", \"saturation_seconds\": " << json_number(sat.report.seconds) << ", \"stop\": "
        << json_quoted(stop_reason_name(sat.report.stop)) << ", \"memory_bytes\": " << sat.report.memory_bytes
        << ", \"peak_memory_bytes\": " << sat.report.peak_memory_bytes;
    o << "}";
    if (cost) o << ", \"target\": " << json_quoted(cost->target().name);
    o << ", \"candidates\": [";
    for (size_t i = 0; i < res.candidates.size() && i < top; ++i) {
      const Candidate& c = res.candidates[i];
      o << (i ? ", " : "") << "{\"rank\": " << i + 1;
      char key[24];
      std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(c.key));
      o << ", \"key\": " << json_quoted(key);
      if (c.estimate) {
        const ProgramEstimate& e = *c.estimate;
        o << ", \"estimated_us\": " << json_number(e.seconds * 1e6);
        if (opt.order == ExtractOrder::BestFirst) o << ", \"guide_us\": " << json_number(c.guide_seconds * 1e6);
        o << ", " << launch_json(e);
      }
      if (c.gemv_dot) {
        // A launch form's own estimate: where the tuner starts it.
        const ProgramEstimate& e = *c.gemv_dot;
        o << ", \"forms\": {\"gemv_dot\": {\"estimated_us\": " << json_number(e.seconds * 1e6) << ", "
          << launch_json(e) << "}}";
      }
      o << ", \"kernels\": [";
      for (size_t k = 0; k < c.lowered.kernels.size(); ++k) {
        const Kernel& kern = c.lowered.kernels[k];
        std::vector<Axis> loops;
        for (const Loop& l : kern.loops) loops.push_back(l.axis);
        o << (k ? ", " : "") << "{\"name\": " << json_quoted(kern.name) << ", \"grid\": " << axes_json(kern.grid)
          << ", \"loops\": " << axes_json(loops);
        if (c.estimate) {
          const KernelEstimate& ke = c.estimate->kernels[k];
          o << ", \"programs\": " << json_number(ke.programs) << ", \"estimated_us\": " << json_number(ke.seconds * 1e6)
            << ", \"bound\": " << json_quoted(ke.bound) << ", \"bytes\": " << json_number(ke.bytes)
            << ", \"mma_flops\": " << json_number(ke.mma_flops) << ", \"other_flops\": " << json_number(ke.other_flops)
            << ", \"masked\": " << (ke.masked ? "true" : "false");
        }
        o << "}";
      }
      o << "]";
      if (programs) o << ", \"program\": " << json_quoted(print_program(c.program));
      o << "}";
    }
    o << "]}\n";
    std::cout << o.str();
    return kExitOk;
  }

  std::printf("mode %s: %llu states expanded, %llu equivalent skipped, %llu complete built, %llu distinct "
              "(+%llu reuse twins), %.3f s (enumerate %.3f s: build %.3f s, estimate %.3f s; rank %.3f s)%s\n",
              std::string(extract_mode_name(opt.mode)).c_str(), (unsigned long long)st.states_expanded,
              (unsigned long long)st.skipped_equivalent, (unsigned long long)st.complete_built,
              (unsigned long long)st.distinct, (unsigned long long)st.reuse_twins, st.seconds, st.enumerate_seconds,
              st.build_seconds, st.estimate_seconds, st.rank_seconds,
              st.limit_hit ? (" [stopped: " + st.limit + " limit]").c_str() : "");
  std::printf("e-graph: %zu e-nodes, %zu e-classes", g.num_nodes(), g.num_classes());
  if (sat.ran)
    std::printf(" after %.3f s of saturation (%s)", sat.report.seconds,
                std::string(stop_reason_name(sat.report.stop)).c_str());
  std::printf("\n");
  if (st.invalid || st.infeasible || st.pruned || st.dead_ends)
    std::printf("dropped: %llu invalid, %llu infeasible (%llu of them by their loads' shared memory alone, not estimated), "
                "%llu pruned partial, %llu dead-end fillings\n",
                (unsigned long long)st.invalid, (unsigned long long)st.infeasible,
                (unsigned long long)st.staged_out, (unsigned long long)st.pruned, (unsigned long long)st.dead_ends);
  if (st.deferred)
    std::printf("deferred: %llu partial programs whose loads already exceed shared memory, expanded last\n",
                (unsigned long long)st.deferred);
  if (st.invalid) std::printf("first invalid: %s\n", st.first_invalid.c_str());
  if (st.infeasible) std::printf("first infeasible: %s\n", st.first_infeasible.c_str());
  if (res.candidates.empty()) {
    // Say why, naming the limit to raise where one stopped the search.
    const bool sat_limited = sat.ran && sat.report.stop != StopReason::Saturated;
    std::string why;
    if (st.limit_hit)
      why = "extraction stopped at its " + st.limit + " limit before a candidate was complete and feasible";
    else if (st.states_expanded == 0)
      why = "an output has no tiled form in the e-graph";
    else
      why = "every complete program was invalid or infeasible (see above)";
    if (sat_limited)
      why += "; saturation stopped at its " + std::string(stop_reason_name(sat.report.stop)) + " after " +
             std::to_string(g.num_nodes()) +
             " e-nodes (raise --node-limit / --sat-time-limit, or cut the program smaller: `eqiforge-opt "
             "partition`)";
    std::printf("no candidate: %s\n", why.c_str());
  }
  for (size_t i = 0; i < res.candidates.size() && i < top; ++i) {
    const Candidate& c = res.candidates[i];
    std::printf("\n#%zu", i + 1);
    if (c.estimate) {
      std::printf("  %.2f us  blocks:", c.estimate->seconds * 1e6);
      for (const auto& [axis, b] : c.estimate->blocks) std::printf(" %s=%lld", axis.name().c_str(), (long long)b);
      std::printf("  stages %d", c.estimate->stages);
    }
    if (opt.order == ExtractOrder::BestFirst) std::printf("  (guide %.2f us)", c.guide_seconds * 1e6);
    std::printf("\n");
    for (size_t k = 0; k < c.lowered.kernels.size(); ++k) {
      const Kernel& kern = c.lowered.kernels[k];
      std::vector<Axis> loops;
      for (const Loop& l : kern.loops) loops.push_back(l.axis);
      std::printf("  kernel %s  grid [%s]  loops [%s]", kern.name.c_str(), axes_text(kern.grid).c_str(),
                  axes_text(loops).c_str());
      if (c.estimate) {
        const KernelEstimate& ke = c.estimate->kernels[k];
        std::printf("  %.0f programs  %.2f us (%s)%s", ke.programs, ke.seconds * 1e6, ke.bound.c_str(),
                    ke.masked ? "  masked" : "");
      }
      std::printf("\n");
    }
    if (programs) std::cout << print_program(c.program);
  }
  return kExitOk;
}

}  // namespace eqf::cli
