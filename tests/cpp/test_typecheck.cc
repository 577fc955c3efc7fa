// The typing rule of every operator (docs/ir.md, "Operators and their typing
// rules"), as tables of check(term, expected): the expected type text of a
// well-typed term, or a substring of the error an ill-typed one must give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {
namespace {

// Axes print in symbol-id order and symbols are numbered in first-intern
// order: intern this file's dims in declaration order before any test runs,
// so the expected texts below do not depend on which test ran first.
const bool kDimsInterned = [] {
  for (const char* d : {"m", "m1", "m2", "k", "n", "r", "q"}) Symbol::intern(d);
  return true;
}();

// Every term is typed inside this program, as the let `result`. The lets name
// values in each parallel state, so the tables stay one line a case:
//   St  f16[m k] @ {k.0: part(k)}       sk, sk2  f16[m] @ {k.0: partial(+)}
//   mk, mk2  f16[m] @ {k.0: partial(max)}
//   P   f16[m k] @ {k.0: local(k)}      l  f16[m] @ {k.0: local}
//   o   f16[m n] @ {k.0: local}         Sm f16[m k] @ {m.0: part(m)}
//   Sm2 f16[m k] @ {m.0: part(m), m.1: part(m)}
constexpr const char* kProgram = R"eqf(
(program typing
  (dims (m 8) (m1 2) (m2 4) (k 16) (n 4) (r 8) (q 5))
  (input x f16 [m k])
  (input w f32 [m k])
  (input c bool [m k])
  (input y f16 [k n])
  (input v f16 [m])
  (input g f16 [k])
  (let St (partition k.0 k x))
  (let sk (sum k St))
  (let sk2 (sum k (partition k.0 k (mul x x))))
  (let mk (max k St))
  (let mk2 (max k (partition k.0 k (mul x x))))
  (let P (exp (sub St mk)))
  (let l (sum k P))
  (let o (tile_matmul k P (partition k.0 k y)))
  (let Sm (partition m.0 m x))
  (let Sm2 (partition m.1 m Sm))
  (output out [m k] x))
)eqf";

// The type text of `expr` typed in kProgram, or "error: " + the message. A
// bare name gives the type of that let of kProgram.
std::string type_of(const std::string& expr) {
  bool is_name =
      expr.find_first_of("( ") == std::string::npos && std::isalpha(static_cast<unsigned char>(expr[0]));
  std::string text = kProgram;
  if (!is_name) text.insert(text.rfind(')'), "  (let result " + expr + ")\n");
  try {
    Program p = parse_program(text, "typing.eqf");
    typecheck(p);
    Symbol result = Symbol::intern(is_name ? expr : "result");
    for (uint32_t i = 0; i < p.size(); ++i) {
      const Type& t = p.type(NodeId{i}).get();
      // Invariants of every type: dims sorted by id without repeats, axes
      // sorted, a literal has no dims and no axes.
      for (const TensorType& part : t.parts) {
        EXPECT_TRUE(std::adjacent_find(part.dims.begin(), part.dims.end(),
                                       [](Symbol a, Symbol b) { return !(a < b); }) == part.dims.end())
            << expr;
        EXPECT_TRUE(std::adjacent_find(part.delta.begin(), part.delta.end(),
                                       [](const AxisState& a, const AxisState& b) {
                                         return !(a.axis < b.axis);
                                       }) == part.delta.end())
            << expr;
        if (part.literal) {
          EXPECT_TRUE(part.dims.empty() && part.delta.empty()) << expr;
        }
      }
      if (p.name_of(NodeId{i}) == result) return type_text(t, &p.dims);
    }
    return "(no node named result: " + expr + " equals a let of the program; write that let's name)";
  } catch (const Error& e) {
    return "error: " + e.message();
  }
}

struct Case {
  const char* expr;
  const char* expected;  // a type text, or "error: " and a substring of the message
};

void check(const Case& c) {
  std::string got = type_of(c.expr);
  std::string expected = c.expected;
  if (expected.rfind("error: ", 0) == 0) {
    EXPECT_NE(got.find(expected.substr(7)), std::string::npos)
        << "  input:    " << c.expr << "\n  output:   " << got << "\n  expected: " << expected;
    EXPECT_EQ(got.rfind("error: ", 0), 0u) << c.expr;
  } else {
    EXPECT_EQ(got, expected) << "  input:    " << c.expr;
  }
}

void check_all(std::initializer_list<Case> cases) {
  for (const Case& c : cases) check(c);
}

// ---- leaves -------------------------------------------------------------------

TEST(Typecheck, Leaves) {
  check_all({
      {"2.5", "literal"},
      {"-inf", "literal"},
      {"(iota m)", "i32[m]"},
      {"(iota c_k.0)", "i32[c_k.0]"},
  });
}

// ---- pointwise ----------------------------------------------------------------

