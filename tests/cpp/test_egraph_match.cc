// Patterns and e-matching: the compiled matcher against a naive recursive
// matcher on random e-graphs, incremental matching, pattern syntax and its
// errors, and conditions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "eqiforge/egraph/ematch.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

using Subst = std::vector<uint32_t>;

class Collect final : public MatchSink {
 public:
  explicit Collect(int words) : words_(words) {}
  bool on_match(const uint32_t* s) override {
    out.emplace_back(s, s + words_);
    return true;
  }
  std::vector<Subst> out;

 private:
  int words_;
};

// All substitutions of pattern node `pn` matching class `c`, extending `s`.
void naive(const EGraph& g, const Pattern& p, int pn, EClassId c, Subst s, std::vector<bool> bound,
           std::vector<std::pair<Subst, std::vector<bool>>>& out) {
  const PatternNode& node = p.nodes()[pn];
  c = g.find(c);
  if (node.is_var) {
    const PatternVar& v = p.vars()[node.var];
    if (bound[node.var] && s[v.word] != c.v) return;
    s[v.word] = c.v;
    bound[node.var] = true;
    out.push_back({s, bound});
    return;
  }
  for (ENodeId n : g.nodes(c)) {
    if (g.op(n) != node.op || g.children(n).size() != node.children.size()) continue;
    Subst s2 = s;
    std::vector<bool> b2 = bound;
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) {
      AttrKind k = op_info(node.op).attrs[i];
      if (k == AttrKind::None) break;
      int slot = 0;
      for (int j = 0; j < i; ++j) slot += op_info(node.op).attrs[j] == AttrKind::F64 ? 2 : 1;
      int width = k == AttrKind::F64 ? 2 : 1;
      for (int w = 0; w < width && ok; ++w) {
        uint32_t v = g.attrs(n)[slot + w];
        if (node.attr_var[i] < 0) {
          ok = node.attrs[slot + w] == v;
        } else {
          const PatternVar& var = p.vars()[node.attr_var[i]];
          if (b2[node.attr_var[i]] && s2[var.word + w] != v) ok = false;
          s2[var.word + w] = v;
        }
      }
      if (node.attr_var[i] >= 0) b2[node.attr_var[i]] = true;
    }
    if (!ok) continue;
    // Children left to right, threading the partial substitutions.
    std::vector<std::pair<Subst, std::vector<bool>>> partial = {{s2, b2}};
    for (size_t k = 0; k < node.children.size(); ++k) {
      std::vector<std::pair<Subst, std::vector<bool>>> next;
      for (auto& [ps, pb] : partial) naive(g, p, node.children[k], g.children(n)[k], ps, pb, next);
      partial = std::move(next);
    }
    for (auto& x : partial) out.push_back(std::move(x));
  }
}

