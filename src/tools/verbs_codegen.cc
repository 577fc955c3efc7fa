// Verbs that generate code: `emit` writes the Triton module of a tiled
// program, as written or as the K-th ranked candidate of its extraction.
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "eqiforge/codegen/triton.h"
#include "eqiforge/extract/extract.h"
#include "tools/verb_util.h"
#include "tools/verbs.h"

namespace eqf::cli {
namespace {

// --unit-axes "h.0,t.0" (or "none"): the axes fixed to block size 1.
std::set<Axis> parse_unit_axes(const std::string& text) {
  std::set<Axis> out;
  if (text == "none") return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::optional<Axis> axis = Axis::parse(item);
    if (!axis)
      throw UsageError("--unit-axes expects axes such as h.0 separated by commas, or none; got '" + item +
                       "'");
    out.insert(*axis);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// The K-th ranked candidate (1-based) of FILE's extraction, built as the
// `extract` verb builds it (same e-graph, same options, same ranking).
Program candidate_program(const Args& args, const Program& p, size_t k, std::string& note) {
  ExtractSetup setup;
  read_extract_options(args, p, setup, k);
  EGraph g;
  std::vector<EClassId> roots;
  build_egraph(args, p, g, roots);
  ExtractResult res = extract_candidates(g, roots, p.outputs(), setup.options);
  const std::string file = args.operand(0) == "-" ? "<stdin>" : args.operand(0);
  if (k > res.candidates.size()) {
    std::string why = res.candidates.empty() ? "extraction found no candidate"
                                             : "extraction found only " + std::to_string(res.candidates.size()) +
                                                   (res.candidates.size() == 1 ? " candidate" : " candidates");
    if (res.stats.limit_hit) why += " before its " + res.stats.limit + " limit stopped it";
    throw Error(file, {},
                "emit: --candidate " + std::to_string(k) + " asked for, but " + why +
                    "; expected K between 1 and the number of candidates (see `eqiforge-opt extract`)");
  }
  note = "candidate " + std::to_string(k) + " of " + std::to_string(res.candidates.size());
  return std::move(res.candidates[k - 1].program);
}

}  // namespace

int verb_emit(const Args& args) {
  const std::string& path = args.operand(0);
  Program p = load_checked(path);
  TritonOptions options;
  options.source = path == "-" ? "" : path;
  if (!args.has("--candidate"))
    for (const OptionSpec& o : extract_option_specs())
      if (args.has(o.name))
        throw UsageError(std::string(o.name) + " is an extraction option: it needs --candidate K");
  if (args.has("--candidate")) {
    size_t k = size_t(args.integer("--candidate", 1, 1, int64_t(1) << 31));
    std::string note;
    p = candidate_program(args, p, k, note);
    options.source += (options.source.empty() ? "" : ", ") + note;
  }
  if (auto units = args.value("--unit-axes")) options.lower.unit_axes = parse_unit_axes(*units);
  std::string module = emit_triton(p, options);
  if (auto out = args.value("-o"); out && *out != "-") {
    std::ofstream file(*out);
    if (!file) throw Error("cannot write " + *out);
    file << module;
    if (!file.flush()) throw Error("cannot write " + *out);
  } else {
    std::cout << module;
  }
  return kExitOk;
}

}  // namespace eqf::cli
