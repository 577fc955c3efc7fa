// Algebraic rules: laws of the operators themselves, independent of tiling.
//
// They rewrite global values only (no parallel axes), unless
// RuleOptions::algebra_on_tiles is set: every tile-level term is the image of
// a global one under propagation, so an identity found globally reaches the
// tiles through the class it lands in, without rewriting every tile of every
// class again. The tile_matmul forms of factor moving are the exception:
// they hold at any level and cost nothing where propagation made them true.
#include "rules/rule_table.h"

namespace eqf::rules {
namespace {

// split/merge/rename applied to each operand that has the dims they rename;
// operands without them broadcast as before. A merge of an operand that has
// only one of the two merged dims has no such form (nothing is built).
Ref relayout(TermBuilder& b, Ref x, Op layout, const Attrs& a) {
  if (!x.valid() || b.is_literal(x)) return x;
  const TensorType& t = b.tensor(x);
  Symbol s0 = attr_sym(a, 0), s1 = attr_sym(a, 1);
  if (layout == Op::Merge) {
    bool h0 = t.has_dim(s0), h1 = t.has_dim(s1);
    if (h0 != h1) return Ref{};
    return h0 ? b.add(Op::Merge, a, {x}) : x;
  }
  return t.has_dim(s0) ? b.add(layout, a, {x}) : x;
}

void layout_rules(Table& t, const std::string& global) {
  struct Layout {
    Op op;
    const char* name;
    const char* head;  // the layout op with its attribute variables
  };
  const Layout layouts[] = {{Op::Split, "split", "(split ?l0 ?l1 ?l2"},
                            {Op::Merge, "merge", "(merge ?l0 ?l1 ?l2"},
                            {Op::Rename, "rename", "(rename ?l0 ?l1"}};
  for (const Layout& l : layouts) {
    auto read = [l](const RuleCtx& c) {
      Attrs a{c.dim("?l0").raw(), c.dim("?l1").raw(), 0};
      if (l.op != Op::Rename) a[2] = c.dim("?l2").raw();
      return a;
    };
    // Every pointwise op and the contractions: operands that have the dims
    // are relaid out. Derived from the op table, so a new pointwise op gets
    // its rule without new code.
    for (int i = 0; i < kNumOps; ++i) {
      Op op = Op(i);
      if (!op_has(op, kPointwise) && op != Op::MatMul) continue;
      std::string name = std::string(l.name) + "-over-" + op_kebab(op);
      std::string lhs = std::string(l.head) + " " + op_pattern(op) + ")";
      t.computed(
          name, lhs, std::string(l.name) + " each operand that has the dims",
          [l, op, read](RuleCtx& c) {
            Attrs a = read(c);
            std::vector<Ref> kids = generated_kids(c, op);
            for (Ref& k : kids) k = relayout(c.b, k, l.op, a);
            c.equal(c.root, c.b.add(op, generated_attrs(c, op), kids));
          },
          global);
    }
    // A reduction over another dim: the dims being relaid out are not reduced.
    std::string tail = l.op == Op::Rename ? "?l0 ?l1" : "?l0 ?l1 ?l2";
    t.rule(std::string(l.name) + "-over-reduce", std::string(l.head) + " (reduce ?d ?r ?x))",
           "(reduce ?d ?r (" + std::string(l.name) + " " + tail + " ?x))", global);
  }
}

}  // namespace

void algebraic_rules(Table& t) {
  const std::string g = t.opts().algebra_on_tiles ? "" : "(global-root)";
  auto rule = [&](std::string name, std::string lhs, std::string rhs, std::string c = "") {
    t.rule(std::move(name), std::move(lhs), std::move(rhs), conds({c, g}));
  };
  auto birule = [&](std::string name, std::string lhs, std::string rhs, std::string c = "") {
    t.birule(std::move(name), std::move(lhs), std::move(rhs), conds({c, g}));
  };

  // Commutativity and associativity of the associative pointwise ops.
  for (const char* op : {"add", "mul", "max2", "min2"}) {
    std::string o = op;
    rule("comm-" + o, "(" + o + " ?a ?b)", "(" + o + " ?b ?a)");
    rule("assoc-" + o, "(" + o + " ?a (" + o + " ?b ?c))", "(" + o + " (" + o + " ?a ?b) ?c)");
  }

  // A law read in its factoring direction (`name`: a factor or divisor
  // moves out, shared operands are combined) and, with expanding_algebra,
  // the expanding one (`name-rev`).
  const bool expand = t.opts().expanding_algebra;
  auto law = [&](std::string name, std::string expanded, std::string factored, std::string c = "") {
    rule(name, expanded, factored, c);
    if (expand) rule(name + "-rev", factored, expanded, c);
  };

  // Distributivity: factoring is what lets two products share a pass
  // (x@W + x@V = x@(W+V)).
  law("distribute-mul-add", "(add (mul ?a ?b) (mul ?a ?c))", "(mul ?a (add ?b ?c))");
  law("distribute-mul-sub", "(sub (mul ?a ?b) (mul ?a ?c))", "(mul ?a (sub ?b ?c))");
  law("distribute-div-add", "(add (div ?a ?c) (div ?b ?c))", "(div (add ?a ?b) ?c)");
  law("distribute-div-sub", "(sub (div ?a ?c) (div ?b ?c))", "(div (sub ?a ?b) ?c)");
  law("distribute-matmul-right", "(add (matmul ?k ?x ?w) (matmul ?k ?x ?v))", "(matmul ?k ?x (add ?w ?v))");
  law("distribute-matmul-left", "(add (matmul ?k ?w ?x) (matmul ?k ?v ?x))", "(matmul ?k (add ?w ?v) ?x)");
  // (x a) b = x (a b) when the other contraction's dim is not in the far operand.
  birule("matmul-reassoc", "(matmul ?r (matmul ?k ?x ?a) ?b)", "(matmul ?k ?x (matmul ?r ?a ?b))",
         "(not-has-dim ?x ?r) (not-has-dim ?b ?k)");
  // The other grouping: the inner product's operand without k leaves it,
  // sum_k x (sum_r a b) = sum_r a (sum_k x b). This is what absorbs an
  // up-projection into the query (q . (C W) = C (q . W): multi-head latent
  // attention's keys never expanded). The inner-right form is its own
  // inverse; the inner-left one lands in it.
  rule("matmul-reassoc-across", "(matmul ?k ?x (matmul ?r ?a ?b))", "(matmul ?r ?a (matmul ?k ?x ?b))",
       "(not-has-dim ?x ?r) (not-has-dim ?a ?k)");
  rule("matmul-reassoc-across-left", "(matmul ?k (matmul ?r ?a ?b) ?x)", "(matmul ?r ?a (matmul ?k ?b ?x))",
       "(not-has-dim ?x ?r) (not-has-dim ?a ?k)");
  // A factor that varies along the contracted dim moves to the smaller
  // operand when that one already has all its dims (nothing is broadcast
  // larger): sum_k a (b s) = sum_k (a s) b. MLA's key gain goes onto the
  // query, not the other way round (nor a norm's gain onto a weight). A
  // factor without k moves out of the contraction instead
  // (factor-out-of-matmul below).
  rule("factor-across-matmul", "(matmul ?k ?a (mul ?b ?s))", "(matmul ?k (mul ?a ?s) ?b)",
       "(has-dim ?s ?k) (dims-within ?s ?a) (fewer-elements ?a ?b)");
  rule("factor-across-matmul-left", "(matmul ?k (mul ?a ?s) ?b)", "(matmul ?k ?a (mul ?b ?s))",
       "(has-dim ?s ?k) (dims-within ?s ?b) (fewer-elements ?b ?a)");

  // Factor moving: what does not vary along a dim moves out of the reduction
  // or contraction over that dim (RMSNorm's factor after the projections,
  // softmax's division after P.V).
  law("factor-out-of-sum", "(sum ?d (mul ?s ?x))", "(mul ?s (sum ?d ?x))", "(not-has-dim ?s ?d)");
  law("divisor-out-of-sum", "(sum ?d (div ?x ?l))", "(div (sum ?d ?x) ?l)", "(not-has-dim ?l ?d)");
  // Slices taken after a contraction instead of before: differential
  // attention's p[:, :, 0:1] - lam p[:, :, 1:2] is a difference of masked
  // sums over the maps' dim (sum_h1 where(h1 == 0, p, 0)), contracted with
  // V. The contraction distributes over the difference, moves inside a sum
  // over a dim its other operand lacks, and past a mask that does not vary
  // along the contracted dim; each map's P.V is then plain attention's,
  // which the refinements tile into flash-decoding. Read in this direction
  // only (the factoring laws above undo the first one for add, not sub).
  rule("distribute-matmul-sub-left", "(matmul ?k (sub ?a ?b) ?c)", "(sub (matmul ?k ?a ?c) (matmul ?k ?b ?c))");
  rule("matmul-into-sum-left", "(matmul ?k (sum ?d ?a) ?b)", "(sum ?d (matmul ?k ?a ?b))", "(not-has-dim ?b ?d)");
  rule("mask-out-of-matmul-left", "(matmul ?k (where ?m ?x 0) ?b)", "(where ?m (matmul ?k ?x ?b) 0)",
       "(not-has-dim ?m ?k)");
  law("shift-out-of-max", "(max ?d (add ?x ?c))", "(add (max ?d ?x) ?c)", "(not-has-dim ?c ?d)");
  law("shift-out-of-max-sub", "(max ?d (sub ?x ?c))", "(sub (max ?d ?x) ?c)", "(not-has-dim ?c ?d)");
  for (const char* mm : {"matmul", "tile_matmul"}) {
    std::string m = mm;
    std::string n = m == "matmul" ? "matmul" : "tile-matmul";
    auto r = [&](std::string name, std::string lhs, std::string rhs, std::string c) {
      if (m == "matmul") {
        law(std::move(name), std::move(lhs), std::move(rhs), c);
        return;
      }
      // Tiles: see the file comment.
      t.rule(name, lhs, rhs, c);
      if (expand) t.rule(name + "-rev", rhs, lhs, c);
    };
    r("factor-out-of-" + n + "-left", "(" + m + " ?k (mul ?s ?a) ?b)", "(mul ?s (" + m + " ?k ?a ?b))",
      "(not-has-dim ?s ?k)");
    r("factor-out-of-" + n + "-right", "(" + m + " ?k ?a (mul ?s ?b))", "(mul ?s (" + m + " ?k ?a ?b))",
      "(not-has-dim ?s ?k)");
    r("divisor-out-of-" + n + "-left", "(" + m + " ?k (div ?a ?l) ?b)", "(div (" + m + " ?k ?a ?b) ?l)",
      "(not-has-dim ?l ?k)");
    r("divisor-out-of-" + n + "-right", "(" + m + " ?k ?a (div ?b ?l))", "(div (" + m + " ?k ?a ?b) ?l)",
      "(not-has-dim ?l ?k)");
  }

  // Division, exp and log. Never between literals: a rule that folds a new
  // constant (1/b, b/c) meets its own output again rounded differently, and
  // the e-graph grows a new class at each turn (23 * (1/23) is not 1).
  birule("div-as-reciprocal", "(div ?a ?b)", "(mul ?a (div 1 ?b))", "(not-value ?a 1) (not-literal ?b)");
  birule("div-mul-assoc", "(div (mul ?a ?b) ?c)", "(mul ?a (div ?b ?c))",
         "(not-literal ?b) (not-literal ?c)");
  // exp of a sum or difference, read in the combining direction only:
  // splitting exp(x - max x) into exp(x) / exp(max x) undoes softmax's
  // stabilization (exp overflows past 88 in f32, and inf / inf is NaN), so
  // the splitting direction is an expanding law (off by default).
  law("exp-product", "(mul (exp ?a) (exp ?b))", "(exp (add ?a ?b))");
  law("exp-quotient", "(div (exp ?a) (exp ?b))", "(exp (sub ?a ?b))");
  // A softmax whose max also covers a value outside the reduction (attention
  // sinks: M = max(max_d x, s)) rebased on the plain max: exp(x - M) =
  // exp(x - max_d x) * exp(max_d x - M). The first factor is softmax's own
  // numerator, which the refinement rules tile into online softmax and
  // flash-decoding; the second does not vary along d and moves out of the
  // sum and the P.V contraction. Both exponents are <= 0 (M >= max_d x), so
  // nothing overflows.
  rule("exp-rebase-on-max", "(exp (sub ?x (max2 (max ?d ?x) ?s)))",
       "(mul (exp (sub ?x (max ?d ?x))) (exp (sub (max ?d ?x) (max2 (max ?d ?x) ?s))))");
  rule("log-of-exp", "(log (exp ?x))", "?x");
  // Off: exp(log x) = x holds for x > 0 only; log of a negative is NaN, and
  // the soundness check reports the rule as failing.
  // rule("exp-of-log", "(exp (log ?x))", "?x");
  birule("rsqrt-as-reciprocal", "(rsqrt ?x)", "(div 1 (sqrt ?x))");
  rule("mul-one", "(mul ?a 1)", "?a");
  rule("add-zero", "(add ?a 0)", "?a");
  rule("sub-zero", "(sub ?a 0)", "?a");
  rule("div-one", "(div ?a 1)", "?a");
  rule("neg-neg", "(neg (neg ?a))", "?a");

  // Mean and variance: sum((x - mean)^2) = sum(x^2) - n mean^2 with
  // mean = sum(x)/n over the whole dim (n its extent): the one-pass form,
  // only with cancelling_algebra (it cancels in floating point; library.h).
  if (t.opts().cancelling_algebra) {
    const std::string mean = "(div (sum ?d ?x) ?n)";
    const std::string dev = "(sub ?x " + mean + ")";
    rule("variance-as-sum-of-squares", "(sum ?d (mul " + dev + " " + dev + "))",
         "(sub (sum ?d (mul ?x ?x)) (mul ?n (mul " + mean + " " + mean + ")))", "(extent ?n ?d)");
    rule("variance-as-mean-of-squares", "(div (sum ?d (mul " + dev + " " + dev + ")) ?n)",
         "(sub (div (sum ?d (mul ?x ?x)) ?n) (mul " + mean + " " + mean + "))", "(extent ?n ?d)");
  }

  // Layout: split/merge/rename commute with pointwise ops, contractions and
  // reductions over other dims, so a split of a product ends at a leaf.
  layout_rules(t, g);
}

}  // namespace eqf::rules
