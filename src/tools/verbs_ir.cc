// Verbs that read, check, print and evaluate programs.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "eqiforge/interp/compare.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/interp/tensor.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/program.h"
#include "eqiforge/ir/typecheck.h"
#include "tools/verb_util.h"
#include "tools/verbs.h"

namespace eqf::cli {
namespace {

// A FILE operand: a path, or `-` for standard input.
Program load(const std::string& path, bool check) {
  if (path != "-") return check ? parse_and_check_file(path) : parse_program_file(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  return check ? parse_and_check(text, "<stdin>") : parse_program(text, "<stdin>");
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string shape_text(const Tensor64& t) {
  std::string out = "[";
  for (size_t i = 0; i < t.dims.size(); ++i)
    out += (i ? " " : "") + std::string(t.dims[i].str()) + "=" + std::to_string(t.shape[i]);
  return out + "]";
}

}  // namespace

int verb_check(const Args& args) {
  Program p = load(args.operand(0), /*check=*/true);
  for (const OutputDecl& out : p.outputs())
    std::cout << out.name.str() << ": " << type_text(p.type(out.value).get(), &p.dims) << "\n";
  return kExitOk;
}

int verb_print(const Args& args) {
  std::cout << print_program(load(args.operand(0), /*check=*/false));
  return kExitOk;
}

int verb_eval(const Args& args) {
  uint64_t seed = args.unsigned_integer("--seed", 0);
  BlockSizes given = parse_blocks(args);
  Program p = load(args.operand(0), /*check=*/true);
  BlockSizes blocks = complete_block_sizes(p, given, seed);
  std::vector<Tensor64> outputs = evaluate(p, random_inputs(p, seed), blocks);
  if (!blocks.empty()) std::cout << "blocks " << block_sizes_text(blocks) << "\n";
  for (size_t i = 0; i < outputs.size(); ++i)
    std::cout << p.outputs()[i].name.str() << " " << shape_text(outputs[i]) << " "
              << checksum_text(outputs[i]) << "\n";
  return kExitOk;
}

int verb_equiv(const Args& args) {
  uint64_t seed = args.unsigned_integer("--seed", 0);
  int trials = int(args.integer("--trials", 4, 1, 100000));
  Program a = load(args.operand(0), /*check=*/true);
  Program b = load(args.operand(1), /*check=*/true);
  EquivReport report = compare_programs(a, b, seed, trials);
  for (size_t t = 0; t < report.trials.size(); ++t) {
    const EquivTrial& trial = report.trials[t];
    std::cout << "trial " << t << " (seed " << trial.seed << "): max rel error "
              << number_text(trial.max_rel_error) << "  blocks A: " << block_sizes_text(trial.blocks_a)
              << "  B: " << block_sizes_text(trial.blocks_b) << "\n";
  }
  bool same = report.equivalent();
  std::cout << "max relative error " << number_text(report.max_rel_error) << " over " << trials << " trial"
            << (trials == 1 ? "" : "s") << ": " << (same ? "equivalent" : "NOT equivalent") << " (tolerance "
            << number_text(kEquivTolerance) << ")\n";
  return same ? kExitOk : kExitNo;
}

}  // namespace eqf::cli
