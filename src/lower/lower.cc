// Kernel formation: from a type-checked tiled program to kernels over buffers
// (see eqiforge/lower/kernel.h for the rules).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/lower/kernel.h"

namespace eqf {
namespace {

constexpr size_t kMaxGridAxes = 3;  // tl.program_id(0..2)

std::string str(Symbol s) { return std::string(s.str()); }
std::string op_name(Op op) { return std::string(op_info(op).name); }

bool is_chain_op(Op op) {
  return op == Op::Partition || op == Op::Replicate || op == Op::Rename || op == Op::Split || op == Op::Merge;
}
bool is_view_op(Op op) { return op == Op::Rename || op == Op::Split || op == Op::Merge; }

// The axes a value varies with: every axis in scope whose state is not rep.
std::vector<Axis> varying_axes(const Type& t) {
  std::vector<Axis> out;
  for (const TensorType& part : t.parts)
    for (const AxisState& as : part.delta)
      if (as.state.kind != StateKind::Rep && std::find(out.begin(), out.end(), as.axis) == out.end())
        out.push_back(as.axis);
  return out;
}

bool is_global(const Type& t) {
  for (const TensorType& part : t.parts)
    if (part.literal || !part.delta.empty()) return false;
  return true;
}

class Lowering;

// Builds one kernel: walks the region below its root, placing every node in
// its scope (see "Scheduling" in kernel.h).
class KernelBuilder {
 public:
  KernelBuilder(Lowering& lowering, const Program& p, Kernel& k) : L_(lowering), p_(p), k_(k) {}

  // Schedules n and everything it needs.
  void visit(NodeId n);
  void set_grid(std::vector<Axis> grid) {
    k_.grid = std::move(grid);
    grid_.assign(k_.grid.begin(), k_.grid.end());
  }

 private:
  [[noreturn]] void fail(NodeId n, const std::string& why) const;
  // The scope n belongs in, given the loops now open: the innermost open loop
  // over an axis n varies with; -1 for the kernel's top.
  int scope_of(NodeId n) const;
  Block& block(int scope) { return scope < 0 ? k_.body : k_.loops[size_t(scope)].body; }
  void place(NodeId n, int scope, Item item) {
    placed_.insert(key(n, scope));
    block(scope).items.push_back(item);
  }
  static uint64_t key(NodeId n, int scope) { return (uint64_t(n.v) << 32) | uint32_t(scope + 1); }

  void visit_chain(NodeId n, int scope);
  void visit_preduce(NodeId n, int scope);
  void add_load(NodeId n, int scope, NodeId source, std::vector<NodeId> views, int buffer, int component);

  Lowering& L_;
  const Program& p_;
  Kernel& k_;
  std::vector<Axis> grid_;
  std::vector<int> open_;  // loops enclosing the node being visited, outermost first
  std::unordered_set<uint64_t> placed_;
};

class Lowering {
 public:
  Lowering(const Program& p, const LowerOptions& options) : p_(p) {
    if (p.types().size() != p.size())
      throw Error(p.file, {}, "lowering needs a type-checked program (run typecheck first)");
    out_.unit_axes = options.unit_axes ? *options.unit_axes : default_unit_axes(p);
    out_.axes = axes_of(p);
  }

  LoweredProgram run() {
    for (const InputDecl& in : p_.inputs()) {
      Buffer b;
      b.kind = BufferKind::Input;
      b.name = str(in.name);
      b.dtype = in.dtype;
      b.layout = in.layout;
      b.node = in.node;
      materialized_[in.node.v] = int(out_.buffers.size());
      out_.buffers.push_back(std::move(b));
    }
    std::vector<int> output_buffers;
    for (const OutputDecl& o : p_.outputs()) {
      const Type& t = p_.type(o.value).get();
      if (t.is_tuple || t.tensor().literal)
        throw Error(p_.file, o.loc,
                    "lowering: output " + str(o.name) + " is not a tensor computed from inputs");
      Buffer b;
      b.kind = BufferKind::Output;
      b.name = str(o.name);
      b.dtype = t.tensor().dtype;
      b.layout = o.layout;
      b.node = o.value;
      output_buffers.push_back(int(out_.buffers.size()));
      out_.buffers.push_back(std::move(b));
    }
    for (size_t i = 0; i < p_.outputs().size(); ++i) {
      const OutputDecl& o = p_.outputs()[i];
      if (p_.node(o.value).op == Op::Input)
        throw Error(p_.file, o.loc,
                    "lowering: output " + str(o.name) + " is the input " +
                        str(attr_sym(p_.node(o.value).attrs, 0)) + " itself; there is nothing to compute");
      lower_global(o.value, output_buffers[i]);
      // Later kernels may read this output instead of recomputing it.
      materialized_.emplace(o.value.v, output_buffers[i]);
    }
    return std::move(out_);
  }

