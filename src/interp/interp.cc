// The reference interpreter: evaluates every node reachable from the outputs,
// children first (node ids grow bottom-up), as dense per-coordinate tiles
// (value.h), and frees each value after its last use.
#include "eqiforge/interp/interp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <span>
#include <string>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/fold.h"
#include "evaluate.h"
#include "reduce.h"
#include "value.h"
#include "walk.h"

namespace eqf {
namespace {

using interp::broadcast_strides;
using interp::make_tile;
using interp::positions_in;
using interp::remap;
using interp::Sizes;
using interp::Tile;
using interp::ValidPrefix;
using interp::Value;
using interp::walk;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- pointwise ----------------------------------------------------------------

// NaN in any operand gives NaN, also for predicates, max2/min2 and where's
// condition: IEEE comparisons would turn padding into a clean 0 or 1 and hide
// a leak.
struct Pointwise {
  Op op;
  double c = 0;           // pow's exponent
  DType to = DType::F64;  // cast's target

  double operator()(double x, double y, double z) const {
    // clang-format off
    switch (op) {
      case Op::Add: return x + y;
      case Op::Sub: return x - y;
      case Op::Mul: return x * y;
      case Op::Div: return x / y;
      case Op::Max2: return std::isnan(x) || std::isnan(y) ? kNaN : (x < y ? y : x);
      case Op::Min2: return std::isnan(x) || std::isnan(y) ? kNaN : (y < x ? y : x);
      case Op::Neg: return -x;
      case Op::Exp: return std::exp(x);
      case Op::Log: return std::log(x);
      case Op::Sqrt: return std::sqrt(x);
      case Op::Rsqrt: return 1.0 / std::sqrt(x);
      case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
      case Op::Silu: return x / (1.0 + std::exp(-x));
      case Op::Gelu: return gelu_value(x);  // erfc form (fuzzer seed 908581)
      case Op::Tanh: return std::tanh(x);
      case Op::Pow: return std::pow(x, c);
      case Op::Cast:
        // Only the integer and boolean targets change values; float casts
        // are exact in float64 by design (dtypes only constrain typing).
        if (to == DType::I32) return std::trunc(x);
        if (to == DType::Bool) return std::isnan(x) ? kNaN : (x != 0 ? 1.0 : 0.0);
        return x;
      case Op::Lt: return std::isnan(x) || std::isnan(y) ? kNaN : (x < y ? 1.0 : 0.0);
      case Op::Le: return std::isnan(x) || std::isnan(y) ? kNaN : (x <= y ? 1.0 : 0.0);
      case Op::Eq: return std::isnan(x) || std::isnan(y) ? kNaN : (x == y ? 1.0 : 0.0);
      case Op::Where: return std::isnan(x) ? kNaN : (x != 0 ? y : z);
      default:
        return kNaN;  // unreachable: eval_node dispatches only pointwise ops here
    }
    // clang-format on
  }
};

Tile eval_pointwise(const Pointwise& f, std::span<const Tile* const> args, const TensorType& type,
                    const Sizes& s) {
  Tile out = make_tile(type, s);
  std::vector<int64_t> st[3];
  for (size_t i = 0; i < args.size(); ++i) st[i] = broadcast_strides(*args[i], out);
  const int64_t* os = out.strides.data();
  double* o = out.data.data();
  switch (args.size()) {
    case 1: {
      const double* a = args[0]->data.data();
      walk<2>(out.shape, {os, st[0].data()},
              [&](const auto& k, const int64_t*) { o[k[0]] = f(a[k[1]], 0, 0); });
      break;
    }
    case 2: {
      const double* a = args[0]->data.data();
      const double* b = args[1]->data.data();
      walk<3>(out.shape, {os, st[0].data(), st[1].data()},
              [&](const auto& k, const int64_t*) { o[k[0]] = f(a[k[1]], b[k[2]], 0); });
      break;
    }
    case 3: {
      const double* a = args[0]->data.data();
      const double* b = args[1]->data.data();
      const double* c = args[2]->data.data();
      walk<4>(out.shape, {os, st[0].data(), st[1].data(), st[2].data()},
              [&](const auto& k, const int64_t*) { o[k[0]] = f(a[k[1]], b[k[2]], c[k[3]]); });
      break;
    }
    default:
      throw Error("interpreter: a pointwise op with " + std::to_string(args.size()) + " operands");
  }
  return out;
}

// ---- contraction ----------------------------------------------------------------

// Σ_k A·B over the valid positions of k only: padding of a ragged k block is
// the identity 0, whatever the partition loaded there.
Tile eval_matmul(Symbol k, const Tile& a, const Tile& b, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int ka = a.dim_pos(k), kb = b.dim_pos(k);
  if (ka < 0 || kb < 0) throw Error("interpreter: a contraction operand lacks dim " + std::string(k.str()));
  const int64_t n = a.shape[size_t(ka)];
  if (b.shape[size_t(kb)] != n)
    throw Error("interpreter: the operands of a contraction over " + std::string(k.str()) +
                " have different local extents of it");
  const std::vector<int64_t> sa = broadcast_strides(a, out, ka), sb = broadcast_strides(b, out, kb);
  const int64_t ska = a.strides[size_t(ka)], skb = b.strides[size_t(kb)];
  const ValidPrefix va = interp::rebase(a.valid_of(k), out), vb = interp::rebase(b.valid_of(k), out);
  const double* pa = a.data.data();
  const double* pb = b.data.data();
  double* o = out.data.data();
  walk<3>(out.shape, {out.strides.data(), sa.data(), sb.data()}, [&](const auto& off, const int64_t* idx) {
    int64_t m = n;
    if (va.partitioned()) m = std::min(m, va.length(idx));
    if (vb.partitioned()) m = std::min(m, vb.length(idx));
    double acc = 0;
    for (int64_t j = 0; j < m; ++j) acc += pa[off[1] + j * ska] * pb[off[2] + j * skb];
    o[off[0]] = acc;
  });
  return out;
}

// ---- data movement --------------------------------------------------------------

// out[i] = src[Σ i·strides] over out's whole index space.
void gather(Tile& out, const double* src, const std::vector<int64_t>& strides) {
  double* o = out.data.data();
  walk<2>(out.shape, {out.strides.data(), strides.data()},
          [&](const auto& k, const int64_t*) { o[k[0]] = src[k[1]]; });
}

int need_dim(const Tile& t, Symbol d, const char* op) {
  const int pos = t.dim_pos(d);
  if (pos < 0)
    throw Error(std::string("interpreter: ") + op + " of a value without dim " + std::string(d.str()));
  return pos;
}

int need_axis(const Tile& t, Axis p, const char* op) {
  const int pos = t.axis_pos(p);
  if (pos < 0) throw Error(std::string("interpreter: ") + op + " of a value without axis " + p.name());
  return pos;
}

// split(d → d1 d2): element (i1, i2) is element i1·extent(d2) + i2 of d.
Tile eval_split(Symbol d, Symbol d1, Symbol d2, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int dp = need_dim(x, d, "split");
  std::vector<int64_t> st = broadcast_strides(x, out, dp);
  const int p1 = need_dim(out, d1, "split"), p2 = need_dim(out, d2, "split");
  const int64_t e2 = out.shape[size_t(p2)];
  if (out.shape[size_t(p1)] * e2 != x.shape[size_t(dp)])
    throw Error("interpreter: split of " + std::string(d.str()) + " whose extent is not extent(" +
                std::string(d1.str()) + ")·extent(" + std::string(d2.str()) + ")");
  st[size_t(p1)] = e2 * x.strides[size_t(dp)];
  st[size_t(p2)] = x.strides[size_t(dp)];
  gather(out, x.data.data(), st);
  return out;
}

// merge(d1 d2 → d): the inverse of split, written as a scatter from x.
Tile eval_merge(Symbol d1, Symbol d2, Symbol d, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int dp = need_dim(out, d, "merge");
  const int p1 = need_dim(x, d1, "merge"), p2 = need_dim(x, d2, "merge");
  const int64_t e2 = x.shape[size_t(p2)];
  if (x.shape[size_t(p1)] * e2 != out.shape[size_t(dp)])
    throw Error("interpreter: merge into " + std::string(d.str()) + " whose extent is not extent(" +
                std::string(d1.str()) + ")·extent(" + std::string(d2.str()) + ")");
  std::vector<int64_t> ost = remap(out.strides, positions_in(out, x, dp));
  ost[size_t(p1)] = e2 * out.strides[size_t(dp)];
  ost[size_t(p2)] = out.strides[size_t(dp)];
  const double* src = x.data.data();
  double* o = out.data.data();
  walk<2>(x.shape, {x.strides.data(), ost.data()},
          [&](const auto& k, const int64_t*) { o[k[1]] = src[k[0]]; });
  return out;
}

Tile eval_rename(Symbol d, Symbol d2, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int dp = need_dim(x, d, "rename");
  std::vector<int64_t> st = broadcast_strides(x, out, dp);
  st[size_t(need_dim(out, d2, "rename"))] = x.strides[size_t(dp)];
  gather(out, x.data.data(), st);
  return out;
}

// partition(p, d): coordinate c of p sees positions c·B_p + j of x's d.
// Positions past the end of what p splits, or past the end of the dim, read
// NaN: padding that a later operator leaks shows up.
Tile eval_partition(Axis p, Symbol d, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int xd = need_dim(x, d, "partition");
  if (x.shape[size_t(xd)] != s.split_size(p))
    throw Error("interpreter: partition on " + p.name() + " of a value whose local extent of " +
                std::string(d.str()) + " is not what the axis splits");
  const int pp = need_axis(out, p, "partition");
  const int od = need_dim(out, d, "partition");
  std::vector<int64_t> st = broadcast_strides(x, out, xd);
  st[size_t(pp)] = s.block(p) * x.strides[size_t(xd)];
  st[size_t(od)] = x.strides[size_t(xd)];
  const ValidPrefix& v = out.valid_of(d);
  const double* src = x.data.data();
  double* o = out.data.data();
  walk<2>(out.shape, {out.strides.data(), st.data()},
          [&](const auto& k, const int64_t* idx) { o[k[0]] = idx[od] < v.length(idx) ? src[k[1]] : kNaN; });
  return out;
}

Tile eval_replicate(const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  gather(out, x.data.data(), broadcast_strides(x, out));
  return out;
}

// combine(p, d): block c of p lands at c·B_p along d; positions of the last
// block past the end of d are dropped.
Tile eval_combine(Axis p, Symbol d, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int xp = need_axis(x, p, "combine");
  const int xd = need_dim(x, d, "combine");
  const int od = need_dim(out, d, "combine");
  const int64_t b = x.shape[size_t(xd)];
  const int64_t e = out.shape[size_t(od)];
  if (x.shape[size_t(xp)] * b < e)
    throw Error("interpreter: combine on " + p.name() + " whose blocks do not cover " + std::string(d.str()));
  std::vector<int64_t> ost = remap(out.strides, positions_in(out, x, od));
  ost[size_t(xp)] = b * out.strides[size_t(od)];
  ost[size_t(xd)] = out.strides[size_t(od)];
  const double* src = x.data.data();
  double* o = out.data.data();
  walk<2>(x.shape, {x.strides.data(), ost.data()}, [&](const auto& k, const int64_t* idx) {
    if (idx[xp] * b + idx[xd] < e) o[k[1]] = src[k[0]];
  });
  return out;
}

// collect(p): coordinate c of p becomes index c of the stored dim c_p.
Tile eval_collect(Axis p, const Tile& x, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  const int xp = need_axis(x, p, "collect");
  const int oc = need_dim(out, p.collected_dim(), "collect");
  if (out.shape[size_t(oc)] != x.shape[size_t(xp)])
    throw Error("interpreter: collect on " + p.name() +
                ": the collected dim's extent is not the coordinate count");
  std::vector<int64_t> st = broadcast_strides(x, out, xp);
  st[size_t(oc)] = x.strides[size_t(xp)];
  gather(out, x.data.data(), st);
  return out;
}

// ---- leaves -----------------------------------------------------------------------

Tile eval_input(const Tensor64& in, const TensorType& type, const Sizes& s) {
  Tile out = make_tile(type, s);
  // Row-major strides of the given layout, looked up by dim name.
  std::vector<int64_t> in_strides(in.dims.size(), 1);
  for (size_t i = in.dims.size(); i-- > 1;) in_strides[i - 1] = in_strides[i] * in.shape[i];
  std::vector<int64_t> st(out.rank(), 0);
  for (size_t i = 0; i < out.dims.size(); ++i) {
    const auto it = std::find(in.dims.begin(), in.dims.end(), out.dims[i]);
    st[out.axes.size() + i] = in_strides[size_t(it - in.dims.begin())];
  }
  gather(out, in.data.data(), st);
  return out;
}

// ---- checks of the arguments ----------------------------------------------------

std::string dims_text(const std::vector<Symbol>& dims, const std::vector<int64_t>* shape = nullptr) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += " ";
    s += dims[i].str();
    if (shape) s += "=" + std::to_string((*shape)[i]);
  }
  return s + "]";
}

