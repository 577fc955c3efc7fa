#include "eqiforge/ir/sexpr.h"

#include <string>

#include "ir/sexpr_release.h"

namespace eqf {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_delimiter(char c) { return is_space(c) || c == '(' || c == ')' || c == '[' || c == ']' || c == ';'; }

char closer_of(SExpr::Kind k) { return k == SExpr::Kind::Bracket ? ']' : ')'; }
char opener_of(SExpr::Kind k) { return k == SExpr::Kind::Bracket ? '[' : '('; }

std::string position_text(SourceLoc loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.col); }

// The reader keeps the lists that are still open on an explicit stack (the
// innermost last), so arbitrarily deep input is bounded by kSExprMaxDepth
// rather than by the native stack.
class Reader {
 public:
  Reader(std::string_view text, const std::string& file) : text_(text), file_(file) {}
  // After an error, the partly read trees may be deep.
  ~Reader() {
    release_sexprs(open_);
    release_sexprs(top_);
  }

  std::vector<SExpr> read_all() {
    std::vector<SExpr>& top = top_;
    while (true) {
      skip_space_and_comments();
      if (pos_ == text_.size()) break;
      char c = text_[pos_];
      SourceLoc loc = here();
      if (c == '(' || c == '[') {
        if (open_.size() >= size_t(kSExprMaxDepth))
          throw Error(file_, loc,
                      "nesting deeper than " + std::to_string(kSExprMaxDepth) +
                          " levels: expected a flatter expression"
                          " (bind subterms with `let`)");
        SExpr list;
        list.kind = c == '(' ? SExpr::Kind::List : SExpr::Kind::Bracket;
        list.loc = loc;
        open_.push_back(std::move(list));
        advance();
      } else if (c == ')' || c == ']') {
        if (open_.empty())
          throw Error(file_, loc, std::string("unexpected `") + c + "`: there is no open bracket to close");
        SExpr& innermost = open_.back();
        if (closer_of(innermost.kind) != c)
          throw Error(file_, loc,
                      std::string("mismatched `") + c + "`: expected `" + closer_of(innermost.kind) +
                          "` to close the `" + opener_of(innermost.kind) + "` opened at " +
                          position_text(innermost.loc));
        advance();
        SExpr done = std::move(open_.back());
        open_.pop_back();
        emit(std::move(done), top);
      } else {
        SExpr atom;
        atom.kind = SExpr::Kind::Atom;
        atom.loc = loc;
        size_t start = pos_;
        while (pos_ < text_.size() && !is_delimiter(text_[pos_])) advance();
        atom.atom = std::string(text_.substr(start, pos_ - start));
        emit(std::move(atom), top);
      }
    }
    if (!open_.empty()) {
      const SExpr& unclosed = open_.back();
      throw Error(file_, here(),
                  std::string("unclosed `") + opener_of(unclosed.kind) + "` opened at " +
                      position_text(unclosed.loc) + ": expected `" + closer_of(unclosed.kind) +
                      "` before the end of the text");
    }
    return std::move(top_);
  }

 private:
  void emit(SExpr e, std::vector<SExpr>& top) {
    if (open_.empty())
      top.push_back(std::move(e));
    else
      open_.back().items.push_back(std::move(e));
  }

  SourceLoc here() const { return SourceLoc{line_, col_}; }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skip_space_and_comments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (is_space(c)) {
        advance();
      } else if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
  std::vector<SExpr> open_;  // lists still open, innermost last
  std::vector<SExpr> top_;   // complete top-level expressions
};

}  // namespace

std::vector<SExpr> read_sexprs(std::string_view text, const std::string& file) {
  return Reader(text, file).read_all();
}

void release_sexprs(std::vector<SExpr>& exprs) {
  std::vector<SExpr> work = std::move(exprs);
  exprs.clear();
  while (!work.empty()) {
    SExpr e = std::move(work.back());
    work.pop_back();
    // Moving the children out leaves `e` shallow, so its destructor does
    // not recurse.
    for (SExpr& child : e.items) work.push_back(std::move(child));
  }
}

std::string sexpr_text(const SExpr& e) {
  // Iterative for the same reason as the reader: depth is bounded by
  // kSExprMaxDepth, not by the native stack.
  struct Work {
    const SExpr* expr;  // nullptr: emit `text`
    const char* text;
  };
  std::string out;
  std::vector<Work> work{{&e, nullptr}};
  while (!work.empty()) {
    Work w = work.back();
    work.pop_back();
    if (!w.expr) {
      out += w.text;
      continue;
    }
    const SExpr& x = *w.expr;
    if (x.is_atom()) {
      out += x.atom;
      continue;
    }
    bool bracket = x.kind == SExpr::Kind::Bracket;
    out += bracket ? '[' : '(';
    work.push_back({nullptr, bracket ? "]" : ")"});
    for (size_t i = x.items.size(); i-- > 0;) {
      work.push_back({&x.items[i], nullptr});
      if (i > 0) work.push_back({nullptr, " "});
    }
  }
  return out;
}

}  // namespace eqf
