// The S-expression reader and the program parser: what the text means.
// Malformed programs are in test_parse_errors.cc, print/parse round trips in
// test_roundtrip.cc.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/sexpr.h"
#include "ir/sexpr_release.h"

namespace eqf {
namespace {

// ---- the S-expression reader ------------------------------------------------------

TEST(SExprReader, ReadsAtomsListsAndBracketsWithPositions) {
  std::vector<SExpr> top = read_sexprs("(add x\n  [m k] 1e-6)", "t");
  ASSERT_EQ(top.size(), 1u);
  const SExpr& e = top[0];
  EXPECT_TRUE(e.is_list());
  EXPECT_EQ(e.loc.line, 1u);
  EXPECT_EQ(e.loc.col, 1u);
  ASSERT_EQ(e.items.size(), 4u);
  EXPECT_TRUE(e.items[0].is_atom("add"));
  EXPECT_TRUE(e.items[1].is_atom("x"));
  EXPECT_EQ(e.items[1].loc.col, 6u);
  const SExpr& layout = e.items[2];
  EXPECT_EQ(layout.kind, SExpr::Kind::Bracket);
  EXPECT_FALSE(layout.is_list());
  EXPECT_EQ(layout.loc.line, 2u);
  EXPECT_EQ(layout.loc.col, 3u);
  ASSERT_EQ(layout.items.size(), 2u);
  EXPECT_TRUE(layout.items[1].is_atom("k"));
  EXPECT_EQ(layout.items[1].loc.col, 6u);
  EXPECT_TRUE(e.items[3].is_atom("1e-6"));
  EXPECT_EQ(e.items[3].loc.line, 2u);
  EXPECT_EQ(e.items[3].loc.col, 9u);
}

TEST(SExprReader, SkipsCommentsAndReadsSeveralTopLevelExpressions) {
  std::vector<SExpr> top = read_sexprs("; header\na ; trailing (not a list\n(b c);x\n\t[ ]", "t");
  ASSERT_EQ(top.size(), 3u);
  EXPECT_TRUE(top[0].is_atom("a"));
  EXPECT_EQ(top[0].loc.line, 2u);
  EXPECT_TRUE(top[1].is_list());
  EXPECT_EQ(top[1].loc.line, 3u);
  ASSERT_EQ(top[1].items.size(), 2u);
  EXPECT_EQ(top[2].kind, SExpr::Kind::Bracket);
  EXPECT_TRUE(top[2].items.empty());
  EXPECT_EQ(top[2].loc.line, 4u);
  EXPECT_EQ(top[2].loc.col, 2u);
}

TEST(SExprReader, AtomsStopAtDelimitersOnly) {
  std::vector<SExpr> top = read_sexprs("(a.b-c+1(d)e;f\n)", "t");
  ASSERT_EQ(top.size(), 1u);
  ASSERT_EQ(top[0].items.size(), 3u);
  EXPECT_TRUE(top[0].items[0].is_atom("a.b-c+1"));
  EXPECT_TRUE(top[0].items[1].is_list());
  EXPECT_TRUE(top[0].items[2].is_atom("e"));
}

TEST(SExprReader, EmptyTextHasNoExpressions) {
  EXPECT_TRUE(read_sexprs("", "t").empty());
  EXPECT_TRUE(read_sexprs("  ; nothing\n\n", "t").empty());
}

TEST(SExprReader, TextWritesOneLine) {
  std::vector<SExpr> top = read_sexprs("(output  y\n [m   k]\n (mul x\t(neg  x)))", "t");
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(sexpr_text(top[0]), "(output y [m k] (mul x (neg x)))");
  EXPECT_EQ(sexpr_text(read_sexprs("()", "t")[0]), "()");
}

// Reader errors carry the position and say which bracket is the problem.
Error reader_error(const std::string& text) {
  try {
    read_sexprs(text, "r.eqf");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << text;
  return Error("none");
}

TEST(SExprReader, UnclosedBracketNamesWhereItOpened) {
  Error e = reader_error("(a\n  (b [c d]\n  e)");
  EXPECT_NE(e.message().find("unclosed `(` opened at 1:1"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("expected `)`"), std::string::npos) << e.what();
  EXPECT_EQ(e.loc().line, 3u);  // the end of the text
  EXPECT_EQ(e.loc().col, 5u);
  EXPECT_EQ(std::string(e.what()).rfind("r.eqf:3:5: error: ", 0), 0u) << e.what();

  Error b = reader_error("(a [b c)");
  EXPECT_NE(b.message().find("mismatched `)`: expected `]` to close the `[` opened at 1:4"),
            std::string::npos)
      << b.what();
  EXPECT_EQ(b.loc().col, 8u);

  Error c = reader_error("(a b))");
  EXPECT_NE(c.message().find("unexpected `)`"), std::string::npos) << c.what();
  EXPECT_EQ(c.loc().col, 6u);
}

TEST(SExprReader, NestingUpToTheLimitIsRead) {
  std::string text(kSExprMaxDepth, '(');
  text += std::string(kSExprMaxDepth, ')');
  std::vector<SExpr> top = read_sexprs(text, "t");
  ASSERT_EQ(top.size(), 1u);
  const SExpr* e = &top[0];
  int depth = 1;
  while (!e->items.empty()) e = &e->items[0], ++depth;
  EXPECT_EQ(depth, kSExprMaxDepth);
  EXPECT_EQ(sexpr_text(top[0]), text);
  release_sexprs(top);
  EXPECT_TRUE(top.empty());
}

TEST(SExprReader, NestingPastTheLimitIsAnErrorNotACrash) {
  // Far past the limit: a recursive reader would overflow the stack here.
  std::string text(50 * kSExprMaxDepth, '[');
  Error e = reader_error(text);
  EXPECT_NE(e.message().find("nesting deeper than " + std::to_string(kSExprMaxDepth)), std::string::npos)
      << e.what();
  EXPECT_EQ(e.loc().line, 1u);
  EXPECT_EQ(e.loc().col, uint32_t(kSExprMaxDepth) + 1);
}

// ---- the program parser -----------------------------------------------------------

const char* kRmsNorm = R"((program rmsnorm
  (dims (m 4) (k 8))                 ; every dim and its extent
  (input x f16 [m k])                ; name, dtype, layout (outermost first)
  (input g f16 [k])
  (let r (rsqrt (add (div (sum k (mul x x)) 8) 1e-6)))
  (output y [m k] (mul (mul x r) g))))";

Symbol sym(const char* s) { return Symbol::intern(s); }

TEST(Parse, ReadsDimsInputsLetsAndOutputs) {
  Program p = parse_program(kRmsNorm, "rms.eqf");
  EXPECT_EQ(p.file, "rms.eqf");
  EXPECT_EQ(p.name, sym("rmsnorm"));
  ASSERT_EQ(p.dims.all().size(), 2u);
  EXPECT_EQ(p.dims.all()[0].name, sym("m"));
  EXPECT_EQ(p.dims.all()[0].extent, 4);
  EXPECT_EQ(p.dims.all()[1].name, sym("k"));
  EXPECT_EQ(p.dims.all()[1].extent, 8);

  ASSERT_EQ(p.inputs().size(), 2u);
  const InputDecl& x = p.inputs()[0];
  EXPECT_EQ(x.name, sym("x"));
  EXPECT_EQ(x.dtype, DType::F16);
  EXPECT_EQ(x.layout, (std::vector<Symbol>{sym("m"), sym("k")}));
  EXPECT_EQ(p.node(x.node).op, Op::Input);
  EXPECT_EQ(attr_sym(p.node(x.node).attrs, 0), sym("x"));
  EXPECT_EQ(x.loc.line, 3u);
  EXPECT_EQ(p.inputs()[1].layout, std::vector<Symbol>{sym("k")});

  ASSERT_EQ(p.outputs().size(), 1u);
  const OutputDecl& y = p.outputs()[0];
  EXPECT_EQ(y.name, sym("y"));
  EXPECT_EQ(y.layout, (std::vector<Symbol>{sym("m"), sym("k")}));
  EXPECT_EQ(y.loc.line, 6u);

  // y = mul(mul(x, r), g)
  const Node& top = p.node(y.value);
  EXPECT_EQ(top.op, Op::Mul);
  EXPECT_EQ(top.loc.line, 6u);
  EXPECT_EQ(top.loc.col, 19u);
  auto kids = p.children(y.value);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(kids[1], p.inputs()[1].node);
  NodeId r = p.children(kids[0])[1];
  EXPECT_EQ(p.name_of(r), sym("r"));
  EXPECT_EQ(p.node(r).op, Op::Rsqrt);
  EXPECT_FALSE(p.name_of(y.value).valid());

  // r = rsqrt(add(div(sum(k, mul(x, x)), 8), 1e-6))
  NodeId add = p.children(r)[0];
  EXPECT_EQ(p.node(add).op, Op::Add);
  NodeId eps = p.children(add)[1];
  EXPECT_EQ(p.node(eps).op, Op::Const);
  EXPECT_EQ(attr_f64(p.node(eps).attrs), 1e-6);
  NodeId div = p.children(add)[0];
  EXPECT_EQ(attr_f64(p.node(p.children(div)[1]).attrs), 8.0);
  NodeId sum = p.children(div)[0];
  EXPECT_EQ(p.node(sum).op, Op::Reduce);
  EXPECT_EQ(attr_sym(p.node(sum).attrs, 0), sym("k"));
  EXPECT_EQ(attr_red(p.node(sum).attrs, 1), RedId::add());
  NodeId sq = p.children(sum)[0];
  EXPECT_EQ(p.node(sq).op, Op::Mul);
  EXPECT_EQ(p.children(sq)[0], x.node);
  EXPECT_EQ(p.children(sq)[1], x.node);
}

// Two texts that must parse to the same program.
void expect_same_program(const std::string& a, const std::string& b) {
  Program pa = parse_program(a), pb = parse_program(b);
  EXPECT_TRUE(pa.same_as(pb)) << a << "\n  versus\n" << b;
}

std::string with_body(const std::string& body) {
  return "(program p (dims (m 4) (k 8)) (input x f32 [m k])\n" + body + ")";
}

TEST(Parse, SugarMeansTheLongForm) {
  expect_same_program(with_body("(output y [m] (sum k x))"), with_body("(output y [m] (reduce k + x))"));
  expect_same_program(with_body("(output y [m] (max k x))"), with_body("(output y [m] (reduce k max x))"));
  expect_same_program(with_body("(output y [m] (reduce k (+) x))"), with_body("(output y [m] (sum k x))"));
  expect_same_program(with_body("(output y [m k] (mul x (const 1.5)))"),
                      with_body("(output y [m k] (mul x 1.5))"));
  expect_same_program(with_body("(output y [m k] (exp (input x)))"), with_body("(output y [m k] (exp x))"));
}

TEST(Parse, LetsAndRepeatedSubtermsShareNodes) {
  Program p = parse_program(with_body("(let a (exp x)) (let b a) (output y [m k] (add (exp x) b))"));
  NodeId y = p.outputs()[0].value;
  auto kids = p.children(y);
  EXPECT_EQ(kids[0], kids[1]);
  EXPECT_EQ(p.name_of(kids[0]), sym("a"));  // the first name of a node is kept; b is an alias
}

TEST(Parse, AnOmittedOutputLayoutIsTheDimsInDeclarationOrder) {
  Program p = parse_program(
      "(program p (dims (n 2) (m 4) (k 8)) (input a f32 [m k]) (input b f32 [k n])\n"
      "  (output c (matmul k b a)) (output s (sum n (sum m (mul a 2)))))");
  EXPECT_EQ(p.outputs()[0].layout, (std::vector<Symbol>{sym("n"), sym("m")}));
  EXPECT_EQ(p.outputs()[1].layout, std::vector<Symbol>{sym("k")});
}

TEST(Parse, CollectedDimsMayBeNamed) {
  Program p = parse_program(
      "(program p (dims (m 4) (t 8)) (input s f32 [m t])\n"
      "  (output z [m] (sum c_t.0 (collect t.0 (sum t (partition t.0 t s))))))");
  const DimInfo* c = p.dims.find(sym("c_t.0"));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->collected_from.has_value());
  EXPECT_EQ(*c->collected_from, (Axis{sym("t"), 0}));
  NodeId z = p.outputs()[0].value;
  EXPECT_EQ(attr_sym(p.node(z).attrs, 0), sym("c_t.0"));
  NodeId collect = p.children(z)[0];
  EXPECT_EQ(p.node(collect).op, Op::Collect);
  EXPECT_EQ(attr_axis(p.node(collect).attrs, 0), (Axis{sym("t"), 0}));
}

TEST(Parse, AttributesFollowTheOpSignature) {
  Program p = parse_program(
      "(program p (dims (m 4) (k 8) (m1 2) (m2 2))\n"
      "  (input x f32 [m k])\n"
      "  (let a (partition m.1 m (partition m.0 m x)))\n"
      "  (let b (reduce k (+ (welford-mean 0) (welford-m2 0 1)) (tuple a a a)))\n"
      "  (let c (proj 2 (preduce m.1 (max (exp-sum 0)) (tuple a a))))\n"
      "  (let d (pow -0.5 (cast bf16 (split m m1 m2 x))))\n"
      "  (output y [m] (combine m.0 m (combine m.1 m (proj 1 b)))))");
  auto named = [&](const char* name) {
    for (uint32_t i = 0; i < p.size(); ++i)
      if (p.name_of(NodeId{i}) == sym(name)) return NodeId{i};
    ADD_FAILURE() << "no node named " << name;
    return NodeId{};
  };
  const Node& a = p.node(named("a"));
  EXPECT_EQ(a.op, Op::Partition);
  EXPECT_EQ(attr_axis(a.attrs, 0), (Axis{sym("m"), 1}));
  EXPECT_EQ(attr_sym(a.attrs, 1), sym("m"));

  const Node& b = p.node(named("b"));
  Reduction welford{{RedComponent{RedBase::Add}, RedComponent{RedBase::Add, Repair::WelfordMean, 0, 0},
                     RedComponent{RedBase::Add, Repair::WelfordM2, 0, 1}}};
  EXPECT_EQ(attr_red(b.attrs, 1), RedId::intern(welford));
  EXPECT_EQ(b.num_children, 1u);
  EXPECT_EQ(p.node(p.children(named("b"))[0]).op, Op::Tuple);
  EXPECT_EQ(p.node(p.children(named("b"))[0]).num_children, 3u);

  const Node& c = p.node(named("c"));
  EXPECT_EQ(c.op, Op::Proj);
  EXPECT_EQ(c.attrs[0], 2u);
  const Node& pre = p.node(p.children(named("c"))[0]);
  EXPECT_EQ(pre.op, Op::PReduce);
  Reduction flash{{RedComponent{RedBase::Max}, RedComponent{RedBase::Add, Repair::ExpSum, 0, 0}}};
  EXPECT_EQ(attr_red(pre.attrs, 1), RedId::intern(flash));

  const Node& d = p.node(named("d"));
  EXPECT_EQ(d.op, Op::Pow);
  EXPECT_EQ(attr_f64(d.attrs), -0.5);
  const Node& cast = p.node(p.children(named("d"))[0]);
  EXPECT_EQ(attr_dtype(cast.attrs, 0), DType::BF16);
  const Node& split = p.node(p.children(p.children(named("d"))[0])[0]);
  EXPECT_EQ(split.op, Op::Split);
  EXPECT_EQ(attr_sym(split.attrs, 0), sym("m"));
  EXPECT_EQ(attr_sym(split.attrs, 1), sym("m1"));
  EXPECT_EQ(attr_sym(split.attrs, 2), sym("m2"));
}

TEST(Parse, NumbersKeepTheirBits) {
  const double kInf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* text;
    double value;
  } cases[] = {{"2", 2.0},    {"-0.5", -0.5},     {"1e-6", 1e-6},
               {"inf", kInf}, {"-inf", -kInf},    {"0.1", 0.1},
               {"-0", -0.0},  {"5e-324", 5e-324}, {"1.7976931348623157e308", 1.7976931348623157e308}};
  for (const Case& c : cases) {
    Program p = parse_program(with_body(std::string("(output y [m k] (add x ") + c.text + "))"));
    NodeId lit = p.children(p.outputs()[0].value)[1];
    ASSERT_EQ(p.node(lit).op, Op::Const) << c.text;
    EXPECT_EQ(p.node(lit).attrs, attrs_f64(c.value)) << c.text;  // bit for bit (-0 is not 0)
  }
  Program p = parse_program(with_body("(output y [m k] (add x nan))"));
  EXPECT_TRUE(std::isnan(attr_f64(p.node(p.children(p.outputs()[0].value)[1]).attrs)));
}

