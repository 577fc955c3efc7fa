// A generic S-expression reader shared by the program parser and the rule
// and pattern parsers. Lists are `( ... )` or `[ ... ]`; atoms are runs of
// characters other than whitespace, parentheses, brackets and `;` (which
// starts a comment to the end of the line). Every node keeps its position.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/ir/diagnostic.h"

namespace eqf {

struct SExpr {
  enum class Kind { Atom, List, Bracket };  // Bracket: a [ ... ] list
  Kind kind = Kind::Atom;
  std::string atom;            // Atom only
  std::vector<SExpr> items;    // List / Bracket
  SourceLoc loc;

  bool is_atom() const { return kind == Kind::Atom; }
  bool is_atom(std::string_view text) const { return kind == Kind::Atom && atom == text; }
  bool is_list() const { return kind == Kind::List; }
};

// Reads every top-level expression of `text`. Throws eqf::Error (with `file`
// and the position) on an unbalanced or mismatched bracket, naming where the
// unclosed one was opened. Nesting deeper than kMaxDepth is an error, not a
// stack overflow.
inline constexpr int kSExprMaxDepth = 10000;
std::vector<SExpr> read_sexprs(std::string_view text, const std::string& file);

// Writes an expression back on one line (atoms separated by single spaces).
std::string sexpr_text(const SExpr& e);

}  // namespace eqf
