// Malformed programs: each must fail with an eqf::Error whose message names
// the problem and whose position points at it. One line per program:
// {name, text, expected part of the message, line, column}.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/sexpr.h"

namespace eqf {
namespace {

struct ErrorCase {
  std::string name;
  std::string text;
  std::string message;  // a part of Error::message()
  uint32_t line, col;
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

// Lines 1-3 of most cases; the case's own items start on line 4.
const std::string kHead =
    "(program p\n"
    "  (dims (m 4) (k 8))\n"
    "  (input x f32 [m k])\n";
std::string prog(const std::string& items) { return kHead + items + ")"; }

// An output whose expression nests `depth` lists below the output item.
std::string deep_output(int depth) {
  std::string e;
  for (int i = 0; i < depth; ++i) e += "(neg ";
  return prog("  (output y [m k] " + e + "x" + std::string(depth, ')') + ")");
}

const std::vector<ErrorCase>& parse_error_cases() {
  static const std::vector<ErrorCase> cases = {
      // ---- brackets and the shape of the file ----
      {"Unclosed", kHead + "  (output y [m k] (exp x))", "unclosed `(` opened at 1:1: expected `)`", 4, 27},
      {"Mismatched", "(program p\n  (dims (m 4) (k 8))\n  (input x f32 [m k)\n  (output y [m k] x))",
       "mismatched `)`: expected `]` to close the `[` opened at 3:16", 3, 20},
      {"StrayClose", prog("  (output y [m k] x)") + ")", "unexpected `)`: there is no open bracket", 4, 22},
      {"Empty", "", "empty program", 1, 1},
      {"OnlyComments", "; nothing here\n\n", "empty program", 1, 1},
      {"TrailingText", prog("  (output y [m k] x)") + "\n(output z [m] x)",
       "unexpected `(output z [m] x)` after the program: expected the end of the text", 5, 1},
      {"NotAProgram", "(prog p (dims (m 4)))", "expected `(program NAME (dims ...) ...)`", 1, 1},
      {"DeepNesting", deep_output(kSExprMaxDepth),
       "nesting deeper than " + std::to_string(kSExprMaxDepth) + " levels", 4,
       uint32_t(19 + 5 * (kSExprMaxDepth - 2))},
      {"UnknownItem", prog("  (lett a x)"), "unknown item `(lett a x)`: expected `(dims ...)`", 4, 3},

      // ---- dims ----
      {"MissingDims", "(program p\n  (input x f32 [m])\n  (output y [m] x))", "missing dims", 2, 3},
      {"MissingDimsNoItems", "(program p)", "missing dims", 1, 1},
      {"DimsTwice", "(program p\n  (dims (m 4))\n  (dims (k 4))\n  (input x f32 [m])\n  (output y [m] x))",
       "duplicate `(dims ...)`", 3, 3},
      {"DuplicateDim", "(program p\n  (dims (m 4) (k 8) (m 2))\n  (input x f32 [m])\n  (output y [m] x))",
       "duplicate dim `m`: already declared at 2:10", 2, 22},
      {"ZeroExtent", "(program p\n  (dims (m 0))\n  (input x f32 [m])\n  (output y [m] x))",
       "bad extent `0` for dim `m`: expected a positive integer", 2, 12},
      {"FractionalExtent", "(program p\n  (dims (m 4) (k 2.5))\n  (input x f32 [m])\n  (output y [m] x))",
       "bad extent `2.5` for dim `k`: expected a positive integer", 2, 18},
      {"NegativeExtent", "(program p\n  (dims (m -3))\n  (input x f32 [m])\n  (output y [m] x))",
       "bad extent `-3` for dim `m`", 2, 12},
      {"IllFormedDim", "(program p\n  (dims m)\n  (input x f32 [m])\n  (output y [m] x))",
       "ill-formed dim `m`: expected `(NAME EXTENT)`", 2, 9},

      // ---- inputs ----
      {"UnknownDType", "(program p\n  (dims (m 4) (k 8))\n  (input x f8 [m k])\n  (output y [m k] x))",
       "unknown dtype `f8`: expected one of f16 bf16 f32 f64 i32 bool", 3, 12},
      {"InputUndeclaredDim", "(program p\n  (dims (m 4) (k 8))\n  (input x f32 [m q])\n  (output y [m] x))",
       "undeclared dim `q` in the layout of input `x`", 3, 19},
      {"InputDimTwice", "(program p\n  (dims (m 4) (k 8))\n  (input x f32 [m m])\n  (output y [m] x))",
       "dim `m` appears twice in the layout of input `x`", 3, 19},
      {"InputLayoutNotBracketed",
       "(program p\n  (dims (m 4) (k 8))\n  (input x f32 (m k))\n  (output y [m k] x))",
       "expected the layout of input `x` as `[DIMS]`", 3, 16},
      {"IllFormedInput", "(program p\n  (dims (m 4) (k 8))\n  (input x f32)\n  (output y [m k] x))",
       "ill-formed input `(input x f32)`: expected `(input NAME DTYPE [DIMS])`", 3, 3},
      {"BadInputName", "(program p\n  (dims (m 4) (k 8))\n  (input 3x f32 [m k])\n  (output y [m k] 3x))",
       "bad input name `3x`: expected a letter or `_`", 3, 10},
      {"InputNamedLikeANumber",
       "(program p\n  (dims (m 4) (k 8))\n  (input inf f32 [m k])\n  (output y [m k] x))",
       "bad input name `inf`", 3, 10},

      // ---- names and definitions ----
      {"UndefinedName", prog("  (output y [m k] (exp y))"),
       "undefined name `y`: expected an input or a let defined above", 4, 24},
      {"DuplicateInput", prog("  (input x f16 [m])\n  (output y [m k] x)"),
       "duplicate name `x`: already defined at 3:10", 4, 10},
      {"LetShadowsInput", prog("  (let x (exp x))\n  (output y [m k] x)"),
       "duplicate name `x`: already defined at 3:10", 4, 8},
      {"SelfReference", prog("  (let a (add a x))\n  (output y [m k] a)"),
       "`a` is used before it is defined; definitions must come before uses, which also rules out cycles", 4,
       15},
      {"Cycle", prog("  (let a (exp b))\n  (let b (exp a))\n  (output y [m k] a)"),
       "`b` is used before it is defined; definitions must come before uses, which also rules out cycles", 4,
       15},
      {"InputAfterUse",
       "(program p\n  (dims (m 4))\n  (let a (exp x))\n  (input x f32 [m])\n  (output y [m] a))",
       "`x` is used before it is defined", 3, 15},
      {"DimUsedAsValue", prog("  (output y [m k] (exp m))"), "`m` is a dim, not a value", 4, 24},
      {"IllFormedLet", prog("  (let a)\n  (output y [m k] x)"),
       "ill-formed let `(let a)`: expected `(let NAME EXPR)`", 4, 3},

      // ---- outputs ----
      {"NoOutputs", prog("  (let a (exp x))"), "program without outputs", 1, 1},
      {"OutputDimTwice", prog("  (output y [m m] x)"), "dim `m` appears twice in the layout of output `y`", 4,
       16},
      {"OutputUndeclaredDim", prog("  (output y [m q] x)"), "undeclared dim `q` in the layout of output `y`",
       4, 16},
      {"OutputLayoutNotBracketed", prog("  (output y m x)"), "expected the layout of output `y` as `[DIMS]`",
       4, 13},
      {"DuplicateOutput", prog("  (output y [m k] x)\n  (output y [m k] x)"),
       "duplicate output `y`: already defined at 4:11", 5, 11},
      {"IllFormedOutput", prog("  (output y)"), "ill-formed output `(output y)`", 4, 3},

      // ---- operators and arity ----
      {"UnknownOpNearMiss", prog("  (output y [m k] (ad x x))"), "unknown op `ad`; did you mean `add`?", 4,
       20},
      {"UnknownOpSugarNearMiss", prog("  (output y [m] (summ k x))"),
       "unknown op `summ`; did you mean `sum`?", 4, 18},
      {"UnknownOp", prog("  (output y [m k] (frobnicate x))"),
       "unknown op `frobnicate`: expected an operator", 4, 20},
      {"TooManyOperands", prog("  (output y [m k] (add x x x))"), "add expects 2 operands, got 3", 4, 19},
      {"TooFewOperands", prog("  (output y [m k] (exp))"), "exp expects 1 operand, got 0", 4, 19},
      {"WhereArity", prog("  (output y [m k] (where x x))"), "where expects 3 operands, got 2", 4, 19},
      {"EmptyTuple", prog("  (output y [m k] (tuple))"), "tuple expects at least 1 operand, got 0", 4, 19},
      {"MissingDimAttribute", prog("  (output y [m] (sum x))"),
       "sum expects 1 attribute and 1 operand, got 1 argument: write `(sum DIM X)`", 4, 17},
      {"MaxSugarArity", prog("  (output y [m] (max k x x))"),
       "max expects 1 attribute and 1 operand, got 3 arguments: write `(max DIM X)`", 4, 17},
      {"MissingPartitionDim", prog("  (output y [m k] (partition m.0 x))"),
       "partition expects 2 attributes and 1 operand, got 2 arguments: write `(partition AXIS DIM X)`", 4,
       19},
      {"HeadNotAnOp", prog("  (output y [m k] ((exp x) x))"), "expected an op name at the head of the list",
       4, 20},
      {"EmptyList", prog("  (output y [m k] (add x ()))"), "empty list `()`", 4, 26},
      {"BracketInExpression", prog("  (output y [m k] (add x [m]))"), "unexpected `[m]` in an expression", 4,
       26},
      {"BadNumber", prog("  (output y [m k] (add x 1e400))"), "bad number `1e400`", 4, 26},

      // ---- attributes ----
      {"BadAxis", prog("  (output y [m k] (partition m0 m x))"),
       "bad axis `m0` in attribute 1 of partition: expected DIM.LEVEL", 4, 30},
      {"AxisLevelTooDeep", prog("  (output y [m k] (replicate m.16 x))"),
       "bad axis `m.16` in attribute 1 of replicate", 4, 30},
      {"AxisOnUndeclaredDim", prog("  (output y [m k] (replicate q.0 x))"),
       "axis `q.0` in attribute 1 of replicate is on the undeclared dim `q`", 4, 30},
      {"UndeclaredDimAttribute", prog("  (output y [m] (sum q x))"),
       "undeclared dim `q` in attribute 1 of sum", 4, 22},
      {"CollectedDimOfUndeclaredDim", prog("  (output y [m] (sum c_q.0 x))"),
       "undeclared dim `c_q.0` in attribute 1 of sum", 4, 22},
      {"DimAttributeIsAList", prog("  (output y [m] (sum (k) x))"),
       "expected a dim name in attribute 1 of sum", 4, 22},
      {"UnknownReduction", prog("  (output y [m] (reduce k min x))"),
       "bad reduction `min` in attribute 2 of reduce: expected +, max or a tuple", 4, 27},
      {"InvalidRepair", prog("  (output y [m] (reduce k (+ (exp-sum 0)) x))"),
       "invalid reduction `(+ (exp-sum 0))` in attribute 2 of reduce: component 1: exp-sum 0 refers to "
       "component 0, "
       "which is not a plain max",
       4, 27},
      {"RepairIndexOutOfRange", prog("  (output y [m] (reduce k (max (exp-sum 4)) x))"),
       "refers to component 4, which does not exist", 4, 27},
      {"RepairArity", prog("  (output y [m] (reduce k (max (exp-sum)) x))"),
       "exp-sum expects 1 component index, got 0", 4, 32},
      {"BadReductionComponent", prog("  (output y [m] (reduce k (max min) x))"),
       "bad reduction component `min`", 4, 32},
      {"EmptyReduction", prog("  (output y [m] (reduce k () x))"),
       "empty reduction `()` in attribute 2 of reduce", 4, 27},
      {"CastToUnknownDType", prog("  (output y [m k] (cast f8 x))"),
       "unknown dtype `f8` in attribute 1 of cast", 4, 25},
      {"NegativeProjIndex", prog("  (output y [m k] (proj -1 x))"),
       "bad integer `-1` in attribute 1 of proj: expected a non-negative integer", 4, 25},
      {"PowExponentNotANumber", prog("  (output y [m k] (pow x x))"), "bad number `x` in attribute 1 of pow",
       4, 24},
      {"InputOfALet", prog("  (let a (exp x))\n  (output y [m k] (input a))"),
       "`a` in attribute 1 of input is not a declared input", 5, 26},
  };
  return cases;
}

// Errors that only the type checker finds (typecheck.h), reported at the node
// or output where typing fails. These go through parse_and_check.
const std::vector<ErrorCase>& type_error_cases() {
  static const std::vector<ErrorCase> cases = {
      {"DTypeMismatch", prog("  (input h f16 [m])\n  (output y [m k] (add x h))"),
       "add: operand 1 is f32 but operand 2 is f16", 5, 19},
      {"ReduceOverAMissingDim", prog("  (input g f32 [k])\n  (output y [] (sum m g))"),
       "reduce: the operand has no dim m", 5, 16},
      {"MatMulWithoutTheContractedDim", prog("  (input h f32 [m])\n  (output y [m] (matmul k x h))"),
       "matmul: operand 2 has no dim k", 5, 17},
      {"RepBesidePartOfItsDim",
       prog("  (output y [m k] (combine m.0 m (add (partition m.0 m x) (replicate m.0 x))))"),
       "operand 1 is part(m) on axis m.0 but operand 2 is rep and has dim m", 4, 34},
      {"CombineOfAPartial", prog("  (output y [m] (combine k.0 k (sum k (partition k.0 k x))))"),
       "combine: axis k.0 is partial(+) in the operand; expected part(k)", 4, 17},
      {"PReduceOfAPart", prog("  (output y [m k] (preduce m.0 + (partition m.0 m x)))"),
       "preduce: axis m.0 is part(m) in the operand; expected partial(+)", 4, 19},
      {"PartitionLevelOutOfOrder", prog("  (output y [m k] (combine m.1 m (partition m.1 m x)))"),
       "m.0 is not in scope", 4, 34},
      {"WhereConditionNotBool", prog("  (output y [m k] (where x x x))"),
       "where: the condition (operand 1) is f32; expected bool", 4, 19},
      {"TileMatMulWithoutAxes", prog("  (input g f32 [k])\n  (output y [m] (tile_matmul k x g))"),
       "tile_matmul: the operands have no parallel axes", 5, 17},
      {"OutputWithAxes", prog("  (output y [m k] (partition m.0 m x))"), "output y has parallel axes", 4, 3},
      {"OutputLayoutNotItsDims", prog("  (output y [m] x)"),
       "layout [m] is not a permutation of its dims [m k]", 4, 3},
      {"OutputTuple", prog("  (output y [k m] (tuple x x))"), "output y is a tuple", 4, 3},
  };
  return cases;
}

class ParseErrors : public testing::TestWithParam<ErrorCase> {};
class TypeErrors : public testing::TestWithParam<ErrorCase> {};

void expect_error(const ErrorCase& c, Program (*parse)(std::string_view, const std::string&)) {
  try {
    parse(c.text, "bad.eqf");
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(c.message), std::string::npos)
        << "expected the message to contain: " << c.message << "\n  got: " << e.what();
    EXPECT_EQ(e.file(), "bad.eqf");
    EXPECT_EQ(e.loc().line, c.line) << e.what();
    EXPECT_EQ(e.loc().col, c.col) << e.what();
    std::string prefix = "bad.eqf:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    return;
  }
  ADD_FAILURE() << "no error for:\n" << c.text;
}

TEST_P(ParseErrors, FailsWithMessageAndPosition) { expect_error(GetParam(), &parse_program); }
TEST_P(TypeErrors, FailsWithMessageAndPosition) { expect_error(GetParam(), &parse_and_check); }

std::string case_name(const testing::TestParamInfo<ErrorCase>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Programs, ParseErrors, testing::ValuesIn(parse_error_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Programs, TypeErrors, testing::ValuesIn(type_error_cases()), case_name);

TEST(ParseErrorTable, HasAtLeastThirtyDistinctMalformedPrograms) {
  std::set<std::string> texts;
  for (const ErrorCase& c : parse_error_cases()) texts.insert(c.text);
  for (const ErrorCase& c : type_error_cases()) texts.insert(c.text);
  EXPECT_GE(texts.size(), 30u);
  EXPECT_EQ(texts.size(), parse_error_cases().size() + type_error_cases().size())
      << "two cases share a program";
}

// The well-formed neighbours of a few cases above parse, so those cases fail
// for the reason they name.
TEST(ParseErrorTable, NeighboursOfTheCasesParse) {
  for (const char* items :
       {"  (output y [m k] (add x x))", "  (output y [m] (sum k x))",
        "  (output y [m k] (partition m.0 m x))", "  (let a (exp x))\n  (output y [m k] (input x))",
        "  (output y [m] (reduce k (max (exp-sum 0)) (tuple x x)))",
        "  (output y [m k] (replicate m.15 x))"}) {
    EXPECT_NO_THROW(parse_program(prog(items))) << items;
  }
}

}  // namespace
}  // namespace eqf
