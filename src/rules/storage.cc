// Storage: a kernel boundary inside a reduction. preduce over axis p
// combines the coordinates' values in registers, in one kernel; collecting p
// instead writes each coordinate's value as one slice of a buffer with the
// new dim c_p, and a reduce over c_p (a second kernel) combines them with the
// same R -- flash-decoding's split and merge.
#include "rules/rule_table.h"

namespace eqf::rules {

namespace {

// Whether component j of a merge with reduction r over components typed
// `in` reads dim d: its own state or a state its repair refers to has it.
bool reads_dim(const Reduction& r, const Type& in, size_t j, Symbol d) {
  if (in.parts[j].has_dim(d)) return true;
  const RedComponent& rc = r.components[j];
  if (rc.repair == Repair::None) return false;
  if (rc.arg0 != j && reads_dim(r, in, rc.arg0, d)) return true;
  return rc.repair == Repair::WelfordM2 && rc.arg1 != j && reads_dim(r, in, rc.arg1, d);
}

}  // namespace

void storage_rules(Table& t) {
  t.computed("preduce-to-collect", "(preduce ?p ?r ?x)", "reduce(c_p, R, collect(p, x))", [](RuleCtx& c) {
    Axis p = c.axis("?p");
    if (is_collected_dim(c.egraph(), p.dim)) return;  // no buffer of buffers
    Ref stored = c.b.add(Op::Collect, axis_attrs(p), {c.var("?x")});
    if (!stored.valid()) return;
    Symbol cp = p.collected_dim();
    c.equal(c.root, c.b.add(Op::Reduce, dim_red_attrs(cp, c.red("?r")), {stored}));
  });
  // The merge's grid: a partition (or replicate) over a component of a
  // merge of tuple states follows onto the components of the buffer it
  // reads, so the merge tiles a dim of its output by itself and the kernel
  // that wrote the buffer keeps its tiling (propagation does not run into
  // buffers). Only for a dim some component lacks (flash-decoding's value
  // dim, absent from the max and the sum): the writer could split it only
  // by computing the others again; a dim of every component it splits
  // itself. And only for states that repair one another (online softmax,
  // Welford), which must be merged together: the components of independent
  // reductions (split-K partial sums fused into one pass) each have a merge
  // of their own to tile; there the rule added 50% e-nodes and dead ends
  // that cost best-first rmsnorm_swiglu_ffn's best candidate.
  for (bool partition : {true, false})
    t.computed(std::string(partition ? "partition" : "replicate") + "-proj-merge",
               tuple_reduction_pattern(Op::Reduce, partition),
               std::string(partition ? "partition" : "replicate") +
                   " each buffer component a merge over a collected dim reads",
               [partition](RuleCtx& c) {
                 const EGraph& g = c.egraph();
                 if (!is_collected_dim(g, c.dim("?q"))) return;
                 const Reduction& r = c.red("?r").get();
                 if (std::none_of(r.components.begin(), r.components.end(),
                                  [](const RedComponent& rc) { return rc.repair != Repair::None; }))
                   return;
                 Symbol d = c.axis("?p").dim;
                 const Type& in = g.type(c.match.cls("?t")).get();
                 size_t with = size_t(std::count_if(in.parts.begin(), in.parts.end(),
                                                    [&](const TensorType& t) { return t.has_dim(d); }));
                 if (with == 0 || with == in.parts.size()) return;
                 std::vector<Ref> merges = follow_into_tuple_reduction(c, Op::Reduce, partition,
                                                                       /*collect_components=*/true);
                 if (!partition) return;
                 // The components that neither have the dim nor depend on
                 // one that has it come out of the split merge replicated:
                 // one merge then serves both (flash-decoding's normalizer
                 // and weighted values), as one hole of extraction.
                 Ref whole = c.b.add(Op::Reduce, dim_red_attrs(c.dim("?q"), c.red("?r")), {c.b.cls(c.match.cls("?t"))});
                 for (size_t j = 0; j < in.parts.size(); ++j) {
                   if (reads_dim(r, in, j, c.dim("?d"))) continue;
                   Ref rep = c.b.add(Op::Replicate, axis_attrs(c.axis("?p")),
                                     {c.b.add(Op::Proj, {uint32_t(j), 0, 0}, {whole})});
                   for (Ref m : merges) c.equal(rep, c.b.add(Op::Proj, {uint32_t(j), 0, 0}, {m}));
                 }
               },
               "", /*pure=*/false);  // reads the tuple and collect nodes of ?t's class
  t.computed("collect-to-preduce", "(reduce ?c ?r (collect ?p ?x))", "preduce(p, R, x) when c is c_p",
             [](RuleCtx& c) {
               Axis p = c.axis("?p");
               if (c.dim("?c") != p.collected_dim()) return;
               c.equal(c.root, c.b.add(Op::PReduce, axis_red_attrs(p, c.red("?r")), {c.var("?x")}));
             });
}

}  // namespace eqf::rules