TEST(Parse, ProgramNameIsOptional) {
  Program p = parse_program("(program (dims (m 2)) (input x f32 [m]) (output y [m] x))");
  EXPECT_FALSE(p.name.valid());
  EXPECT_EQ(p.outputs()[0].value, p.inputs()[0].node);
}

// Runs `body` on a thread with a small stack (512 KiB, a fraction of what a
// recursion over kSExprMaxDepth levels needs in an unoptimized build).
void run_on_small_stack(std::function<void()> body) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t thread;
  auto run = [](void* f) -> void* {
    (*static_cast<std::function<void()>*>(f))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, &body), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(Parse, DeepTermsDoNotExhaustTheStack) {
  run_on_small_stack([] {
    // The deepest expression the reader accepts: program and output take two
    // of the kSExprMaxDepth levels.
    int depth = kSExprMaxDepth - 2;
    std::string expr;
    for (int i = 0; i < depth; ++i) expr += "(neg ";
    expr += "x";
    expr += std::string(depth, ')');
    Program p = parse_program(with_body("(output y [m k] " + expr + ")"));
    EXPECT_EQ(p.size(), size_t(depth) + 1);
    std::string text = print_program(p);
    Program again = parse_program(text);
    EXPECT_TRUE(p.same_as(again));
    EXPECT_EQ(print_program(again), text);
    EXPECT_EQ(print_term(p, p.outputs()[0].value), expr);

    // One level more fails cleanly, after a deep subtree has been read.
    std::string too_deep = with_body("(output y [m k] (neg " + expr + "))");
    EXPECT_THROW(parse_program(too_deep), Error);
    // A deep tree that is complete when a later bracket is mismatched.
    EXPECT_THROW(parse_program(with_body("(output y [m k] " + expr + "]")), Error);
  });
}

TEST(Parse, ReadsFiles) {
  std::string path = testing::TempDir() + "eqf_parse_test.eqf";
  {
    std::ofstream out(path);
    out << kRmsNorm;
  }
  Program p = parse_program_file(path);
  EXPECT_EQ(p.file, path);
  EXPECT_TRUE(p.same_as(parse_program(kRmsNorm)));
  std::remove(path.c_str());

  try {
    parse_program_file(path);
    ADD_FAILURE() << "reading a missing file did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.message().find("cannot open"), std::string::npos) << e.what();
  }
}

TEST(Parse, ErrorsInFilesNameTheFile) {
  std::string path = testing::TempDir() + "eqf_parse_bad.eqf";
  {
    std::ofstream out(path);
    out << "(program p (dims (m 4))\n  (input x f32 [m])\n  (output y [m] (add x x x)))\n";
  }
  try {
    parse_program_file(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3:17: error: add expects 2 operands, got 3");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace eqf
