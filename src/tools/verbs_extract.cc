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

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string axes_json(const std::vector<Axis>& axes) {
  std::string out = "[";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + quoted(axes[i].name());
  return out + "]";
}

std::string axes_text(const std::vector<Axis>& axes) {
  std::string out;
  for (Axis a : axes) out += (out.empty() ? "" : " ") + a.name();
  return out.empty() ? "-" : out;
}

struct Saturation {
  bool ran = false;
  RunReport report;
};

// The e-graph of FILE: its program, the --also programs united output by
// output, then saturated under the rules asked for.
Saturation build_egraph(const Args& args, const Program& p, EGraph& g, std::vector<EClassId>& roots) {
  roots = load_program(g, p);
  for (const std::string& path : args.values("--also")) {
    Program other = parse_and_check_file(path);
    std::vector<EClassId> more = load_program(g, other);
    if (other.outputs().size() != p.outputs().size())
      throw Error(path, {}, "--also program has " + std::to_string(other.outputs().size()) + " outputs; " +
                                args.operand(0) + " has " + std::to_string(p.outputs().size()));
    for (size_t i = 0; i < more.size(); ++i) {
      // Outputs pair by name, so the programs may list them in any order.
      size_t j = 0;
      while (j < p.outputs().size() && p.outputs()[j].name != other.outputs()[i].name) ++j;
      if (j == p.outputs().size())
        throw Error(path, other.outputs()[i].loc,
                    "--also program's output " + std::string(other.outputs()[i].name.str()) + " is not an output of " +
                        args.operand(0));
      if (g.type(more[i]) != g.type(roots[j]))
        throw Error(path, other.outputs()[i].loc,
                    "--also program's output " + std::string(other.outputs()[i].name.str()) + " has type " +
                        type_text(g.type(more[i]).get(), &g.dims()) + "; expected " +
                        type_text(g.type(roots[j]).get(), &g.dims()));
      g.merge(roots[j], more[i]);
    }
  }
  g.rebuild();
  Saturation sat;
  std::string rules = args.value("--rules").value_or("default");
  if (rules != "none") {
    Runner runner(g);
    runner.with_node_limit(size_t(args.integer("--node-limit", 200'000, 1, int64_t(1) << 40)))
        .with_time_limit(seconds_option(args, "--sat-time-limit", 60));
    if (rules == "default") {
      add_rule_library(runner);
    } else {
      register_rule_sets();
      runner.with_rules(rules, rule_set(rules));
    }
    sat.report = runner.run();
    sat.ran = true;
  }
  for (EClassId& r : roots) r = g.find(r);
  return sat;
}

}  // namespace

int verb_extract(const Args& args) {
  Program p = load_checked(args.operand(0));
  ExtractOptions opt;
  std::string mode = args.value("--mode").value_or("early");
  std::optional<ExtractMode> m = parse_extract_mode(mode);
  if (!m) throw UsageError("--mode expects early, after or none, got '" + mode + "'");
  opt.mode = *m;
  opt.max_states = args.unsigned_integer("--max-states", opt.max_states);
  opt.time_limit_s = seconds_option(args, "--time-limit", opt.time_limit_s);
  opt.prune_k = size_t(args.unsigned_integer("--prune", 0));
  opt.depth_first = args.has("--depth-first");
  opt.program_name = std::string(p.name.str());
  const size_t top = size_t(args.unsigned_integer("--top", 10));

  std::optional<CostModel> cost;
  if (!args.has("--no-cost")) cost.emplace(load_target(args.value("--target").value_or("h200")));
  opt.cost = cost ? &*cost : nullptr;

  EGraph g;
  std::vector<EClassId> roots;
  Saturation sat = build_egraph(args, p, g, roots);
  ExtractResult res = extract_candidates(g, roots, p.outputs(), opt);
  const ExtractStats& st = res.stats;
  const bool programs = args.has("--programs");

  if (args.has("--json")) {
    std::ostringstream o;
    o << "{\"mode\": " << quoted(extract_mode_name(opt.mode)) << ", \"states_expanded\": " << st.states_expanded
      << ", \"complete_built\": " << st.complete_built << ", \"distinct\": " << st.distinct
      << ", \"seconds\": " << num(st.seconds) << ", \"enumerate_seconds\": " << num(st.enumerate_seconds)
      << ", \"rank_seconds\": " << num(st.rank_seconds) << ", \"skipped_equivalent\": " << st.skipped_equivalent
      << ", \"pruned\": " << st.pruned << ", \"dead_ends\": " << st.dead_ends << ", \"invalid\": " << st.invalid
      << ", \"infeasible\": " << st.infeasible << ", \"limit_hit\": " << (st.limit_hit ? "true" : "false")
      << ", \"egraph\": {\"enodes\": " << g.num_nodes() << ", \"eclasses\": " << g.num_classes();
    if (sat.ran)
      o << ", \"saturation_seconds\": " << num(sat.report.seconds) << ", \"stop\": "
        << quoted(stop_reason_name(sat.report.stop));
    o << "}";
    if (cost) o << ", \"target\": " << quoted(cost->target().name);
    o << ", \"candidates\": [";
    for (size_t i = 0; i < res.candidates.size() && i < top; ++i) {
      const Candidate& c = res.candidates[i];
      o << (i ? ", " : "") << "{\"rank\": " << i + 1;
      char key[24];
      std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(c.key));
      o << ", \"key\": " << quoted(key);
      if (c.estimate) {
        const ProgramEstimate& e = *c.estimate;
        o << ", \"estimated_us\": " << num(e.seconds * 1e6) << ", \"block_sizes\": {";
        size_t j = 0;
        for (const auto& [axis, b] : e.blocks) o << (j++ ? ", " : "") << quoted(axis.name()) << ": " << b;
        o << "}";
      }
      o << ", \"kernels\": [";
      for (size_t k = 0; k < c.lowered.kernels.size(); ++k) {
        const Kernel& kern = c.lowered.kernels[k];
        std::vector<Axis> loops;
        for (const Loop& l : kern.loops) loops.push_back(l.axis);
        o << (k ? ", " : "") << "{\"name\": " << quoted(kern.name) << ", \"grid\": " << axes_json(kern.grid)
          << ", \"loops\": " << axes_json(loops);
        if (c.estimate) {
          const KernelEstimate& ke = c.estimate->kernels[k];
          o << ", \"programs\": " << num(ke.programs) << ", \"estimated_us\": " << num(ke.seconds * 1e6)
            << ", \"bound\": " << quoted(ke.bound) << ", \"bytes\": " << num(ke.bytes)
            << ", \"mma_flops\": " << num(ke.mma_flops) << ", \"other_flops\": " << num(ke.other_flops)
            << ", \"masked\": " << (ke.masked ? "true" : "false");
        }
        o << "}";
      }
      o << "]";
      if (programs) o << ", \"program\": " << quoted(print_program(c.program));
      o << "}";
    }
    o << "]}\n";
    std::cout << o.str();
    return kExitOk;
  }

  std::printf("mode %s: %llu states expanded, %llu equivalent skipped, %llu complete built, %llu distinct, "
              "%.3f s (enumerate %.3f s, rank %.3f s)%s\n",
              std::string(extract_mode_name(opt.mode)).c_str(), (unsigned long long)st.states_expanded,
              (unsigned long long)st.skipped_equivalent, (unsigned long long)st.complete_built,
              (unsigned long long)st.distinct, st.seconds, st.enumerate_seconds, st.rank_seconds,
              st.limit_hit ? (" [stopped: " + st.limit + " limit]").c_str() : "");
  std::printf("e-graph: %zu e-nodes, %zu e-classes", g.num_nodes(), g.num_classes());
  if (sat.ran)
    std::printf(" after %.3f s of saturation (%s)", sat.report.seconds,
                std::string(stop_reason_name(sat.report.stop)).c_str());
  std::printf("\n");
  if (st.invalid || st.infeasible || st.pruned || st.dead_ends)
    std::printf("dropped: %llu invalid, %llu infeasible, %llu pruned partial, %llu dead-end fillings\n",
                (unsigned long long)st.invalid, (unsigned long long)st.infeasible, (unsigned long long)st.pruned,
                (unsigned long long)st.dead_ends);
  for (size_t i = 0; i < res.candidates.size() && i < top; ++i) {
    const Candidate& c = res.candidates[i];
    std::printf("\n#%zu", i + 1);
    if (c.estimate) {
      std::printf("  %.2f us  blocks:", c.estimate->seconds * 1e6);
      for (const auto& [axis, b] : c.estimate->blocks) std::printf(" %s=%lld", axis.name().c_str(), (long long)b);
    }
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
