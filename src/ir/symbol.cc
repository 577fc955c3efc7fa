#include "eqiforge/ir/symbol.h"

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace eqf {
namespace {

// Strings live in a deque so string_views into them stay valid as it grows.
struct SymbolTable {
  std::mutex mu;
  std::deque<std::string> strings;
  std::unordered_map<std::string_view, uint32_t> ids;
};

SymbolTable& table() {
  static SymbolTable* t = new SymbolTable;  // never destroyed: symbols outlive statics
  return *t;
}

}  // namespace

Symbol Symbol::intern(std::string_view text) {
  SymbolTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(text);
  if (it != t.ids.end()) return Symbol(it->second);
  uint32_t id = uint32_t(t.strings.size());
  t.strings.emplace_back(text);
  t.ids.emplace(std::string_view(t.strings.back()), id);
  return Symbol(id);
}

std::string_view Symbol::str() const {
  if (!valid()) return "<invalid>";
  SymbolTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.strings[id_];
}

}  // namespace eqf
