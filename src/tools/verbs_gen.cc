// `eqiforge-opt gen-program`: a random well-typed program from the seeded
// generator (interp/random_program.h), as IR text. The whole-optimizer
// fuzzer (python -m eqiforge.fuzz) draws its programs here, so a failing
// seed reproduces with one command line.
#include <iostream>
#include <string>

#include "eqiforge/ir/parse.h"
#include "interp/random_program.h"
#include "tools/verbs.h"

namespace eqf::cli {

int verb_gen_program(const Args& args) {
  testgen::GenOptions o;
  const uint64_t seed = args.unsigned_integer("--seed", 0);
  o.min_ops = int(args.integer("--min-ops", o.min_ops, 1, 10000));
  o.max_ops = int(args.integer("--max-ops", o.max_ops, 1, 10000));
  if (o.max_ops < o.min_ops) throw UsageError("--max-ops must be at least --min-ops");
  o.max_inputs = int(args.integer("--inputs", o.max_inputs, 1, 64));
  o.max_outputs = int(args.integer("--outputs", o.max_outputs, 1, 64));
  o.max_rank = int(args.integer("--rank", o.max_rank, 1, 8));
  o.max_extent = args.integer("--extent", o.max_extent, 1, 1 << 20);
  o.nonfinite_ops = !args.has("--finite");
  o.dtype_range = args.has("--in-range");
  if (o.dtype_range && o.nonfinite_ops) throw UsageError("--in-range needs --finite");
  o.min_output_rank = int(args.integer("--min-output-rank", o.min_output_rank, 0, 8));
  const std::string form = args.value("--form").value_or("plain");
  if (form != "plain" && form != "tiled") throw UsageError("--form expects plain or tiled, got '" + form + "'");
  o.tiled = !args.has("--no-tiled");
  if (form == "tiled" && !o.tiled) throw UsageError("--form tiled needs tile-level terms: drop --no-tiled");
  testgen::GeneratedProgram g = testgen::generate_program(seed, o);
  std::cout << print_program(form == "plain" ? g.plain : g.program);
  return kExitOk;
}

}  // namespace eqf::cli