  // The buffer (first component) holding a materialized node, lowering the
  // kernel that writes it first.
  int materialize(NodeId n) {
    if (auto it = materialized_.find(n.v); it != materialized_.end()) return it->second;
    int first;
    if (p_.node(n).op == Op::Collect) {
      first = lower_collect(n);
    } else {
      Buffer b;
      b.kind = BufferKind::Intermediate;
      b.name = buffer_name(n);
      b.dtype = p_.type(n).get().tensor().dtype;
      b.layout = p_.type(n).get().tensor().dims;
      sort_by_declaration(b.layout);
      b.node = n;
      first = int(out_.buffers.size());
      out_.buffers.push_back(std::move(b));
      lower_global(n, first);
    }
    materialized_[n.v] = first;
    return first;
  }

  const std::set<Axis>& unit_axes() const { return out_.unit_axes; }
  [[noreturn]] void fail(NodeId n, const std::string& why) const {
    throw Error(p_.file, p_.node(n).loc, "lowering: " + why);
  }

 private:
  void sort_by_declaration(std::vector<Symbol>& dims) const {
    std::sort(dims.begin(), dims.end(),
              [&](Symbol a, Symbol b) { return p_.dims.order(a) < p_.dims.order(b); });
  }

  std::string buffer_name(NodeId n) {
    Symbol s = p_.name_of(n);
    return s.valid() ? str(s) : "buf" + std::to_string(++unnamed_);
  }

  // A global value (an output or an intermediate): the combines at its root
  // are the grid, innermost first.
  void lower_global(NodeId root, int buffer) {
    std::vector<Axis> grid;
    NodeId body = root;
    while (p_.node(body).op == Op::Combine) {
      grid.push_back(attr_axis(p_.node(body).attrs, 0));
      body = p_.children(body)[0];
    }
    std::reverse(grid.begin(), grid.end());
    check_grid(root, grid);
    // Kernels are appended after the kernels of what they read, so build in
    // a local and append at the end (materialize() may append meanwhile).
    Kernel k;
    k.name = out_.buffers[size_t(buffer)].name + "_kernel";
    k.root = root;
    KernelBuilder builder(*this, p_, k);
    builder.set_grid(grid);
    builder.visit(body);
    k.stores.push_back(Store{buffer, body, -1, std::nullopt});
    finish(std::move(k), buffer, 1);
  }

  // collect(p, X): one buffer per component of X with the extra dim c_p
  // outermost; the kernel's grid is p and the axes X is partitioned on.
  int lower_collect(NodeId n) {
    Axis p = attr_axis(p_.node(n).attrs, 0);
    NodeId x = p_.children(n)[0];
    const Type& xt = p_.type(x).get();
    const Type& nt = p_.type(n).get();
    std::vector<Axis> outer;
    for (const TensorType& part : xt.parts) {
      for (const AxisState& as : part.delta) {
        if (as.axis == p) continue;
        if (as.state.kind == StateKind::Part) {
          if (std::find(outer.begin(), outer.end(), as.axis) == outer.end()) outer.push_back(as.axis);
        } else if (as.state.kind != StateKind::Rep) {
          fail(n, "collect of " + p.name() + " over a value that is " + state_text(as.state) + " on axis " +
                      as.axis.name() +
                      "; a collected value may only be partitioned or replicated on other axes");
        }
      }
    }
    std::vector<Axis> grid{p};
    grid.insert(grid.end(), outer.rbegin(), outer.rend());
    check_grid(n, grid);

    int first = int(out_.buffers.size());
    Symbol c = p.collected_dim();
    std::string base = buffer_name(n);
    for (size_t i = 0; i < nt.parts.size(); ++i) {
      Buffer b;
      b.kind = BufferKind::Intermediate;
      b.name = nt.is_tuple ? base + "_" + std::to_string(i) : base;
      // Collected states are accumulators: kept in fp32 whatever the dtype.
      b.dtype = DType::F32;
      std::vector<Symbol> rest = nt.parts[i].dims;
      rest.erase(std::remove(rest.begin(), rest.end(), c), rest.end());
      sort_by_declaration(rest);
      b.layout.push_back(c);
      b.layout.insert(b.layout.end(), rest.begin(), rest.end());
      b.node = n;
      b.component = nt.is_tuple ? int(i) : -1;
      out_.buffers.push_back(std::move(b));
    }
    Kernel k;
    k.name = base + "_kernel";
    k.root = n;
    KernelBuilder builder(*this, p_, k);
    builder.set_grid(grid);
    builder.visit(x);
    for (size_t i = 0; i < nt.parts.size(); ++i)
      k.stores.push_back(Store{first + int(i), x, nt.is_tuple ? int(i) : -1, p});
    finish(std::move(k), first, int(nt.parts.size()));
    return first;
  }

