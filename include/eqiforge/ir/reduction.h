// Reductions: the combiner R of `reduce(d, R, X)` and `preduce(p, R, X)`.
//
// A reduction is a tuple of components; a plain `+` or `max` has one. Each
// component has a base operation and, for dependent (repaired) fusion, a
// repair template that rescales this component's state when another
// component's state changes (DESIGN §2.5):
//
//   exp-sum j        a sum whose terms were computed against the local value of
//                    max-component j; combining (m1,s1),(m2,s2):
//                    m = max(m1,m2), s = s1*exp(m1-m) + s2*exp(m2-m)
//                    (a side with m = -inf contributes 0). The state may have
//                    more dims than component j (P.V's channel dim): the
//                    factor broadcasts by dim name.
//   welford-mean n   a mean over the elements counted by +-component n:
//                    mean = (n1*mean1 + n2*mean2) / (n1+n2)
//   welford-m2 n a   a sum of squared deviations from the mean component a
//                    (Chan's merge): M2 = M2_1 + M2_2 + (a2-a1)^2 * n1*n2/(n1+n2)
//
// Reductions are interned: a RedId names one spec, so attribute slots and
// parallel states compare reductions by id. Text syntax (docs/ir.md):
//   +   max   (max (exp-sum 0) (exp-sum 0))   (+ (welford-mean 0) (welford-m2 0 1))
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace eqf {

enum class RedBase : uint8_t { Add, Max };
enum class Repair : uint8_t { None, ExpSum, WelfordMean, WelfordM2 };

struct RedComponent {
  RedBase base = RedBase::Add;
  Repair repair = Repair::None;
  uint8_t arg0 = 0;  // exp-sum: max component; welford-*: count component
  uint8_t arg1 = 0;  // welford-m2: mean component
  friend bool operator==(const RedComponent&, const RedComponent&) = default;
};

struct Reduction {
  std::vector<RedComponent> components;
  friend bool operator==(const Reduction&, const Reduction&) = default;

  size_t arity() const { return components.size(); }
  // Identity of component i (0 for sums, -inf for max).
  double identity(size_t i) const;
  // Checks argument indices and repair/base pairings; returns an error text
  // ("exp-sum 2 refers to component 2, which is not a max") or nullopt.
  std::optional<std::string> validate() const;
};

class RedId {
 public:
  constexpr RedId() = default;
  static RedId intern(const Reduction& r);   // r must validate()
  static RedId add();                         // "+"
  static RedId max();                         // "max"
  static constexpr RedId from_raw(uint32_t v) { return RedId(v); }

  const Reduction& get() const;
  uint32_t raw() const { return v_; }
  // The single-component reduction of component i's base (+ or max): the
  // parallel state `partial(...)` that component carries before a preduce.
  RedId base_of(size_t i) const;
  bool is_plain() const;  // one component, no repair

  friend bool operator==(RedId a, RedId b) { return a.v_ == b.v_; }
  friend bool operator!=(RedId a, RedId b) { return a.v_ != b.v_; }
  friend bool operator<(RedId a, RedId b) { return a.v_ < b.v_; }

 private:
  constexpr explicit RedId(uint32_t v) : v_(v) {}
  uint32_t v_ = 0xffffffffu;
};

std::string reduction_text(RedId r);  // "+", "max", "(max (exp-sum 0) (exp-sum 0))"

}  // namespace eqf