TEST(Typecheck, EveryPointwiseOpOnTensors) {
  for (const char* op : {"neg", "exp", "log", "sqrt", "rsqrt", "sigmoid", "silu", "gelu", "tanh"})
    check({(std::string("(") + op + " x)").c_str(), "f16[m k]"});
  for (const char* op : {"add", "sub", "mul", "div", "max2", "min2"})
    check({(std::string("(") + op + " x (mul x x))").c_str(), "f16[m k]"});
  for (const char* op : {"lt", "le", "eq"}) check({(std::string("(") + op + " x v)").c_str(), "bool[m k]"});
  check_all({
      {"(pow 2 x)", "f16[m k]"},
      {"(cast f32 x)", "f32[m k]"},
      {"(cast bool x)", "bool[m k]"},
      {"(where c x (neg x))", "f16[m k]"},
      {"(where (lt v 0) v 0)", "f16[m]"},
  });
}

TEST(Typecheck, PointwiseBroadcastsByName) {
  check_all({
      {"(add x v)", "f16[m k]"},
      {"(add v x)", "f16[m k]"},
      {"(mul x y)", "f16[m k n]"},
      {"(sub v g)", "f16[m k]"},
      {"(where (lt v 0) g 0)", "f16[m k]"},
  });
}

TEST(Typecheck, PointwiseDtypes) {
  check_all({
      {"(add x w)",
       "error: add: operand 1 is f16 but operand 2 is f32; operands must have one dtype: cast one"},
      {"(lt w v)", "error: lt: operand 1 is f32 but operand 2 is f16"},
      {"(add (cast f16 w) x)", "f16[m k]"},
      {"(where x x x)", "error: where: the condition (operand 1) is f16; expected bool"},
      {"(where c x w)", "error: where: operand 2 is f16 but operand 3 is f32"},
      {"(where c 1 0)", "error: where: both branches are literal constants"},
      {"(where c (cast f32 1) 0)", "f32[m k]"},
  });
}

TEST(Typecheck, LiteralConstants) {
  check_all({
      {"(add 1 2)", "literal"},
      {"(exp 1)", "literal"},
      {"(lt 1 2)", "literal"},
      {"(where 1 2 3)", "literal"},
      {"(cast f32 1.5)", "f32[]"},  // cast gives a constant its dtype
      {"(add x 1)", "f16[m k]"},
      {"(add w 1)", "f32[m k]"},  // no dtype agreement with a literal
      {"(where c 1 x)", "f16[m k]"},
      {"(add (cast f32 1) x)", "error: add: operand 1 is f32 but operand 2 is f16"},
      // ... and no axis-set agreement: a literal mixes with any state.
      {"(add St 1)", "f16[m k] @ {k.0: part(k)}"},
      {"(mul sk 2)", "f16[m] @ {k.0: partial(+)}"},
      // A literal counts as rep: adding it on every coordinate is not linear.
      {"(add sk 1)", "f16[m] @ {k.0: local}"},
      {"(sub mk 1)", "f16[m] @ {k.0: partial(max)}"},
      {"(replicate m.0 (add 1 2))", "literal"},
      {"(add (cast f16 1) St)",
       "error: add: operand 2 has axis k.0 but operand 1 does not; replicate operand 1 on k.0"},
  });
}

TEST(Typecheck, PointwiseAxesAndPartitions) {
  check_all({
      {"(add Sm (replicate m.0 g))", "f16[m k] @ {m.0: part(m)}"},
      {"(add (replicate m.0 g) Sm)", "f16[m k] @ {m.0: part(m)}"},
      {"(add Sm Sm)", "f16[m k] @ {m.0: part(m)}"},
      {"(add (replicate m.0 x) (replicate m.0 v))", "f16[m k] @ {m.0: rep}"},
      {"(add Sm (replicate m.0 v))",
       "error: add: operand 1 is part(m) on axis m.0 but operand 2 is rep and has dim m: replicate keeps the "
       "whole dim "
       "m beside a block of m; partition the operand on m.0 too"},
      {"(add Sm g)", "error: add: operand 1 has axis m.0 but operand 2 does not; replicate operand 2 on m.0"},
      {"(add g Sm)", "error: add: operand 2 has axis m.0 but operand 1 does not; replicate operand 1 on m.0"},
      // Partitions of different dims are different axes ...
      {"(add Sm St)", "error: add: operand 1 has axis m.0 but operand 2 does not"},
      // ... and replicating each across the other's axis keeps a whole dim beside a block.
      {"(add (replicate k.0 Sm) (replicate m.0 St))",
       "error: add: operand 1 is part(m) on axis m.0 but operand 2 is rep and has dim m"},
      {"(add Sm2 (replicate m.1 Sm))",
       "error: add: operand 1 is part(m) on axis m.1 but operand 2 is rep and has dim m: replicate keeps the "
       "whole dim m "
       "beside a block of m; partition the operand on m.1 too"},
      {"(where (lt Sm 0) Sm 0)", "f16[m k] @ {m.0: part(m)}"},
  });
}

