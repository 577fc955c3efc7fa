// eqiforge-opt: IR text in; checks, evaluations, comparisons (and, as the
// search grows, saturated e-graphs, candidates and Triton) out.
//
// The verb table is the whole CLI: one row per verb (see tools/cli.h).
#include <vector>

#include "tools/cli.h"
#include "tools/verbs.h"
#include "tools/verbs_egraph.h"
#include "tools/verbs_rules.h"
#include "tools/verbs_extract.h"
#include "tools/verbs_partition.h"
#include "tools/verb_util.h"

namespace eqf::cli {
namespace {

const OptionSpec kSeed{
    .name = "--seed", .value_name = "N", .help = "seed of the random inputs and block sizes (default 0)"};

const std::vector<Verb>& verb_table() {
  static const std::vector<Verb> table = {
      {.name = "check",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "parse and type-check a program; print each output's name and type",
       .details = "FILE is a program in the text format of docs/ir.md, or - for standard input.",
       .run = verb_check},
      {.name = "print",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "print a program in canonical text",
       .details = "Parsing the printed text gives the same program, and printing it again the same text.\n"
                  "The program is not type-checked.",
       .run = verb_print},
      {.name = "eval",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "evaluate a program on random inputs; print each output's shape and checksum",
       .details = "Inputs are uniform in [-1, 1) from the seed. Axes without --block get random sizes\n"
                  "from the seed; the sizes used are printed first.",
       .options = {kSeed,
                   {.name = "--block",
                    .value_name = "AXIS=N",
                    .help = "block size of a parallel axis, e.g. --block t.0=16",
                    .repeatable = true}},
       .run = verb_eval},
      {.name = "equiv",
       .operands = "A B",
       .num_operands = 2,
       .summary = "check that two programs compute the same outputs on random inputs",
       .details = "Both programs must declare the same inputs (dtypes, dims, extents) and outputs.\n"
                  "Each trial draws fresh inputs and fresh block sizes for each program's axes from\n"
                  "seed+trial. Prints the largest relative error; exit 0 iff it is at most 1e-9, else 1.",
       .options = {kSeed, {.name = "--trials", .value_name = "N", .help = "number of trials (default 4)"}},
       .run = verb_equiv},
      {.name = "saturate",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "saturate a program's e-graph with a rule set; print sizes, stop reason and stats",
       .details = "Loads the type-checked program into an e-graph and runs --rules SET (default ac) or a\n"
                  "--schedule such as '(saturate (run ac))' until saturation or a limit. Prints e-nodes,\n"
                  "e-classes, iterations, the stop reason and the time; --stats adds per-rule and\n"
                  "per-iteration tables, --json prints all of it as one JSON object.",
       .options = {{.name = "--rules", .value_name = "SET", .help = "rule set: none, ac, arith, or a registered one"},
                   {.name = "--schedule", .value_name = "TEXT", .help = "a schedule, e.g. '(repeat 3 (run ac))'"},
                   {.name = "--node-limit", .value_name = "N", .help = "stop past N e-nodes (default 1000000)"},
                   {.name = "--time-limit", .value_name = "S", .help = "stop after S seconds (default 60)"},
                   {.name = "--iter-limit", .value_name = "N", .help = "stop after N iterations (default 100000)"},
                   {.name = "--memory-limit", .value_name = "MB",
                    .help = "stop before the e-graph holds more than MB MiB (default none)"},
                   {.name = "--scheduler", .value_name = "KIND", .help = "backoff (default) or simple"},
                   {.name = "--stats", .value_name = "", .help = "print per-rule and per-iteration statistics"},
                   {.name = "--json", .value_name = "", .help = "print the report as JSON"},
                   {.name = "--dump", .value_name = "", .help = "print every e-class and e-node"},
                   {.name = "--dot", .value_name = "OUT[:DEPTH]", .help = "Graphviz of an output's e-class"},
                   {.name = "--extract", .value_name = "", .help = "print the smallest equivalent program"}},
       .run = verb_saturate},
      {.name = "bench-egraph",
       .operands = "",
       .num_operands = 0,
       .summary = "time the e-graph on associativity + commutativity of add over N leaves",
       .details = "Saturates add(...add(x0, x1)..., x{N-1}) over scalar f32 inputs with the ac rule set\n"
                  "(exactly 2^N - 1 e-classes). --json prints {\"eclasses\", \"enodes\", \"seconds\", ...}.",
       .options = {{.name = "--ac", .value_name = "N", .help = "number of leaves (2 to 24)"},
                   {.name = "--json", .value_name = "", .help = "print one JSON object"},
                   {.name = "--stats", .value_name = "", .help = "print per-rule and per-iteration statistics"},
                   {.name = "--scheduler", .value_name = "KIND", .help = "backoff (default) or simple"},
                   {.name = "--node-limit", .value_name = "N", .help = "stop past N e-nodes (default none)"},
                   {.name = "--time-limit", .value_name = "S", .help = "stop after S seconds (default 60)"},
                   {.name = "--iter-limit", .value_name = "N", .help = "stop after N iterations (default 100000)"}},
       .run = verb_bench_egraph},
      {.name = "emit",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "emit the Triton module (kernels and a host function) of a program or of a ranked candidate",
       .details = "Without --candidate, FILE is emitted as written (a tiled program, or a naive one as one\n"
                  "program on whole tiles). --candidate K emits the K-th candidate (1 = best) that `extract`\n"
                  "ranks for FILE, with the same e-graph and extraction options (--also, --rules, --order, ...);\n"
                  "K past the number of candidates is an error that says how many there are. The module's\n"
                  "forward(*inputs) takes the inputs in declared order as torch tensors and returns a tuple of\n"
                  "the outputs; block sizes, num_warps and num_stages are its keyword arguments. Written to\n"
                  "standard output unless -o is given.",
       .options = with_extract_options(
           {{.name = "-o", .value_name = "FILE", .help = "write the module to FILE"},
            {.name = "--candidate", .value_name = "K", .help = "emit the K-th ranked candidate of FILE's extraction"},
            {.name = "--unit-axes",
             .value_name = "AXES",
             .help = "axes fixed to block size 1, e.g. h.0,g.0, or none (default: batch dims of tile_matmul)"}}),
       .run = verb_emit},
      {.name = "estimate",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "the cost model's bound of a tiled program, at its best block sizes or at given ones",
       .details = "Lowers FILE (a tiled program, e.g. a candidate printed by `extract --programs`) to kernels\n"
                  "and prints the optimistic bound for --target (default h200): minimized over power-of-two\n"
                  "block sizes and the target's pipeline_stage_choices, or at the sizes --block gives (then\n"
                  "every non-unit axis needs one) and the target's pipeline_stages. --stages N evaluates at N\n"
                  "pipeline stages. --json prints {\"estimated_us\", \"feasible\", \"block_sizes\", \"num_stages\",\n"
                  "\"kernels\": [...]} with each kernel's memory, mma, fp and latency terms.",
       .options = {{.name = "--block",
                    .value_name = "AXIS=N",
                    .help = "block size of a parallel axis, e.g. --block k.0=64",
                    .repeatable = true},
                   {.name = "--stages", .value_name = "N", .help = "pipeline stages (default: the target's)"},
                   {.name = "--target", .value_name = "NAME", .help = "hardware profile (default h200)"},
                   {.name = "--json", .value_name = "", .help = "print one JSON object"}},
       .run = verb_estimate},
      {.name = "extract",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "extract candidate tiled programs from FILE's e-graph and rank them by the cost model",
       .details = "Builds FILE's e-graph (united with the --also programs, output by output), saturates it\n"
                  "(--rules: the rule library's default schedule, a registered set, or none), extracts the\n"
                  "valid candidates (--mode early: early compression; after: de-duplicate at the end; none:\n"
                  "every complete program) and ranks them by the optimistic bound for --target (default h200).\n"
                  "--order best expands the cheapest partial programs first (by the cost guide) and stops\n"
                  "after --candidates feasible ones; bfs enumerates level by level, as the paper measures.\n"
                  "--json prints {\"states_expanded\", \"complete_built\", \"distinct\", \"seconds\",\n"
                  "\"candidates\": [...]}, each candidate with its kernels, grid and loop axes, estimate and\n"
                  "the block sizes of that estimate; a leading candidate with GEMVs also has \"forms\":\n"
                  "{\"gemv_dot\": {...}}, the estimate of their tl.dot form (where the tuner starts it).\n"
                  "--explain TILED restricts extraction to the e-nodes of\n"
                  "TILED (a tiled program, usually also given with --also): it says whether that program is in\n"
                  "the saturated e-graph, whether extraction builds it, and if not, which step drops it.",
       .options = with_extract_options(
           {{.name = "--top", .value_name = "K", .help = "print the K best candidates (default 10)"},
            {.name = "--explain", .value_name = "TILED", .help = "extract only TILED's e-nodes: why is it (not) a candidate"},
            {.name = "--json", .value_name = "", .help = "print one JSON object"},
            {.name = "--programs", .value_name = "", .help = "print each candidate's program"}}),
       .run = verb_extract},
      {.name = "gen-program",
       .operands = "",
       .num_operands = 0,
       .summary = "print a random well-typed program (the fuzzers' generator), deterministic in --seed",
       .details = "A random DAG over the IR's operators: pointwise ops with broadcasting, masks from iota,\n"
                  "casts, sum/max reductions, matmuls, softmax chains, split/merge/rename; extents from\n"
                  "{1 2 3 4 5 7 8 9 11 12 13 16 17} up to --extent. The generator builds the program in two\n"
                  "forms: plain (high level only; the default) and tiled (some subterms written at the tile\n"
                  "level: partition/combine, preduce, collect, repaired reductions), which compute the same\n"
                  "outputs. The same seed and options give the same program on every platform.",
       .options = {{.name = "--seed", .value_name = "N", .help = "the program's seed (default 0)"},
                   {.name = "--form", .value_name = "FORM", .help = "plain (default) or tiled"},
                   {.name = "--min-ops", .value_name = "N", .help = "fewest operator applications (default 3)"},
                   {.name = "--max-ops", .value_name = "N", .help = "most operator applications (default 16)"},
                   {.name = "--inputs", .value_name = "N", .help = "most inputs drawn up front (default 4)"},
                   {.name = "--outputs", .value_name = "N", .help = "most outputs (default 3)"},
                   {.name = "--rank", .value_name = "N", .help = "most dims of any value (default 3)"},
                   {.name = "--extent", .value_name = "N", .help = "largest extent (default 17)"},
                   {.name = "--min-output-rank", .value_name = "N", .help = "outputs have at least N dims (default 0)"},
                   {.name = "--finite", .value_name = "", .help = "no ops that turn finite values into NaN/Inf"},
                   {.name = "--in-range", .value_name = "", .help = "with --finite: values within their dtype's range (f16: 65504)"},
                   {.name = "--no-tiled", .value_name = "", .help = "no tile-level subterms (plain form only)"}},
       .run = verb_gen_program},
      {.name = "partition",
       .operands = "FILE",
       .num_operands = 1,
       .summary = "split a large program into subgraphs of bounded size with little traffic across the cuts",
       .details = "Cuts FILE (a high-level program) into subgraphs of at most --max-ops operators each, in\n"
                  "execution order: each is a program whose inputs are FILE's inputs or boundary tensors that\n"
                  "earlier subgraphs output. The cuts minimize the bytes crossing them (then the number of\n"
                  "subgraphs). Subgraphs equal up to names share a structural hash. Prints the subgraphs,\n"
                  "dearest first, and the boundary tensors; --json prints {\"subgraphs\": [...] (each with its\n"
                  "program, ops, hash, flops, bytes, inputs and outputs), \"boundaries\": [...], \"outputs\"}.",
       .options = {{.name = "--max-ops", .value_name = "N", .help = "operators per subgraph (default 16)"},
                   {.name = "--target", .value_name = "NAME", .help = "estimate each subgraph's time for this profile"},
                   {.name = "--json", .value_name = "", .help = "print one JSON object"}},
       .run = verb_partition},
      {.name = "compose",
       .operands = "A B",
       .num_operands = 2,
       .summary = "one program from two that meet at boundary tensors, the consumer's tiles fed directly",
       .details = "Composes A (the producer) and B (the consumer): B's inputs named like A's outputs take A's\n"
                  "values instead of being read from memory; inputs of one name are one tensor. Where B\n"
                  "reads such a boundary through partitions over the same (axis, dim) pairs that A combined\n"
                  "it with, B takes A's tiles directly ((partition a d (combine a d X)) is X), so kernel\n"
                  "formation can put both in one kernel: fusion across a partition's cut. A's outputs that\n"
                  "B reads are dropped unless --keep names them. Prints the composed program; --json prints\n"
                  "{\"fused\": [boundaries fed tile by tile], \"materialized\": [read whole], \"program\"}.",
       .options = {{.name = "--keep", .value_name = "NAME", .help = "keep A's output NAME although B reads it", .repeatable = true},
                   {.name = "--name", .value_name = "NAME", .help = "the composed program's name"},
                   {.name = "--json", .value_name = "", .help = "print one JSON object"}},
       .run = verb_compose},
      {.name = "rules",
       .operands = "",
       .num_operands = 0,
       .summary = "list the rule library's rules with their families, or check every rule (--verify)",
       .details = "Lists every rule: name, family, left => right side and conditions, then the counts by\n"
                  "family. --verify instantiates each rule on a corpus of small programs and compares both\n"
                  "sides with the reference interpreter on random inputs and block sizes (docs/rules.md);\n"
                  "--json prints {\"rules\": N, \"verified\": N, \"failed\": [names]}. Exit 1 if a rule fails.",
       .options = {{.name = "--family", .value_name = "F", .help = "only this family (algebraic, refinement, ...)"},
                   {.name = "--verify", .value_name = "", .help = "run the soundness check"},
                   {.name = "--json", .value_name = "", .help = "print the check's summary as JSON"},
                   {.name = "--samples", .value_name = "N", .help = "instantiations compared per rule (default 4)"},
                   {.name = "--schedule", .value_name = "", .help = "print the default schedule (for saturate --schedule)"},
                   kSeed},
       .run = verb_rules},
      {.name = "prove",
       .operands = "A B",
       .num_operands = 2,
       .summary = "saturate A with the rule library; exit 0 if B's output terms are in A's output classes",
       .details = "Prints the saturation's statistics and, when proved, the rules that built the e-nodes of\n"
                  "B's terms (e-node provenance); else the first node of B the e-graph lacks. Exit 1 if not\n"
                  "proved.",
       .options = {{.name = "--time-limit", .value_name = "S", .help = "saturation time limit (default 60)"},
                   {.name = "--node-limit", .value_name = "N", .help = "stop past N e-nodes (default 2000000)"},
                   {.name = "--iter-limit", .value_name = "N", .help = "stop after N iterations (default 100000)"},
                   {.name = "--stats", .value_name = "", .help = "print per-rule and per-iteration statistics"}},
       .run = verb_prove},
  };
  return table;
}

}  // namespace
}  // namespace eqf::cli

int main(int argc, char** argv) { return eqf::cli::run(eqf::cli::verb_table(), argc, argv); }
