// Structural rules: laws of the parallel-state ops among themselves.
//
// combine and partition of one axis are inverses. Read right to left,
// combine(p, d, partition(p, d, X)) = X introduces a kernel: a grid over the
// blocks of d. That direction is a computed rule (one per dim of X) and only
// for global, computed values, so every grid starts at a materialized value;
// grids of two or three axes come from interchange with further partitions.
// Axes of different dims are independent, so their ops commute (the order of
// a leaf's partition/replicate chain does not matter).
#include "rules/rule_table.h"

namespace eqf::rules {

void structural_rules(Table& t) {
  const RuleOptions& o = t.opts();
  t.rule("combine-partition", "(combine ?p ?d (partition ?p ?d ?x))", "?x");
  t.rule("partition-combine", "(partition ?p ?d (combine ?p ?d ?x))", "?x");

  // A kernel over the blocks of each dim of a global value. Not for leaves
  // (a copy kernel) nor for dims made by collect.
  t.computed(
      "kernel-intro", "?x", "combine(d.0, d, partition(d.0, d, x)) for each dim d of a global computed x",
      [](RuleCtx& c) {
        const EGraph& g = c.egraph();
        EClassId x = c.match.root();
        const Type& type = g.type(x).get();
        if (type.is_tuple || type.tensor().literal || !type.tensor().delta.empty()) return;
        for (ENodeId n : g.nodes(x))
          if (op_has(g.op(n), kLeaf)) return;
        for (Symbol d : type.tensor().dims) {
          if (!splittable_dim(g, d)) continue;
          Axis p{d, 0};
          Ref part = c.b.add(Op::Partition, axis_dim_attrs(p, d), {c.root});
          c.equal(c.root, c.b.add(Op::Combine, axis_dim_attrs(p, d), {part}));
        }
      },
      "", /*pure=*/true);

  // Interchange of axes of different dims. Moving a partition inside a
  // combine adds an axis to the kernel inside: bounded by max_grid_axes.
  const std::string inner_limit = "(max-axes ?x " + std::to_string(o.max_grid_axes - 1) + ")";
  t.rule("interchange-partition-partition", "(partition ?p ?d (partition ?q ?e ?x))",
         "(partition ?q ?e (partition ?p ?d ?x))", "(distinct-dims ?p ?q)");
  t.rule("interchange-partition-replicate", "(partition ?p ?d (replicate ?q ?x))",
         "(replicate ?q (partition ?p ?d ?x))", "(distinct-dims ?p ?q)");
  t.rule("interchange-replicate-partition", "(replicate ?q (partition ?p ?d ?x))",
         "(partition ?p ?d (replicate ?q ?x))", "(distinct-dims ?p ?q)");
  t.rule("interchange-replicate-replicate", "(replicate ?p (replicate ?q ?x))",
         "(replicate ?q (replicate ?p ?x))", "(distinct-dims ?p ?q)");
  t.rule("interchange-partition-combine", "(partition ?p ?d (combine ?q ?e ?x))",
         "(combine ?q ?e (partition ?p ?d ?x))", conds({"(distinct-dims ?p ?q)", inner_limit}));
  t.rule("interchange-replicate-combine", "(replicate ?p (combine ?q ?e ?x))",
         "(combine ?q ?e (replicate ?p ?x))", conds({"(distinct-dims ?p ?q)", inner_limit}));

  // Tuples: a component of a tuple is that operand.
  for (int n = 2; n <= o.max_fused_arity; ++n) {
    std::string tuple = "(tuple";
    for (int i = 0; i < n; ++i) tuple += " ?x" + std::to_string(i);
    tuple += ")";
    for (int i = 0; i < n; ++i)
      t.rule("proj-tuple-" + std::to_string(i) + "-of-" + std::to_string(n),
             "(proj " + std::to_string(i) + " " + tuple + ")", "?x" + std::to_string(i));
  }
}

}  // namespace eqf::rules