void check_blocks(const Program& p, const BlockSizes& blocks) {
  for (size_t i = 0; i < p.size(); ++i) {
    const Node& n = p.node(NodeId{uint32_t(i)});
    if (!op_has(n.op, kParallel) && !op_has(n.op, kStorage)) continue;
    const Axis a = attr_axis(n.attrs, 0);
    auto it = blocks.find(a);
    const std::string name = a.name();
    if (it == blocks.end())
      throw Error(p.file, n.loc, "no block size for axis " + name + "; pass --block " + name + "=N");
    if (it->second < 1)
      throw Error(
          p.file, n.loc,
          "block size of axis " + name + " is " + std::to_string(it->second) + "; expected at least 1");
  }
}

void check_inputs(const Program& p, const std::vector<Tensor64>& inputs, const Sizes& s) {
  const auto& decls = p.inputs();
  if (inputs.size() != decls.size()) {
    std::string names;
    for (const InputDecl& d : decls) names += (names.empty() ? "" : ", ") + std::string(d.name.str());
    throw Error(p.file, {},
                "expected " + std::to_string(decls.size()) + " inputs (" + names + "), got " +
                    std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < decls.size(); ++i) {
    const InputDecl& d = decls[i];
    const Tensor64& t = inputs[i];
    std::vector<int64_t> want;
    for (Symbol dim : d.layout) want.push_back(s.extent(dim));
    bool ok = t.dims.size() == d.layout.size() && t.shape.size() == t.dims.size();
    int64_t numel = 1;
    for (size_t j = 0; ok && j < t.dims.size(); ++j) {
      // Any order of the declared dims is accepted: a Tensor64 names its dims.
      const auto it = std::find(d.layout.begin(), d.layout.end(), t.dims[j]);
      ok = it != d.layout.end() && t.shape[j] == want[size_t(it - d.layout.begin())] &&
           std::count(t.dims.begin(), t.dims.end(), t.dims[j]) == 1;
      if (ok && __builtin_mul_overflow(numel, t.shape[j], &numel)) ok = false;  // a shape past int64 is wrong
    }
    if (!ok)
      throw Error(p.file, d.loc,
                  "input " + std::string(d.name.str()) + " (argument " + std::to_string(i + 1) +
                      "): expected " + dims_text(d.layout, &want) + ", got " + dims_text(t.dims, &t.shape));
    if (int64_t(t.data.size()) != numel)
      throw Error(p.file, d.loc,
                  "input " + std::string(d.name.str()) + ": shape " + dims_text(t.dims, &t.shape) + " has " +
                      std::to_string(numel) + " elements but the data has " + std::to_string(t.data.size()));
  }
}

Tensor64 to_tensor(const Tile& t, const OutputDecl& out, const Program& p) {
  if (!t.axes.empty())
    throw Error(p.file, out.loc, "output " + std::string(out.name.str()) + " still has parallel axes");
  Tensor64 r;
  r.dims = out.layout;
  std::vector<int64_t> st;
  for (Symbol d : out.layout) {
    const int pos = t.dim_pos(d);
    if (pos < 0 || std::count(out.layout.begin(), out.layout.end(), d) != 1)
      throw Error(p.file, out.loc,
                  "output " + std::string(out.name.str()) + ": layout " + dims_text(out.layout) +
                      " is not a permutation of its dims " + dims_text(t.dims));
    r.shape.push_back(t.shape[size_t(pos)]);
    st.push_back(t.strides[size_t(pos)]);
  }
  if (r.dims.size() != t.dims.size())
    throw Error(p.file, out.loc,
                "output " + std::string(out.name.str()) + ": layout " + dims_text(out.layout) +
                    " is not a permutation of its dims " + dims_text(t.dims));
  int64_t n = 1;
  for (int64_t e : r.shape) n *= e;
  r.data.resize(size_t(n));
  double* o = r.data.data();
  const double* src = t.data.data();
  int64_t i = 0;
  walk<1>(r.shape, {st.data()}, [&](const auto& k, const int64_t*) { o[i++] = src[k[0]]; });
  return r;
}

// ---- dispatch ------------------------------------------------------------------

Value tensor_value(Tile t) {
  Value v;
  v.parts.push_back(std::move(t));
  return v;
}

Value eval_node(const Program& p, NodeId id, const std::vector<Value>& vals,
                const std::vector<Tensor64>& inputs, const std::vector<int>& input_index, const Sizes& s) {
  const Node& n = p.node(id);
  const Type& type = p.type(id).get();
  const auto kids = p.children(id);
  auto arg = [&](size_t i) -> const Tile& {
    const Value& v = vals[kids[i].v];
    if (v.is_tuple) throw Error("interpreter: " + std::string(op_info(n.op).name) + " of a tuple");
    return v.tensor();
  };
  auto tt = [&]() -> const TensorType& { return type.tensor(); };
  switch (n.op) {
    case Op::Input:
      return tensor_value(eval_input(inputs[size_t(input_index[id.v])], tt(), s));
    case Op::Const: {
      Tile t = make_tile(tt(), s);
      std::fill(t.data.begin(), t.data.end(), attr_f64(n.attrs));
      return tensor_value(std::move(t));
    }
    case Op::Iota: {
      Tile t = make_tile(tt(), s);
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = double(i);
      return tensor_value(std::move(t));
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max2:
    case Op::Min2:
    case Op::Neg:
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sigmoid:
    case Op::Silu:
    case Op::Gelu:
    case Op::Tanh:
    case Op::Pow:
    case Op::Cast:
    case Op::Lt:
    case Op::Le:
    case Op::Eq:
    case Op::Where: {
      Pointwise f{n.op};
      if (n.op == Op::Pow) f.c = attr_f64(n.attrs);
      if (n.op == Op::Cast) f.to = attr_dtype(n.attrs, 0);
      const Tile* args[3] = {nullptr, nullptr, nullptr};
      for (size_t i = 0; i < kids.size() && i < 3; ++i) args[i] = &arg(i);
      return tensor_value(
          eval_pointwise(f, std::span<const Tile* const>(args, std::min<size_t>(kids.size(), 3)), tt(), s));
    }
    case Op::Reduce:
      return interp::reduce_dim(attr_sym(n.attrs, 0), attr_red(n.attrs, 1), vals[kids[0].v], type, s);
    case Op::MatMul:
    case Op::TileMatMul:
      return tensor_value(eval_matmul(attr_sym(n.attrs, 0), arg(0), arg(1), tt(), s));
    case Op::Split:
      return tensor_value(
          eval_split(attr_sym(n.attrs, 0), attr_sym(n.attrs, 1), attr_sym(n.attrs, 2), arg(0), tt(), s));
    case Op::Merge:
      return tensor_value(
          eval_merge(attr_sym(n.attrs, 0), attr_sym(n.attrs, 1), attr_sym(n.attrs, 2), arg(0), tt(), s));
    case Op::Rename:
      return tensor_value(eval_rename(attr_sym(n.attrs, 0), attr_sym(n.attrs, 1), arg(0), tt(), s));
    case Op::Partition:
      return tensor_value(eval_partition(attr_axis(n.attrs, 0), attr_sym(n.attrs, 1), arg(0), tt(), s));
    case Op::Replicate:
      return tensor_value(eval_replicate(arg(0), tt(), s));
    case Op::Combine:
      return tensor_value(eval_combine(attr_axis(n.attrs, 0), attr_sym(n.attrs, 1), arg(0), tt(), s));
    case Op::PReduce:
      return interp::reduce_axis(attr_axis(n.attrs, 0), attr_red(n.attrs, 1), vals[kids[0].v], type, s);
    case Op::Collect: {
      // Tuples too: flash-decoding stores the whole (m, l, o) state per coordinate.
      const Value& x = vals[kids[0].v];
      Value v;
      v.is_tuple = x.is_tuple;
      for (size_t i = 0; i < x.parts.size(); ++i)
        v.parts.push_back(eval_collect(attr_axis(n.attrs, 0), x.parts[i], type.parts.at(i), s));
      return v;
    }
    case Op::Tuple: {
      Value v;
      v.is_tuple = true;
      for (size_t i = 0; i < kids.size(); ++i) v.parts.push_back(arg(i));
      return v;
    }
    case Op::Proj: {
      const Value& x = vals[kids[0].v];
      const uint32_t i = n.attrs[0];
      if (!x.is_tuple || i >= x.parts.size())
        throw Error("interpreter: proj " + std::to_string(i) + " of a value with " +
                    std::to_string(x.parts.size()) + " components");
      return tensor_value(x.parts[i]);
    }
  }
  throw Error("interpreter: unknown op");
}

// ---- rounding noise -------------------------------------------------------------

double unit_roundoff(DType t) {
  switch (t) {
    case DType::F64:
      return 0x1p-53;
    case DType::F32:
      return 0x1p-24;
    case DType::F16:
      return 0x1p-11;
    case DType::BF16:
      return 0x1p-8;
    default:
      return 0;  // i32 and bool are exact
  }
}

// Whether component `part` of node n's result is rounded when a kernel
// computes it in its dtype (RoundingNoise): arithmetic, casts (to the
// target's precision), sums and contractions. Selections and data movement
// only pass values on, so a kernel's x - max(x) is exactly 0 at the max.
bool rounds(const Node& n, size_t part) {
  switch (n.op) {
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sigmoid:
    case Op::Silu:
    case Op::Gelu:
    case Op::Tanh:
    case Op::Pow:
    case Op::Cast:
    case Op::MatMul:
    case Op::TileMatMul:
      return true;
    case Op::Reduce:
    case Op::PReduce: {
      const Reduction& r = attr_red(n.attrs, 1).get();
      if (part >= r.arity()) return true;
      return r.components[part].base == RedBase::Add || r.components[part].repair != Repair::None;
    }
    default:
      return false;
  }
}

// splitmix64: a counter-based stream, so a node's draws depend on the seed and
// its id only.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void add_rounding(const Node& n, NodeId id, const Type& type, Value& v, const RoundingNoise& noise) {
  uint64_t state = noise.seed ^ (uint64_t(id.v) + 1) * 0xd1b54a32d192ed03ull;
  for (size_t i = 0; i < v.parts.size() && i < type.parts.size(); ++i) {
    const double step = noise.scale * unit_roundoff(type.parts[i].dtype);
    if (step == 0 || type.parts[i].literal || !rounds(n, i)) continue;  // folded literals are constants
    for (double& x : v.parts[i].data) {
      const double r = double(splitmix64(state) >> 11) * 0x1p-52 - 1.0;  // uniform in [-1, 1)
      x += x * (step * r);  // not x·(1 + step·r): 1 + 2^-53·r is 1 again in float64
    }
  }
}

}  // namespace

