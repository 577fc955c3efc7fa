// The program parser: S-expressions (sexpr.h) to a Program, following the
// text format of docs/ir.md.
//
// One function per item kind (dims, input, let, output); expressions are built
// bottom-up with an explicit stack, so nesting is limited by kSExprMaxDepth and
// not by the native stack. Attributes are parsed by a table indexed by
// AttrKind, following each op's signature in ops.def.
#include "eqiforge/ir/parse.h"

#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "eqiforge/ir/sexpr.h"
#include "eqiforge/ir/typecheck.h"
#include "ir/parse_dims.h"
#include "ir/sexpr_release.h"

namespace eqf {
namespace {

// ---- atoms -------------------------------------------------------------------

std::string position_text(SourceLoc loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.col); }

// A short rendering of an expression for messages.
std::string snippet(const SExpr& e) {
  std::string text = sexpr_text(e);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return "`" + text + "`";
}

struct NumberParse {
  enum Status { NotANumber, Ok, Bad } status = NotANumber;
  double value = 0;
};

// Literal numbers: whatever std::from_chars reads as a double (2, -0.5, 1e-6,
// inf, -inf, nan). An atom that starts like a number but does not read as one
// (1e400, 1.2.3) is a bad number rather than a name.
NumberParse parse_number(std::string_view text) {
  NumberParse r;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, r.value);
  if (ec == std::errc() && ptr == end) {
    if (r.value != r.value) r.value = std::numeric_limits<double>::quiet_NaN();  // one NaN: consts are hashed by bits
    r.status = NumberParse::Ok;
    return r;
  }
  size_t i = !text.empty() && (text[0] == '-' || text[0] == '.') ? 1 : 0;
  bool looks_numeric = i < text.size() && text[i] >= '0' && text[i] <= '9';
  r.status = looks_numeric ? NumberParse::Bad : NumberParse::NotANumber;
  return r;
}

// A decimal integer in [0, max]; nullopt otherwise.
std::optional<int64_t> parse_integer(std::string_view text, int64_t max) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 0 || v > max) return std::nullopt;
  return v;
}

// Names of programs, dims, inputs, lets and outputs: a letter or `_`, then
// letters, digits or `_`. `.` is left out because it separates an axis's dim
// from its level, and names that read as numbers (inf, nan) are refused.
bool is_name(std::string_view text) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || !alpha(text[0])) return false;
  for (char c : text)
    if (!alpha(c) && !digit(c)) return false;
  return parse_number(text).status == NumberParse::NotANumber;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// ---- operator syntax -----------------------------------------------------------

// How an op is written: its table entry, or sugar for a plain reduction.
struct OpSyntax {
  Op op;
  std::string_view name;             // as written
  std::vector<AttrKind> written;     // attributes written in the text, in order
  std::optional<RedId> implied_red;  // sum / max: the reduction the sugar stands for
};

std::optional<OpSyntax> lookup_op(std::string_view name) {
  if (name == "sum" || name == "max")
    return OpSyntax{Op::Reduce, name, {AttrKind::Dim}, name == "sum" ? RedId::add() : RedId::max()};
  std::optional<Op> op = parse_op(name);
  if (!op) return std::nullopt;
  OpSyntax s{*op, name, {}, std::nullopt};
  for (AttrKind k : op_info(*op).attrs)
    if (k != AttrKind::None) s.written.push_back(k);
  return s;
}

