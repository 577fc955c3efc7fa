#include "codegen/py_names.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace eqf::codegen {
namespace {

// Python keywords and the names emitted modules rely on.
const char* const kReserved[] = {
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    // modules and builtins used by emitted code
    "tl",
    "triton",
    "torch",
    "float",
    "int",
    "range",
    "min",
    "max",
    "tuple",
    "len",
    "print",
    "ValueError",
    "device",
    "grid",
};

}  // namespace

std::string py_ident(std::string_view text) {
  std::string out;
  for (char c : text)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
  if (out.empty()) return "v";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string py_upper(std::string_view text) {
  std::string out = py_ident(text);
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

NameTable::NameTable() {
  for (const char* r : kReserved) used_.insert(r);
}

bool NameTable::taken(const std::string& name) const { return used_.count(name) > 0; }

bool NameTable::claim(const std::string& name) { return used_.insert(name).second; }

std::string NameTable::fresh(std::string_view hint) {
  std::string base = py_ident(hint);
  if (used_.insert(base).second) return base;
  for (int i = 2;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (used_.insert(candidate).second) return candidate;
  }
}

std::string py_float(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string out = buf;
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

}  // namespace eqf::codegen
