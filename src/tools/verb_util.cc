#include "tools/verb_util.h"

#include <cmath>
#include <cstdio>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <iterator>
#include <optional>

#include "eqiforge/egraph/program_io.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"

namespace eqf::cli {

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// --block AXIS=N, repeatable.
BlockSizes parse_blocks(const Args& args) {
  BlockSizes blocks;
  for (const std::string& item : args.values("--block")) {
    size_t eq = item.rfind('=');
    std::optional<Axis> axis = eq == std::string::npos ? std::nullopt : Axis::parse(item.substr(0, eq));
    std::optional<int64_t> size =
        eq == std::string::npos ? std::nullopt : parse_integer(item.substr(eq + 1), 1, int64_t(1) << 40);
    if (!axis || !size)
      throw UsageError("--block expects AXIS=N with an axis such as m.0 and a positive size, got '" + item +
                       "'");
    if (blocks.count(*axis)) throw UsageError("--block gives axis " + axis->name() + " twice");
    blocks[*axis] = *size;
  }
  return blocks;
}

std::string json_quoted(std::string_view s) {
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

Program load_checked(const std::string& path) {
  if (path != "-") return parse_and_check_file(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  return parse_and_check(text, "<stdin>");
}

double seconds_option(const Args& args, std::string_view name, double fallback) {
  std::optional<std::string> text = args.value(name);
  if (!text) return fallback;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || ptr != text->data() + text->size() || !(v > 0))
    throw UsageError(std::string(name) + " expects a positive number of seconds, got '" + *text + "'");
  return v;
}

size_t memory_limit_option(const Args& args) {
  return size_t(args.integer("--memory-limit", 0, 1, int64_t(1) << 30)) << 20;  // MB (MiB) to bytes; 0: none
}

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
        .with_time_limit(seconds_option(args, "--sat-time-limit", 60))
        // The schedule's phases each run to saturation: egg's 30 iterations
        // would stop it midway; the node and time limits bound the work.
        .with_iter_limit(int(args.integer("--iter-limit", 10'000, 1, 1 << 30)))
        .with_memory_limit(memory_limit_option(args));
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

void read_extract_options(const Args& args, const Program& p, ExtractSetup& setup, size_t min_candidates) {
  ExtractOptions& opt = setup.options;
  std::string mode = args.value("--mode").value_or("early");
  std::optional<ExtractMode> m = parse_extract_mode(mode);
  if (!m) throw UsageError("--mode expects early, after or none, got '" + mode + "'");
  opt.mode = *m;
  opt.max_states = args.unsigned_integer("--max-states", opt.max_states);
  opt.time_limit_s = seconds_option(args, "--time-limit", opt.time_limit_s);
  opt.memory_limit_bytes = memory_limit_option(args);
  opt.prune_k = size_t(args.unsigned_integer("--prune", 0));
  if (!args.has("--no-cost"))
    setup.cost = std::make_unique<CostModel>(load_target(args.value("--target").value_or("h200")));
  opt.cost = setup.cost.get();
  opt.reuse_kernel_results = !args.has("--no-reuse");
  opt.separate_kernel_dims = !args.has("--shared-dims");
  std::string order = args.value("--order").value_or(setup.cost ? "best" : "bfs");
  std::optional<ExtractOrder> o = parse_extract_order(order);
  if (!o) throw UsageError("--order expects best, bfs or dfs, got '" + order + "'");
  if (*o == ExtractOrder::BestFirst && !setup.cost)
    throw UsageError("--order best needs the cost model (drop --no-cost)");
  opt.order = *o;
  size_t fallback = opt.order == ExtractOrder::BestFirst ? std::max<size_t>(256, min_candidates) : 0;
  opt.max_candidates = size_t(args.unsigned_integer("--candidates", fallback));
  opt.program_name = std::string(p.name.str());
}

std::vector<OptionSpec> extract_option_specs() {
  return {
      {.name = "--also", .value_name = "FILE", .help = "an equivalent program to unite with FILE", .repeatable = true},
      {.name = "--rules", .value_name = "SET", .help = "default (the library's schedule), none, or a rule set"},
      {.name = "--node-limit", .value_name = "N", .help = "saturation stops past N e-nodes (default 200000)"},
      {.name = "--sat-time-limit", .value_name = "S", .help = "saturation stops after S seconds (default 60)"},
      {.name = "--iter-limit", .value_name = "N", .help = "saturation stops after N iterations (default 10000)"},
      {.name = "--memory-limit", .value_name = "MB",
       .help = "saturation stops before the e-graph holds more than MB MiB, extraction before its partial programs do (default none)"},
      {.name = "--mode", .value_name = "MODE", .help = "early (default), after or none"},
      {.name = "--order", .value_name = "ORDER",
       .help = "best (default with a cost model: cheapest first), bfs (the paper's breadth-first) or dfs"},
      {.name = "--candidates", .value_name = "N",
       .help = "stop after N feasible candidates (default 256 for best, 0 = all for bfs/dfs)"},
      {.name = "--max-states", .value_name = "N", .help = "stop after N expanded partial programs (default 5000000)"},
      {.name = "--time-limit", .value_name = "S", .help = "stop extraction after S seconds (default 600)"},
      {.name = "--prune", .value_name = "K", .help = "drop partial programs whose bound exceeds the K-th best (default 0: off)"},
      {.name = "--target", .value_name = "NAME",
       .help = "hardware profile: h200 (default), h100, a100, rtx5090, or a .json path"},
      {.name = "--no-cost", .value_name = "", .help = "no cost model: candidates in the order found"},
      {.name = "--no-reuse", .value_name = "",
       .help = "no reuse twins (a candidate's copy whose kernels load values other kernels store)"},
      {.name = "--shared-dims", .value_name = "",
       .help = "kernels keep sharing the block sizes of a dim one of them reduces away (no kernel-private dims)"},
  };
}

std::vector<OptionSpec> with_extract_options(std::vector<OptionSpec> own) {
  for (OptionSpec& o : extract_option_specs()) own.push_back(o);
  return own;
}

}  // namespace eqf::cli
