// Errors with a source position. Every user-facing failure (bad text, bad
// types, bad options) is an eqf::Error; tools print `what()` and exit 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace eqf {

struct SourceLoc {
  uint32_t line = 0;  // 1-based; 0 = unknown
  uint32_t col = 0;   // 1-based
};

class Error : public std::runtime_error {
 public:
  // Formats "file:line:col: error: message" (position parts omitted when unknown).
  Error(const std::string& file, SourceLoc loc, const std::string& message);
  explicit Error(const std::string& message) : Error("", {}, message) {}

  const std::string& file() const { return file_; }
  SourceLoc loc() const { return loc_; }
  const std::string& message() const { return message_; }  // without the position

 private:
  std::string file_;
  SourceLoc loc_;
  std::string message_;
};

}  // namespace eqf
