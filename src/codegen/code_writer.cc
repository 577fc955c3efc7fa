#include "eqiforge/codegen/code_writer.h"

namespace eqf {

void CodeWriter::line(std::string_view text) {
  size_t start = 0;
  while (true) {
    size_t end = text.find('\n', start);
    std::string_view piece =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!piece.empty()) out_.append(size_t(depth_ * spaces_), ' ');
    out_.append(piece);
    out_.push_back('\n');
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

void CodeWriter::blank(int count) {
  if (out_.empty()) return;
  int have = 0;
  for (size_t i = out_.size(); i >= 2 && out_[i - 1] == '\n' && out_[i - 2] == '\n'; --i) ++have;
  for (; have < count; ++have) out_.push_back('\n');
}

void CodeWriter::comment(std::string_view text, size_t width, size_t hanging) {
  size_t indent = size_t(depth_ * spaces_) + 2;
  size_t room = width > indent + 20 ? width - indent : 20;
  // Greedy wrap at spaces; a word longer than the room gets a line of its own.
  std::string current;
  bool first = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = text.find(' ', pos);
    std::string_view word =
        text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    pos = next == std::string_view::npos ? text.size() : next + 1;
    if (word.empty()) continue;
    if (!current.empty() && current.size() + 1 + word.size() > room) {
      line("# " + current);
      current = std::string(hanging, ' ');
      first = false;
    }
    if (!current.empty() && !(current.size() == hanging && !first)) current += ' ';
    current += word;
  }
  if (!current.empty() || text.empty()) line("# " + current);
}

}  // namespace eqf
