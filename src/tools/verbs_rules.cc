// Verbs of the rule library: list the rules, check them, prove a program
// equal to another by saturation.
#include "tools/verbs_rules.h"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"
#include "eqiforge/rules/prove.h"
#include "eqiforge/rules/verify.h"
#include "tools/verb_util.h"

namespace eqf::cli {
namespace {

// `--rules all|algebraic|...` of `saturate` finds the library's sets.
[[maybe_unused]] const bool kRuleSetsRegistered = (register_rule_sets(), true);

std::optional<Family> family_option(const Args& args) {
  std::optional<std::string> f = args.value("--family");
  if (!f) return std::nullopt;
  std::optional<Family> fam = parse_family(*f);
  if (!fam) {
    std::string known;
    for (Family k : kAllFamilies) known += (known.empty() ? "" : ", ") + std::string(family_name(k));
    throw UsageError("--family expects one of " + known + ", got '" + *f + "'");
  }
  return fam;
}

}  // namespace

int verb_rules(const Args& args) {
  if (args.has("--schedule")) {
    std::cout << default_schedule().text() << "\n";
    return kExitOk;
  }
  std::optional<Family> family = family_option(args);
  if (args.has("--verify")) {
    VerifyOptions opts;
    opts.family = family;
    opts.seed = args.unsigned_integer("--seed", 0);
    if (args.value("--samples")) opts.samples_per_rule = int(args.integer("--samples", 4, 1, 1000));
    if (!args.has("--json")) opts.log = &std::cerr;
    VerifyReport report = verify_rules(opts);
    if (args.has("--json")) {
      std::cout << "{\"rules\": " << report.rules << ", \"verified\": " << report.verified
                << ", \"failed\": [";
      for (size_t i = 0; i < report.failed.size(); ++i)
        std::cout << (i ? ", " : "") << json_quoted(report.failed[i]);
      std::cout << "]}\n";
    } else {
      std::cout << report.text();
    }
    return report.failed.empty() ? kExitOk : kExitNo;
  }
  std::map<Family, int> counts;
  for (const RuleInfo& r : rule_infos()) {
    if (family && r.family != *family) continue;
    ++counts[r.family];
    std::printf("%-40s %-17s %s\n", r.name.c_str(), std::string(family_name(r.family)).c_str(),
                r.text.c_str());
  }
  std::printf("\n");
  int total = 0;
  for (auto [f, n] : counts) {
    std::printf("%-17s %d\n", std::string(family_name(f)).c_str(), n);
    total += n;
  }
  std::printf("%-17s %d\n", "total", total);
  return kExitOk;
}

int verb_prove(const Args& args) {
  Program a = parse_and_check_file(args.operand(0));
  Program b = parse_and_check_file(args.operand(1));
  EGraph g;
  std::vector<EClassId> roots = load_program(g, a);
  Runner runner(g);
  runner.with_time_limit(seconds_option(args, "--time-limit", 60))
      .with_node_limit(size_t(args.integer("--node-limit", 2'000'000, 1, int64_t(1) << 40)))
      .with_iter_limit(int(args.integer("--iter-limit", 100000, 1, 1 << 30)));
  add_rule_library(runner);
  RunReport report = runner.run();
  ProofReport proof = find_in_class(g, roots, a.outputs(), b);
  std::printf("saturation: %zu e-nodes, %zu e-classes, %d iterations, stop: %s, %.3f s\n", report.nodes,
              report.classes, report.iterations, std::string(stop_reason_name(report.stop)).c_str(),
              report.seconds);
  if (args.has("--stats")) std::cout << report.text();
  std::cout << proof.text();
  return proof.proved ? kExitOk : kExitNo;
}

}  // namespace eqf::cli