// The closest op name within edit distance 2, for "did you mean".
std::optional<std::string_view> closest_op(std::string_view name) {
  std::optional<std::string_view> best;
  size_t best_distance = 3;
  auto consider = [&](std::string_view candidate) {
    if (std::max(name.size(), candidate.size()) - std::min(name.size(), candidate.size()) >= best_distance) return;
    size_t d = edit_distance(name, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  };
  for (int i = 0; i < kNumOps; ++i) consider(op_info(Op(i)).name);
  consider("sum");
  consider("max");
  return best;
}

const char* attr_placeholder(AttrKind k) {
  switch (k) {
    case AttrKind::Sym:
      return "NAME";
    case AttrKind::Dim:
      return "DIM";
    case AttrKind::Axis:
      return "AXIS";
    case AttrKind::Red:
      return "R";
    case AttrKind::DType:
      return "DTYPE";
    case AttrKind::Int:
      return "INDEX";
    case AttrKind::F64:
      return "NUMBER";
    case AttrKind::None:
      break;
  }
  return "?";
}

// "(partition AXIS DIM X)": the shape of a correct application, for messages.
std::string usage(const OpSyntax& s) {
  std::string out = "(" + std::string(s.name);
  for (AttrKind k : s.written) out += std::string(" ") + attr_placeholder(k);
  int arity = op_info(s.op).arity;
  static const char* kOperands[] = {"X", "Y", "Z"};
  if (arity == kVariadic)
    out += " X ...";
  else
    for (int i = 0; i < arity; ++i) out += std::string(" ") + (i < 3 ? kOperands[i] : "X");
  return out + ")";
}

// ---- the parser ------------------------------------------------------------------

class ProgramParser {
 public:
  explicit ProgramParser(const std::string& file) : file_(file) { p_.file = file; }

  Program parse(std::string_view text) {
    std::vector<SExpr> top = read_sexprs(text, file_);
    ReleaseSExprs release_on_exit(top);  // deep trees, without deep recursion
    if (top.empty()) fail({1, 1}, "empty program: expected `(program NAME (dims (NAME EXTENT) ...) ...)`");
    if (top.size() > 1)
      fail(top[1].loc, "unexpected " + snippet(top[1]) + " after the program: expected the end of the text");
    const SExpr& program = top[0];
    if (!program.is_list() || program.items.empty() || !program.items[0].is_atom("program"))
      fail(program.loc, "expected `(program NAME (dims ...) ...)`, got " + snippet(program));

    size_t first_item = 1;
    if (program.items.size() > 1 && program.items[1].is_atom()) {
      p_.name = parse_new_name(program.items[1], "program");
      first_item = 2;
    }
    std::span<const SExpr> items(program.items.data() + first_item, program.items.size() - first_item);
    if (items.empty() || !items[0].is_list() || items[0].items.empty() || !items[0].items[0].is_atom("dims"))
      fail(items.empty() ? program.loc : items[0].loc,
           "missing dims: expected `(dims (NAME EXTENT) ...)` as the first item of the program");

    prescan_definitions(items);
    for (const SExpr& item : items) parse_item(item);
    if (p_.outputs().empty())
      fail(program.loc, "program without outputs: expected at least one `(output NAME [DIMS] EXPR)`");
    return std::move(p_);
  }

 private:
  [[noreturn]] void fail(SourceLoc loc, const std::string& message) const {
    throw Error(file_, loc, message);
  }

  // ---- items ----

  void parse_item(const SExpr& item) {
    using ItemParser = void (ProgramParser::*)(const SExpr&);
    struct ItemKind {
      std::string_view keyword;
      ItemParser parse;
    };
    static constexpr ItemKind kItems[] = {
        {"dims", &ProgramParser::parse_dims},
        {"input", &ProgramParser::parse_input},
        {"let", &ProgramParser::parse_let},
        {"output", &ProgramParser::parse_output},
    };
    if (item.is_list() && !item.items.empty() && item.items[0].is_atom())
      for (const ItemKind& kind : kItems)
        if (item.items[0].atom == kind.keyword) return (this->*kind.parse)(item);
    fail(item.loc, "unknown item " + snippet(item) +
                       ": expected `(dims ...)`, `(input ...)`, `(let ...)` or `(output ...)`");
  }

  // (dims (m 4) (k 8) (k_out k))
  void parse_dims(const SExpr& item) {
    if (seen_dims_)
      fail(item.loc, "duplicate `(dims ...)`: a program declares its dims once, as its first item");
    seen_dims_ = true;
    for (size_t i = 1; i < item.items.size(); ++i) {
      const SExpr& entry = item.items[i];
      if (!entry.is_list() || entry.items.size() != 2)
        fail(entry.loc, "ill-formed dim " + snippet(entry) + ": expected `(NAME EXTENT)`, e.g. `(m 16)`");
      Symbol name = parse_new_name(entry.items[0], "dim");
      const SExpr& extent_atom = entry.items[1];
      std::optional<int64_t> extent;
      Symbol same_as;  // `(k_out k)`: k's extent
      if (extent_atom.is_atom()) {
        extent = parse_integer(extent_atom.atom, std::numeric_limits<int64_t>::max());
        // A dim declared so far is of fixed extent (collected ones come later).
        if (!extent && p_.dims.contains(Symbol::intern(extent_atom.atom))) same_as = Symbol::intern(extent_atom.atom);
      }
      if (!same_as.valid() && (!extent || *extent == 0))
        fail(extent_atom.loc, "bad extent " + snippet(extent_atom) + " for dim `" + std::string(name.str()) +
                                  "`: expected a positive integer or a dim declared before it");
      if (auto it = dim_locs_.find(name); it != dim_locs_.end())
        fail(entry.items[0].loc, "duplicate dim `" + std::string(name.str()) + "`: already declared at " +
                                     position_text(it->second));
      dim_locs_.emplace(name, entry.items[0].loc);
      if (same_as.valid())
        p_.dims.declare_same(name, same_as);
      else
        p_.dims.declare(name, *extent);
    }
  }

  // (input x f16 [m k])
  void parse_input(const SExpr& item) {
    if (item.items.size() != 4)
      fail(item.loc, "ill-formed input " + snippet(item) + ": expected `(input NAME DTYPE [DIMS])`");
    Symbol name = parse_new_name(item.items[1], "input");
    check_unique(name, item.items[1].loc);
    const SExpr& dtype_atom = item.items[2];
    std::optional<DType> dtype = dtype_atom.is_atom() ? parse_dtype(dtype_atom.atom) : std::nullopt;
    if (!dtype)
      fail(dtype_atom.loc,
           "unknown dtype " + snippet(dtype_atom) + ": expected one of f16 bf16 f32 f64 i32 bool");
    std::vector<Symbol> layout =
        parse_layout(item.items[3], "input `" + std::string(name.str()) + "`", false);
    define(name, item.items[1].loc, p_.add_input(name, *dtype, std::move(layout), item.loc));
  }

  // (let name EXPR)
  void parse_let(const SExpr& item) {
    if (item.items.size() != 3)
      fail(item.loc, "ill-formed let " + snippet(item) + ": expected `(let NAME EXPR)`");
    Symbol name = parse_new_name(item.items[1], "let");
    check_unique(name, item.items[1].loc);
    NodeId value = parse_expr(item.items[2]);
    // The first name given to a node is the one the printer uses; a let
    // that merely renames an input or another let is an alias.
    if (p_.node(value).op != Op::Input && !p_.name_of(value).valid()) p_.set_name(value, name);
    define(name, item.items[1].loc, value);
  }

  // (output y [m k] EXPR) or (output y EXPR)
  void parse_output(const SExpr& item) {
    bool has_layout = item.items.size() == 4;
    if (item.items.size() != 3 && !has_layout)
      fail(item.loc, "ill-formed output " + snippet(item) + ": expected `(output NAME [DIMS] EXPR)`");
    Symbol name = parse_new_name(item.items[1], "output");
    if (auto it = output_locs_.find(name); it != output_locs_.end())
      fail(item.items[1].loc, "duplicate output `" + std::string(name.str()) + "`: already defined at " +
                                  position_text(it->second));
    output_locs_.emplace(name, item.items[1].loc);
    std::vector<Symbol> layout;
    if (has_layout) layout = parse_layout(item.items[2], "output `" + std::string(name.str()) + "`", true);
    NodeId value = parse_expr(item.items.back());
    if (!has_layout) {
      std::optional<std::vector<Symbol>> dims = structural_dims(p_, value);
      if (dims) layout = std::move(*dims);  // a tuple has no layout; typecheck rejects it as an output
    }
    p_.add_output(name, std::move(layout), value, item.loc);
  }

  // ---- names and layouts ----

  Symbol parse_new_name(const SExpr& e, const char* what) {
    if (!e.is_atom() || !is_name(e.atom))
      fail(e.loc, std::string("bad ") + what + " name " + snippet(e) +
                      ": expected a letter or `_` followed by letters, digits or `_`");
    return Symbol::intern(e.atom);
  }

  // Every input and let name of the program with its place, so that a use
  // before the definition is told apart from a name that is never defined.
  void prescan_definitions(std::span<const SExpr> items) {
    for (const SExpr& item : items)
      if (item.is_list() && item.items.size() >= 2 && item.items[1].is_atom() &&
          (item.items[0].is_atom("let") || item.items[0].is_atom("input")))
        all_definitions_.emplace(item.items[1].atom, item.items[1].loc);
  }

  void check_unique(Symbol name, SourceLoc loc) const {
    if (auto it = value_locs_.find(name); it != value_locs_.end())
      fail(loc, "duplicate name `" + std::string(name.str()) + "`: already defined at " +
                    position_text(it->second));
  }

  void define(Symbol name, SourceLoc loc, NodeId value) {
    check_unique(name, loc);
    value_locs_.emplace(name, loc);
    values_.emplace(name, value);
  }

  // A declared dim, or (where `collected` allows) the dim c_<axis> that a
  // collect of a declared dim's axis makes; typecheck declares those too,
  // but a reference may come first in the text (reduce c_t.0 + (collect t.0 X)).
  std::optional<Symbol> lookup_dim(std::string_view text, bool collected) {
    Symbol s = Symbol::intern(text);
    if (const DimInfo* info = p_.dims.find(s)) {
      if (collected || !info->collected_from) return s;
      return std::nullopt;
    }
    if (collected && text.starts_with("c_")) {
      std::optional<Axis> axis = Axis::parse(text.substr(2));
      if (axis && p_.dims.contains(axis->dim) && axis->collected_dim() == s)
        return p_.dims.declare_collected(*axis);
    }
    return std::nullopt;
  }

  Symbol parse_dim_ref(const SExpr& e, const std::string& where, bool collected) {
    if (!e.is_atom()) fail(e.loc, "expected a dim name in " + where + ", got " + snippet(e));
    std::optional<Symbol> d = lookup_dim(e.atom, collected);
    if (!d)
      fail(e.loc,
           "undeclared dim `" + e.atom + "` in " + where + ": expected a dim declared in `(dims ...)`");
    return *d;
  }

  // [m k]: distinct declared dims, outermost first.
  std::vector<Symbol> parse_layout(const SExpr& e, const std::string& where, bool collected) {
    if (e.kind != SExpr::Kind::Bracket)
      fail(e.loc, "expected the layout of " + where + " as `[DIMS]`, e.g. `[m k]`, got " + snippet(e));
    std::vector<Symbol> layout;
    for (const SExpr& d : e.items) {
      Symbol dim = parse_dim_ref(d, "the layout of " + where, collected);
      for (Symbol seen : layout)
        if (seen == dim)
          fail(d.loc,
               "dim `" + d.atom + "` appears twice in the layout of " + where + ": expected each dim once");
      layout.push_back(dim);
    }
    return layout;
  }

  // ---- expressions ----

  // An application whose operands are still being parsed.
  struct Pending {
    const SExpr* list;
    Op op;
    Attrs attrs;
    size_t next_item;       // index in list->items of the next operand
    size_t operands_begin;  // where its operands start on the operand stack
  };

  NodeId parse_expr(const SExpr& root) {
    std::vector<Pending> pending;
    std::vector<NodeId> operands;
    auto visit = [&](const SExpr& e) {
      if (!e.is_list()) {
        operands.push_back(parse_leaf_expr(e));
        return;
      }
      Pending app = parse_application_head(e);
      app.operands_begin = operands.size();
      pending.push_back(app);
    };
    visit(root);
    while (!pending.empty()) {
      Pending& top = pending.back();
      if (top.next_item < top.list->items.size()) {
        visit(top.list->items[top.next_item++]);  // may grow `pending`: `top` is not used after
        continue;
      }
      std::span<const NodeId> kids(operands.data() + top.operands_begin,
                                   operands.size() - top.operands_begin);
      NodeId id = p_.add(top.op, top.attrs, kids, top.list->loc);
      operands.resize(top.operands_begin);
      operands.push_back(id);
      pending.pop_back();
    }
    return operands.back();
  }

  // A name, a number, or a misplaced bracket list.
  NodeId parse_leaf_expr(const SExpr& e) {
    if (!e.is_atom())
      fail(e.loc, "unexpected " + snippet(e) +
                      " in an expression: `[...]` holds layouts; expected a name, a number or `(op ...)`");
    NumberParse number = parse_number(e.atom);
    if (number.status == NumberParse::Ok) return p_.add(Op::Const, attrs_f64(number.value), {}, e.loc);
    if (number.status == NumberParse::Bad)
      fail(e.loc, "bad number " + snippet(e) + ": expected a double-precision number");
    Symbol name = Symbol::intern(e.atom);
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (all_definitions_.count(e.atom))
      fail(e.loc, "`" + e.atom +
                      "` is used before it is defined; definitions must come before uses, which also rules "
                      "out cycles");
    if (p_.dims.contains(name))
      fail(e.loc, "`" + e.atom + "` is a dim, not a value: expected an input or a let name");
    fail(e.loc, "undefined name `" + e.atom + "`: expected an input or a let defined above");
  }

  // Reads the op and its attributes and checks the number of arguments; the
  // operands are left to parse_expr's loop.
  Pending parse_application_head(const SExpr& e) {
    if (e.items.empty()) fail(e.loc, "empty list `()`: expected an expression `(op ...)`");
    const SExpr& head = e.items[0];
    if (!head.is_atom()) fail(head.loc, "expected an op name at the head of the list, got " + snippet(head));
    std::optional<OpSyntax> syntax = lookup_op(head.atom);
    if (!syntax) {
      std::string message = "unknown op `" + head.atom + "`";
      if (std::optional<std::string_view> near = closest_op(head.atom))
        message += "; did you mean `" + std::string(*near) + "`?";
      else
        message += ": expected an operator of ops.def (add, mul, reduce, partition, ...)";
      fail(head.loc, message);
    }
    check_argument_count(e, *syntax);

    Pending app{&e, syntax->op, attrs_none(), 1 + syntax->written.size(), 0};
    int slot = 0;
    for (size_t i = 0; i < syntax->written.size(); ++i) {
      AttrParser parse = kAttrParsers[static_cast<int>(syntax->written[i])];
      slot += (this->*parse)(e.items[1 + i], AttrSite{syntax->name, int(i) + 1}, app.attrs, slot);
    }
    if (syntax->implied_red) app.attrs[slot] = syntax->implied_red->raw();
    return app;
  }

  void check_argument_count(const SExpr& e, const OpSyntax& s) const {
    size_t args = e.items.size() - 1;
    size_t attrs = s.written.size();
    int arity = op_info(s.op).arity;
    bool ok = arity == kVariadic ? args >= attrs + 1 : args == attrs + size_t(arity);
    if (ok) return;
    std::string op(s.name);
    if (arity == kVariadic)
      fail(e.loc, op + " expects at least 1 operand, got " + std::to_string(args - attrs));
    if (attrs == 0)
      fail(e.loc, op + " expects " + plural(arity, "operand") + ", got " + std::to_string(args));
    fail(e.loc, op + " expects " + plural(attrs, "attribute") + " and " + plural(arity, "operand") +
                    ", got " + plural(args, "argument") + ": write `" + usage(s) + "`");
  }

  // ---- attributes: one parser per AttrKind ----

  struct AttrSite {
    std::string_view op;
    int index;  // 1-based position among the op's attributes
    std::string where() const { return "attribute " + std::to_string(index) + " of " + std::string(op); }
  };
  // Parses one attribute into attrs[slot...]; returns the number of slots used.
  using AttrParser = int (ProgramParser::*)(const SExpr&, const AttrSite&, Attrs&, int);

  const SExpr& expect_atom(const SExpr& e, const AttrSite& site, const char* expected) const {
    if (!e.is_atom())
      fail(e.loc, std::string("expected ") + expected + " as " + site.where() + ", got " + snippet(e));
    return e;
  }

  int parse_sym_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    expect_atom(e, site, "an input name");
    Symbol name = Symbol::intern(e.atom);
    auto it = values_.find(name);
    if (it == values_.end() || p_.node(it->second).op != Op::Input ||
        attr_sym(p_.node(it->second).attrs, 0) != name)
      fail(e.loc, "`" + e.atom + "` in " + site.where() +
                      " is not a declared input: expected `(input NAME DTYPE [DIMS])` above");
    attrs[slot] = name.raw();
    return 1;
  }

  int parse_dim_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    attrs[slot] = parse_dim_ref(e, site.where(), true).raw();
    return 1;
  }

  int parse_axis_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    expect_atom(e, site, "an axis like m.0");
    std::optional<Axis> axis = Axis::parse(e.atom);
    if (!axis)
      fail(e.loc, "bad axis " + snippet(e) + " in " + site.where() +
                      ": expected DIM.LEVEL with a level from 0 to " + std::to_string(Axis::kMaxLevel) +
                      ", e.g. m.0");
    if (!lookup_dim(axis->dim.str(), true))
      fail(e.loc, "axis `" + e.atom + "` in " + site.where() + " is on the undeclared dim `" +
                      std::string(axis->dim.str()) + "`: expected a dim declared in `(dims ...)`");
    attrs[slot] = axis->pack();
    return 1;
  }

  int parse_red_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    attrs[slot] = parse_reduction(e, site).raw();
    return 1;
  }

  int parse_dtype_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    expect_atom(e, site, "a dtype");
    std::optional<DType> t = parse_dtype(e.atom);
    if (!t)
      fail(e.loc, "unknown dtype " + snippet(e) + " in " + site.where() +
                      ": expected one of f16 bf16 f32 f64 i32 bool");
    attrs[slot] = uint32_t(*t);
    return 1;
  }

  int parse_int_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    expect_atom(e, site, "a non-negative integer");
    std::optional<int64_t> v = parse_integer(e.atom, std::numeric_limits<int32_t>::max());
    if (!v)
      fail(e.loc, "bad integer " + snippet(e) + " in " + site.where() + ": expected a non-negative integer");
    attrs[slot] = uint32_t(*v);
    return 1;
  }

  int parse_f64_attr(const SExpr& e, const AttrSite& site, Attrs& attrs, int slot) {
    expect_atom(e, site, "a number");
    NumberParse n = parse_number(e.atom);
    if (n.status != NumberParse::Ok)
      fail(e.loc, "bad number " + snippet(e) + " in " + site.where() +
                      ": expected a number such as 2, -0.5, 1e-6 or inf");
    Attrs bits = attrs_f64(n.value);
    attrs[slot] = bits[0];
    attrs[slot + 1] = bits[1];
    return 2;
  }

  // Indexed by AttrKind.
  static constexpr AttrParser kAttrParsers[] = {
      nullptr,                           // None
      &ProgramParser::parse_sym_attr,    // Sym
      &ProgramParser::parse_dim_attr,    // Dim
      &ProgramParser::parse_axis_attr,   // Axis
      &ProgramParser::parse_red_attr,    // Red
      &ProgramParser::parse_dtype_attr,  // DType
      &ProgramParser::parse_int_attr,    // Int
      &ProgramParser::parse_f64_attr,    // F64
  };
  static_assert(std::size(kAttrParsers) == static_cast<size_t>(AttrKind::F64) + 1,
                "one attribute parser per AttrKind");

  // + | max | (c1 c2 ...), each ci one of + max (exp-sum J) (welford-mean N) (welford-m2 N A)
  RedId parse_reduction(const SExpr& e, const AttrSite& site) {
    const char* expected = "expected +, max or a tuple of components such as `(max (exp-sum 0) (exp-sum 0))`";
    if (e.is_atom("+")) return RedId::add();
    if (e.is_atom("max")) return RedId::max();
    if (!e.is_list()) fail(e.loc, "bad reduction " + snippet(e) + " in " + site.where() + ": " + expected);
    if (e.items.empty()) fail(e.loc, "empty reduction `()` in " + site.where() + ": " + expected);
    Reduction r;
    for (const SExpr& c : e.items) r.components.push_back(parse_red_component(c, site));
    if (std::optional<std::string> problem = r.validate())
      fail(e.loc, "invalid reduction " + snippet(e) + " in " + site.where() + ": " + *problem);
    return RedId::intern(r);
  }

  RedComponent parse_red_component(const SExpr& c, const AttrSite& site) {
    if (c.is_atom("+")) return RedComponent{RedBase::Add};
    if (c.is_atom("max")) return RedComponent{RedBase::Max};
    struct RepairSyntax {
      std::string_view keyword;
      Repair repair;
      size_t args;
    };
    static constexpr RepairSyntax kRepairs[] = {{"exp-sum", Repair::ExpSum, 1},
                                                {"welford-mean", Repair::WelfordMean, 1},
                                                {"welford-m2", Repair::WelfordM2, 2}};
    if (c.is_list() && !c.items.empty() && c.items[0].is_atom()) {
      for (const RepairSyntax& r : kRepairs) {
        if (c.items[0].atom != r.keyword) continue;
        if (c.items.size() != 1 + r.args)
          fail(c.loc, std::string(r.keyword) + " expects " + plural(r.args, "component index") + ", got " +
                          std::to_string(c.items.size() - 1));
        RedComponent out{RedBase::Add, r.repair};
        uint8_t* args[] = {&out.arg0, &out.arg1};
        for (size_t i = 0; i < r.args; ++i) {
          const SExpr& a = c.items[1 + i];
          std::optional<int64_t> v = a.is_atom() ? parse_integer(a.atom, 255) : std::nullopt;
          if (!v)
            fail(a.loc, "bad component index " + snippet(a) + " in " + std::string(r.keyword) +
                            ": expected an integer from 0 to 255");
          *args[i] = uint8_t(*v);
        }
        return out;
      }
    }
    fail(c.loc, "bad reduction component " + snippet(c) + " in " + site.where() +
                    ": expected +, max, (exp-sum J), (welford-mean N) or (welford-m2 N A)");
  }

  const std::string& file_;
  Program p_;
  bool seen_dims_ = false;
  std::unordered_map<Symbol, SourceLoc> dim_locs_;
  std::unordered_map<Symbol, NodeId> values_;  // inputs and lets defined so far
  std::unordered_map<Symbol, SourceLoc> value_locs_;
  std::unordered_map<Symbol, SourceLoc> output_locs_;
  std::unordered_map<std::string, SourceLoc> all_definitions_;  // every input and let in the text
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, {}, "cannot open the file: expected a readable program file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Program parse_program(std::string_view text, const std::string& file) {
  return ProgramParser(file).parse(text);
}

Program parse_program_file(const std::string& path) { return parse_program(read_file(path), path); }

Program parse_and_check(std::string_view text, const std::string& file) {
  Program p = parse_program(text, file);
  typecheck(p);
  return p;
}

Program parse_and_check_file(const std::string& path) { return parse_and_check(read_file(path), path); }

}  // namespace eqf
