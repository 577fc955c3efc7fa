// A writer of indented source text (Python here): lines are written at the
// current depth, and `indent()` opens a nested block for as long as the
// returned guard lives, so the structure of the emitting code is the
// structure of the emitted code.
//
//   CodeWriter w;
//   w.line("for i in range(n):");
//   {
//     auto body = w.indent();
//     w.line("acc += x[i]");
//   }
#pragma once

#include <string>
#include <string_view>

namespace eqf {

class CodeWriter {
 public:
  class Indent {
   public:
    explicit Indent(CodeWriter& w) : w_(&w) { ++w_->depth_; }
    Indent(Indent&& o) noexcept : w_(o.w_) { o.w_ = nullptr; }
    Indent(const Indent&) = delete;
    Indent& operator=(const Indent&) = delete;
    Indent& operator=(Indent&&) = delete;
    ~Indent() {
      if (w_) --w_->depth_;
    }

   private:
    CodeWriter* w_;
  };

  explicit CodeWriter(int spaces_per_level = 4) : spaces_(spaces_per_level) {}

  // Writes `text` at the current depth. Text with newlines is several lines,
  // each indented by the current depth on top of its own leading spaces.
  void line(std::string_view text);
  // Ends the text with at least `count` empty lines (none at the very start).
  void blank(int count = 1);
  // Comment lines ("# ..."), the text wrapped at `width` columns; lines after
  // the first are indented by `hanging` more spaces.
  void comment(std::string_view text, size_t width = 100, size_t hanging = 0);
  [[nodiscard]] Indent indent() { return Indent(*this); }
  int depth() const { return depth_; }

  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int depth_ = 0;
  int spaces_;
};

}  // namespace eqf
