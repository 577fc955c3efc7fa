// Python identifiers for emitted code: names made from IR names (dims, axes,
// lets) and a table that keeps the names of one Python scope distinct.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace eqf::codegen {

// A valid Python identifier from IR text: characters other than letters,
// digits and '_' are dropped ("t.0" -> "t0", "c_t.0" -> "c_t0"); a leading
// digit gets a '_' in front; empty text gives "v".
std::string py_ident(std::string_view text);
std::string py_upper(std::string_view text);  // py_ident, upper-cased (constexpr names)

// The names used in one Python scope. `fresh(hint)` returns hint itself when
// it is free and not reserved (keywords, builtins the module uses, imported
// module names), else hint_2, hint_3, ...
class NameTable {
 public:
  NameTable();
  std::string fresh(std::string_view hint);
  // Claims a name exactly; returns false if it was taken.
  bool claim(const std::string& name);
  bool taken(const std::string& name) const;

 private:
  std::set<std::string> used_;
};

// Python source text of a double: the shortest form that reads back to the
// same value, always a float literal ("2.0", "1e-06"), and float("inf") /
// float("-inf") / float("nan") for the non-finite values.
std::string py_float(double v);

}  // namespace eqf::codegen
