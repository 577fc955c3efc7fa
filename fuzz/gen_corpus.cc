// Writes random well-typed programs (tests/cpp/gen_program.h) as extra seeds
// for fuzz_parse: tile-level forms, repaired reductions and every operator,
// which the examples alone do not all reach.
//   gen_corpus DIR COUNT     -> DIR/gen_<seed>.eqf and DIR/gen_<seed>_plain.eqf
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "eqiforge/ir/parse.h"
#include "gen_program.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_corpus DIR COUNT\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long count = std::strtol(argv[2], nullptr, 10);
  eqf::testgen::GenOptions small;
  small.max_ops = 8;  // libFuzzer mutates small seeds best
  for (long seed = 1; seed <= count; ++seed) {
    const eqf::testgen::GeneratedProgram g = eqf::testgen::generate_program(uint64_t(seed), small);
    const std::string base = dir + "/gen_" + std::to_string(seed);
    std::ofstream(base + ".eqf") << eqf::print_program(g.program);
    if (g.rewritten_terms > 0) std::ofstream(base + "_plain.eqf") << eqf::print_program(g.plain);
  }
  return 0;
}
