// Compiling a lowered program for the cost model (see cost/summary.h).
#include "cost/summary.h"

#include <algorithm>

#include "cost/index_mask.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/lower/dot_shape.h"

namespace eqf::cost {
namespace {

// Whether something placed in `scope` of kernel k is done once per
// coordinate of axis a: a is a grid axis, or a loop enclosing the scope.
// A load replicated over any other axis -- one its kernel does not run
// over, or a loop it is hoisted out of -- is read once there.
bool repeated_over(const Kernel& k, int scope, Axis a) {
  if (std::find(k.grid.begin(), k.grid.end(), a) != k.grid.end()) return true;
  for (int l = scope; l >= 0; l = k.loops[size_t(l)].parent)
    if (k.loops[size_t(l)].axis == a) return true;
  return false;
}

// The dim of a load's tile that holds its buffer's innermost (stride-1)
// layout dim `last`, following the load's views (outermost first, as
// Load::views lists them) from the buffer up to the tile: a rename renames
// it, a split keeps its inner piece innermost, a merge keeps it only as the
// merge's inner dim. nullopt where it ends as a merge's outer dim: then
// neighbours in memory are a whole inner extent apart in the tile, and no
// dim of the tile is contiguous.
std::optional<Symbol> innermost_dim(const Program& p, Symbol last, const std::vector<NodeId>& views) {
  Symbol cur = last;
  for (auto it = views.rbegin(); it != views.rend(); ++it) {
    const Node& n = p.node(*it);
    Symbol a = attr_sym(n.attrs, 0), b = attr_sym(n.attrs, 1);
    if (n.op == Op::Rename && cur == a) cur = b;
    else if (n.op == Op::Split && cur == a) cur = attr_sym(n.attrs, 2);
    else if (n.op == Op::Merge && cur == b) cur = attr_sym(n.attrs, 2);
    else if (n.op == Op::Merge && cur == a) return std::nullopt;
  }
  return cur;
}

class Compiler {
 public:
  Compiler(const Program& p, const LoweredProgram& lp, bool gemv_dot) : p_(p), lp_(lp), gemv_dot_(gemv_dot) {}

  ProgramSummary run() {
    for (Axis a : lp_.axes) axis(a);
    for (const Kernel& k : lp_.kernels) out_.kernels.push_back(kernel(k));
    return std::move(out_);
  }

 private:
  // The row of an axis, adding it (and what it depends on) if new.
  int axis(Axis a) {
    int i = out_.axis_index(a);
    if (i >= 0) return i;
    AxisRow row;
    row.axis = a;
    row.unit = lp_.unit_axes.count(a) > 0;
    if (a.level > 0) {
      row.parent = axis(Axis{a.dim, uint8_t(a.level - 1)});
    } else {
      const DimInfo* info = p_.dims.find(a.dim);
      if (!info) throw Error(p_.file, {}, "cost model: axis " + a.name() + " splits the undeclared dim " +
                                              std::string(a.dim.str()));
      if (info->collected_from) row.collected_from = axis(*info->collected_from);
      else row.extent = info->extent;
    }
    out_.axes.push_back(row);
    return int(out_.axes.size()) - 1;
  }

  DimRef whole(Symbol d) {
    const DimInfo* info = p_.dims.find(d);
    if (!info) throw Error(p_.file, {}, "cost model: dim " + std::string(d.str()) + " is not declared");
    DimRef r;
    if (info->collected_from) {
      r.kind = DimRef::Kind::Collected;
      r.axis = axis(*info->collected_from);
    } else {
      r.kind = info->extent == 1 ? DimRef::Kind::One : DimRef::Kind::Fixed;
      r.extent = info->extent;
    }
    return r;
  }

  DimRef ref(const DimView& v) {
    if (v.squeezed) return DimRef{};
    if (v.depth == 0) return whole(v.dim);
    DimRef r;
    r.kind = DimRef::Kind::Blocked;
    r.axis = axis(Axis{v.dim, uint8_t(v.depth - 1)});
    return r;
  }