  void check_grid(NodeId root, const std::vector<Axis>& grid) const {
    if (grid.size() <= kMaxGridAxes) return;
    std::string names;
    for (Axis a : grid) names += (names.empty() ? "" : " ") + a.name();
    fail(root, "the kernel of " + print_term(p_, root).substr(0, 60) + "... needs " +
                   std::to_string(grid.size()) + " grid axes (" + names + "); at most 3 are supported");
  }

  void finish(Kernel&& k, int first_buffer, int count) {
    int index = int(out_.kernels.size());
    for (int i = 0; i < count; ++i) out_.buffers[size_t(first_buffer + i)].producer = index;
    out_.kernels.push_back(std::move(k));
  }

  const Program& p_;
  LoweredProgram out_;
  std::unordered_map<uint32_t, int> materialized_;
  int unnamed_ = 0;
};

// ---- KernelBuilder ------------------------------------------------------------

void KernelBuilder::fail(NodeId n, const std::string& why) const { L_.fail(n, why); }

int KernelBuilder::scope_of(NodeId n) const {
  int scope = -1;
  for (Axis a : varying_axes(p_.type(n).get())) {
    if (std::find(grid_.begin(), grid_.end(), a) != grid_.end()) continue;
    int found = -1;
    for (size_t i = 0; i < open_.size(); ++i)
      if (k_.loops[size_t(open_[i])].axis == a) found = int(i);
    if (found < 0) {
      const Node& node = p_.node(n);
      if (node.op == Op::Combine)
        fail(n, "combine of " + attr_axis(node.attrs, 0).name() +
                    " inside a kernel; combine must be at the top of a kernel (its grid), above every loop");
      std::string grid;
      for (Axis g : grid_) grid += (grid.empty() ? "" : " ") + g.name();
      fail(n, op_name(node.op) + " varies with axis " + a.name() +
                  ", which is neither on the kernel's grid (" + (grid.empty() ? "none" : grid) +
                  ") nor the axis of an enclosing preduce loop");
    }
    // Scopes are positions in open_; keep the innermost.
    scope = std::max(scope, found);
  }
  return scope < 0 ? -1 : open_[size_t(scope)];
}

void KernelBuilder::visit(NodeId n) {
  const Node& node = p_.node(n);
  const Type& t = p_.type(n).get();
  if (node.op == Op::Const || (!t.is_tuple && t.tensor().literal)) return;  // written inline where used

  int scope = scope_of(n);
  if (placed_.count(key(n, scope))) return;
  // Children are computed in n's scope or outer ones: close deeper loops
  // while visiting them.
  std::vector<int> saved = open_;
  while (!open_.empty() && open_.back() != scope) open_.pop_back();

  switch (node.op) {
    case Op::Input:
      add_load(n, scope, n, {}, L_.materialize(n), -1);
      break;
    case Op::Iota:
      add_load(n, scope, n, {}, -1, -1);
      break;
    case Op::Partition:
    case Op::Replicate:
    case Op::Rename:
    case Op::Split:
    case Op::Merge:
      visit_chain(n, scope);
      break;
    case Op::Combine:
      if (is_global(t)) {
        add_load(n, scope, n, {}, L_.materialize(n), -1);
        break;
      }
      fail(n, "combine of " + attr_axis(node.attrs, 0).name() +
                  " inside a kernel; combine must be at the top of a kernel (its grid), above every loop");
    case Op::Collect:
      add_load(n, scope, n, {}, L_.materialize(n), -1);
      break;
    case Op::PReduce:
      visit_preduce(n, scope);
      break;
    default:
      for (NodeId c : p_.children(n)) visit(c);
      place(n, scope, Item{Item::Kind::Compute, n, -1});
      break;
  }
  open_ = std::move(saved);
}

// partition/replicate/view chains: a load when they end at a materialized
// tensor, else a replicate of a value computed here (the same tile).
void KernelBuilder::visit_chain(NodeId n, int scope) {
  std::vector<NodeId> views;
  bool blocked = false;  // the chain partitions or reshapes
  NodeId b = n;
  while (is_chain_op(p_.node(b).op)) {
    Op op = p_.node(b).op;
    if (is_view_op(op)) views.push_back(b);
    if (op != Op::Replicate) blocked = true;
    b = p_.children(b)[0];
  }
  const Node& bottom = p_.node(b);
  const Type& bt = p_.type(b).get();
  int component = -1;
  NodeId source = b;
  if (bottom.op == Op::Proj && p_.node(p_.children(b)[0]).op == Op::Collect) {
    component = int(bottom.attrs[0]);
    source = p_.children(b)[0];
  }
  Op sop = p_.node(source).op;
  if (sop == Op::Input || sop == Op::Collect) {
    add_load(n, scope, source, std::move(views), L_.materialize(source), component);
    return;
  }
  if (sop == Op::Iota) {
    add_load(n, scope, source, std::move(views), -1, -1);
    return;
  }
  if (is_global(bt) && (sop == Op::Combine || blocked)) {
    // A global value read in blocks (or one that needs its own grid): an
    // intermediate buffer written by its own kernel.
    add_load(n, scope, source, std::move(views), L_.materialize(source), -1);
    return;
  }
  if (blocked) {
    const Node& node = p_.node(n);
    std::string what =
        node.op == Op::Partition ? "partition of " + attr_axis(node.attrs, 0).name() : op_name(node.op);
    fail(n,
         what + " over a value computed inside the kernel (" + op_name(bottom.op) +
             "); blocks can only be loaded from materialized tensors (inputs, collected or global values)");
  }
  // replicate(p, X) with X computed here: X does not vary with p, so the tile is X's.
  visit(p_.children(n)[0]);
  place(n, scope, Item{Item::Kind::Compute, n, -1});
}

void KernelBuilder::add_load(NodeId n, int scope, NodeId source, std::vector<NodeId> views, int buffer,
                             int component) {
  Load load;
  load.node = n;
  load.source = source;
  load.views = std::move(views);
  load.buffer = buffer;
  load.component = component;
  load.scope = scope;
  for (const TensorType& part : p_.type(n).get().parts)
    for (const AxisState& as : part.delta)
      if (as.state.kind == StateKind::Rep &&
          std::find(load.replicated_over.begin(), load.replicated_over.end(), as.axis) ==
              load.replicated_over.end())
        load.replicated_over.push_back(as.axis);
  int index = int(k_.loads.size());
  k_.loads.push_back(std::move(load));
  place(n, scope, Item{Item::Kind::Load, n, index});
}

void KernelBuilder::visit_preduce(NodeId n, int scope) {
  const Node& node = p_.node(n);
  Axis axis = attr_axis(node.attrs, 0);
  const Reduction& red = attr_red(node.attrs, 1).get();
  if (std::find(grid_.begin(), grid_.end(), axis) != grid_.end())
    fail(n, "preduce of " + axis.name() + ", which is a grid axis of this kernel");

  Loop loop;
  loop.axis = axis;
  loop.preduce = n;
  loop.parent = scope;
  const Type& t = p_.type(n).get();
  for (size_t i = 0; i < t.parts.size(); ++i)
    loop.accumulators.push_back(Accumulator{tile_view(p_, t.parts[i], L_.unit_axes()), red.components.at(i)});
  int index = int(k_.loops.size());
  k_.loops.push_back(std::move(loop));

  open_.push_back(index);
  visit(p_.children(n)[0]);
  open_.pop_back();
  place(n, scope, Item{Item::Kind::Loop, n, index});
}

}  // namespace

std::vector<int> launch_levels(const LoweredProgram& lp) {
  std::vector<int> level(lp.kernels.size(), 0);
  for (size_t k = 0; k < lp.kernels.size(); ++k)
    for (const Load& ld : lp.kernels[k].loads) {
      if (ld.buffer < 0) continue;
      const int producer = lp.buffers[size_t(ld.buffer)].producer;
      if (producer >= 0 && size_t(producer) < k) level[k] = std::max(level[k], level[size_t(producer)] + 1);
    }
  return level;
}

std::vector<NodeId> loop_parts(const Program& p, const Loop& loop) {
  NodeId body = p.children(loop.preduce)[0];
  if (p.node(body).op != Op::Tuple) return {body};
  auto kids = p.children(body);
  return std::vector<NodeId>(kids.begin(), kids.end());
}

LoweredProgram lower_program(const Program& p, const LowerOptions& options) {
  return Lowering(p, options).run();
}

}  // namespace eqf