TEST(Typecheck, PointwisePartialStates) {
  check_all({
      // Linear cases keep partial(+).
      {"(add sk sk2)", "f16[m] @ {k.0: partial(+)}"},
      {"(sub sk sk2)", "f16[m] @ {k.0: partial(+)}"},
      {"(neg sk)", "f16[m] @ {k.0: partial(+)}"},
      {"(mul sk (replicate k.0 v))", "f16[m] @ {k.0: partial(+)}"},
      {"(mul (replicate k.0 v) sk)", "f16[m] @ {k.0: partial(+)}"},
      {"(div sk (replicate k.0 v))", "f16[m] @ {k.0: partial(+)}"},
      {"(mul sk (replicate k.0 g))", "f16[m k] @ {k.0: partial(+)}"},
      // ... and partial(max).
      {"(max2 mk mk2)", "f16[m] @ {k.0: partial(max)}"},
      {"(max2 mk (replicate k.0 v))", "f16[m] @ {k.0: partial(max)}"},
      {"(add mk (replicate k.0 v))", "f16[m] @ {k.0: partial(max)}"},
      {"(add (replicate k.0 v) mk)", "f16[m] @ {k.0: partial(max)}"},
      {"(sub mk (replicate k.0 v))", "f16[m] @ {k.0: partial(max)}"},
      // Everything else mixes to local.
      {"(mul sk sk2)", "f16[m] @ {k.0: local}"},
      {"(div (replicate k.0 v) sk)", "f16[m] @ {k.0: local}"},
      {"(add sk (replicate k.0 v))", "f16[m] @ {k.0: local}"},
      {"(exp sk)", "f16[m] @ {k.0: local}"},
      {"(cast f32 sk)", "f32[m] @ {k.0: local}"},
      {"(neg mk)", "f16[m] @ {k.0: local}"},
      {"(sub (replicate k.0 v) mk)", "f16[m] @ {k.0: local}"},
      {"(add mk mk2)", "f16[m] @ {k.0: local}"},
      {"(min2 mk mk2)", "f16[m] @ {k.0: local}"},
      {"(add sk mk)", "f16[m] @ {k.0: local}"},
      {"(mul mk (replicate k.0 v))", "f16[m] @ {k.0: local}"},
      {"(add l sk)", "f16[m] @ {k.0: local}"},
      {"(lt sk 0)", "bool[m] @ {k.0: local}"},
  });
}

TEST(Typecheck, PointwiseBlocksBesidePartialOrLocal) {
  check_all({
      // A block of k beside a per-coordinate partial is a block of nothing global.
      {"(sub St (replicate k.0 v))", "f16[m k] @ {k.0: part(k)}"},
      {"(sub St mk)", "f16[m k] @ {k.0: local(k)}"},
      {"(mul P St)", "f16[m k] @ {k.0: local(k)}"},
      {"(exp P)", "f16[m k] @ {k.0: local(k)}"},
      {"(add P (replicate k.0 v))", "f16[m k] @ {k.0: local(k)}"},
      // A partial or local value that has the whole dim k cannot meet a block of k.
      {"(add St (mul sk (replicate k.0 g)))",
       "error: add: operand 1 is part(k) on axis k.0 but operand 2 is partial(+) and has dim k: its tiles "
       "hold the "
       "whole dim k beside a block of k"},
      {"(add P (add sk (replicate k.0 g)))",
       "error: add: operand 1 is local(k) on axis k.0 but operand 2 is local and has dim k"},
      {"(add P (replicate k.0 x))",
       "error: add: operand 1 is local(k) on axis k.0 but operand 2 is rep and has dim k"},
  });
}

// ---- reductions -----------------------------------------------------------------

TEST(Typecheck, Reduce) {
  check_all({
      {"(sum k x)", "f16[m]"},
      {"(max m x)", "f16[k]"},
      {"(reduce k + x)", "f16[m]"},
      {"(sum n x)", "error: reduce: the operand has no dim n; expected a tensor with dim n, got f16[m k]"},
      {"(sum m 1)", "error: reduce: the operand has no dim m"},
      // Per axis: part(d) -> partial(R); other states stay, or mix to local.
      {"sk", "f16[m] @ {k.0: partial(+)}"},
      {"mk", "f16[m] @ {k.0: partial(max)}"},
      {"(sum m St)", "f16[k] @ {k.0: part(k)}"},
      {"(sum m (replicate k.0 x))", "f16[k] @ {k.0: rep}"},
      {"(sum m (mul sk (replicate k.0 g)))", "f16[k] @ {k.0: partial(+)}"},
      {"(max m (mul sk (replicate k.0 g)))", "f16[k] @ {k.0: local}"},
      {"(sum m (add mk (replicate k.0 g)))", "f16[k] @ {k.0: local}"},
      {"(max m (add mk (replicate k.0 g)))", "f16[k] @ {k.0: partial(max)}"},
      {"l", "f16[m] @ {k.0: local}"},
      {"(sum m P)", "f16[k] @ {k.0: local(k)}"},
      {"(sum k Sm2)", "f16[m] @ {m.0: part(m), m.1: part(m)}"},
      {"(sum m Sm2)", "f16[k] @ {m.0: partial(+), m.1: partial(+)}"},
  });
}

