// The emitted Python module: header, metadata, the kernels, and the host
// function `forward` that allocates buffers and launches the kernels in order.
#include <algorithm>
#include <map>

#include "codegen/triton_emit.h"
#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

using codegen::dtype_torch;
using codegen::KernelEmitter;
using codegen::KernelSignature;
using codegen::ModuleNames;
using codegen::NameTable;
using codegen::py_ident;
using codegen::TilePad;

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string tuple_text(const std::vector<std::string>& items) {
  return "(" + join(items, ", ") + (items.size() == 1 ? ",)" : ")");
}

class ModuleWriter {
 public:
  ModuleWriter(const Program& p, const LoweredProgram& lp, std::string source)
      : p_(p), lp_(lp), source_(std::move(source)) {}

  std::string run() {
    name_things();
    // The kernels are emitted first: their signatures decide the launch groups,
    // which the header's WRITES table lists.
    CodeWriter kernels;
    for (size_t i = 0; i < lp_.kernels.size(); ++i) {
      kernels.blank(2);
      KernelEmitter k(p_, lp_named_, int(i), names_);
      k.write(kernels);
      sigs_.push_back(k.signature());
    }
    form_groups();
    for (Group& g : groups_)
      if (g.members.size() > 1) {
        kernels.blank(2);
        fused_kernel(g, kernels);
      }
    header();
    std::string text = kernels.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    w_.blank(2);
    w_.line(text);
    w_.blank(2);
    host();
    return w_.str();
  }

 private:
  // ---- names -------------------------------------------------------------------

  void name_things() {
    // Module-level names first: constants, helpers, kernels.
    for (const char* n : {"forward", "PROGRAM", "INPUTS", "OUTPUTS", "BLOCK_PARAMS", "UNIT_AXES",
                          "_default_block", "_check_input", "LAUNCH_FORMS", "WRITES", "FUSED"})
      module_.claim(n);
    for (const DimInfo& d : p_.dims.all()) {
      if (d.collected_from) continue;
      std::string e = names_.extent(d.name);
      if (!module_.claim(e))
        throw Error(p_.file, {},
                    "codegen: dim " + std::string(d.name.str()) + " has the Python name " + e +
                        ", which another dim or a module name already has; rename the dim");
    }
    lp_named_ = lp_;
    for (Kernel& k : lp_named_.kernels) k.name = module_.fresh(k.name);
    // Host locals: buffers (inputs are forward's parameters), block sizes,
    // coordinate counts.
    host_ = module_;
    for (const char* n : {"num_warps", "num_stages", "input_precision", "gemv_dot", "separate_launches"})
      host_.claim(n);
    for (Axis a : lp_.axes) {
      host_.claim(names_.block_param(a));
      host_.claim(names_.count(a));
    }
    for (const Buffer& b : lp_.buffers) names_.buffer.push_back(host_.fresh(b.name));
  }

  // The host expression of a dim's extent (a module constant, or the number
  // of coordinates of the collected axis).
  std::string extent_value(Symbol d) const {
    const DimInfo* info = p_.dims.find(d);
    if (info && info->collected_from) return names_.count(*info->collected_from);
    return names_.extent(d);
  }
  // The host expression of an axis's block size.
  std::string block_value(Axis a) const { return lp_.unit_axes.count(a) ? "1" : names_.block_param(a); }
  // What an axis splits: its dim's extent at level 0, else the outer block.
  std::string split_value(Axis a) const {
    return a.level == 0 ? extent_value(a.dim) : block_value(Axis{a.dim, uint8_t(a.level - 1)});
  }

  // ---- launches shared by independent kernels ------------------------------------