std::vector<Axis> axes_of(const Program& p) {
  std::vector<Axis> axes;
  for (size_t i = 0; i < p.size(); ++i) {
    const Node& n = p.node(NodeId{uint32_t(i)});
    if (op_has(n.op, kParallel) || op_has(n.op, kStorage)) axes.push_back(attr_axis(n.attrs, 0));
  }
  // Declaration order of the dims, then level: stable across processes
  // (symbol ids are not) and outer levels before inner ones.
  std::sort(axes.begin(), axes.end(), [&](Axis a, Axis b) {
    const int oa = p.dims.order(a.dim), ob = p.dims.order(b.dim);
    if (oa != ob) return oa < ob;
    if (a.dim != b.dim) return a.dim < b.dim;
    return a.level < b.level;
  });
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

namespace interp {

std::vector<Value> evaluate_roots(const Program& p, const std::vector<Tensor64>& inputs,
                                  const BlockSizes& blocks, std::span<const NodeId> roots,
                                  const RoundingNoise& rounding) {
  if (p.types().size() != p.size())
    throw Error(p.file, {},
                "program " + std::string(p.name.valid() ? p.name.str() : "") +
                    " has no types; type-check it before evaluating");
  check_blocks(p, blocks);
  const Sizes s(p, blocks);
  check_inputs(p, inputs, s);

  std::vector<int> input_index(p.size(), -1);
  for (size_t i = 0; i < p.inputs().size(); ++i) input_index[p.inputs()[i].node.v] = int(i);

  // Reachable nodes and their remaining uses; roots keep theirs to the end.
  std::vector<uint32_t> uses(p.size(), 0);
  std::vector<char> live(p.size(), 0);
  for (NodeId r : roots) {
    if (r.v >= p.size()) throw Error("interpreter: node " + std::to_string(r.v) + " is not in the program");
    live[r.v] = 1;
    ++uses[r.v];
  }
  for (size_t i = p.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (NodeId c : p.children(NodeId{uint32_t(i)})) {
      live[c.v] = 1;
      ++uses[c.v];
    }
  }

  std::vector<Value> vals(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (!live[i]) continue;
    const NodeId id{uint32_t(i)};
    try {
      vals[i] = eval_node(p, id, vals, inputs, input_index, s);
      if (rounding.scale != 0) add_rounding(p.node(id), id, p.type(id).get(), vals[i], rounding);
    } catch (const Error& e) {
      if (e.loc().line != 0) throw;
      throw Error(p.file, p.node(id).loc, e.message());
    }
    for (NodeId c : p.children(id))
      if (--uses[c.v] == 0) vals[c.v] = Value{};
  }

  std::vector<Value> out;
  for (NodeId r : roots) out.push_back(vals[r.v]);
  return out;
}

}  // namespace interp

std::vector<Tensor64> evaluate(const Program& p, const std::vector<Tensor64>& inputs,
                               const BlockSizes& blocks, const RoundingNoise& rounding) {
  std::vector<NodeId> roots;
  for (const OutputDecl& o : p.outputs()) roots.push_back(o.value);
  const std::vector<Value> vals = interp::evaluate_roots(p, inputs, blocks, roots, rounding);
  std::vector<Tensor64> out;
  for (size_t i = 0; i < roots.size(); ++i) {
    const OutputDecl& o = p.outputs()[i];
    if (vals[i].is_tuple) throw Error(p.file, o.loc, "output " + std::string(o.name.str()) + " is a tuple");
    out.push_back(to_tensor(vals[i].tensor(), o, p));
  }
  return out;
}

}  // namespace eqf