TEST(Typecheck, TupleReduce) {
  check_all({
      {"(reduce k (+ +) (tuple x (mul x x)))", "(f16[m], f16[m])"},
      {"(reduce k (max +) (tuple St (mul St St)))",
       "(f16[m] @ {k.0: partial(max)}, f16[m] @ {k.0: partial(+)})"},
      // A repaired component is finished only together with the one it reads.
      {"(reduce k (max (exp-sum 0)) (tuple St St))", "(f16[m] @ {k.0: partial(max)}, f16[m] @ {k.0: local})"},
      {"(reduce k (+ (welford-mean 0) (welford-m2 0 1)) (tuple x x x))", "(f16[m], f16[m], f16[m])"},
      {"(reduce k (max (exp-sum 0)) (tuple x (mul x y)))", "(f16[m], f16[m n])"},
      {"(reduce k (+ +) x)",
       "error: reduce: the reduction (+ +) has 2 components, so the operand must be a tuple of 2 tensors"},
      {"(reduce k (+ + +) (tuple x x))", "error: reduce: the reduction (+ + +) has 3 components"},
      {"(reduce k + (tuple x x))",
       "error: reduce: the reduction + has one component, so the operand must be a tensor"},
      {"(reduce k (+ +) (tuple x v))", "error: reduce: component 1 has no dim k"},
      {"(reduce k (max (exp-sum 0)) (tuple (mul x y) x))",
       "error: reduce: component 1's repair reads component 0, which has dim n that component 1 lacks"},
      {"(reduce k (max (exp-sum 0)) (tuple St (replicate k.0 x)))",
       "error: reduce: component 0 is part(k) on axis k.0 but component 1 is rep and has dim k"},
      {"(reduce k (max (exp-sum 0)) (tuple St x))",
       "error: reduce: component 0 has axis k.0 but component 1 does not"},
  });
}

TEST(Typecheck, Contraction) {
  check_all({
      {"(matmul k x y)", "f16[m n]"},
      {"(matmul k x g)", "f16[m]"},
      {"(matmul k x x)", "f16[m]"},  // shared m is a batch dim
      {"(matmul k x v)", "error: matmul: operand 2 has no dim k; expected a tensor with dim k, got f16[m]"},
      {"(matmul k x 2)", "error: matmul: operand 2 is a literal constant"},
      {"(matmul k x (cast f32 y))", "error: matmul: operand 1 is f16 but operand 2 is f32"},
      {"(matmul k Sm (replicate m.0 y))", "error: matmul: operand 1 has parallel axes"},
      // tile_matmul(k, A, B) is reduce(k, +, mul(A, B)).
      {"(tile_matmul k St (partition k.0 k y))", "f16[m n] @ {k.0: partial(+)}"},
      {"(tile_matmul k Sm (replicate m.0 y))", "f16[m n] @ {m.0: part(m)}"},
      {"(tile_matmul k (replicate m.0 y) Sm)", "f16[m n] @ {m.0: part(m)}"},
      {"(tile_matmul k (replicate k.0 x) (replicate k.0 y))", "f16[m n] @ {k.0: rep}"},
      {"o", "f16[m n] @ {k.0: local}"},
      {"(tile_matmul m Sm (replicate m.0 v))",
       "error: tile_matmul: operand 1 is part(m) on axis m.0 but operand 2 is rep and has dim m"},
      {"(tile_matmul k x y)",
       "error: tile_matmul: the operands have no parallel axes; tile_matmul is the tile form: use matmul"},
      {"(tile_matmul k St (replicate k.0 y))",
       "error: tile_matmul: operand 1 is part(k) on axis k.0 but operand 2 is rep and has dim k"},
      {"(tile_matmul k St y)", "error: tile_matmul: operand 1 has axis k.0 but operand 2 does not"},
      {"(tile_matmul n St (partition k.0 k y))", "error: tile_matmul: operand 1 has no dim n"},
  });
  // The two forms agree: tile_matmul is typed exactly as its definition.
  for (const char* ab : {"St (partition k.0 k y)", "Sm (replicate m.0 y)", "P (partition k.0 k (mul y y))"})
    EXPECT_EQ(type_of(std::string("(tile_matmul k ") + ab + ")"),
              type_of(std::string("(sum k (mul ") + ab + "))"))
        << ab;
}

// ---- layout ---------------------------------------------------------------------

TEST(Typecheck, Layout) {
  check_all({
      {"(split m m1 m2 x)", "f16[m1 m2 k]"},
      {"(split m m1 m2 St)", "f16[m1 m2 k] @ {k.0: part(k)}"},
      {"(merge m1 m2 m (split m m1 m2 x))", "f16[m k]"},
      {"(rename m r x)", "f16[k r]"},
      {"(rename m r sk)", "f16[r] @ {k.0: partial(+)}"},
      {"(split m m1 q x)", "error: split: extents do not match: m (8) = 8 but m1 (2) * q (5) = 10"},
      {"(split m m1 k x)", "error: split: the operand already has dim k"},
      {"(split m m1 m1 x)", "error: split: splits into dim m1 twice"},
      {"(split n m1 m2 x)", "error: split: the operand has no dim n"},
      {"(split m m1 m2 Sm)",
       "error: split: dim m is partitioned by axis m.0 (part(m)); expected it whole: combine m.0 first"},
      {"(split k m1 m2 P)", "error: split: dim k is partitioned by axis k.0"},
      {"(merge m1 m2 m x)", "error: merge: the operand has no dim m1"},
      {"(merge m1 m1 m (split m m1 m2 x))", "error: merge: merges dim m1 with itself"},
      {"(merge m1 m2 k (split m m1 m2 x))", "error: merge: the operand already has dim k"},
      {"(merge m1 m2 q (split m m1 m2 x))", "error: merge: extents do not match"},
      {"(rename m n x)", "error: rename: extents do not match: m (8) = 8 but n (4) = 4"},
      {"(rename m k x)", "error: rename: the operand already has dim k"},
      {"(rename m r Sm)", "error: rename: dim m is partitioned by axis m.0"},
      {"(rename c_k.0 r (collect k.0 sk))",
       "error: rename: dim c_k.0 is made by collect and has no fixed extent"},
  });
}