std::vector<Subst> naive_search(const EGraph& g, const Pattern& p) {
  std::vector<Subst> out;
  for (EClassId c : g.classes()) {
    std::vector<std::pair<Subst, std::vector<bool>>> found;
    naive(g, p, p.root(), c, Subst(p.subst_words(), 0), std::vector<bool>(p.vars().size(), false), found);
    for (auto& [s, b] : found) {
      s[0] = c.v;
      out.push_back(s);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Subst> fast_search(Matcher& m, const EGraph& g, const Pattern& p, uint32_t since = 0) {
  Collect sink(p.subst_words());
  SearchOptions opts;
  opts.new_since = since;
  EXPECT_EQ(m.search(g, p, opts, sink), SearchEnd::Complete);
  std::sort(sink.out.begin(), sink.out.end());
  return sink.out;
}

// A random e-graph over scalar inputs, literals and pointwise ops, with
// random unions (all classes are f32[] or literals; literals are only united
// with literals of the same value, which the analysis allows).
EGraph random_egraph(uint32_t seed) {
  std::mt19937 rng(seed);
  EGraph g(make_type_analysis(false));
  std::vector<EClassId> scalars;
  for (int i = 0; i < 3; ++i) {
    Symbol name = Symbol::intern("x" + std::to_string(i));
    g.declare_input(InputDecl{name, DType::F32, {}, NodeId{}, {}});
    scalars.push_back(g.add(Op::Input, {name.raw(), 0, 0}, {}));
  }
  scalars.push_back(g.add(Op::Pow, attrs_f64(2), std::vector<EClassId>{scalars[0]}));
  const Op binary[] = {Op::Add, Op::Mul, Op::Sub};
  const Op unary[] = {Op::Neg, Op::Exp};
  for (int i = 0; i < 80; ++i) {
    EClassId c;
    if (rng() % 3 == 0) {
      std::vector<EClassId> k = {scalars[rng() % scalars.size()]};
      c = rng() % 4 == 0 ? g.add(Op::Pow, attrs_f64(double(1 + rng() % 2)), k)
                         : g.add(unary[rng() % 2], attrs_none(), k);
    } else {
      std::vector<EClassId> k = {scalars[rng() % scalars.size()], scalars[rng() % scalars.size()]};
      if (rng() % 6 == 0) k[1] = g.add(Op::Const, attrs_f64(double(rng() % 2)), {});
      c = g.add(binary[rng() % 3], attrs_none(), k);
    }
    scalars.push_back(c);
  }
  for (int u = 0; u < 25; ++u) {
    EClassId a = scalars[rng() % scalars.size()], b = scalars[rng() % scalars.size()];
    if (g.type(a) == g.type(b)) g.merge(a, b);
  }
  g.rebuild();
  return g;
}

const char* const kPatterns[] = {
    "(add ?a ?b)",
    "(add ?a ?a)",
    "(add ?a (mul ?b ?c))",
    "(mul (add ?a ?b) (add ?b ?a))",
    "(sub ?a (neg ?a))",
    "(add x0 ?b)",
    "(mul ?a 1)",
    "(pow 2 ?x)",
    "(pow ?c ?x)",
    "(add (pow ?c ?x) (pow ?c ?y))",
    "(neg (exp (neg ?x)))",
    "(add (add ?a ?b) (add ?c ?d))",
    "?x",
};

TEST(EMatch, AgreesWithANaiveMatcherOnRandomEGraphs) {
  Matcher m;
  size_t total = 0;
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    EGraph g = random_egraph(seed);
    for (const char* text : kPatterns) {
      Pattern p = Pattern::parse(text);
      std::vector<Subst> want = naive_search(g, p), got = fast_search(m, g, p);
      ASSERT_EQ(got, want) << text << " seed " << seed;
      total += got.size();
    }
  }
  EXPECT_GT(total, 1000u);  // the patterns do match things
}

TEST(EMatch, IncrementalSearchFindsExactlyTheMatchesWithNewNodes) {
  Matcher m;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    EGraph g = random_egraph(seed);
    std::mt19937 rng(seed * 7919);
    std::vector<Pattern> patterns;
    for (const char* text : kPatterns)
      if (std::string(text) != "?x") patterns.push_back(Pattern::parse(text));
    std::vector<std::vector<Subst>> before;
    for (const Pattern& p : patterns) before.push_back(fast_search(m, g, p));
    uint32_t since = g.tick();
    // Grow and merge.
    std::vector<EClassId> cls = g.classes();
    for (int i = 0; i < 10; ++i) {
      std::vector<EClassId> k = {cls[rng() % cls.size()], cls[rng() % cls.size()]};
      cls.push_back(g.add(rng() % 2 ? Op::Add : Op::Mul, attrs_none(), k));
    }
    for (int u = 0; u < 4; ++u) {
      EClassId a = cls[rng() % cls.size()], b = cls[rng() % cls.size()];
      if (g.type(a) == g.type(b) && !g.data(a).has_value && !g.data(b).has_value) g.merge(a, b);
    }
    g.rebuild();
    for (size_t i = 0; i < patterns.size(); ++i) {
      const Pattern& p = patterns[i];
      std::vector<Subst> now = fast_search(m, g, p), incr = fast_search(m, g, p, since);
      // The new matches are matches...
      for (const Subst& s : incr) ASSERT_TRUE(std::binary_search(now.begin(), now.end(), s)) << p.text();
      // ...and every match is new or was found before (in today's class ids).
      std::vector<Subst> old;
      for (Subst s : before[i]) {
        for (const PatternVar& v : p.vars())
          if (!v.is_attr) s[v.word] = g.find(EClassId(s[v.word])).v;
        s[0] = g.find(EClassId(s[0])).v;
        old.push_back(s);
      }
      std::sort(old.begin(), old.end());
      for (const Subst& s : now)
        ASSERT_TRUE(std::binary_search(incr.begin(), incr.end(), s) ||
                    std::binary_search(old.begin(), old.end(), s))
            << p.text() << " seed " << seed;
    }
  }
}

TEST(EMatch, SearchInOneClass) {
  EGraph g = random_egraph(3);
  Matcher m;
  Pattern p = Pattern::parse("(add ?a ?b)");
  std::vector<Subst> all = fast_search(m, g, p);
  ASSERT_FALSE(all.empty());
  EClassId c(all[0][0]);
  Collect sink(p.subst_words());
  m.search_class(g, p, c, {}, sink);
  size_t expected = std::count_if(all.begin(), all.end(), [&](const Subst& s) { return s[0] == c.v; });
  EXPECT_EQ(sink.out.size(), expected);
}

// ---- pattern syntax ------------------------------------------------------------------------

TEST(PatternSyntax, ReadsTheProgramSyntaxWithVariables) {
  Pattern p = Pattern::parse("(sum ?d (mul ?s ?x))");
  EXPECT_EQ(p.nodes()[p.root()].op, Op::Reduce);
  EXPECT_EQ(p.vars().size(), 3u);
  EXPECT_TRUE(p.var("?d")->is_attr);
  EXPECT_EQ(p.var("?d")->kind, AttrKind::Dim);
  EXPECT_FALSE(p.var("?s")->is_attr);
  Pattern q = Pattern::parse("(partition m.0 m (reduce ?d ?r ?x))");
  EXPECT_EQ(q.var("?r")->kind, AttrKind::Red);
  Pattern c = Pattern::parse("(pow ?c ?x)");
  EXPECT_EQ(c.subst_words(), 1 + 2 + 1);  // root, ?c (an F64: two words), ?x
  Pattern lit = Pattern::parse("(mul ?x 1.5)");
  EXPECT_EQ(lit.nodes()[1].op, Op::Const);
  EXPECT_EQ(attr_f64(lit.nodes()[1].attrs), 1.5);
}

void expect_error(const char* text, const char* fragment) {
  try {
    Pattern::parse(text, "p");
    ADD_FAILURE() << "no error for " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(PatternSyntax, ErrorsNameTheProblem) {
  expect_error("(frobnicate ?a)", "unknown operator `frobnicate`");
  expect_error("(add ?a)", "add expects 0 attribute(s) and 2 child(ren), got 1");
  expect_error("(reduce ?x ?r (add ?x ?y))", "stands for an attribute elsewhere but for an e-class here");
  expect_error("(partition 7 m ?x)", "bad axis `7`");
  expect_error("(cast f99 ?x)", "unknown dtype `f99`");
  expect_error("(add ?a ?b", "p:1:1");
  try {
    rewrite("bad", "(add ?a ?b)", "(mul ?a ?c)");
    ADD_FAILURE() << "unbound right-side variable accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rule bad:1:9: error: variable ?c is not bound by the left side"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(birewrite("bad", "(add ?a ?b)", "?a"), Error);
  EXPECT_THROW(rewrite("bad", "(add ?a ?b)", "?a", "(no-such-condition ?a)"), Error);
  EXPECT_THROW(rewrite("bad", "(add ?a ?b)", "?a", "(not-has-dim ?zz k)"), Error);
}

// ---- conditions -------------------------------------------------------------------------------

TEST(Conditions, FactorMovesOutOfASumOnlyWhenItDoesNotVaryThere) {
  Program p = parse_and_check(R"eqf(
(program factor
  (dims (m 4) (k 8))
  (input x f32 [m k])
  (input s f32 [m])
  (input t f32 [k])
  (output a [m] (sum k (mul s x)))
  (output b [m] (sum k (mul t x))))
)eqf");
  EGraph g;
  std::vector<EClassId> roots = load_program(g, p);
  Runner runner(g);
  runner.with_rules("f", {rewrite("factor-out-of-sum", "(sum ?d (mul ?s ?x))", "(mul ?s (sum ?d ?x))",
                                  "(not-has-dim ?s ?d)")});
  RunReport r = runner.run();
  EXPECT_EQ(r.rules[0].applications, 1u);
  g.rebuild();
  // a gained (mul s (sum k x)); b did not (t varies along k).
  Matcher m;
  Pattern moved = Pattern::parse("(mul ?s (sum ?d ?x))");
  Collect in_a(moved.subst_words()), in_b(moved.subst_words());
  m.search_class(g, moved, roots[0], {}, in_a);
  m.search_class(g, moved, roots[1], {}, in_b);
  EXPECT_EQ(in_a.out.size(), 1u);
  EXPECT_EQ(in_b.out.size(), 0u);
}

TEST(Conditions, LiteralFactsAndCustomConditions) {
  EGraph g;
  Symbol x = Symbol::intern("x0");
  g.declare_input(InputDecl{x, DType::F32, {}, NodeId{}, {}});
  EClassId xc = g.add(Op::Input, {x.raw(), 0, 0}, {});
  EClassId two = g.add(Op::Const, attrs_f64(2), {});
  EClassId root = g.add(Op::Mul, attrs_none(), std::vector<EClassId>{xc, two});
  register_condition("is-two", [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
    std::vector<Condition> c = parse_conditions("(is-value " + sexpr_text(args[0]) + " 2)", lhs, file);
    c[0].text = "(is-two " + sexpr_text(args[0]) + ")";
    return c[0];
  });
  Runner runner(g);
  runner.with_rules("r", {rewrite("double", "(mul ?x ?c)", "(add ?x ?x)", "(is-two ?c)"),
                          rewrite("never", "(mul ?x ?c)", "(add ?c ?c)", "(is-value ?x 2)")});
  RunReport r = runner.run();
  EXPECT_EQ(r.rules[0].applications, 1u);
  EXPECT_EQ(r.rules[1].matches, 0u);
  EXPECT_TRUE(g.lookup(Op::Add, attrs_none(), std::vector<EClassId>{xc, xc}).has_value());
  EXPECT_EQ(g.find(*g.lookup(Op::Add, attrs_none(), std::vector<EClassId>{xc, xc})), g.find(root));
  EXPECT_FALSE(rewrite("a", "(mul ?x ?c)", "?x", "(is-literal ?c)").skip_seen);
  EXPECT_TRUE(rewrite("a", "(mul ?x ?c)", "?x", "(same-type ?x ?c)").skip_seen);
}

}  // namespace
}  // namespace eqf

namespace eqf {
namespace {

// A right side that must be computed: tiling a reduction needs the canonical
// axis of the reduced dim (d.0), which no pattern variable holds.
TEST(CppAppliers, RefineASumWithItsCanonicalAxis) {
  Program p = parse_and_check(R"eqf(
(program rowsum
  (dims (m 4) (k 8))
  (input x f32 [m k])
  (output y [m] (sum k x)))
)eqf");
  EGraph g;
  std::vector<EClassId> roots = load_program(g, p);
  auto refine = [](ApplyContext& ctx) -> std::optional<EClassId> {
    Symbol d = attr_sym(ctx.attr("?d"), 0);
    Axis axis{d, 0};
    std::optional<EClassId> part =
        ctx.add(Op::Partition, {axis.pack(), d.raw(), 0}, std::vector{ctx.cls("?x")});
    if (!part) return std::nullopt;
    std::optional<EClassId> local = ctx.add(Op::Reduce, {d.raw(), RedId::add().raw(), 0}, std::vector{*part});
    if (!local) return std::nullopt;
    return ctx.add(Op::PReduce, {axis.pack(), RedId::add().raw(), 0}, std::vector{*local});
  };
  Runner runner(g);
  runner.with_rules("refinement", {rewrite_fn("tile-sum", "(sum ?d ?x)", refine, "(no-axes ?x)", true)});
  RunReport r = runner.run();
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_EQ(r.rules[0].applications, 1u);
  EXPECT_EQ(r.rules[0].type_rejected, 0u);
  Matcher m;
  Pattern tiled = Pattern::parse("(preduce k.0 + (sum k (partition k.0 k ?x)))");
  Collect found(tiled.subst_words());
  m.search_class(g, tiled, roots[0], {}, found);
  EXPECT_EQ(found.out.size(), 1u);
  // The refined class keeps the sum's type.
  EXPECT_EQ(g.data_text(roots[0]), "f32[m]");
}

// A C++ applier whose node does not type-check: rejected, counted, nothing merged.
TEST(CppAppliers, RejectedNodesAreCounted) {
  Program p = parse_and_check(R"eqf(
(program rowsum
  (dims (m 4) (k 8))
  (input x f32 [m k])
  (output y [m] (sum k x)))
)eqf");
  EGraph g;
  load_program(g, p);
  size_t nodes = g.num_nodes();
  auto bad = [](ApplyContext& ctx) -> std::optional<EClassId> {
    // combine needs x partitioned on m.0: x has no axes.
    Axis axis{Symbol::intern("m"), 0};
    return ctx.add(Op::Combine, {axis.pack(), Symbol::intern("m").raw(), 0}, std::vector{ctx.cls("?x")});
  };
  Runner runner(g);
  runner.with_rules("bad", {rewrite_fn("bad-combine", "(sum ?d ?x)", bad)});
  RunReport r = runner.run();
  EXPECT_EQ(r.rules[0].type_rejected, 1u);
  EXPECT_EQ(r.rules[0].applications, 0u);
  EXPECT_EQ(g.num_nodes(), nodes);
}

}  // namespace
}  // namespace eqf
