#include "eqiforge/interp/compare.h"

#include <algorithm>

#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

std::string axes_list(const std::vector<Axis>& axes) {
  if (axes.empty()) return "no parallel axes";
  std::string out;
  for (Axis p : axes) out += (out.empty() ? "" : ", ") + p.name();
  return out;
}

std::vector<Symbol> sorted(std::vector<Symbol> dims) {
  std::sort(dims.begin(), dims.end());
  return dims;
}

std::string dims_text(const std::vector<Symbol>& dims, const DimTable& table) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ' ';
    out += dims[i].str();
    const DimInfo* info = table.find(dims[i]);
    if (info && !info->collected_from) out += "=" + std::to_string(info->extent);
  }
  return out + "]";
}

// Same dim names and, for dims with a fixed extent, the same extents.
bool same_dims(const std::vector<Symbol>& da, const DimTable& ta, const std::vector<Symbol>& db,
               const DimTable& tb) {
  if (sorted(da) != sorted(db)) return false;
  for (Symbol d : da) {
    const DimInfo* ia = ta.find(d);
    const DimInfo* ib = tb.find(d);
    if (!ia || !ib) return false;
    if (bool(ia->collected_from) != bool(ib->collected_from)) return false;
    if (!ia->collected_from && ia->extent != ib->extent) return false;
  }
  return true;
}

template <typename Decl>
const Decl* find_decl(const std::vector<Decl>& decls, Symbol name) {
  for (const Decl& d : decls)
    if (d.name == name) return &d;
  return nullptr;
}

[[noreturn]] void interface_error(const Program& a, const Program& b, SourceLoc loc,
                                  const std::string& what) {
  throw Error(b.file, loc, what + " (comparing with " + a.file + ")");
}

}  // namespace

BlockSizes complete_block_sizes(const Program& p, const BlockSizes& given, uint64_t seed) {
  std::vector<Axis> axes = axes_of(p);
  BlockSizes blocks = random_block_sizes(p, seed);
  for (const auto& [axis, size] : given) {
    if (std::find(axes.begin(), axes.end(), axis) == axes.end())
      throw Error(p.file, {},
                  "block size given for axis " + axis.name() + ", which the program does not use (it uses " +
                      axes_list(axes) + ")");
    if (size < 1)
      throw Error(p.file, {},
                  "block size of axis " + axis.name() + " is " + std::to_string(size) +
                      "; expected a positive integer");
    blocks[axis] = size;
  }
  return blocks;
}

std::string block_sizes_text(const BlockSizes& blocks) {
  if (blocks.empty()) return "-";
  std::string out;
  for (const auto& [axis, size] : blocks)
    out += (out.empty() ? "" : " ") + axis.name() + "=" + std::to_string(size);
  return out;
}

void check_same_interface(const Program& a, const Program& b) {
  for (const InputDecl& ia : a.inputs()) {
    const InputDecl* ib = find_decl(b.inputs(), ia.name);
    if (!ib)
      interface_error(a, b, {},
                      "input '" + std::string(ia.name.str()) +
                          "' is missing; both programs must declare the same inputs");
    if (ia.dtype != ib->dtype)
      interface_error(a, b, ib->loc,
                      "input '" + std::string(ia.name.str()) + "' has dtype " +
                          std::string(dtype_name(ib->dtype)) + ", expected " +
                          std::string(dtype_name(ia.dtype)));
    if (!same_dims(ia.layout, a.dims, ib->layout, b.dims))
      interface_error(a, b, ib->loc,
                      "input '" + std::string(ia.name.str()) + "' has dims " + dims_text(ib->layout, b.dims) +
                          ", expected " + dims_text(ia.layout, a.dims));
  }
  for (const InputDecl& ib : b.inputs())
    if (!find_decl(a.inputs(), ib.name))
      interface_error(a, b, ib.loc,
                      "input '" + std::string(ib.name.str()) + "' is not an input of the other program");
  for (const OutputDecl& oa : a.outputs()) {
    const OutputDecl* ob = find_decl(b.outputs(), oa.name);
    if (!ob)
      interface_error(
          a, b, {},
          "output '" + std::string(oa.name.str()) + "' is missing; both programs must have the same outputs");
    if (!same_dims(oa.layout, a.dims, ob->layout, b.dims))
      interface_error(a, b, ob->loc,
                      "output '" + std::string(oa.name.str()) + "' has dims " +
                          dims_text(ob->layout, b.dims) + ", expected " + dims_text(oa.layout, a.dims));
  }
  for (const OutputDecl& ob : b.outputs())
    if (!find_decl(a.outputs(), ob.name))
      interface_error(a, b, ob.loc,
                      "output '" + std::string(ob.name.str()) + "' is not an output of the other program");
}

EquivReport compare_programs(const Program& a, const Program& b, uint64_t seed, int trials) {
  if (trials < 1) throw Error("the number of trials must be at least 1, got " + std::to_string(trials));
  check_same_interface(a, b);
  EquivReport report;
  for (int t = 0; t < trials; ++t) {
    EquivTrial trial;
    trial.seed = seed + uint64_t(t);
    trial.blocks_a = random_block_sizes(a, trial.seed);
    trial.blocks_b = random_block_sizes(b, trial.seed);

    std::vector<Tensor64> inputs_a = random_inputs(a, trial.seed);
    std::vector<Tensor64> inputs_b;
    for (const InputDecl& ib : b.inputs()) {
      size_t j = 0;
      while (a.inputs()[j].name != ib.name) ++j;  // present: check_same_interface
      inputs_b.push_back(inputs_a[j].transposed(ib.layout));
    }
    std::vector<Tensor64> out_a = evaluate(a, inputs_a, trial.blocks_a);
    std::vector<Tensor64> out_b = evaluate(b, inputs_b, trial.blocks_b);

    for (size_t i = 0; i < a.outputs().size(); ++i) {
      size_t j = 0;
      while (b.outputs()[j].name != a.outputs()[i].name) ++j;
      trial.max_rel_error = std::max(trial.max_rel_error, max_relative_error(out_b[j], out_a[i]));
    }
    report.max_rel_error = std::max(report.max_rel_error, trial.max_rel_error);
    report.trials.push_back(std::move(trial));
  }
  return report;
}

}  // namespace eqf