// ---- parallel states --------------------------------------------------------------

TEST(Typecheck, PartitionAndReplicate) {
  check_all({
      {"Sm", "f16[m k] @ {m.0: part(m)}"},
      {"Sm2", "f16[m k] @ {m.0: part(m), m.1: part(m)}"},
      {"(partition m.2 m Sm2)", "f16[m k] @ {m.0: part(m), m.1: part(m), m.2: part(m)}"},
      {"(partition k.0 k Sm)", "f16[m k] @ {m.0: part(m), k.0: part(k)}"},
      {"(partition k.1 k P)", "f16[m k] @ {k.0: local(k), k.1: part(k)}"},
      {"(partition m.0 m 1)", "error: partition: the operand has no dim m"},
      {"(partition n.0 n x)", "error: partition: the operand has no dim n"},
      {"(partition k.0 m x)", "error: partition: axis k.0 partitions dim k, not m; expected an axis m.l"},
      {"(partition m.0 m Sm)", "error: partition: the operand already has axis m.0 (part(m))"},
      {"(partition m.1 m x)",
       "error: partition: axis m.1 splits the block of m left by m.0, but m.0 is not in scope"},
      {"(partition m.1 m (replicate m.0 x))",
       "error: partition: axis m.1 splits the block of m left by m.0, but m.0 is rep"},
      {"(partition m.2 m Sm)",
       "error: partition: axis m.2 splits the block of m left by m.1, but m.1 is not in scope"},
      {"(replicate m.0 x)", "f16[m k] @ {m.0: rep}"},
      {"(replicate m.1 Sm)", "f16[m k] @ {m.0: part(m), m.1: rep}"},
      {"(replicate m.1 (replicate m.0 v))", "f16[m] @ {m.0: rep, m.1: rep}"},
      {"(replicate n.0 x)", "f16[m k] @ {n.0: rep}"},
      {"(replicate m.0 2)", "literal"},
      {"(replicate m.0 Sm)", "error: replicate: the operand already has axis m.0 (part(m))"},
      {"(replicate m.1 x)", "error: replicate: axis m.1 is a deeper level of m, but m.0 is not in scope"},
  });
}

TEST(Typecheck, Combine) {
  check_all({
      {"(combine m.0 m Sm)", "f16[m k]"},
      {"(combine m.1 m Sm2)", "f16[m k] @ {m.0: part(m)}"},
      {"(combine m.0 m (combine m.1 m Sm2))", "f16[m k]"},
      {"(combine k.0 k (sum m St))", "f16[k]"},
      {"(combine m.0 m Sm2)", "error: combine: axis m.1 is in scope inside m.0; remove m.1 before m.0"},
      {"(combine k.0 k sk)",
       "error: combine: axis k.0 is partial(+) in the operand; expected part(k): a partial value is finished "
       "with preduce"},
      {"(combine k.0 k P)", "error: combine: axis k.0 is local(k) in the operand; expected part(k)"},
      {"(combine m.0 m (replicate m.0 x))",
       "error: combine: axis m.0 is rep in the operand; expected part(m)"},
      {"(combine m.0 k Sm)", "error: combine: axis m.0 is part(m) in the operand; expected part(k)"},
      {"(combine m.0 m x)", "error: combine: the operand has no axis m.0 in scope"},
  });
}

TEST(Typecheck, PReduce) {
  check_all({
      {"(preduce k.0 + sk)", "f16[m]"},
      {"(preduce k.0 max mk)", "f16[m]"},
      {"(preduce k.0 + (mul sk (replicate k.0 g)))", "f16[m k]"},
      {"(preduce k.0 max sk)",
       "error: preduce: axis k.0 is partial(+) in the operand; expected partial(max) for the reduction max"},
      {"(preduce k.0 + mk)", "error: preduce: axis k.0 is partial(max) in the operand; expected partial(+)"},
      {"(preduce k.0 + St)", "error: preduce: axis k.0 is part(k) in the operand; expected partial(+)"},
      {"(preduce k.0 + l)", "error: preduce: axis k.0 is local in the operand; expected partial(+)"},
      {"(preduce k.0 + (replicate k.0 v))",
       "error: preduce: axis k.0 is rep in the operand; expected partial(+)"},
      {"(preduce m.0 + sk)", "error: preduce: the operand has no axis m.0 in scope"},
      {"(preduce k.0 + (tuple sk sk))",
       "error: preduce: the reduction + has one component, so the operand must be a tensor"},
      // Tuple reductions: component i is partial(base_i) ...
      {"(preduce k.0 (+ max) (tuple sk mk))", "(f16[m], f16[m])"},
      {"(preduce k.0 (+ max) (tuple mk sk))",
       "error: preduce: axis k.0 is partial(max) in component 0; expected partial(+)"},
      {"(preduce k.0 (max +) (tuple mk l))",
       "error: preduce: axis k.0 is local in component 1; expected partial(+) for the reduction (max +)"},
      // ... and a repaired component also partial(+) or local: the
      // FlashAttention state (max, sum, P.V) over the key blocks.
      {"(preduce k.0 (max (exp-sum 0) (exp-sum 0)) (tuple mk l o))", "(f16[m], f16[m], f16[m n])"},
      {"(preduce k.0 (max (exp-sum 0)) (tuple mk sk))", "(f16[m], f16[m])"},
      {"(preduce k.0 (max (exp-sum 0)) (tuple mk P))",
       "error: preduce: axis k.0 is local(k) in component 1; expected partial(+) or local"},
      {"(preduce k.0 (max (exp-sum 0)) (tuple sk l))",
       "error: preduce: axis k.0 is partial(+) in component 0; expected partial(max)"},
      {"(preduce k.0 (max (exp-sum 0) (exp-sum 0)) (tuple mk l))",
       "error: preduce: the reduction (max (exp-sum 0) (exp-sum 0)) has 3 components"},
  });
}