  Tile tile(const std::vector<DimView>& views) {
    Tile t;
    for (const DimView& v : views)
      if (!v.squeezed) t.push_back(ref(v));
    return t;
  }
  Tile tile_of(const TensorType& t) { return tile(tile_view(p_, t, lp_.unit_axes)); }
  Tile tile_of(NodeId n) { return tile_of(p_.type(n).get().parts.front()); }

  // The union of two tiles by dim (for a broadcast product).
  Tile union_tile(const TensorType& a, const TensorType& b) {
    std::vector<DimView> va = tile_view(p_, a, lp_.unit_axes), vb = tile_view(p_, b, lp_.unit_axes);
    for (const DimView& v : vb)
      if (std::none_of(va.begin(), va.end(), [&](const DimView& x) { return x.dim == v.dim; })) va.push_back(v);
    return tile(va);
  }

  void contraction(KernelSummary& ks, NodeId n, int scope) {
    Symbol kd = attr_sym(p_.node(n).attrs, 0);
    const TensorType& a = p_.type(p_.children(n)[0]).get().tensor();
    const TensorType& b = p_.type(p_.children(n)[1]).get().tensor();
    auto live = [&](const TensorType& t) {
      std::vector<DimView> out;
      for (const DimView& v : tile_view(p_, t, lp_.unit_axes))
        if (!v.squeezed) out.push_back(v);
      return out;
    };
    // The emitter's rule (dot_shape.h): one tl.dot, a flattened run of dims
    // being one whole matrix dim of its tiles' product.
    const std::vector<DimView> la = live(a), lb = live(b);
    if (std::optional<DotShape> s = dot_shape(p_, la, lb, kd)) {
      auto matrix = [&](const std::vector<DimView>& run) {
        if (run.size() == 1) return ref(run.front());
        DimRef r;
        r.kind = DimRef::Kind::Fixed;
        r.extent = 1;
        for (const DimView& v : run) r.extent *= whole_tile(p_, v.dim);
        return r;
      };
      DotRow d;
      d.scope = scope;
      d.rows = matrix(s->rows);
      d.k = ref(s->k);
      d.cols = matrix(s->cols);
      d.tensor_cores = a.dtype == DType::F16 || a.dtype == DType::BF16;
      ks.dots.push_back(d);
      return;
    }
    // A GEMV (dot_shape.h: gemv_shape): in its tl.dot form, one row (padded
    // to the smallest dot) by k by the matrix's other dim.
    if (std::optional<GemvShape> g = gemv_shape(la, lb, kd, p_.type(n).get().tensor().dtype)) {
      ++out_.gemvs;
      if (gemv_dot_) {
        DotRow d;
        d.scope = scope;
        d.rows = DimRef{};  // one element
        d.k = ref(g->k);
        d.cols = ref(g->cols);
        ks.dots.push_back(d);
        return;
      }
    }
    ks.computes.push_back(ComputeRow{scope, 2.0, union_tile(a, b)});
  }

  void compute(KernelSummary& ks, NodeId n, int scope) {
    const Node& node = p_.node(n);
    const Type& t = p_.type(n).get();
    if (!t.is_tuple && t.tensor().literal) return;
    if (node.op == Op::TileMatMul || node.op == Op::MatMul) return contraction(ks, n, scope);
    if (node.op == Op::Reduce) {
      const Reduction& r = attr_red(node.attrs, 1).get();
      // A repaired component rescales its state at every combine.
      double w = std::any_of(r.components.begin(), r.components.end(),
                             [](const RedComponent& c) { return c.repair != Repair::None; })
                     ? 3.0
                     : 1.0;
      const Type& in = p_.type(p_.children(n)[0]).get();
      for (const TensorType& part : in.parts) ks.computes.push_back(ComputeRow{scope, w, tile_of(part)});
      return;
    }
    if (op_has(node.op, kPointwise)) {
      ks.computes.push_back(ComputeRow{scope, 1.0, tile_of(n)});
      return;
    }
    // tuple, proj, replicate of a computed value, views: no arithmetic.
  }

