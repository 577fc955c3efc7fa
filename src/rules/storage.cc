// Storage: a kernel boundary inside a reduction. preduce over axis p
// combines the coordinates' values in registers, in one kernel; collecting p
// instead writes each coordinate's value as one slice of a buffer with the
// new dim c_p, and a reduce over c_p (a second kernel) combines them with the
// same R -- flash-decoding's split and merge.
#include "rules/rule_table.h"

namespace eqf::rules {

void storage_rules(Table& t) {
  t.computed("preduce-to-collect", "(preduce ?p ?r ?x)", "reduce(c_p, R, collect(p, x))", [](RuleCtx& c) {
    Axis p = c.axis("?p");
    if (is_collected_dim(c.egraph(), p.dim)) return;  // no buffer of buffers
    Ref stored = c.b.add(Op::Collect, axis_attrs(p), {c.var("?x")});
    if (!stored.valid()) return;
    Symbol cp = p.collected_dim();
    c.equal(c.root, c.b.add(Op::Reduce, dim_red_attrs(cp, c.red("?r")), {stored}));
  });
  t.computed("collect-to-preduce", "(reduce ?c ?r (collect ?p ?x))", "preduce(p, R, x) when c is c_p",
             [](RuleCtx& c) {
               Axis p = c.axis("?p");
               if (c.dim("?c") != p.collected_dim()) return;
               c.equal(c.root, c.b.add(Op::PReduce, axis_red_attrs(p, c.red("?r")), {c.var("?x")}));
             });
}

}  // namespace eqf::rules