TEST(Typecheck, PReduceKeepsOtherAxes) {
  // A tile matmul split on m (grid) and k (loop): finishing k keeps m's blocks.
  const char* mk_split = "(tile_matmul k (partition k.0 k Sm) (replicate m.0 (partition k.0 k y)))";
  check({mk_split, "f16[m n] @ {m.0: part(m), k.0: partial(+)}"});
  check({(std::string("(preduce k.0 + ") + mk_split + ")").c_str(), "f16[m n] @ {m.0: part(m)}"});
  check({(std::string("(combine m.0 m (preduce k.0 + ") + mk_split + "))").c_str(), "f16[m n]"});
  // A repaired component depends on the max it reads: their states on the
  // other axes combine (here both part(m)).
  check({"(preduce k.0 (max (exp-sum 0)) (tuple (max k (partition k.0 k Sm)) (sum k (partition k.0 k Sm))))",
         "(f16[m] @ {m.0: part(m)}, f16[m] @ {m.0: part(m)})"});
}

TEST(Typecheck, Collect) {
  check_all({
      {"(collect k.0 sk)", "f16[m c_k.0]"},
      {"(collect k.0 l)", "f16[m c_k.0]"},
      {"(collect k.0 (replicate k.0 x))", "f16[m k c_k.0]"},
      {"(collect k.0 (tuple mk l o))", "(f16[m c_k.0], f16[m c_k.0], f16[m n c_k.0])"},
      {"(collect k.0 St)",
       "error: collect: axis k.0 is part(k) in the operand; expected partial, local or rep: a partitioned "
       "value is put together with combine"},
      {"(collect k.0 P)",
       "error: collect: axis k.0 is local(k) in the operand; expected partial, local or rep"},
      {"(collect m.0 sk)", "error: collect: the operand has no axis m.0 in scope"},
      {"(collect k.0 (sum k (partition k.1 k St)))",
       "error: collect: axis k.1 is in scope inside k.0; remove k.1 before k.0"},
      {"(collect k.0 (tuple sk (sum k (partition k.1 k St))))",
       "error: collect: axis k.1 is in scope inside k.0"},
      {"(collect k.0 (tuple sk x))", "error: collect: component 1 has no axis k.0 in scope"},
      // Storage: preduce over an axis = reduce over the dim its collect makes.
      {"(sum c_k.0 (collect k.0 sk))", "f16[m]"},
      {"(reduce c_k.0 (max (exp-sum 0) (exp-sum 0)) (collect k.0 (tuple mk l o)))",
       "(f16[m], f16[m], f16[m n])"},
  });
  EXPECT_EQ(type_of("(sum c_k.0 (collect k.0 sk))"), type_of("(preduce k.0 + sk)"));
}

TEST(Typecheck, AxisLevelsAreRemovedInnermostFirst) {
  const char* two = "(sum k (partition k.1 k St))";  // k.0 and k.1 partial(+)
  check({two, "f16[m] @ {k.0: partial(+), k.1: partial(+)}"});
  check({(std::string("(preduce k.1 + ") + two + ")").c_str(), "f16[m] @ {k.0: partial(+)}"});
  check({(std::string("(preduce k.0 + (preduce k.1 + ") + two + "))").c_str(), "f16[m]"});
  check({(std::string("(preduce k.0 + ") + two + ")").c_str(),
         "error: preduce: axis k.1 is in scope inside k.0; remove k.1 before k.0"});
}

// ---- tuples ----------------------------------------------------------------------

