// eqiforge._core: the C++ core seen from Python (nanobind). Small on purpose:
// programs cross the boundary as IR text, tensors as float64 numpy arrays in
// the declared layouts, and every eqf::Error becomes eqiforge.IRError (a
// ValueError) with the same "file:line:col: error: message" text.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eqiforge/interp/compare.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/interp/tensor.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace eqf {
namespace {

using NumpyF64 = nb::ndarray<nb::numpy, double>;
using InputArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// Hands the tensor's buffer to numpy without a copy; the capsule frees it.
NumpyF64 to_numpy(Tensor64&& t) {
  auto* data = new std::vector<double>(std::move(t.data));
  nb::capsule owner(data, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<size_t> shape(t.shape.begin(), t.shape.end());
  return NumpyF64(data->data(), shape.size(), shape.data(), owner);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// {"m.0": 4} -> BlockSizes, then completed with random sizes from the seed.
BlockSizes blocks_for(const Program& p, const std::optional<std::map<std::string, int64_t>>& given,
                      uint64_t seed) {
  BlockSizes blocks;
  if (given) {
    for (const auto& [name, size] : *given) {
      std::optional<Axis> axis = Axis::parse(name);
      if (!axis)
        throw Error("block size key '" + name + "' is not an axis name; expected DIM.LEVEL such as m.0");
      blocks[*axis] = size;
    }
  }
  return complete_block_sizes(p, blocks, seed);
}

// Inputs from a dict of arrays keyed by input name, each in the declared layout.
std::vector<Tensor64> inputs_from(const Program& p, const nb::dict& given) {
  std::vector<Tensor64> inputs;
  for (const InputDecl& decl : p.inputs()) {
    std::string name(decl.name.str());
    if (!given.contains(name.c_str()))
      throw Error(p.file, decl.loc, "no value given for input '" + name + "'");
    InputArray array;
    if (!nb::try_cast(given[name.c_str()], array))
      throw Error(p.file, decl.loc,
                  "input '" + name + "' must be an array of numbers convertible to float64");
    Tensor64 t;
    t.dims = decl.layout;
    for (Symbol d : decl.layout) t.shape.push_back(p.dims.find(d)->extent);
    std::vector<int64_t> got(array.ndim());
    for (size_t i = 0; i < array.ndim(); ++i) got[i] = int64_t(array.shape(i));
    if (got != t.shape)
      throw Error(p.file, decl.loc,
                  "input '" + name + "' has shape " + shape_text(got) + ", expected " + shape_text(t.shape) +
                      " for its layout");
    t.data.assign(array.data(), array.data() + array.size());
    inputs.push_back(std::move(t));
  }
  for (auto [key, value] : given) {
    std::string key_text = nb::cast<std::string>(nb::str(key));
    bool known = false;
    for (const InputDecl& decl : p.inputs()) known = known || decl.name.str() == key_text;
    if (!known) throw Error(p.file, {}, "'" + key_text + "' is not an input of the program");
  }
  return inputs;
}

nb::dict named_arrays(const Program& p, std::vector<Tensor64>&& tensors, bool outputs) {
  nb::dict d;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string name(outputs ? p.outputs()[i].name.str() : p.inputs()[i].name.str());
    d[name.c_str()] = nb::cast(to_numpy(std::move(tensors[i])));
  }
  return d;
}

}  // namespace
}  // namespace eqf

NB_MODULE(_core, m) {
  using namespace eqf;
  m.doc() = "The eqiforge C++ core: parse, type-check, print, evaluate and compare IR programs.";

  nb::exception<Error>(m, "IRError", PyExc_ValueError);

  m.def(
      "check",
      [](const std::string& text, const std::string& file) {
        Program p = parse_and_check(text, file);
        std::vector<std::pair<std::string, std::string>> out;
        for (const OutputDecl& o : p.outputs())
          out.emplace_back(std::string(o.name.str()), type_text(p.type(o.value).get(), &p.dims));
        return out;
      },
      "text"_a, "file"_a = "<string>",
      "Parses and type-checks a program; returns (output name, type text) for each output.");

  m.def(
      "print_program",
      [](const std::string& text, const std::string& file) {
        return print_program(parse_program(text, file));
      },
      "text"_a, "file"_a = "<string>", "Parses a program and returns its canonical text.");

  m.def(
      "axes",
      [](const std::string& text, const std::string& file) {
        Program p = parse_and_check(text, file);
        std::vector<std::string> out;
        for (Axis a : axes_of(p)) out.push_back(a.name());
        return out;
      },
      "text"_a, "file"_a = "<string>", "The parallel axes a program uses, e.g. ['t.0'].");

  m.def(
      "random_inputs",
      [](const std::string& text, uint64_t seed, const std::string& file) {
        Program p = parse_and_check(text, file);
        return named_arrays(p, random_inputs(p, seed), /*outputs=*/false);
      },
      "text"_a, "seed"_a = 0, "file"_a = "<string>",
      "The random inputs evaluate() uses for this seed: {name: float64 array in the declared layout}.");

  m.def(
      "evaluate",
      [](const std::string& text, uint64_t seed, const std::optional<std::map<std::string, int64_t>>& blocks,
         const std::optional<nb::dict>& inputs, const std::string& file, double rounding,
         uint64_t rounding_seed) {
        Program p = parse_and_check(text, file);
        BlockSizes sizes = blocks_for(p, blocks, seed);
        std::vector<Tensor64> values = inputs ? inputs_from(p, *inputs) : random_inputs(p, seed);
        if (!(rounding >= 0)) throw Error("rounding must be at least 0, got " + std::to_string(rounding));
        return named_arrays(p, evaluate(p, values, sizes, RoundingNoise{rounding, rounding_seed}),
                            /*outputs=*/true);
      },
      "text"_a, "seed"_a = 0, "blocks"_a = nb::none(), "inputs"_a = nb::none(), "file"_a = "<string>",
      "rounding"_a = 0.0, "rounding_seed"_a = 0,
      "Evaluates a program in float64 with the reference interpreter.\n\n"
      "inputs: {name: array in the declared layout}; when omitted, random inputs from the seed.\n"
      "blocks: {axis name: block size}, e.g. {'t.0': 16}; axes not given get random sizes from the seed.\n"
      "rounding: when > 0, each rounded node's floating result is multiplied elementwise by\n"
      "1 + rounding * u * U(-1, 1), u the unit roundoff of its dtype, random from rounding_seed\n"
      "(a model of a kernel's rounding, for noise estimates; 0 evaluates exactly).\n"
      "Returns {output name: float64 array in the output's layout}.");

  m.def(
      "equiv",
      [](const std::string& text_a, const std::string& text_b, uint64_t seed, int trials,
         const std::string& file_a, const std::string& file_b) {
        Program a = parse_and_check(text_a, file_a);
        Program b = parse_and_check(text_b, file_b);
        return compare_programs(a, b, seed, trials).max_rel_error;
      },
      "text_a"_a, "text_b"_a, "seed"_a = 0, "trials"_a = 4, "file_a"_a = "<a>", "file_b"_a = "<b>",
      "Largest relative error of b's outputs against a's over `trials` trials, each with fresh random\n"
      "inputs and block sizes from seed+trial (inf where NaN appears in one only). Programs are\n"
      "equivalent when it is at most TOLERANCE.");

  m.attr("TOLERANCE") = kEquivTolerance;
}
