#include "reduce.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "eqiforge/ir/diagnostic.h"
#include "walk.h"

namespace eqf::interp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// max that propagates NaN in either operand (std::max and fmax would hide one).
inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return a < b ? b : a;
}

// Where the states being folded come from: state k of a component starts at
// data + k * step and is laid out, seen from the component's accumulator,
// with `strides`.
struct Source {
  const double* data = nullptr;
  std::vector<int64_t> strides;
  int64_t step = 0;
};

// Another component read by a repair (the max of an exp-sum, the count and
// the mean of a Welford merge), broadcast by name into this component's
// index space: both its accumulated state and its incoming state.
struct Ref {
  size_t comp = 0;
  std::vector<int64_t> acc_strides;
  std::vector<int64_t> src_strides;
};

Ref make_ref(size_t i, size_t j, const char* role, const std::vector<Tile>& acc,
             const std::vector<Source>& src) {
  std::vector<int> pos;
  try {
    pos = positions_in(acc[j], acc[i]);
  } catch (const Error& e) {
    throw Error("interpreter: component " + std::to_string(i) + " of the reduction reads its " + role +
                " from component " + std::to_string(j) + ", which does not broadcast into it (" +
                e.message() + ")");
  }
  return Ref{j, remap(acc[j].strides, pos), remap(src[j].strides, pos)};
}