  void block(KernelSummary& ks, const Kernel& k, const Block& b, int scope) {
    for (const Item& it : b.items) {
      if (it.kind == Item::Kind::Compute) compute(ks, it.node, scope);
      else if (it.kind == Item::Kind::Loop) block(ks, k, k.loops[size_t(it.index)].body, it.index);
    }
  }

  KernelSummary kernel(const Kernel& k) {
    KernelSummary ks;
    ks.name = k.name;
    for (Axis a : k.grid) ks.grid.push_back(axis(a));
    for (size_t i = 0; i < k.loops.size(); ++i) {
      const Loop& l = k.loops[i];
      LoopRow row;
      row.axis = axis(l.axis);
      row.parent = l.parent;
      for (const Accumulator& acc : l.accumulators) {
        row.accumulators.push_back(tile(acc.dims));
        if (acc.red.repair != Repair::None) row.combine_weight = 3;
      }
      ks.loops.push_back(std::move(row));
    }
    for (const Load& ld : k.loads) {
      const Type& t = p_.type(ld.node).get();
      for (size_t i = 0; i < t.parts.size(); ++i) {
        if (ld.component >= 0 && i > 0) break;
        LoadRow row;
        row.scope = ld.scope;
        if (ld.buffer >= 0) {
          int buffer = ld.buffer + (t.is_tuple ? int(i) : 0);
          row.dtype_bytes = dtype_bytes(lp_.buffers[size_t(buffer)].dtype);
        }
        row.tile = tile_of(t.parts[i]);
        for (Axis a : ld.replicated_over)
          if (repeated_over(k, ld.scope, a)) row.replicated.push_back(axis(a));
        const std::vector<Symbol>* layout =
            ld.buffer >= 0 ? &lp_.buffers[size_t(ld.buffer + (t.is_tuple ? int(i) : 0))].layout : nullptr;
        if (layout && !layout->empty()) {
          // A load through views (a weight whose columns a split cuts into
          // heads) is as contiguous as the tile's piece of the innermost dim;
          // with none, a run is one element (row.contiguous stays One).
          std::optional<Symbol> inner = innermost_dim(p_, layout->back(), ld.views);
          row.contiguous_known = !inner;
          if (inner)
            for (const DimView& v : tile_view(p_, t.parts[i], lp_.unit_axes))
              if (v.dim == *inner) {
                row.contiguous = ref(v);
                row.contiguous_known = true;
              }
        }
        for (const AxisState& as : t.parts[i].delta)
          if (as.state.kind == StateKind::Part && std::find(k.grid.begin(), k.grid.end(), as.axis) != k.grid.end())
            row.partitioned_grid.push_back(axis(as.axis));
        ks.loads.push_back(std::move(row));
      }
    }
    block(ks, k, k.body, -1);
    for (const Store& s : k.stores) {
      const Buffer& b = lp_.buffers[size_t(s.buffer)];
      StoreRow row;
      row.dtype_bytes = dtype_bytes(b.dtype);
      for (Symbol d : b.layout) {
        DimRef r = whole(d);
        if (r.kind != DimRef::Kind::One) row.whole.push_back(r);
      }
      ks.stores.push_back(std::move(row));
    }
    for (size_t i = 0; i < k.loops.size(); ++i) ks.loops[i].mask = find_loop_mask(p_, k, int(i), out_);
    ks.grid_mask = find_grid_mask(p_, k, out_, &ks.grid_mask_axis);
    return ks;
  }

  const Program& p_;
  const LoweredProgram& lp_;
  ProgramSummary out_;
  bool gemv_dot_ = false;
};

}  // namespace

int ProgramSummary::axis_index(Axis a) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].axis == a) return int(i);
  return -1;
}

ProgramSummary summarize(const Program& p, const LoweredProgram& lowered, bool gemv_dot) {
  return Compiler(p, lowered, gemv_dot).run();
}

}  // namespace eqf::cost
