// A small JSON reader for the hardware profiles: objects, arrays, strings,
// numbers, booleans and null. Errors are eqf::Error with file:line:col.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/ir/diagnostic.h"

namespace eqf::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value, std::less<>> object;
  SourceLoc loc;  // where the value starts

  const Value* find(std::string_view key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
  }
};

Value parse(std::string_view text, const std::string& file);

}  // namespace eqf::json
