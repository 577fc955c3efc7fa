#include "interp/random_program.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "eqiforge/ir/reduction.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf::testgen {
namespace {

// Every draw comes from raw std::mt19937_64 outputs (whose sequence the
// standard fixes), never from a std:: distribution (implementation-defined):
// a seed gives the same program on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  int64_t between(int64_t lo, int64_t hi) { return lo + int64_t(g_() % uint64_t(hi - lo + 1)); }
  bool chance(int percent) { return int64_t(g_() % 100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(between(0, int64_t(v.size()) - 1))];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(between(0, int64_t(i) - 1))]);
  }

 private:
  std::mt19937_64 g_;
};

constexpr int kTiled = 0, kPlain = 1;  // the two programs built in lockstep

// A value both programs compute: its node in each and its type (the same in
// both). `bound` is an upper bound of |element| for finite inputs in
// [-1, 1), used to keep values finite when nonfinite ops are off.
struct Value {
  NodeId node[2];
  TypeId type;
  double bound = 1;
  int uses = 0;
  bool is_input = false;
  // Computed the same way in both programs (no rewritten term below it), so
  // bit-identical in both. Discontinuous ops (predicates, casts to integer)
  // take only exact operands: a rounding difference between the two forms
  // must not flip a comparison.
  bool exact = true;

  const TensorType& tensor() const { return type.get().tensor(); }
  const std::vector<Symbol>& dims() const { return tensor().dims; }
  bool has_dim(Symbol d) const { return tensor().has_dim(d); }
};