  // Kernels launched together. A group of one is a plain launch; a larger one
  // also has a fused kernel that runs its members side by side in one launch:
  // the programs of each member in turn on a one-dimensional grid, so the
  // group pays one launch and one ramp and tail instead of one per member.
  // A fused launch's parameters: the members' signatures united, each tile
  // constexpr at the least size of the first member that has it. A member
  // that pads a view otherwise (to 16 for a tl.dot where another does not)
  // gets a tile constexpr of its own, and the EVEN_ flags computed with it,
  // so every member runs on the tile sizes it was emitted for.
  struct FusedParams {
    KernelSignature sig;
    std::vector<std::map<std::pair<uint32_t, int>, std::string>> tiles;  // per member: its aliases
    std::vector<std::map<Axis, std::string>> evens;
  };
  struct Group {
    std::vector<int> members;  // kernel indices, in launch order
    std::string name;          // the fused kernel (members.size() > 1)
    FusedParams params;        // its parameters (members.size() > 1)
  };

  // Groups by launch level (lower/kernel.h: the kernels of one level never
  // read what another of them writes), in launch order within a level.
  void form_groups() {
    const std::vector<int> level = launch_levels(lp_);
    const int top = level.empty() ? -1 : *std::max_element(level.begin(), level.end());
    for (int l = 0; l <= top; ++l) {
      Group g;
      for (size_t k = 0; k < lp_.kernels.size(); ++k)
        if (level[k] == l) g.members.push_back(int(k));
      if (g.members.empty()) continue;
      if (g.members.size() > 1) {
        do g.name = module_.fresh("fused" + std::to_string(groups_.size()) + "_kernel");
        while (host_.taken(g.name));
        g.params = united(g);
      }
      groups_.push_back(std::move(g));
    }
  }

