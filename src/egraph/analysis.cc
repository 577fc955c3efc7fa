#include "eqiforge/egraph/analysis.h"

#include <cmath>
#include <vector>

#include "egraph/attr_syntax.h"
#include "eqiforge/egraph/egraph.h"
#include "eqiforge/ir/fold.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {

bool Analysis::merge(const EGraph& g, ClassData& into, const ClassData& from, MergeOutcome& outcome,
                     std::string& why) {
  if (into.type != from.type) {
    why = data_text(g, into) + " with " + data_text(g, from);
    return false;
  }
  if (into.has_value && from.has_value && !(into.value == from.value)) {
    why = "literal " + number_text(into.value) + " with literal " + number_text(from.value);
    return false;
  }
  if (from.has_value && !into.has_value) {
    into.has_value = true;
    into.value = from.value;
    outcome.into_changed = true;
  }
  outcome.from_changed = into.has_value && !from.has_value;
  return true;
}

std::string Analysis::data_text(const EGraph& g, const ClassData& d) const {
  std::string out = d.type.valid() ? type_text(d.type.get(), &g.dims()) : std::string("<untyped>");
  if (d.has_value) out += " = " + number_text(d.value);
  return out;
}

namespace {

// infer_type results memoized on (op, attrs, children's types): the e-graph
// asks for the same combination over and over (every commuted or
// re-associated node has the children's types of its siblings). Keys live in
// one flat u32 arena; the table is open addressing with linear probing.
class TypeCache {
 public:
  struct Result {
    TypeId type;         // valid on success
    int32_t error = -1;  // index into errors() otherwise
  };

  const Result* find(std::span<const uint32_t> key, uint64_t h) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.len == 0) return nullptr;
      if (s.hash == h && s.len == key.size() && std::equal(key.begin(), key.end(), arena_.begin() + s.offset))
        return &s.result;
    }
  }

  void insert(std::span<const uint32_t> key, uint64_t h, Result r) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].len != 0) i = (i + 1) & mask;
    slots_[i] = Slot{h, uint32_t(arena_.size()), uint32_t(key.size()), r};
    arena_.insert(arena_.end(), key.begin(), key.end());
    ++size_;
  }

  int32_t add_error(std::string message) {
    errors_.push_back(std::move(message));
    return int32_t(errors_.size() - 1);
  }
  const std::string& error(int32_t i) const { return errors_[size_t(i)]; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t len = 0;  // keys are never empty (the op is always in them)
    Result result;
  };
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 256 : old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.len == 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].len != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  std::vector<uint32_t> arena_;
  std::vector<std::string> errors_;
  size_t size_ = 0;
};

// The value of a pointwise op over literal values (float64, as the reference
// interpreter computes), or NaN when it is not folded.
double fold(Op op, const Attrs& attrs, std::span<const ClassData> c) {
  auto v = [&](size_t i) { return c[i].value; };
  switch (op) {
    case Op::Add:
      return v(0) + v(1);
    case Op::Sub:
      return v(0) - v(1);
    case Op::Mul:
      return v(0) * v(1);
    case Op::Div:
      return v(0) / v(1);
    case Op::Max2:
      return std::fmax(v(0), v(1));
    case Op::Min2:
      return std::fmin(v(0), v(1));
    case Op::Neg:
      return -v(0);
    case Op::Exp:
      return std::exp(v(0));
    case Op::Log:
      return std::log(v(0));
    case Op::Sqrt:
      return std::sqrt(v(0));
    case Op::Rsqrt:
      return 1.0 / std::sqrt(v(0));
    case Op::Sigmoid:
      return 1.0 / (1.0 + std::exp(-v(0)));
    case Op::Silu:
      return v(0) / (1.0 + std::exp(-v(0)));
    case Op::Gelu:
      return gelu_value(v(0));
    case Op::Tanh:
      return std::tanh(v(0));
    case Op::Pow:
      return std::pow(v(0), attr_f64(attrs));
    default:
      return NAN;
  }
}

class TypeAnalysis final : public Analysis {
 public:
  explicit TypeAnalysis(bool fold_constants) : fold_(fold_constants) {}

  bool make(EGraph& g, Op op, const Attrs& attrs, std::span<const ClassData> children, ClassData& out,
            std::string& why) override {
    out = ClassData{};
    if (op == Op::Input) {
      Symbol name = attr_sym(attrs, 0);
      out.type = g.input_type(name);
      if (!out.type.valid()) {
        why = "input " + std::string(name.str()) + " is not declared in the e-graph";
        return false;
      }
      return true;
    }
    if (!infer(g, op, attrs, children, out.type, why)) return false;
    if (op == Op::Const) {
      out.has_value = true;
      out.value = attr_f64(attrs);
    } else if (fold_ && op_has(op, kPointwise) && !children.empty()) {
      bool all = true;
      for (const ClassData& c : children) all &= c.has_value;
      if (all && out.type == literal_type(g)) {
        double value = fold(op, attrs, children);
        if (!std::isnan(value)) {
          out.has_value = true;
          out.value = value == 0 ? 0.0 : value;  // one zero: -0 and 0 are the same literal
        }
      }
    }
    return true;
  }

  void modify(EGraph& g, EClassId id) override {
    const ClassData& d = g.data(id);
    if (!d.has_value || !fold_) return;
    // A folded value gets its `const` node, so extraction and patterns over
    // literals see it.
    EClassId k = g.add(Op::Const, attrs_f64(d.value), {});
    g.merge(id, k);
  }

 private:
  bool infer(EGraph& g, Op op, const Attrs& attrs, std::span<const ClassData> children, TypeId& out,
             std::string& why) {
    key_.clear();
    key_.push_back(uint32_t(op));
    key_.insert(key_.end(), attrs.begin(), attrs.end());
    for (const ClassData& c : children) key_.push_back(c.type.raw());
    uint64_t h = 0x51ed270b27a9f3c5ull;
    for (uint32_t k : key_) {
      h = (h ^ k) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 31;
    }
    if (const TypeCache::Result* r = cache_.find(key_, h)) {
      if (r->error >= 0) {
        why = cache_.error(r->error);
        return false;
      }
      out = r->type;
      return true;
    }
    types_.clear();
    for (const ClassData& c : children) types_.push_back(c.type);
    std::variant<TypeId, TypeError> result = infer_type(op, attrs, types_, g.dims());
    TypeCache::Result r;
    if (const TypeId* t = std::get_if<TypeId>(&result)) {
      r.type = *t;
      out = *t;
    } else {
      why = std::get<TypeError>(result).message;
      r.error = cache_.add_error(why);
    }
    cache_.insert(key_, h, r);
    return r.error < 0;
  }

  TypeId literal_type(EGraph& g) {
    if (!literal_.valid()) {
      std::string why;
      infer(g, Op::Const, attrs_f64(0), {}, literal_, why);
    }
    return literal_;
  }

  bool fold_;
  TypeCache cache_;
  TypeId literal_;
  std::vector<uint32_t> key_;
  std::vector<TypeId> types_;
};

}  // namespace

std::unique_ptr<Analysis> make_type_analysis(bool fold_constants) {
  return std::make_unique<TypeAnalysis>(fold_constants);
}

}  // namespace eqf