// A node of one program under construction.
struct Term {
  NodeId node;
  TypeId type;
};

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& options) : rng_(seed), o_(options) {}

  GeneratedProgram run(uint64_t seed) {
    const Symbol name = Symbol::intern("gen" + std::to_string(seed));
    p_[kTiled].name = p_[kPlain].name = name;
    declare_dims();
    dtype_ = rng_.pick(std::vector<DType>{DType::F32, DType::F32, DType::F32, DType::F32, DType::F16,
                                          DType::BF16, DType::F64});
    const int inputs = int(rng_.between(1, std::max(1, o_.max_inputs)));
    for (int i = 0; i < inputs; ++i) {
      // Separate statements: the order of the draws must not depend on the
      // compiler's order of evaluating arguments.
      std::vector<Symbol> dims = random_dims(1, o_.max_rank);
      const DType dtype = i == 0 || rng_.chance(85) ? dtype_ : DType::Bool;
      add_input(std::move(dims), dtype);
    }

    const int target = int(rng_.between(o_.min_ops, std::max(o_.min_ops, o_.max_ops)));
    int done = 0;
    for (int attempt = 0; done < target && attempt < 30 * target; ++attempt) done += step() ? 1 : 0;
    add_outputs();

    GeneratedProgram out;
    out.seed = seed;
    out.rewritten_terms = rewritten_;
    typecheck(p_[kTiled]);
    typecheck(p_[kPlain]);
    out.program = std::move(p_[kTiled]);
    out.plain = std::move(p_[kPlain]);
    return out;
  }

 private:
  // ---- dims and inputs -------------------------------------------------------------

  // Base dims, plus for some of them a pair of factor dims (for split and
  // merge) or a twin of the same extent (for rename).
  void declare_dims() {
    std::vector<std::string> names{"m", "n", "k", "s", "t", "h", "e", "f"};
    rng_.shuffle(names);
    std::vector<int64_t> extents;
    for (int64_t e : {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16, 17})
      if (e <= std::max<int64_t>(1, o_.max_extent)) extents.push_back(e);
    const int n = int(rng_.between(2, 5));
    for (int i = 0; i < n; ++i) {
      // Extent 1 is legal but rarely interesting: draw it less often.
      int64_t e = rng_.pick(extents);
      if (e == 1 && rng_.chance(50)) e = rng_.pick(extents);
      base_.push_back(declare(names[size_t(i)], e));
    }
    for (Symbol d : base_) {
      const int64_t e = extent(d);
      std::vector<int64_t> factors;
      for (int64_t a = 2; a * 2 <= e; ++a)
        if (e % a == 0) factors.push_back(a);
      if (!factors.empty() && rng_.chance(40)) {
        const int64_t a = rng_.pick(factors);
        const std::string base(d.str());
        factors_.push_back({d, declare(base + "_hi", a), declare(base + "_lo", e / a)});
      }
      if (rng_.chance(30)) twins_.push_back({d, declare(std::string(d.str()) + "_2", e)});
    }
  }

  Symbol declare(const std::string& name, int64_t extent) {
    const Symbol s = Symbol::intern(name);
    p_[kTiled].dims.declare(s, extent);
    p_[kPlain].dims.declare(s, extent);
    return s;
  }

  int64_t extent(Symbol d) const { return p_[kPlain].dims.find(d)->extent; }

  std::vector<Symbol> random_dims(int lo, int hi) {
    std::vector<Symbol> pool = base_;
    rng_.shuffle(pool);
    pool.resize(size_t(std::min<int64_t>(int64_t(pool.size()), rng_.between(lo, std::max(lo, hi)))));
    return pool;
  }

  Value& add_input(std::vector<Symbol> layout, DType dtype) {
    const Symbol name = Symbol::intern("x" + std::to_string(inputs_++));
    TensorType t;
    t.dtype = dtype;
    t.dims = layout;
    std::sort(t.dims.begin(), t.dims.end());
    Value v;
    v.type = TypeId::intern(Type{{t}, false});
    v.is_input = true;
    v.bound = 1;
    for (int w : {kTiled, kPlain}) {
      v.node[w] = p_[w].add_input(name, dtype, layout);
      record(w, v.node[w], v.type);
    }
    pool_.push_back(v);
    return pool_.back();
  }

  // ---- typed construction -------------------------------------------------------------

  void record(int w, NodeId id, TypeId t) {
    if (types_[w].size() <= id.v) types_[w].resize(id.v + 1);
    types_[w][id.v] = t;
  }

  // op(attrs)(kids) in program w, typed before it is added: a refused node
  // adds nothing (a dangling well-typed node would be harmless, an ill-typed
  // one would fail typecheck).
  std::optional<Term> add(int w, Op op, const Attrs& attrs, std::vector<Term> kids) {
    std::vector<TypeId> kid_types;
    std::vector<NodeId> kid_nodes;
    for (const Term& k : kids) kid_types.push_back(k.type), kid_nodes.push_back(k.node);
    auto r = infer_type(op, attrs, kid_types, p_[w].dims);
    if (std::holds_alternative<TypeError>(r)) return std::nullopt;
    const TypeId t = std::get<TypeId>(r);
    const NodeId id = p_[w].add(op, attrs, kid_nodes);
    record(w, id, t);
    return Term{id, t};
  }

  Term term(int w, const Value& v) const { return Term{v.node[w], v.type}; }

  Term literal(int w, double c) { return *add(w, Op::Const, attrs_f64(c), {}); }

  // One application in both programs, on values (or literals: nullptr
  // operands are taken from `literals` in order).
  std::optional<Value> apply(Op op, const Attrs& attrs, std::vector<const Value*> args,
                             std::vector<double> literals = {}) {
    Value out;
    for (const Value* a : args) out.exact = out.exact && (!a || a->exact);
    for (int w : {kTiled, kPlain}) {
      std::vector<Term> kids;
      size_t next_literal = 0;
      for (const Value* a : args) kids.push_back(a ? term(w, *a) : literal(w, literals.at(next_literal++)));
      std::optional<Term> t = add(w, op, attrs, kids);
      if (!t) return std::nullopt;
      out.node[w] = t->node;
      out.type = t->type;
    }
    return out;
  }

  // A value whose two forms differ: `tiled` in the first program, `plain` in
  // the second; both must have the same type.
  std::optional<Value> twin(std::optional<Term> tiled, std::optional<Term> plain) {
    if (!tiled || !plain) return std::nullopt;
    if (tiled->type != plain->type)
      throw std::logic_error("generator: a tile-level term and its high-level twin have different types");
    Value v;
    v.node[kTiled] = tiled->node;
    v.node[kPlain] = plain->node;
    v.type = tiled->type;
    v.exact = false;
    ++rewritten_;
    return v;
  }

  Value& keep(Value v, double bound, std::vector<Value*> used) {
    for (Value* u : used) ++u->uses;
    v.bound = bound;
    pool_.push_back(v);
    return pool_.back();
  }

  // ---- choosing operands ------------------------------------------------------------------

  // Recent values more often, so chains grow deep as well as wide.
  Value& pick_value() {
    if (pool_.size() > 3 && rng_.chance(50)) return pool_[pool_.size() - 1 - size_t(rng_.between(0, 2))];
    return pool_[size_t(rng_.between(0, int64_t(pool_.size()) - 1))];
  }

  std::vector<Symbol> dims_union(const Value& a, const Value& b) const {
    std::vector<Symbol> u = a.dims();
    for (Symbol d : b.dims())
      if (!a.has_dim(d)) u.push_back(d);
    return u;
  }

  // A partner for a binary op with `a`: same dtype, a union of dims within
  // max_rank (skipping `without`, a contracted dim), and a dim `need` if given.
  Value* partner(const Value& a, Symbol need = {}, Symbol without = {}) {
    std::vector<Value*> ok;
    for (Value& b : pool_) {
      if (b.tensor().dtype != a.tensor().dtype) continue;
      if (need.valid() && !b.has_dim(need)) continue;
      std::vector<Symbol> u = dims_union(a, b);
      const int rank = int(u.size()) - (without.valid() && std::count(u.begin(), u.end(), without) ? 1 : 0);
      if (rank <= o_.max_rank) ok.push_back(&b);
    }
    if (ok.empty()) return nullptr;
    return rng_.pick(ok);
  }

  bool finite_ok(double bound) const {
    if (o_.nonfinite_ops) return true;
    return bound < (o_.dtype_range && dtype_ == DType::F16 ? 65504.0 : 1e30);
  }

  static double ext_bound(double b) { return b > 700 ? HUGE_VAL : std::exp(b); }

  // ---- one step: an operator application, a chain or a tile-level term ----------------------

  bool step() {
    Value& x = pick_value();
    const bool is_float = x.tensor().dtype != DType::Bool && x.tensor().dtype != DType::I32;
    const int kind = int(rng_.between(0, o_.tiled ? 15 : 10));
    if (!is_float && kind != 4) return false;
    switch (kind) {
      case 0:
      case 1:
        return unary(x);
      case 2:
      case 3:
        return binary(x);
      case 4:
        return mask(x);
      case 5:
        return reduce(x);
      case 6:
        return softmax(x);
      case 7:
        return matmul(x);
      case 8:
        return layout(x);
      case 9:
        return iota_value();
      case 10:
        return repaired_reduction(x);
      case 11:
        return tiled_pointwise(x);
      case 12:
        return tiled_reduce(x);
      case 13:
        return tiled_matmul(x);
      case 14:
        return tiled_online_softmax(x);
      default:
        return tiled_collect(x);
    }
  }

  bool unary(Value& x) {
    struct U {
      Op op;
      double c;
      bool nonfinite;
    };
    static const std::vector<U> kOps{{Op::Neg, 0, false},   {Op::Exp, 0, false},   {Op::Tanh, 0, false},
                                     {Op::Sigmoid, 0, false}, {Op::Silu, 0, false}, {Op::Gelu, 0, false},
                                     {Op::Pow, 2, false},   {Op::Pow, 3, false},   {Op::Log, 0, true},
                                     {Op::Sqrt, 0, true},   {Op::Rsqrt, 0, true},  {Op::Pow, 0.5, true},
                                     {Op::Pow, -1, true},   {Op::Cast, 0, false}};
    const U u = rng_.pick(kOps);
    if (u.nonfinite && !o_.nonfinite_ops) return false;
    Attrs attrs = attrs_none();
    if (u.op == Op::Pow) attrs = attrs_f64(u.c);
    if (u.op == Op::Cast) {
      attrs[0] = uint32_t(rng_.pick(std::vector<DType>{dtype_, dtype_, DType::F32, DType::F16, DType::I32}));
      if (DType(attrs[0]) == DType::I32 && !x.exact) return false;  // trunc is discontinuous
    }
    double b = x.bound;
    // With dtype_range, f16 values only in f16 programs (whose bounds
    // finite_ok keeps below 65504): what an f16 cast in another program
    // feeds is bounded for that program's dtype only.
    if (u.op == Op::Cast && DType(attrs[0]) == DType::F16 && dtype_ != DType::F16 && o_.dtype_range &&
        !o_.nonfinite_ops)
      return false;
    switch (u.op) {
      case Op::Exp: b = ext_bound(x.bound); break;
      case Op::Tanh:
      case Op::Sigmoid: b = 1; break;
      case Op::Pow: b = std::pow(std::max(x.bound, 1.0), std::max(u.c, 1.0)); break;
      case Op::Log: b = std::max(std::fabs(std::log(x.bound)), 1.0); break;
      default: break;
    }
    if (!finite_ok(b)) return false;
    std::optional<Value> v = apply(u.op, attrs, {&x});
    if (!v) return false;
    keep(*v, b, {&x});
    return true;
  }

  bool binary(Value& x) {
    std::vector<Op> ops{Op::Add, Op::Sub, Op::Mul, Op::Max2, Op::Min2};
    if (o_.nonfinite_ops) ops.push_back(Op::Div);
    const Op op = rng_.pick(ops);
    const double c = rng_.pick(std::vector<double>{2, 0.5, -1, 3, 1e-6, 0});
    Value* y = rng_.chance(30) ? nullptr : partner(x);
    const double yb = y ? y->bound : std::fabs(c);
    double b = 0;
    switch (op) {
      case Op::Add:
      case Op::Sub: b = x.bound + yb; break;
      case Op::Mul: b = x.bound * yb; break;
      case Op::Div: b = HUGE_VAL; break;
      default: b = std::max(x.bound, yb); break;
    }
    if (!finite_ok(b)) return false;
    const bool swap = rng_.chance(50);
    std::vector<const Value*> args = swap ? std::vector<const Value*>{y, &x} : std::vector<const Value*>{&x, y};
    std::optional<Value> v = apply(op, attrs_none(), args, {c});
    if (!v) return false;
    if (y)
      keep(*v, b, {&x, y});
    else
      keep(*v, b, {&x});
    return true;
  }

  // A predicate on x (against a partner or a literal), then `where` choosing
  // between x and another value or a literal. A bool x is used as the mask.
  bool mask(Value& x) {
    std::optional<Value> cond;
    const Value* data = nullptr;
    if (x.tensor().dtype == DType::Bool) {
      if (!x.exact) return false;
      cond = x;
      for (Value& v : pool_)
        if (v.tensor().dtype == dtype_ && int(dims_union(x, v).size()) <= o_.max_rank) data = &v;
      if (!data) return false;
    } else if (x.tensor().dtype == DType::I32) {
      return false;
    } else {
      const Op pred = rng_.pick(std::vector<Op>{Op::Lt, Op::Le, Op::Eq});
      Value* y = rng_.chance(50) ? nullptr : partner(x);
      if (!x.exact || (y && !y->exact)) return false;
      cond = apply(pred, attrs_none(), {&x, y}, {rng_.chance(50) ? 0.0 : 0.25});
      data = &x;
    }
    if (!cond) return false;
    Value* other = rng_.chance(40) ? nullptr : partner(*data);
    const double fill = o_.nonfinite_ops && rng_.chance(50) ? -INFINITY : -3.0;
    const bool flip = rng_.chance(50);
    std::vector<const Value*> args{&*cond, flip ? other : data, flip ? data : other};
    std::vector<Symbol> dims = dims_union(*cond, *data);
    if (other)
      for (Symbol d : other->dims())
        if (std::find(dims.begin(), dims.end(), d) == dims.end()) dims.push_back(d);
    if (int(dims.size()) > o_.max_rank) return false;
    std::optional<Value> v = apply(Op::Where, attrs_none(), args, {fill});
    if (!v) return false;
    const double b = std::max(data->bound, other ? other->bound : std::fabs(fill));
    if (!finite_ok(b)) return false;
    keep(*v, b, {&x});
    return true;
  }

  // (cast f32 (iota d)), or a causal-style mask from two iotas.
  bool iota_value() {
    const Symbol d = rng_.pick(base_);
    std::optional<Value> i = apply(Op::Iota, {d.raw(), 0, 0}, {});
    if (!i) return false;
    if (rng_.chance(50)) {
      Attrs cast = attrs_none();
      cast[0] = uint32_t(dtype_);
      std::optional<Value> v = apply(Op::Cast, cast, {&*i});
      if (!v) return false;
      keep(*v, double(extent(d)), {});
      return true;
    }
    const Symbol e = rng_.pick(base_);
    if (e == d || o_.max_rank < 2) return false;
    std::optional<Value> j = apply(Op::Iota, {e.raw(), 0, 0}, {});
    if (!j) return false;
    std::optional<Value> shifted = apply(Op::Add, attrs_none(), {&*j, nullptr}, {double(rng_.between(-1, 2))});
    if (!shifted) return false;
    std::optional<Value> m = apply(rng_.chance(50) ? Op::Le : Op::Lt, attrs_none(), {&*i, &*shifted});
    if (!m) return false;
    keep(*m, 1, {});
    return true;
  }

  bool reduce(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    const bool sum = rng_.chance(60);
    std::optional<Value> v = apply(Op::Reduce, {d.raw(), (sum ? RedId::add() : RedId::max()).raw(), 0}, {&x});
    if (!v) return false;
    const double b = sum ? x.bound * double(extent(d)) : x.bound;
    if (!finite_ok(b)) return false;
    keep(*v, b, {&x});
    return true;
  }

  // softmax over d: exp(x - max(d, x)) / sum(d, exp(x - max(d, x))).
  bool softmax(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    std::optional<Value> m = apply(Op::Reduce, {d.raw(), RedId::max().raw(), 0}, {&x});
    if (!m) return false;
    std::optional<Value> s = apply(Op::Sub, attrs_none(), {&x, &*m});
    if (!s) return false;
    std::optional<Value> p = apply(Op::Exp, attrs_none(), {&*s});
    if (!p) return false;
    std::optional<Value> l = apply(Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {&*p});
    if (!l) return false;
    std::optional<Value> y = apply(Op::Div, attrs_none(), {&*p, &*l});
    if (!y) return false;
    keep(*y, 1, {&x});
    return true;
  }

  // Finds or makes (a new input) a second operand with dim k for a
  // contraction with pool_[xi]. Making one grows pool_: callers refer to x
  // by index afterwards.
  Value* contraction_partner(size_t xi, Symbol k) {
    if (Value* y = rng_.chance(70) ? partner(pool_[xi], k, k) : nullptr) return y;
    if (inputs_ >= o_.max_inputs + 2) return nullptr;
    std::vector<Symbol> dims{k};
    for (Symbol d : random_dims(0, o_.max_rank - 1))
      if (d != k && int(dims.size()) < o_.max_rank) dims.push_back(d);
    rng_.shuffle(dims);
    const DType dtype = pool_[xi].tensor().dtype;
    const size_t at = pool_.size();
    add_input(dims, dtype);
    if (int(dims_union(pool_[xi], pool_[at]).size()) - 1 > o_.max_rank) return nullptr;
    return &pool_[at];
  }

  bool matmul(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol k = rng_.pick(x.dims());
    const size_t xi = size_t(&x - pool_.data());
    Value* y = contraction_partner(xi, k);  // may grow pool_: refer to x by index after
    if (!y) return false;
    Value& a = pool_[xi];
    const double b = a.bound * y->bound * double(extent(k));
    if (!finite_ok(b)) return false;
    std::optional<Value> v = apply(Op::MatMul, {k.raw(), 0, 0}, {&a, y});
    if (!v) return false;
    keep(*v, b, {&a, y});
    return true;
  }

  bool layout(Value& x) {
    std::vector<std::optional<Value>> options;
    for (const auto& [d, hi, lo] : factors_) {
      if (x.has_dim(d) && !x.has_dim(hi) && !x.has_dim(lo) && int(x.dims().size()) < o_.max_rank)
        options.push_back(apply(Op::Split, {d.raw(), hi.raw(), lo.raw()}, {&x}));
      if (x.has_dim(hi) && x.has_dim(lo) && !x.has_dim(d))
        options.push_back(apply(Op::Merge, {hi.raw(), lo.raw(), d.raw()}, {&x}));
    }
    for (const auto& [d, d2] : twins_) {
      if (x.has_dim(d) && !x.has_dim(d2)) options.push_back(apply(Op::Rename, {d.raw(), d2.raw(), 0}, {&x}));
      if (x.has_dim(d2) && !x.has_dim(d)) options.push_back(apply(Op::Rename, {d2.raw(), d.raw(), 0}, {&x}));
    }
    std::erase_if(options, [](const std::optional<Value>& v) { return !v; });
    if (options.empty()) return false;
    keep(*rng_.pick(options), x.bound, {&x});
    return true;
  }

  // ---- terms whose two forms differ ---------------------------------------------------------

  // Σ_d exp(x - max_d x) by the repaired tuple reduction (max (exp-sum 0))
  // over (x, exp(x - x)); or the mean and M2 of x over d by the Welford
  // merge (+ (welford-mean 0) (welford-m2 0 1)) over (1, x, 0).
  bool repaired_reduction(Value& x) {
    if (!o_.tiled || x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    const Term xt = term(kTiled, x), xp = term(kPlain, x);
    Reduction r;
    std::optional<Term> tiled, plain;
    double b = 0;
    if (rng_.chance(50)) {
      r.components = {{RedBase::Max}, {RedBase::Add, Repair::ExpSum, 0, 0}};
      auto diff = add(kTiled, Op::Sub, attrs_none(), {xt, xt});
      auto ones = diff ? add(kTiled, Op::Exp, attrs_none(), {*diff}) : std::nullopt;
      auto tup = ones ? add(kTiled, Op::Tuple, attrs_none(), {xt, *ones}) : std::nullopt;
      auto red = tup ? add(kTiled, Op::Reduce, {d.raw(), RedId::intern(r).raw(), 0}, {*tup}) : std::nullopt;
      tiled = red ? add(kTiled, Op::Proj, {1, 0, 0}, {*red}) : std::nullopt;
      auto m = add(kPlain, Op::Reduce, {d.raw(), RedId::max().raw(), 0}, {xp});
      auto s = m ? add(kPlain, Op::Sub, attrs_none(), {xp, *m}) : std::nullopt;
      auto e = s ? add(kPlain, Op::Exp, attrs_none(), {*s}) : std::nullopt;
      plain = e ? add(kPlain, Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {*e}) : std::nullopt;
      b = double(extent(d));
    } else {
      r.components = {{RedBase::Add}, {RedBase::Add, Repair::WelfordMean, 0, 0},
                      {RedBase::Add, Repair::WelfordM2, 0, 1}};
      const bool want_m2 = rng_.chance(50);
      auto zeros = add(kTiled, Op::Mul, attrs_none(), {xt, literal(kTiled, 0)});
      auto ones = zeros ? add(kTiled, Op::Add, attrs_none(), {*zeros, literal(kTiled, 1)}) : std::nullopt;
      auto tup = ones ? add(kTiled, Op::Tuple, attrs_none(), {*ones, xt, *zeros}) : std::nullopt;
      auto red = tup ? add(kTiled, Op::Reduce, {d.raw(), RedId::intern(r).raw(), 0}, {*tup}) : std::nullopt;
      tiled = red ? add(kTiled, Op::Proj, {want_m2 ? 2u : 1u, 0, 0}, {*red}) : std::nullopt;
      auto sum = add(kPlain, Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {xp});
      auto mean = sum ? add(kPlain, Op::Div, attrs_none(), {*sum, literal(kPlain, double(extent(d)))}) : std::nullopt;
      if (want_m2) {
        auto dev = mean ? add(kPlain, Op::Sub, attrs_none(), {xp, *mean}) : std::nullopt;
        auto sq = dev ? add(kPlain, Op::Mul, attrs_none(), {*dev, *dev}) : std::nullopt;
        plain = sq ? add(kPlain, Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {*sq}) : std::nullopt;
        b = 4 * x.bound * x.bound * double(extent(d));
      } else {
        plain = mean;
        b = x.bound;
      }
    }
    if (!finite_ok(b)) return false;
    std::optional<Value> v = twin(tiled, plain);
    if (!v) return false;
    keep(*v, b, {&x});
    return true;
  }

  Attrs axis_attrs(Symbol d, int level, uint32_t second = 0) const {
    return {Axis{d, uint8_t(level)}.pack(), second, 0};
  }

  // combine(d.0, d, f(partition(d.0, d, x), ...)): a pointwise op on blocks
  // of d; a partner without d is replicated.
  bool tiled_pointwise(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    const Op op = rng_.pick(std::vector<Op>{Op::Add, Op::Mul, Op::Max2, Op::Sub, Op::Exp, Op::Tanh, Op::Silu});
    const bool binary = op_info(op).arity == 2;
    Value* y = binary ? partner(x) : nullptr;
    if (binary && !y) return false;
    const double b = op == Op::Exp ? ext_bound(x.bound)
                     : op == Op::Tanh ? 1
                     : op == Op::Mul  ? x.bound * y->bound
                     : binary         ? x.bound + y->bound
                                      : x.bound;
    if (!finite_ok(b)) return false;
    const Attrs part = axis_attrs(d, 0, d.raw());
    auto block = [&](const Value& v) -> std::optional<Term> {
      if (v.has_dim(d)) return add(kTiled, Op::Partition, part, {term(kTiled, v)});
      return add(kTiled, Op::Replicate, axis_attrs(d, 0), {term(kTiled, v)});
    };
    std::vector<Term> tiles, plain_args;
    for (const Value* v : binary ? std::vector<const Value*>{&x, y} : std::vector<const Value*>{&x}) {
      std::optional<Term> t = block(*v);
      if (!t) return false;
      tiles.push_back(*t);
      plain_args.push_back(term(kPlain, *v));
    }
    auto f = add(kTiled, op, attrs_none(), tiles);
    auto tiled = f ? add(kTiled, Op::Combine, part, {*f}) : std::nullopt;
    std::optional<Value> v = twin(tiled, add(kPlain, op, attrs_none(), plain_args));
    if (!v) return false;
    if (y)
      keep(*v, b, {&x, y});
    else
      keep(*v, b, {&x});
    return true;
  }

  // R(d, x) split on d.0 (and sometimes d.1): per-block reductions finished
  // by preduce.
  bool tiled_reduce(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    const RedId r = rng_.chance(60) ? RedId::add() : RedId::max();
    const bool two_levels = rng_.chance(35);
    std::optional<Term> t = add(kTiled, Op::Partition, axis_attrs(d, 0, d.raw()), {term(kTiled, x)});
    if (t && two_levels) t = add(kTiled, Op::Partition, axis_attrs(d, 1, d.raw()), {*t});
    if (t) t = add(kTiled, Op::Reduce, {d.raw(), r.raw(), 0}, {*t});
    if (t && two_levels) t = add(kTiled, Op::PReduce, axis_attrs(d, 1, r.raw()), {*t});
    if (t) t = add(kTiled, Op::PReduce, axis_attrs(d, 0, r.raw()), {*t});
    const double b = r == RedId::add() ? x.bound * double(extent(d)) : x.bound;
    if (!finite_ok(b)) return false;
    std::optional<Value> v = twin(t, add(kPlain, Op::Reduce, {d.raw(), r.raw(), 0}, {term(kPlain, x)}));
    if (!v) return false;
    keep(*v, b, {&x});
    return true;
  }

  // R(d, x) as per-block results stored by collect (a kernel boundary), then
  // reduced over the stored dim c_d.0.
  bool tiled_collect(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    const RedId r = rng_.chance(60) ? RedId::add() : RedId::max();
    const Axis p{d, 0};
    std::optional<Term> t = add(kTiled, Op::Partition, axis_attrs(d, 0, d.raw()), {term(kTiled, x)});
    if (t) t = add(kTiled, Op::Reduce, {d.raw(), r.raw(), 0}, {*t});
    if (t) t = add(kTiled, Op::Collect, {p.pack(), 0, 0}, {*t});
    if (t) t = add(kTiled, Op::Reduce, {p.collected_dim().raw(), r.raw(), 0}, {*t});
    const double b = r == RedId::add() ? x.bound * double(extent(d)) : x.bound;
    if (!finite_ok(b)) return false;
    std::optional<Value> v = twin(t, add(kPlain, Op::Reduce, {d.raw(), r.raw(), 0}, {term(kPlain, x)}));
    if (!v) return false;
    keep(*v, b, {&x});
    return true;
  }

  // matmul(k, x, y) split on k.0 (partial sums finished by preduce), or
  // tiled on a dim m of x only (y replicated, blocks combined).
  bool tiled_matmul(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol k = rng_.pick(x.dims());
    const size_t xi = size_t(&x - pool_.data());
    Value* y = contraction_partner(xi, k);
    if (!y) return false;
    Value& a = pool_[xi];
    const double b = a.bound * y->bound * double(extent(k));
    if (!finite_ok(b)) return false;
    const Term at = term(kTiled, a), yt = term(kTiled, *y);
    std::vector<Symbol> own;
    for (Symbol m : a.dims())
      if (m != k && !y->has_dim(m)) own.push_back(m);
    std::optional<Term> t;
    if (own.empty() || rng_.chance(50)) {
      const Attrs part = axis_attrs(k, 0, k.raw());
      auto pa = add(kTiled, Op::Partition, part, {at});
      auto pb = pa ? add(kTiled, Op::Partition, part, {yt}) : std::nullopt;
      auto mm = pb ? add(kTiled, Op::TileMatMul, {k.raw(), 0, 0}, {*pa, *pb}) : std::nullopt;
      t = mm ? add(kTiled, Op::PReduce, axis_attrs(k, 0, RedId::add().raw()), {*mm}) : std::nullopt;
    } else {
      const Symbol m = rng_.pick(own);
      const Attrs part = axis_attrs(m, 0, m.raw());
      auto pa = add(kTiled, Op::Partition, part, {at});
      auto rb = pa ? add(kTiled, Op::Replicate, axis_attrs(m, 0), {yt}) : std::nullopt;
      auto mm = rb ? add(kTiled, Op::TileMatMul, {k.raw(), 0, 0}, {*pa, *rb}) : std::nullopt;
      t = mm ? add(kTiled, Op::Combine, part, {*mm}) : std::nullopt;
    }
    std::optional<Value> v =
        twin(t, add(kPlain, Op::MatMul, {k.raw(), 0, 0}, {term(kPlain, a), term(kPlain, *y)}));
    if (!v) return false;
    keep(*v, b, {&a, y});
    return true;
  }

  // Σ_d exp(x - max_d x) with d split on d.0, as FlashAttention keeps it:
  // each block's (max, sum against its own max) merged by the repaired
  // reduction (max (exp-sum 0)).
  bool tiled_online_softmax(Value& x) {
    if (x.dims().empty()) return false;
    const Symbol d = rng_.pick(x.dims());
    Reduction r;
    r.components = {{RedBase::Max}, {RedBase::Add, Repair::ExpSum, 0, 0}};
    const bool want_max = rng_.chance(25);
    auto xt = add(kTiled, Op::Partition, axis_attrs(d, 0, d.raw()), {term(kTiled, x)});
    auto mb = xt ? add(kTiled, Op::Reduce, {d.raw(), RedId::max().raw(), 0}, {*xt}) : std::nullopt;
    auto s = mb ? add(kTiled, Op::Sub, attrs_none(), {*xt, *mb}) : std::nullopt;
    auto e = s ? add(kTiled, Op::Exp, attrs_none(), {*s}) : std::nullopt;
    auto l = e ? add(kTiled, Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {*e}) : std::nullopt;
    auto tup = l ? add(kTiled, Op::Tuple, attrs_none(), {*mb, *l}) : std::nullopt;
    auto st = tup ? add(kTiled, Op::PReduce, axis_attrs(d, 0, RedId::intern(r).raw()), {*tup}) : std::nullopt;
    auto tiled = st ? add(kTiled, Op::Proj, {want_max ? 0u : 1u, 0, 0}, {*st}) : std::nullopt;
    const Term xp = term(kPlain, x);
    auto m = add(kPlain, Op::Reduce, {d.raw(), RedId::max().raw(), 0}, {xp});
    std::optional<Term> plain = m;
    if (!want_max) {
      auto ps = m ? add(kPlain, Op::Sub, attrs_none(), {xp, *m}) : std::nullopt;
      auto pe = ps ? add(kPlain, Op::Exp, attrs_none(), {*ps}) : std::nullopt;
      plain = pe ? add(kPlain, Op::Reduce, {d.raw(), RedId::add().raw(), 0}, {*pe}) : std::nullopt;
    }
    std::optional<Value> v = twin(tiled, plain);
    if (!v) return false;
    keep(*v, want_max ? x.bound : double(extent(d)), {&x});
    return true;
  }

  // ---- outputs ---------------------------------------------------------------------------------

  // The values nothing uses (the newest first), each in a random layout.
  void add_outputs() {
    std::vector<size_t> sinks;
    for (size_t i = pool_.size(); i-- > 0;)
      if (pool_[i].uses == 0 && !pool_[i].is_input && pool_[i].tensor().dtype != DType::Bool &&
          int(pool_[i].dims().size()) >= o_.min_output_rank)
        sinks.push_back(i);
    if (sinks.empty()) {
      // Nothing was built on the inputs (or nothing of the rank asked for):
      // negate the first one (inputs have at least one dim).
      std::optional<Value> v = apply(Op::Neg, attrs_none(), {&pool_.front()});
      if (!v) throw std::logic_error("generator: cannot build an output");
      keep(*v, pool_.front().bound, {});
      sinks.push_back(pool_.size() - 1);
    }
    const size_t n = size_t(std::min<int64_t>(int64_t(sinks.size()), rng_.between(1, std::max(1, o_.max_outputs))));
    for (size_t i = 0; i < n; ++i) {
      Value& v = pool_[sinks[i]];
      std::vector<Symbol> layout = v.dims();
      rng_.shuffle(layout);
      const Symbol name = Symbol::intern("y" + std::to_string(i));
      for (int w : {kTiled, kPlain}) p_[w].add_output(name, layout, v.node[w]);
      // A name for some lets, as a user would write them.
      if (rng_.chance(30))
        for (int w : {kTiled, kPlain}) p_[w].set_name(v.node[w], Symbol::intern("v" + std::to_string(i)));
    }
  }

  Rng rng_;
  GenOptions o_;
  Program p_[2];
  std::vector<TypeId> types_[2];
  DType dtype_ = DType::F32;
  std::vector<Symbol> base_;
  struct Factor {
    Symbol d, hi, lo;
  };
  std::vector<Factor> factors_;
  struct Twin {
    Symbol d, d2;
  };
  std::vector<Twin> twins_;
  std::vector<Value> pool_;
  int inputs_ = 0;
  int rewritten_ = 0;
};

}  // namespace

GeneratedProgram generate_program(uint64_t seed, const GenOptions& options) {
  return Generator(seed, options).run(seed);
}

}  // namespace eqf::testgen