  bool any_fused() const {
    return std::any_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.members.size() > 1; });
  }

  FusedParams united(const Group& g) const {
    FusedParams f;
    KernelSignature& u = f.sig;
    for (int m : g.members) {
      const KernelSignature& s = sigs_[size_t(m)];
      for (int b : s.buffers)
        if (std::find(u.buffers.begin(), u.buffers.end(), b) == u.buffers.end()) u.buffers.push_back(b);
      for (const auto& [b, dims] : s.strides) u.strides[b].insert(dims.begin(), dims.end());
      u.extents.insert(s.extents.begin(), s.extents.end());
      u.blocks.insert(s.blocks.begin(), s.blocks.end());
      u.input_precision |= s.input_precision;
      u.gemv_dot |= s.gemv_dot;
      auto& tiles = f.tiles.emplace_back();
      for (const auto& [key, pad] : s.tiles) {
        auto [it, fresh] = u.tiles.try_emplace(key, pad);
        if (fresh || it->second == pad) continue;
        const std::string& name = names_.tile_alias(DimView{Symbol::from_raw(key.first), key.second, false}, pad);
        tiles[key] = name;
        if (std::none_of(u.tile_aliases.begin(), u.tile_aliases.end(),
                         [&](const auto& t) { return std::get<0>(t) == name; }))
          u.tile_aliases.emplace_back(name, key, pad);
      }
      auto& evens = f.evens.emplace_back();
      for (Axis a : s.evens) {
        auto key = std::make_pair(a.dim.raw(), int(a.level) + 1);
        if (!tiles.count(key)) {
          u.evens.insert(a);
          continue;
        }
        const TilePad pad = s.tiles.at(key);
        const std::string& name = names_.even_alias(a, pad);
        evens[a] = name;
        if (std::none_of(u.even_aliases.begin(), u.even_aliases.end(),
                         [&](const auto& e) { return std::get<0>(e) == name; }))
          u.even_aliases.emplace_back(name, a, pad);
      }
    }
    return f;
  }

  // The grid axes of a group's members, first use first: each has a GRID_
  // constexpr in the fused kernel.
  std::vector<Axis> grid_axes(const Group& g) const {
    std::vector<Axis> axes;
    for (int m : g.members)
      for (Axis a : lp_.kernels[size_t(m)].grid)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
    return axes;
  }

  // The number of programs of a member: the product of its grid's coordinate
  // counts, spelled with `count` (GRID_ in the kernel, n_ on the host).
  template <typename Count>
  std::string programs(const Kernel& k, Count count) const {
    std::vector<std::string> factors;
    for (Axis a : k.grid) factors.push_back(count(a));
    return factors.empty() ? "1" : join(factors, " * ");
  }

  void fused_kernel(const Group& g, CodeWriter& w) {
    const FusedParams& params = g.params;
    std::vector<std::string> lines = codegen::kernel_params(p_, lp_named_, names_, params.sig);
    std::vector<std::string> counts;
    for (Axis a : grid_axes(g)) counts.push_back(names_.grid_count(a) + ": tl.constexpr");
    if (!counts.empty()) lines.push_back(join(counts, ", ") + ",");
    codegen::write_jit_def(w, g.name, lines);
    auto body = w.indent();
    std::vector<std::string> names;
    for (int m : g.members) names.push_back(lp_named_.kernels[size_t(m)].name);
    w.comment(join(names, ", ") + " side by side in one launch (none reads what another writes): each "
              "member's programs in turn, on a one-dimensional grid.");
    NameTable scope;
    for (Axis a : grid_axes(g)) scope.claim(names_.grid_count(a));
    for (const auto& alias : params.sig.tile_aliases) scope.claim(std::get<0>(alias));
    for (const auto& alias : params.sig.even_aliases) scope.claim(std::get<0>(alias));
    const std::string pid = scope.fresh("pid");
    w.line(pid + " = tl.program_id(0)");
    // An operand other than a name is parenthesized.
    auto operand = [](const std::string& x) { return x.find(' ') == std::string::npos ? x : "(" + x + ")"; };
    std::string start;  // the programs of the members before, as a sum
    for (size_t i = 0; i < g.members.size(); ++i) {
      const Kernel& k = lp_named_.kernels[size_t(g.members[i])];
      const std::string n = programs(k, [&](Axis a) { return names_.grid_count(a); });
      const std::string end = start.empty() ? n : start + " + " + n;
      if (i == 0)
        w.line("if " + pid + " < " + end + ":");
      else if (i + 1 < g.members.size())
        w.line("elif " + pid + " < " + end + ":");
      else
        w.line("else:");
      auto branch = w.indent();
      w.comment(k.name + "'s body.");
      // The member's coordinates from its program's index among its own
      // (grid axis 0 varies fastest).
      const std::string local = start.empty() ? pid : pid + " - " + operand(start);
      std::vector<std::string> ids;
      std::string below;  // product of the counts of the axes before
      for (size_t j = 0; j < k.grid.size(); ++j) {
        std::string id = below.empty() ? local : operand(local) + " // " + operand(below);
        if (j + 1 < k.grid.size()) id = operand(id) + " % " + names_.grid_count(k.grid[j]);
        ids.push_back(id);
        below += (below.empty() ? "" : " * ") + names_.grid_count(k.grid[j]);
      }
      KernelEmitter e(p_, lp_named_, g.members[i], names_, &scope);
      e.set_program_ids(ids);
      e.set_aliases(params.tiles[i], params.evens[i]);
      e.write_body(w);
      scope = e.locals();
      start = end;
    }
  }

  // ---- the module ----------------------------------------------------------------

  void header() {
    std::string name(p_.name.str());
    w_.line("\"\"\"Triton kernels for the eqiforge program `" + name + "`" +
            (source_.empty() ? "" : " (" + source_ + ")") + ".");
    w_.blank();
    w_.line("Generated by eqiforge. `forward(" + input_list() + ")` takes the program's inputs as torch");
    w_.line("tensors in their declared dtypes and dim orders and returns its outputs as a tuple. Each");
    w_.line("kernel's comment gives the IR term it implements.");
    w_.line("\"\"\"");
    w_.line("import torch");
    w_.line("import triton");
    w_.line("import triton.language as tl");
    w_.blank();
    w_.line("PROGRAM = " + quote(name));
    std::vector<std::string> ins, outs;
    for (const InputDecl& in : p_.inputs()) ins.push_back(quote(in.name.str()));
    for (const OutputDecl& o : p_.outputs()) outs.push_back(quote(o.name.str()));
    w_.line("INPUTS = " + tuple_text(ins));
    w_.line("OUTPUTS = " + tuple_text(outs));
    w_.comment("Extents of the program's dims.");
    for (const DimInfo& d : p_.dims.all())
      if (!d.collected_from) w_.line(names_.extent(d.name) + " = " + std::to_string(d.extent));
    w_.comment("forward's keyword argument for the block size of each parallel axis.");
    std::vector<std::string> params, units;
    for (Axis a : lp_.axes) {
      if (lp_.unit_axes.count(a))
        units.push_back(quote(a.name()));
      else
        params.push_back(quote(a.name()) + ": " + quote(names_.block_param(a)));
    }
    w_.line("BLOCK_PARAMS = {" + join(params, ", ") + "}");
    w_.comment("Axes whose block size is fixed to 1: the dim they split is squeezed out of the tiles.");
    w_.line("UNIT_AXES = " + tuple_text(units));
    w_.comment("The pointer arguments each kernel stores through: the launch path orders kernels that");
    w_.comment("share a buffer by them and lets the others run side by side in a captured CUDA graph.");
    // The pointers the given kernels store through, first store first.
    auto stored = [&](const std::vector<int>& kernels) {
      std::vector<std::string> ptrs;
      for (int k : kernels)
        for (const Store& st : lp_.kernels[size_t(k)].stores) {
          std::string q = quote(names_.ptr(st.buffer));
          if (std::find(ptrs.begin(), ptrs.end(), q) == ptrs.end()) ptrs.push_back(q);
        }
      return tuple_text(ptrs);
    };
    std::vector<std::string> writes;
    for (size_t k = 0; k < lp_named_.kernels.size(); ++k)
      writes.push_back(quote(lp_named_.kernels[k].name) + ": " + stored({int(k)}));
    for (const Group& g : groups_)
      if (g.members.size() > 1) writes.push_back(quote(g.name) + ": " + stored(g.members));
    w_.line("WRITES = {" + join(writes, ", ") + "}");
    if (any_fused()) {
      w_.comment("The kernels each fused kernel runs side by side in one launch (forward's separate_launches).");
      std::vector<std::string> fused;
      for (const Group& g : groups_) {
        if (g.members.size() < 2) continue;
        std::vector<std::string> names;
        for (int m : g.members) names.push_back(quote(lp_named_.kernels[size_t(m)].name));
        fused.push_back(quote(g.name) + ": " + tuple_text(names));
      }
      w_.line("FUSED = {" + join(fused, ", ") + "}");
    }
    w_.blank(2);
    w_.line("def _default_block(size):");
    {
      auto body = w_.indent();
      w_.line("return min(triton.next_power_of_2(size), 64)");
    }
    w_.blank(2);
    w_.line("def _check_input(tensor, name, shape, dtype):");
    {
      auto body = w_.indent();
      w_.line("if tuple(tensor.shape) != shape:");
      {
        auto then = w_.indent();
        w_.line("raise ValueError(f\"input {name}: expected shape {shape}, got {tuple(tensor.shape)}\")");
      }
      w_.line("if tensor.dtype != dtype:");
      {
        auto then = w_.indent();
        w_.line("raise ValueError(f\"input {name}: expected dtype {dtype}, got {tensor.dtype}\")");
      }
    }
  }

  std::string input_list() const {
    std::vector<std::string> ins;
    for (size_t i = 0; i < p_.inputs().size(); ++i) ins.push_back(names_.buffer[i]);
    return join(ins, ", ");
  }

  std::string shape_text(const Buffer& b) const {
    std::vector<std::string> dims;
    for (Symbol d : b.layout) dims.push_back(extent_value(d));
    return tuple_text(dims);
  }

  std::string type_text(const Buffer& b) const {
    std::vector<std::string> dims;
    for (Symbol d : b.layout) dims.push_back(std::string(d.str()));
    return std::string(dtype_name(b.dtype)) + "[" + join(dims, " ") + "]";
  }

  void host() {
    const std::vector<KernelSignature>& sigs = sigs_;
    const bool gemv = std::any_of(sigs.begin(), sigs.end(), [](const KernelSignature& s) { return s.gemv_dot; });
    const bool fused = any_fused();
    std::vector<std::string> forms;
    if (gemv) forms.push_back(quote("gemv_dot"));
    if (fused) forms.push_back(quote("separate_launches"));
    w_.comment("forward's keyword arguments that choose between two forms of a kernel (booleans).");
    w_.line("LAUNCH_FORMS = " + (forms.empty() ? std::string("()") : tuple_text(forms)));
    w_.blank(2);
    std::vector<std::string> params;
    for (size_t i = 0; i < p_.inputs().size(); ++i) params.push_back(names_.buffer[i]);
    params.push_back("*");
    for (Axis a : lp_.axes)
      if (!lp_.unit_axes.count(a)) params.push_back(names_.block_param(a) + "=None");
    params.push_back("num_warps=4");
    params.push_back("num_stages=2");
    params.push_back("input_precision=\"ieee\"");
    if (gemv) params.push_back("gemv_dot=False");
    if (fused) params.push_back("separate_launches=False");
    std::string sig = "def forward(" + join(params, ", ") + "):";
    if (sig.size() <= 110) {
      w_.line(sig);
    } else {
      w_.line("def forward(");
      {
        auto in = w_.indent();
        for (const std::string& prm : params) w_.line(prm + ",");
      }
      w_.line("):");
    }
    auto body = w_.indent();

    std::vector<std::string> ins, outs;
    std::vector<int> output_buffers;
    for (size_t b = 0; b < lp_.buffers.size(); ++b) {
      const Buffer& buf = lp_.buffers[b];
      if (buf.kind == BufferKind::Input) ins.push_back(names_.buffer[b] + " " + type_text(buf));
      if (buf.kind == BufferKind::Output) {
        outs.push_back(names_.buffer[b] + " " + type_text(buf));
        output_buffers.push_back(int(b));
      }
    }
    w_.line("\"\"\"Runs `" + std::string(p_.name.str()) + "`: " + join(ins, ", ") + " -> " +
            tuple_text(outs) + ".");
    w_.blank();
    w_.line("block_<axis>: block size of each parallel axis (default: min(next power of two of what");
    w_.line("it splits, 64)). num_warps, num_stages: launch options of every kernel. input_precision:");
    w_.line("of fp32 tl.dot (\"ieee\": exact fp32; \"tf32\": tensor cores).");
    if (gemv) {
      w_.line("gemv_dot: each product of a vector and a matrix as a tl.dot of the vector padded to 16");
      w_.line("rows (True), or as a multiply and sum (False).");
    }
    if (fused) {
      w_.line("separate_launches: every kernel in a launch of its own (True), or the independent kernels");
      w_.line("of each group side by side in one launch of its fused kernel (False).");
    }
    w_.line("\"\"\"");

    for (size_t i = 0; i < p_.inputs().size(); ++i) {
      const Buffer& buf = lp_.buffers[i];
      w_.line("_check_input(" + names_.buffer[i] + ", " + quote(buf.name) + ", " + shape_text(buf) + ", " +
              dtype_torch(buf.dtype) + ")");
    }
    for (Axis a : lp_.axes) {
      if (lp_.unit_axes.count(a)) continue;
      std::string prm = names_.block_param(a);
      std::string fallback =
          a.level == 0 ? "_default_block(" + split_value(a) + ")" : "max(1, " + split_value(a) + " // 2)";
      w_.line(prm + " = " + fallback + " if " + prm + " is None else " + prm);
    }
    if (!lp_.axes.empty()) w_.comment("Number of blocks (coordinates) of each axis.");
    for (Axis a : lp_.axes) {
      std::string block = block_value(a);
      w_.line(names_.count(a) + " = " +
              (block == "1" ? split_value(a) : "triton.cdiv(" + split_value(a) + ", " + block + ")"));
    }
    if (!p_.inputs().empty())
      w_.line("device = " + names_.buffer[0] + ".device");
    else
      w_.line("device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")");
    for (size_t b = 0; b < lp_.buffers.size(); ++b) {
      const Buffer& buf = lp_.buffers[b];
      if (buf.kind == BufferKind::Input) continue;
      w_.line(names_.buffer[b] + " = torch.empty(" + shape_text(buf) +
              ", device=device, dtype=" + dtype_torch(buf.dtype) + ")");
    }
    for (const Group& g : groups_) {
      if (g.members.size() == 1) {
        launch(lp_named_.kernels[size_t(g.members[0])], sigs[size_t(g.members[0])]);
        continue;
      }
      w_.line("if separate_launches:");
      {
        auto branch = w_.indent();
        for (int m : g.members) launch(lp_named_.kernels[size_t(m)], sigs[size_t(m)]);
      }
      w_.line("else:");
      auto branch = w_.indent();
      fused_launch(g);
    }
    std::vector<std::string> results;
    for (int b : output_buffers) results.push_back(names_.buffer[size_t(b)]);
    w_.line("return " + tuple_text(results));
  }

  void launch(const Kernel& k, const KernelSignature& sig) {
    std::vector<std::string> grid;
    for (Axis a : k.grid) grid.push_back(names_.count(a));
    if (grid.empty()) grid.push_back("1");
    std::vector<std::string> loops;
    for (const Loop& l : k.loops) loops.push_back(l.axis.name());
    std::vector<std::string> axes;
    for (Axis a : k.grid) axes.push_back(a.name());
    w_.comment(k.name + ": grid " + (axes.empty() ? "of one program" : "over " + join(axes, ", ")) +
               (loops.empty() ? "" : "; loops over " + join(loops, ", ")) + ".");
    w_.line(k.name + "[" + tuple_text(grid) + "](");
    launch_args(sig);
    w_.line(")");
  }

  void fused_launch(const Group& g) {
    std::vector<std::string> parts, names;
    for (int m : g.members) {
      const Kernel& k = lp_named_.kernels[size_t(m)];
      parts.push_back(programs(k, [&](Axis a) { return names_.count(a); }));
      names.push_back(k.name);
    }
    w_.comment(g.name + ": " + join(names, ", ") + " in one launch.");
    w_.line(g.name + "[(" + join(parts, " + ") + ",)](");
    std::vector<std::string> counts;
    for (Axis a : grid_axes(g)) counts.push_back(names_.grid_count(a) + "=" + names_.count(a));
    launch_args(g.params.sig, counts);
    w_.line(")");
  }

  // A tile's size on the host: the next power of two of its block, at least
  // 16 where a tl.dot takes it.
  static std::string padded(TilePad pad, const std::string& pow2) {
    if (pad == TilePad::Dot) return "max(16, " + pow2 + ")";
    if (pad == TilePad::GemvDot) return "(max(16, " + pow2 + ") if gemv_dot else " + pow2 + ")";
    return pow2;
  }

  // `extra`: keyword arguments after the signature's own (a fused launch's grid counts).
  void launch_args(const KernelSignature& sig, const std::vector<std::string>& extra = {}) {
    auto args = w_.indent();
    std::vector<std::string> ptrs;
    for (int b : sig.buffers) ptrs.push_back(names_.buffer[size_t(b)]);
    w_.line(join(ptrs, ", ") + ",");
    for (int b : sig.buffers) {
      auto it = sig.strides.find(b);
      if (it == sig.strides.end()) continue;
      const Buffer& buf = lp_.buffers[size_t(b)];
      std::vector<std::string> s;
      for (size_t i = 0; i < buf.layout.size(); ++i)
        if (it->second.count(buf.layout[i]))
          s.push_back(names_.buffer[size_t(b)] + ".stride(" + std::to_string(i) + ")");
      if (!s.empty()) w_.line(join(s, ", ") + ",");
    }
    std::vector<std::string> ext;
    for (const DimInfo& d : p_.dims.all())
      if (sig.extents.count(d.name)) ext.push_back(extent_value(d.name));
    if (!ext.empty()) w_.line(join(ext, ", ") + ",");
    std::vector<std::string> kw;
    for (Axis a : lp_.axes)
      if (sig.blocks.count(a)) kw.push_back(names_.block(a) + "=" + names_.block_param(a));
    std::vector<std::pair<std::pair<int, int>, std::string>> tiles;
    for (const auto& [key, pad] : sig.tiles) {
      Symbol d = Symbol::from_raw(key.first);
      int depth = key.second;
      std::string size = depth == 0 ? extent_value(d) : block_value(Axis{d, uint8_t(depth - 1)});
      std::string pow2 = "triton.next_power_of_2(" + size + ")";
      tiles.push_back({{p_.dims.order(d), depth}, names_.tile(DimView{d, depth, false}) + "=" + padded(pad, pow2)});
    }
    std::sort(tiles.begin(), tiles.end());
    for (const auto& [order, text] : tiles) kw.push_back(text);
    for (Axis a : lp_.axes) {
      if (!sig.evens.count(a)) continue;
      // The same tile size as TILE_ above, so the flag is true exactly when
      // every mask of a's blocks holds.
      auto it = sig.tiles.find({a.dim.raw(), a.level + 1});
      std::string block = block_value(a), pow2 = "triton.next_power_of_2(" + block + ")";
      kw.push_back(names_.even(a) + "=" + split_value(a) + " % " + block + " == 0 and " +
                   padded(it == sig.tiles.end() ? TilePad::None : it->second, pow2) + " == " + block);
    }
    for (const auto& [name, key, pad] : sig.tile_aliases) {
      Symbol d = Symbol::from_raw(key.first);
      std::string size = key.second == 0 ? extent_value(d) : block_value(Axis{d, uint8_t(key.second - 1)});
      kw.push_back(name + "=" + padded(pad, "triton.next_power_of_2(" + size + ")"));
    }
    for (const auto& [name, a, pad] : sig.even_aliases) {
      std::string block = block_value(a);
      kw.push_back(name + "=" + split_value(a) + " % " + block + " == 0 and " +
                   padded(pad, "triton.next_power_of_2(" + block + ")") + " == " + block);
    }
    if (sig.input_precision) kw.push_back("INPUT_PRECISION=input_precision");
    if (sig.gemv_dot) kw.push_back("GEMV_DOT=gemv_dot");
    kw.insert(kw.end(), extra.begin(), extra.end());
    // Keyword arguments, wrapped.
    std::string line;
    for (const std::string& item : kw) {
      if (!line.empty() && line.size() + item.size() + 2 > 96) {
        w_.line(line + ",");
        line.clear();
      }
      line += (line.empty() ? "" : ", ") + item;
    }
    if (!line.empty()) w_.line(line + ",");
    w_.line("num_warps=num_warps, num_stages=num_stages,");
  }

  const Program& p_;
  const LoweredProgram& lp_;
  LoweredProgram lp_named_;  // kernels renamed to unique Python names
  std::vector<KernelSignature> sigs_;  // each kernel's, in launch order
  std::vector<Group> groups_;          // the launches, in order
  std::string source_;
  CodeWriter w_;
  NameTable module_, host_;
  ModuleNames names_;
};

}  // namespace

std::string emit_triton(const Program& p, const LoweredProgram& lowered, const std::string& source) {
  return ModuleWriter(p, lowered, source).run();
}

std::string emit_triton(const Program& p, const TritonOptions& options) {
  return emit_triton(p, lower_program(p, options.lower), options.source);
}

}  // namespace eqf