TEST(Typecheck, TupleAndProj) {
  check_all({
      {"(tuple x v)", "(f16[m k], f16[m])"},
      {"(tuple mk l o)", "(f16[m] @ {k.0: partial(max)}, f16[m] @ {k.0: local}, f16[m n] @ {k.0: local})"},
      {"(tuple x 1)", "(f16[m k], literal)"},
      {"(proj 0 (tuple x v))", "f16[m k]"},
      {"(proj 1 (tuple x v))", "f16[m]"},
      {"(proj 1 (preduce k.0 (max (exp-sum 0) (exp-sum 0)) (tuple mk l o)))", "f16[m]"},
      {"(proj 2 (tuple x v))", "error: proj: index 2 is out of range for a tuple of 2; expected 0..1"},
      {"(proj 0 x)", "error: proj: the operand is a tensor (f16[m k]); expected a tuple"},
      {"(tuple x)", "error: tuple: expects at least 2 operands, got 1"},
      {"(tuple (tuple x x) x)",
       "error: tuple: operand 1 is a tuple (f16[m k], f16[m k]); expected a tensor: take a component with "
       "proj"},
      {"(add (tuple x x) x)", "error: add: operand 1 is a tuple"},
      {"(sum k (tuple x x))", "error: reduce: the reduction + has one component"},
      {"(partition m.0 m (tuple x x))", "error: partition: operand 1 is a tuple"},
      {"(split m m1 m2 (tuple x x))", "error: split: operand 1 is a tuple"},
  });
}

// ---- whole programs: positions, inputs, outputs ---------------------------------

