#include "cost/json.h"

#include <charconv>
#include <cstdlib>

namespace eqf::json {
namespace {

class Reader {
 public:
  Reader(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ < text_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(file_, loc(), message); }

  SourceLoc loc() const {
    SourceLoc l{1, 1};
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++l.line;
        l.col = 1;
      } else {
        ++l.col;
      }
    }
    return l;
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, const char* what) {
    if (!eat(c)) fail(std::string("expected ") + what);
  }

  Value value() {
    skip_space();
    Value v;
    v.loc = loc();
    if (pos_ >= text_.size()) fail("expected a JSON value, got the end of the text");
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = Value::Kind::Object;
      if (eat('}')) return v;
      do {
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key in an object");
        std::string key = string_literal();
        expect(':', "':' after an object key");
        if (v.object.count(key)) fail("duplicate key \"" + key + "\"");
        v.object.emplace(std::move(key), value());
      } while (eat(','));
      expect('}', "',' or '}' in an object");
      return v;
    }
    if (c == '[') {
      ++pos_;
      v.kind = Value::Kind::Array;
      if (eat(']')) return v;
      do v.array.push_back(value());
      while (eat(','));
      expect(']', "',' or ']' in an array");
      return v;
    }
    if (c == '"') {
      v.kind = Value::Kind::String;
      v.string = string_literal();
      return v;
    }
    if (text_.substr(pos_, 4) == "true") {
      pos_ += 4;
      v.kind = Value::Kind::Bool;
      v.boolean = true;
      return v;
    }
    if (text_.substr(pos_, 5) == "false") {
      pos_ += 5;
      v.kind = Value::Kind::Bool;
      return v;
    }
    if (text_.substr(pos_, 4) == "null") {
      pos_ += 4;
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::string_view("+-.eE0123456789").find(text_[pos_]) != std::string_view::npos))
        ++pos_;
      std::string number(text_.substr(start, pos_ - start));
      char* end = nullptr;
      v.number = std::strtod(number.c_str(), &end);
      if (end != number.c_str() + number.size()) fail("malformed number '" + number + "'");
      v.kind = Value::Kind::Number;
      return v;
    }
    fail(std::string("unexpected character '") + c + "'; expected a JSON value");
  }

  std::string string_literal() {
    ++pos_;  // the opening quote
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          // Profiles are ASCII; keep the escape's code point if it is one.
          unsigned code = 0;
          auto [p, ec] = std::from_chars(text_.data() + pos_, text_.data() + std::min(pos_ + 4, text_.size()), code, 16);
          if (ec != std::errc() || p != text_.data() + pos_ + 4) fail("malformed \\u escape");
          pos_ += 4;
          out += code < 0x80 ? char(code) : '?';
          break;
        }
        default: out += e; break;
      }
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
};

}  // namespace

Value parse(std::string_view text, const std::string& file) { return Reader(text, file).document(); }

}  // namespace eqf::json
