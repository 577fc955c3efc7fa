// Parallel refinement: introduce tiling on one operator.
//
// A new axis is canonical, d.l with l the number of axes already splitting d
// in the operand, so the same refinement reached from two places builds the
// same term. Splitting a contracted or reduced dim gives a loop (preduce over
// partial values); splitting an output dim gives a grid (combine). Limits:
// RuleOptions::max_nesting_per_dim levels per dim, max_loop_axes loops and
// max_grid_axes + max_loop_axes axes in all.
//
// The output-dim refinements at global values are kernel-intro followed by
// propagation (structural.cc, propagation.cc) written out for one operator;
// they are kept as the table the design describes and cost only lookups.
// Nested grids come from interchange, so output-dim splits of tile-level
// operators are not introduced here.
#include "rules/rule_table.h"

namespace eqf::rules {
namespace {

int loop_axes(const TensorType& t) {
  int n = 0;
  for (const AxisState& a : t.delta)
    n += a.state.kind == StateKind::Partial || a.state.kind == StateKind::Local;
  return n;
}

// A loop over a dim of fewer than kMinLoopExtent elements is not made in a
// program that also has a dim of kRealExtent or more: its blocks would be a
// few elements each, never worth a loop iteration on a GPU (the whole dim is
// one tile), and the tiny dims of such programs (mHC's 4 residual streams,
// its 4x4 Sinkhorn matrices) multiply the candidates without a useful one.
// Programs whose dims are all small (tests, examples) keep every loop.
// Grids over small dims stay: a batch of 4 on the grid is what prefill needs.
constexpr int64_t kMinLoopExtent = 8, kRealExtent = 256;

bool loopable_dim(const EGraph& g, Symbol d) {
  if (!splittable_dim(g, d)) return false;
  if (g.dims().find(d)->extent >= kMinLoopExtent) return true;
  for (const DimInfo& o : g.dims().all())
    if (!o.collected_from && o.extent >= kRealExtent) return false;
  return true;
}

// The axis a loop over dim d gets at this operand, or nullopt past a limit.
std::optional<Axis> loop_axis(const RuleCtx& c, const TensorType& operand, const TensorType& result,
                              Symbol d) {
  const RuleOptions& o = c.opts;
  if (!loopable_dim(c.egraph(), d)) return std::nullopt;
  int level = blocking_level(operand, d);
  if (level >= o.max_nesting_per_dim) return std::nullopt;
  if (loop_axes(result) + 1 > o.max_loop_axes) return std::nullopt;
  if (int(operand.delta.size()) + 1 > o.max_grid_axes + o.max_loop_axes) return std::nullopt;
  return Axis{d, uint8_t(level)};
}

bool is_global(const TensorType& t) { return t.delta.empty(); }

void contraction_rules(Table& t, Op mm) {
  const std::string name = op_kebab(mm), text(op_info(mm).name);
  // K: each coordinate contracts its block of k; the partial sums add up.
  t.computed("refine-" + name + "-k", "(" + text + " ?k ?a ?b)",
             "preduce(k.l, +, tile_matmul(k, partition(k.l, k, a), partition(k.l, k, b)))", [](RuleCtx& c) {
               Symbol k = c.dim("?k");
               Ref a = c.var("?a"), b = c.var("?b");
               std::optional<Axis> p = loop_axis(c, c.b.tensor(a), c.b.tensor(c.root), k);
               if (!p) return;
               Ref body = c.b.add(Op::TileMatMul, dim_attrs(k),
                                  {c.b.add(Op::Partition, axis_dim_attrs(*p, k), {a}),
                                   c.b.add(Op::Partition, axis_dim_attrs(*p, k), {b})});
               c.equal(c.root, c.b.add(Op::PReduce, axis_red_attrs(*p, RedId::add()), {body}));
             });
  if (mm != Op::MatMul) return;
  // M, N and batch dims: a grid over blocks of an output dim; the operand
  // that has the dim is partitioned (both, for a batch dim), the other
  // replicated.
  t.computed("refine-matmul-out", "(matmul ?k ?a ?b)",
             "combine(e.0, e, tile_matmul(k, P a, P b)) for each output dim e (M, N, batch)", [](RuleCtx& c) {
               const TensorType& out = c.b.tensor(c.root);
               if (!is_global(out)) return;
               Symbol k = c.dim("?k");
               for (Symbol e : out.dims) {
                 if (!splittable_dim(c.egraph(), e)) continue;
                 Axis p{e, 0};
                 Ref a = follow_partition(c.b, c.var("?a"), p, e);
                 Ref b = follow_partition(c.b, c.var("?b"), p, e);
                 Ref tile = c.b.add(Op::TileMatMul, dim_attrs(k), {a, b});
                 c.equal(c.root, c.b.add(Op::Combine, axis_dim_attrs(p, e), {tile}));
               }
             });
}

}  // namespace

void refinement_rules(Table& t) {
  contraction_rules(t, Op::MatMul);
  contraction_rules(t, Op::TileMatMul);

  // Reductions with a plain R (associative, with an identity) over the
  // reduced dim: each coordinate reduces its block, preduce combines them.
  t.computed("refine-reduce-dim", "(reduce ?d ?r ?x)", "preduce(d.l, R, reduce(d, R, partition(d.l, d, x)))",
             [](RuleCtx& c) {
               RedId r = c.red("?r");
               if (!r.is_plain()) return;
               Symbol d = c.dim("?d");
               Ref x = c.var("?x");
               if (c.b.type(x).is_tuple) return;
               std::optional<Axis> p = loop_axis(c, c.b.tensor(x), c.b.tensor(c.root), d);
               if (!p) return;
               Ref body = c.b.add(Op::Reduce, dim_red_attrs(d, r),
                                  {c.b.add(Op::Partition, axis_dim_attrs(*p, d), {x})});
               c.equal(c.root, c.b.add(Op::PReduce, axis_red_attrs(*p, r), {body}));
             });
  // Over an output dim: a grid whose coordinates reduce their own rows.
  t.computed("refine-reduce-out", "(reduce ?d ?r ?x)",
             "combine(e.0, e, reduce(d, R, partition(e.0, e, x))) for each output dim e", [](RuleCtx& c) {
               Ref x = c.var("?x");
               if (c.b.type(x).is_tuple || !is_global(c.b.tensor(c.root))) return;
               RedId r = c.red("?r");
               Symbol d = c.dim("?d");
               for (Symbol e : c.b.tensor(c.root).dims) {
                 if (!splittable_dim(c.egraph(), e)) continue;
                 Axis p{e, 0};
                 Ref body = c.b.add(Op::Reduce, dim_red_attrs(d, r),
                                    {c.b.add(Op::Partition, axis_dim_attrs(p, e), {x})});
                 c.equal(c.root, c.b.add(Op::Combine, axis_dim_attrs(p, e), {body}));
               }
             });
}

}  // namespace eqf::rules