Error check_error(const std::string& text) {
  try {
    Program p = parse_program(text, "prog.eqf");
    typecheck(p);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a type error in:\n" << text;
  return Error("none");
}

TEST(Typecheck, ErrorsPointAtTheNode) {
  Error e = check_error(
      "(program p\n"
      "  (dims (m 4) (k 8))\n"
      "  (input x f16 [m k])\n"
      "  (input w f32 [m k])\n"
      "  (output y [m k] (mul x\n"
      "                       (add x w))))\n");
  EXPECT_EQ(e.file(), "prog.eqf");
  EXPECT_EQ(e.loc().line, 6u);
  EXPECT_EQ(e.loc().col, 24u);
  EXPECT_NE(std::string(e.what()).find("prog.eqf:6:24: error: add: operand 1 is f16 but operand 2 is f32"),
            std::string::npos)
      << e.what();
}

TEST(Typecheck, Outputs) {
  const std::string head = "(program p (dims (m 4) (k 8)) (input x f16 [m k])\n";
  struct OutCase {
    const char* output;
    const char* error;  // nullptr: well-typed
  } cases[] = {
      {"(output y [k m] x)", nullptr},
      {"(output y [m k] (partition m.0 m x))",
       "output y has parallel axes (f16[m k] @ {m.0: part(m)}); expected none"},
      {"(output y (tuple x x))", "output y is a tuple (f16[m k], f16[m k]); expected a tensor"},
      {"(output y [] 1.5)", "output y is a literal constant; expected a tensor: give it a dtype with cast"},
      {"(output y [] (cast f32 1.5))", nullptr},
      {"(output y [m] x)", "output y: layout [m] is not a permutation of its dims [m k]"},
      {"(output y [m k] (sum k x))", "output y: layout [m k] is not a permutation of its dims [m]"},
  };
  for (const OutCase& c : cases) {
    std::string text = head + "  " + c.output + ")";
    if (!c.error) {
      EXPECT_NO_THROW(parse_and_check(text, "prog.eqf")) << text;
      continue;
    }
    Error e = check_error(text);
    EXPECT_NE(e.message().find(c.error), std::string::npos)
        << "  output:   " << e.message() << "\n  expected: " << c.error;
    EXPECT_EQ(e.loc().line, 2u) << c.output;
  }
}

TEST(Typecheck, StoresOneTypePerNode) {
  Program p = parse_and_check(
      "(program p (dims (m 4) (k 8)) (input x f16 [m k]) (input v f16 [m])\n"
      "  (output y [m k] (add x v)) (output z [m k] (add v x)))");
  ASSERT_EQ(p.types().size(), p.size());
  // add(x, v) and add(v, x) are different nodes of one type: one TypeId.
  EXPECT_EQ(p.type(p.outputs()[0].value), p.type(p.outputs()[1].value));
  EXPECT_EQ(type_text(p.type(p.inputs()[0].node).get(), &p.dims), "f16[m k]");
}

// ---- infer_type directly (the e-graph's analysis) --------------------------------

TEST(InferType, ChecksArityAndChildren) {
  DimTable dims;
  dims.declare(Symbol::intern("m"), 4);
  TypeId x = TypeId::intern(Type{{TensorType{DType::F16, false, {Symbol::intern("m")}, {}}}, false});
  TypeId one[] = {x};
  auto r = infer_type(Op::Add, attrs_none(), one, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_EQ(std::get<TypeError>(r).message, "add: expects 2 operands, got 1");

  TypeId bad[] = {x, TypeId()};
  r = infer_type(Op::Add, attrs_none(), bad, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_EQ(std::get<TypeError>(r).message, "add: operand 2 has no type");

  r = infer_type(Op::Input, Attrs{Symbol::intern("x").raw(), 0, 0}, {}, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_NE(std::get<TypeError>(r).message.find("declaration"), std::string::npos);

  r = infer_type(Op::Iota, Attrs{Symbol::intern("zz").raw(), 0, 0}, {}, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_EQ(std::get<TypeError>(r).message, "iota: dim zz is not declared; expected a dim of the program");

  r = infer_type(Op::Const, attrs_f64(1.5), {}, dims);
  ASSERT_TRUE(std::holds_alternative<TypeId>(r));
  EXPECT_TRUE(std::get<TypeId>(r).get().tensor().literal);
}

// Every op of ops.def reaches a typing rule: an op added to the table without
// one fails here rather than in the e-graph.
TEST(InferType, EveryOpHasARule) {
  Symbol m = Symbol::intern("m");
  DimTable dims;
  dims.declare(m, 4);
  TypeId x = TypeId::intern(Type{{TensorType{DType::F32, false, {m}, {}}}, false});
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    Attrs attrs = attrs_none();
    for (int a = 0, slot = 0; a < 3; ++a) {
      switch (info.attrs[a]) {
        case AttrKind::None:
          break;
        case AttrKind::Sym:
          attrs[slot++] = Symbol::intern("x").raw();
          break;
        case AttrKind::Dim:
          attrs[slot++] = m.raw();
          break;
        case AttrKind::Axis:
          attrs[slot++] = Axis{m, 0}.pack();
          break;
        case AttrKind::Red:
          attrs[slot++] = RedId::add().raw();
          break;
        case AttrKind::DType:
          attrs[slot++] = uint32_t(DType::F16);
          break;
        case AttrKind::Int:
          attrs[slot++] = 0;
          break;
        case AttrKind::F64: {
          Attrs f = attrs_f64(2.0);
          attrs[slot++] = f[0];
          attrs[slot++] = f[1];
          break;
        }
      }
    }
    std::vector<TypeId> kids(info.arity == kVariadic ? 2 : size_t(info.arity), x);
    auto r = infer_type(op, attrs, kids, dims);
    if (auto* e = std::get_if<TypeError>(&r)) {
      EXPECT_EQ(e->message.rfind(std::string(info.name) + ": ", 0), 0u) << e->message;
      for (const char* none :
           {"has no typing rule", "not a leaf", "not a layout op", "not a parallel-state op"})
        EXPECT_EQ(e->message.find(none), std::string::npos) << e->message;
    }
  }
}

// One axis blocks one dim; no well-typed program reaches this (an axis only
// ever partitions its own dim), but the e-graph's analysis must still refuse it.
TEST(InferType, BlocksOfTwoDimsOnOneAxis) {
  Symbol m = Symbol::intern("m"), k = Symbol::intern("k");
  DimTable dims;
  dims.declare(m, 4);
  dims.declare(k, 8);
  Axis p{m, 0};
  TypeId a = TypeId::intern(Type{{TensorType{DType::F16, false, {m}, {{p, ParState::part(m)}}}}, false});
  TypeId b = TypeId::intern(Type{{TensorType{DType::F16, false, {k}, {{p, ParState::part(k)}}}}, false});
  TypeId kids[] = {a, b};
  auto r = infer_type(Op::Mul, attrs_none(), kids, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_EQ(std::get<TypeError>(r).message,
            "mul: operand 1 is part(m) on axis m.0 but operand 2 is part(k); one axis partitions one dim, so "
            "both must "
            "be blocks of the same dim");
}

// Levels below an axis are all there and nothing else partitions its dim:
// again only reachable from types no program makes.
TEST(InferType, PartitionCountsTheLevelsOfItsDim) {
  Symbol m = Symbol::intern("m");
  DimTable dims;
  dims.declare(m, 8);
  TypeId x =
      TypeId::intern(Type{{TensorType{DType::F16, false, {m}, {{Axis{m, 1}, ParState::part(m)}}}}, false});
  TypeId kids[] = {x};
  auto r = infer_type(Op::Partition, Attrs{Axis{m, 0}.pack(), m.raw(), 0}, kids, dims);
  ASSERT_TRUE(std::holds_alternative<TypeError>(r));
  EXPECT_EQ(
      std::get<TypeError>(r).message,
      "partition: dim m is partitioned by 1 axes of the operand; m.0 expects exactly the 0 levels below it");
}

TEST(InferType, CollectDeclaresTheCollectedDim) {
  Symbol m = Symbol::intern("m"), k = Symbol::intern("k");
  DimTable dims;
  dims.declare(m, 4);
  dims.declare(k, 8);
  Axis p{k, 0};
  TypeId x = TypeId::intern(
      Type{{TensorType{DType::F32, false, {m}, {{p, ParState::partial(RedId::add())}}}}, false});
  TypeId kids[] = {x};
  EXPECT_FALSE(dims.contains(p.collected_dim()));
  auto r = infer_type(Op::Collect, Attrs{p.pack(), 0, 0}, kids, dims);
  ASSERT_TRUE(std::holds_alternative<TypeId>(r));
  const DimInfo* c = dims.find(p.collected_dim());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->collected_from, p);
  EXPECT_EQ(type_text(std::get<TypeId>(r).get(), &dims), "f32[m c_k.0]");
  // Typing the same node again interns the same type and declares nothing new.
  size_t n = dims.all().size();
  auto again = infer_type(Op::Collect, Attrs{p.pack(), 0, 0}, kids, dims);
  EXPECT_EQ(std::get<TypeId>(again), std::get<TypeId>(r));
  EXPECT_EQ(dims.all().size(), n);
}

}  // namespace
}  // namespace eqf