// Folds `steps` states into the accumulators, component by component, with
// the combine of DESIGN §2.5 (table in docs/ir.md). Every new state is
// computed from the old ones of all components before any is replaced: the
// repairs read the other components' values from before the step.
void fold(const Reduction& r, std::vector<Tile>& acc, const std::vector<Source>& src, int64_t steps) {
  const size_t n = r.arity();
  std::vector<std::vector<double>> next(n);
  std::vector<Ref> ref0(n), ref1(n);
  for (size_t i = 0; i < n; ++i) {
    acc[i].data.assign(acc[i].data.size(), r.identity(i));
    next[i].resize(acc[i].data.size());
    const RedComponent& c = r.components[i];
    switch (c.repair) {
      case Repair::None:
        break;
      case Repair::ExpSum:
        ref0[i] = make_ref(i, c.arg0, "max", acc, src);
        break;
      case Repair::WelfordMean:
        ref0[i] = make_ref(i, c.arg0, "count", acc, src);
        break;
      case Repair::WelfordM2:
        ref0[i] = make_ref(i, c.arg0, "count", acc, src);
        ref1[i] = make_ref(i, c.arg1, "mean", acc, src);
        break;
    }
  }
  for (int64_t k = 0; k < steps; ++k) {
    for (size_t i = 0; i < n; ++i) {
      const RedComponent& c = r.components[i];
      const Tile& t = acc[i];
      const int64_t* ts = t.strides.data();
      double* out = next[i].data();
      const double* a = t.data.data();
      const double* b = src[i].data + k * src[i].step;
      const int64_t* bs = src[i].strides.data();
      switch (c.repair) {
        case Repair::None:
          if (c.base == RedBase::Add) {
            walk<3>(t.shape, {ts, ts, bs},
                    [&](const auto& o, const int64_t*) { out[o[0]] = a[o[1]] + b[o[2]]; });
          } else {
            walk<3>(t.shape, {ts, ts, bs},
                    [&](const auto& o, const int64_t*) { out[o[0]] = nan_max(a[o[1]], b[o[2]]); });
          }
          break;
        case Repair::ExpSum: {
          // s = s_a·exp(m_a − m) + s_b·exp(m_b − m), m = max(m_a, m_b); a side
          // whose max is −inf (no element yet) contributes 0, not 0·exp(NaN).
          const Ref& m = ref0[i];
          const double* ma = acc[m.comp].data.data();
          const double* mb = src[m.comp].data + k * src[m.comp].step;
          walk<5>(t.shape, {ts, ts, bs, m.acc_strides.data(), m.src_strides.data()},
                  [&](const auto& o, const int64_t*) {
                    const double xa = ma[o[3]], xb = mb[o[4]];
                    const double mx = nan_max(xa, xb);
                    const double ta = xa == kNegInf ? 0.0 : a[o[1]] * std::exp(xa - mx);
                    const double tb = xb == kNegInf ? 0.0 : b[o[2]] * std::exp(xb - mx);
                    out[o[0]] = ta + tb;
                  });
          break;
        }
        case Repair::WelfordMean: {
          // A side with count 0 (an empty block: its mean is 0/0) contributes
          // nothing, as a side with max −inf does to an exp-sum.
          const Ref& cnt = ref0[i];
          const double* na = acc[cnt.comp].data.data();
          const double* nb = src[cnt.comp].data + k * src[cnt.comp].step;
          walk<5>(t.shape, {ts, ts, bs, cnt.acc_strides.data(), cnt.src_strides.data()},
                  [&](const auto& o, const int64_t*) {
                    const double wa = na[o[3]], wb = nb[o[4]];
                    const double w = wa + wb;
                    const double ta = wa == 0 ? 0.0 : wa * a[o[1]];
                    const double tb = wb == 0 ? 0.0 : wb * b[o[2]];
                    out[o[0]] = w == 0 ? 0.0 : (ta + tb) / w;
                  });
          break;
        }
        case Repair::WelfordM2: {
          // Chan's merge: M2 = M2_a + M2_b + (mean_b − mean_a)²·n_a·n_b / n;
          // again a side with count 0 contributes nothing (its mean is NaN).
          const Ref& cnt = ref0[i];
          const Ref& mean = ref1[i];
          const double* na = acc[cnt.comp].data.data();
          const double* nb = src[cnt.comp].data + k * src[cnt.comp].step;
          const double* ua = acc[mean.comp].data.data();
          const double* ub = src[mean.comp].data + k * src[mean.comp].step;
          walk<7>(t.shape,
                  {ts, ts, bs, cnt.acc_strides.data(), cnt.src_strides.data(), mean.acc_strides.data(),
                   mean.src_strides.data()},
                  [&](const auto& o, const int64_t*) {
                    const double wa = na[o[3]], wb = nb[o[4]];
                    const double w = wa + wb;
                    if (wa == 0 || wb == 0) {
                      out[o[0]] = (wa == 0 ? 0.0 : a[o[1]]) + (wb == 0 ? 0.0 : b[o[2]]);
                    } else {
                      const double delta = ub[o[6]] - ua[o[5]];
                      out[o[0]] = a[o[1]] + b[o[2]] + delta * delta * wa * wb / w;
                    }
                  });
          break;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) std::swap(acc[i].data, next[i]);
  }
}

void check_arity(const Reduction& r, const Value& x, const Type& type, const char* op) {
  if (x.parts.size() != r.arity() || type.parts.size() != r.arity())
    throw Error(std::string("interpreter: ") + op + " with a reduction of " + std::to_string(r.arity()) +
                " components over a value of " + std::to_string(x.parts.size()) + " components");
}

}  // namespace

Value reduce_dim(Symbol d, RedId rid, const Value& x, const Type& type, const Sizes& s) {
  const Reduction& r = rid.get();
  check_arity(r, x, type, "reduce");
  const size_t n = r.arity();
  Value out;
  out.is_tuple = type.is_tuple;
  std::vector<std::vector<double>> masked(n);
  std::vector<Source> src(n);
  int64_t steps = -1;
  for (size_t i = 0; i < n; ++i) {
    const Tile& xi = x.parts[i];
    const int dpos = xi.dim_pos(d);
    if (dpos < 0)
      throw Error("interpreter: reduce over " + std::string(d.str()) + " of a component without that dim");
    out.parts.push_back(make_tile(type.parts[i], s));
    // Positions past the end of a ragged block along d count as the identity.
    const double* data = xi.data.data();
    if (xi.valid_of(d).partitioned()) {
      masked[i] = masked_along(xi, d, r.identity(i));
      data = masked[i].data();
    }
    src[i] = Source{data, broadcast_strides(xi, out.parts[i], dpos), xi.strides[size_t(dpos)]};
    if (steps >= 0 && steps != xi.shape[size_t(dpos)])
      throw Error("interpreter: the components of a reduce over " + std::string(d.str()) +
                  " have different local extents of it");
    steps = xi.shape[size_t(dpos)];
  }
  fold(r, out.parts, src, steps);
  return out;
}

Value reduce_axis(Axis p, RedId rid, const Value& x, const Type& type, const Sizes& s) {
  const Reduction& r = rid.get();
  check_arity(r, x, type, "preduce");
  const size_t n = r.arity();
  Value out;
  out.is_tuple = type.is_tuple;
  std::vector<Source> src(n);
  const int64_t steps = s.coords(p);
  for (size_t i = 0; i < n; ++i) {
    const Tile& xi = x.parts[i];
    const int ppos = xi.axis_pos(p);
    if (ppos < 0) throw Error("interpreter: preduce over " + p.name() + " of a component without that axis");
    out.parts.push_back(make_tile(type.parts[i], s));
    src[i] = Source{xi.data.data(), broadcast_strides(xi, out.parts[i], ppos), xi.strides[size_t(ppos)]};
  }
  fold(r, out.parts, src, steps);
  return out;
}

}  // namespace eqf::interp
