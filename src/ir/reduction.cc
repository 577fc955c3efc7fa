#include "eqiforge/ir/reduction.h"

#include <deque>
#include <limits>
#include <mutex>

namespace eqf {
namespace {

struct RedTable {
  std::mutex mu;
  std::deque<Reduction> specs;  // deque: references stay valid as it grows
};

RedTable& table() {
  static RedTable* t = new RedTable;
  return *t;
}

std::string component_text(const RedComponent& c) {
  const char* base = c.base == RedBase::Add ? "+" : "max";
  switch (c.repair) {
    case Repair::None:
      return base;
    case Repair::ExpSum:
      return "(exp-sum " + std::to_string(c.arg0) + ")";
    case Repair::WelfordMean:
      return "(welford-mean " + std::to_string(c.arg0) + ")";
    case Repair::WelfordM2:
      return "(welford-m2 " + std::to_string(c.arg0) + " " + std::to_string(c.arg1) + ")";
  }
  return base;
}

}  // namespace

double Reduction::identity(size_t i) const {
  return components[i].base == RedBase::Max ? -std::numeric_limits<double>::infinity() : 0.0;
}

std::optional<std::string> Reduction::validate() const {
  if (components.empty()) return "a reduction needs at least one component";
  auto component = [&](size_t i) { return "component " + std::to_string(i); };
  for (size_t i = 0; i < components.size(); ++i) {
    const RedComponent& c = components[i];
    auto refers_to = [&](uint8_t j, const char* what) -> std::optional<std::string> {
      if (j >= components.size() || j == i)
        return component(i) + " refers to component " + std::to_string(j) + ", which does not exist";
      (void)what;
      return std::nullopt;
    };
    switch (c.repair) {
      case Repair::None:
        break;
      case Repair::ExpSum:
        if (c.base != RedBase::Add) return component(i) + ": exp-sum is a sum";
        if (auto e = refers_to(c.arg0, "max")) return e;
        if (components[c.arg0].base != RedBase::Max || components[c.arg0].repair != Repair::None)
          return component(i) + ": exp-sum " + std::to_string(c.arg0) + " refers to " + component(c.arg0) +
                 ", which is not a plain max";
        break;
      case Repair::WelfordMean:
      case Repair::WelfordM2:
        if (c.base != RedBase::Add) return component(i) + ": welford components are sums";
        if (auto e = refers_to(c.arg0, "count")) return e;
        if (components[c.arg0] != RedComponent{})
          return component(i) + ": the count " + component(c.arg0) + " must be a plain +";
        if (c.repair == Repair::WelfordM2) {
          if (auto e = refers_to(c.arg1, "mean")) return e;
          if (components[c.arg1].repair != Repair::WelfordMean || components[c.arg1].arg0 != c.arg0)
            return component(i) + ": welford-m2 needs a welford-mean component over the same count, got " +
                   component(c.arg1);
        }
        break;
    }
  }
  return std::nullopt;
}

RedId RedId::intern(const Reduction& r) {
  RedTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t i = 0; i < t.specs.size(); ++i)
    if (t.specs[i] == r) return RedId(uint32_t(i));
  t.specs.push_back(r);
  return RedId(uint32_t(t.specs.size() - 1));
}

RedId RedId::add() {
  static const RedId id = intern(Reduction{{RedComponent{RedBase::Add}}});
  return id;
}

RedId RedId::max() {
  static const RedId id = intern(Reduction{{RedComponent{RedBase::Max}}});
  return id;
}

const Reduction& RedId::get() const {
  RedTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.specs[v_];
}

RedId RedId::base_of(size_t i) const {
  return get().components[i].base == RedBase::Max ? RedId::max() : RedId::add();
}

bool RedId::is_plain() const {
  const Reduction& r = get();
  return r.arity() == 1 && r.components[0].repair == Repair::None;
}

std::string reduction_text(RedId r) {
  const Reduction& red = r.get();
  if (red.arity() == 1 && red.components[0].repair == Repair::None) return component_text(red.components[0]);
  std::string out = "(";
  for (size_t i = 0; i < red.arity(); ++i) out += (i ? " " : "") + component_text(red.components[i]);
  return out + ")";
}

}  // namespace eqf
