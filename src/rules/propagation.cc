// Propagation: partition and replicate move down across every operator, so
// a tiling introduced at one node reaches the leaves (block loads).
//
// The rules come from the op table's properties, not from a list of ops:
// every kPointwise op gets `partition-<op>` and `replicate-<op>`, so a new
// pointwise op is tiled without new code. Operands of a multi-input op are
// paired on the same coordinates: an operand that has the partitioned dim is
// partitioned too, one that lacks it (a broadcast) is replicated, a literal
// stays as it is.
//
// combine needs no rules here: a grid is introduced at a global value
// (structural.cc) and its partition moves down; partition across a combine of
// another axis is an interchange (structural.cc).
#include "rules/rule_table.h"

namespace eqf::rules {
namespace {

// partition(p, d, proj(i, preduce(q, R, T))) or replicate(p, ...) where T's
// class holds tuple nodes: the components follow onto p.
void tuple_preduce_rule(Table& t, bool partition) {
  std::string name = partition ? "partition-proj-preduce" : "replicate-proj-preduce";
  t.computed(name, tuple_reduction_pattern(Op::PReduce, partition),
             std::string(partition ? "partition" : "replicate") + " each component of the tuple the preduce reduces",
             [partition](RuleCtx& c) { follow_into_tuple_reduction(c, Op::PReduce, partition); }, "",
             /*pure=*/false);  // reads the tuple nodes of ?t's class
}

}  // namespace

void propagation_rules(Table& t) {
  // Pointwise ops, from the op table.
  for (int i = 0; i < kNumOps; ++i) {
    Op op = Op(i);
    if (!op_has(op, kPointwise)) continue;
    std::string name = op_kebab(op);
    t.computed("partition-" + name, "(partition ?p ?d " + op_pattern(op) + ")",
               "partition operands with the dim, replicate the others", [op](RuleCtx& c) {
                 Axis p = c.axis("?p");
                 Symbol d = c.dim("?d");
                 std::vector<Ref> kids = generated_kids(c, op);
                 for (Ref& k : kids) k = follow_partition(c.b, k, p, d);
                 c.equal(c.root, c.b.add(op, generated_attrs(c, op), kids));
               });
    t.computed("replicate-" + name, "(replicate ?p " + op_pattern(op) + ")",
               "replicate every non-literal operand", [op](RuleCtx& c) {
                 Axis p = c.axis("?p");
                 std::vector<Ref> kids = generated_kids(c, op);
                 for (Ref& k : kids) k = follow_replicate(c.b, k, p);
                 c.equal(c.root, c.b.add(op, generated_attrs(c, op), kids));
               });
  }

  // Reductions over another dim: each coordinate reduces its own block.
  t.rule("partition-reduce", "(partition ?p ?e (reduce ?d ?r ?x))", "(reduce ?d ?r (partition ?p ?e ?x))");
  t.rule("replicate-reduce", "(replicate ?p (reduce ?d ?r ?x))", "(reduce ?d ?r (replicate ?p ?x))");

  // Contractions: the global matmul becomes the tile form; a batch dim (in
  // both operands) partitions both.
  for (Op mm : {Op::MatMul, Op::TileMatMul}) {
    std::string name = op_kebab(mm);
    std::string text(op_info(mm).name);
    t.computed("partition-" + name, "(partition ?p ?d (" + text + " ?k ?a ?b))",
               "tile_matmul of the operands, partitioned if they have the dim, else replicated",
               [](RuleCtx& c) {
                 Axis p = c.axis("?p");
                 Symbol d = c.dim("?d");
                 Ref a = follow_partition(c.b, c.var("?a"), p, d);
                 Ref b = follow_partition(c.b, c.var("?b"), p, d);
                 c.equal(c.root, c.b.add(Op::TileMatMul, dim_attrs(c.dim("?k")), {a, b}));
               });
    t.rule("replicate-" + name, "(replicate ?p (" + text + " ?k ?a ?b))",
           "(tile_matmul ?k (replicate ?p ?a) (replicate ?p ?b))");
  }

  // Layout ops over other dims (a partitioned dim stays whole in them).
  t.rule("partition-split", "(partition ?p ?e (split ?d ?d1 ?d2 ?x))",
         "(split ?d ?d1 ?d2 (partition ?p ?e ?x))");
  t.rule("partition-merge", "(partition ?p ?e (merge ?d1 ?d2 ?d ?x))",
         "(merge ?d1 ?d2 ?d (partition ?p ?e ?x))");
  t.rule("partition-rename", "(partition ?p ?e (rename ?d ?d2 ?x))", "(rename ?d ?d2 (partition ?p ?e ?x))");
  t.rule("replicate-split", "(replicate ?p (split ?d ?d1 ?d2 ?x))", "(split ?d ?d1 ?d2 (replicate ?p ?x))");
  t.rule("replicate-merge", "(replicate ?p (merge ?d1 ?d2 ?d ?x))", "(merge ?d1 ?d2 ?d (replicate ?p ?x))");
  t.rule("replicate-rename", "(replicate ?p (rename ?d ?d2 ?x))", "(rename ?d ?d2 (replicate ?p ?x))");

  // Into loops: a reduction over another axis reduces the same coordinates
  // of this one (replicate across a reduction over another axis).
  t.rule("partition-preduce", "(partition ?p ?d (preduce ?q ?r ?x))", "(preduce ?q ?r (partition ?p ?d ?x))");
  t.rule("replicate-preduce", "(replicate ?p (preduce ?q ?r ?x))", "(preduce ?q ?r (replicate ?p ?x))");
  tuple_preduce_rule(t, true);
  tuple_preduce_rule(t, false);
  t.rule("partition-collect", "(partition ?p ?d (collect ?q ?x))", "(collect ?q (partition ?p ?d ?x))");
  t.rule("replicate-collect", "(replicate ?p (collect ?q ?x))", "(collect ?q (replicate ?p ?x))");
}

}  // namespace eqf::rules
