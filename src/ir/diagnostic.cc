#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

std::string format(const std::string& file, SourceLoc loc, const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ":";
  if (loc.line > 0) out += std::to_string(loc.line) + ":" + std::to_string(loc.col) + ":";
  if (!out.empty()) out += " ";
  return out + "error: " + message;
}

}  // namespace

Error::Error(const std::string& file, SourceLoc loc, const std::string& message)
    : std::runtime_error(format(file, loc, message)), file_(file), loc_(loc), message_(message) {}

}  // namespace eqf
