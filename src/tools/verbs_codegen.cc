// Verbs that generate code: `emit` writes the Triton module of a tiled program.
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <string>

#include "eqiforge/codegen/triton.h"
#include "eqiforge/ir/parse.h"
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

}  // namespace

int verb_emit(const Args& args) {
  const std::string& path = args.operand(0);
  Program p;
  if (path == "-") {
    std::string text(std::istreambuf_iterator<char>(std::cin), {});
    p = parse_and_check(text, "<stdin>");
  } else {
    p = parse_and_check_file(path);
  }
  TritonOptions options;
  options.source = path == "-" ? "" : path;
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
