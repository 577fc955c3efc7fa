// One Triton emitter per operator, dispatched from the op table (ops.def):
// an operator added there without an emitter here fails to compile.
//
// Emitters receive their operands' tile values and return the node's value
// as an expression; the kernel emitter decides whether it becomes a variable.
// Structural operators (partition, combine, preduce, collect, leaves) are
// formed by the kernel former and the kernel emitter, not here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "codegen/triton_emit.h"
#include "eqiforge/lower/dot_shape.h"

namespace eqf::codegen {
namespace {

using Kids = std::span<const TileTuple>;

const Value& one(Kids kids, size_t i) { return kids[i].parts.front(); }
TileTuple single(Value v) { return TileTuple{{std::move(v)}}; }

bool all_zero_padded(std::initializer_list<const Value*> values, const std::vector<DimView>& dims) {
  for (const Value* v : values) {
    if (v->literal) continue;
    if (!v->zero_padded || v->dims != dims) return false;
  }
  return true;
}

[[noreturn]] TileTuple structural(KernelEmitter& k, NodeId n) {
  k.fail(n, std::string(op_info(k.program().node(n).op).name) +
                " reached the op emitters; it is formed by the kernel former (a bug)");
}

// ---- leaves and structure --------------------------------------------------------

TileTuple emit_Input(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
TileTuple emit_Const(KernelEmitter& k, NodeId n, Kids) {
  return single(k.literal(fold_literal(k.program(), n)));
}
TileTuple emit_Iota(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
TileTuple emit_Partition(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
TileTuple emit_Combine(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
TileTuple emit_PReduce(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
TileTuple emit_Collect(KernelEmitter& k, NodeId n, Kids) { structural(k, n); }
// replicate(p, X) of a value computed in the kernel: X does not vary with p.
TileTuple emit_Replicate(KernelEmitter&, NodeId, Kids kids) { return kids[0]; }

TileTuple emit_Tuple(KernelEmitter&, NodeId, Kids kids) {
  TileTuple out;
  for (const TileTuple& t : kids) out.parts.push_back(t.parts.front());
  return out;
}
TileTuple emit_Proj(KernelEmitter& k, NodeId n, Kids kids) {
  return single(kids[0].parts.at(size_t(k.program().node(n).attrs[0])));
}

// Layout ops are folded into the addresses of loads; on computed tiles they
// would need register reshapes.
[[noreturn]] TileTuple layout_on_tile(KernelEmitter& k, NodeId n) {
  k.fail(n, std::string(op_info(k.program().node(n).op).name) +
                " of a value computed inside a kernel is not supported; layout ops are supported on "
                "materialized tensors (inputs, buffers), below partition/replicate");
}
TileTuple emit_Split(KernelEmitter& k, NodeId n, Kids) { layout_on_tile(k, n); }
TileTuple emit_Merge(KernelEmitter& k, NodeId n, Kids) { layout_on_tile(k, n); }
TileTuple emit_Rename(KernelEmitter& k, NodeId n, Kids) { layout_on_tile(k, n); }

// ---- pointwise -----------------------------------------------------------------

TileTuple emit_Add(KernelEmitter& k, NodeId, Kids kids) {
  Value v = k.binary(one(kids, 0), "+", kSum, one(kids, 1));
  v.zero_padded = all_zero_padded({&one(kids, 0), &one(kids, 1)}, v.dims) && !one(kids, 0).literal &&
                  !one(kids, 1).literal;
  return single(v);
}
TileTuple emit_Sub(KernelEmitter& k, NodeId, Kids kids) {
  Value v = k.binary(one(kids, 0), "-", kSum, one(kids, 1));
  v.zero_padded = all_zero_padded({&one(kids, 0), &one(kids, 1)}, v.dims) && !one(kids, 0).literal &&
                  !one(kids, 1).literal;
  return single(v);
}
TileTuple emit_Mul(KernelEmitter& k, NodeId, Kids kids) {
  const Value &a = one(kids, 0), &b = one(kids, 1);
  if (a.dtype == DType::Bool && b.dtype == DType::Bool && !a.literal && !b.literal) {
    // A conjunction of masks (`(mul (le t s) (lt (sub s t) W))`): stays boolean.
    const Value* args[] = {&a, &b};
    Value v;
    v.dims = k.union_dims(args);
    v.dtype = DType::Bool;
    auto side = [&](const Value& x) {
      Expr e = k.expand(x, v.dims);
      return e.prec > kAnd ? e.text : "(" + e.text + ")";
    };
    v.expr = Expr{side(a) + " & " + side(b), kAnd};
    return single(v);
  }
  Value v = k.binary(a, "*", kProduct, b);
  // Zero times a finite value: zero-padded values come from loads of finite
  // data, and literals other than inf and nan are finite.
  auto finite = [&](const Value& x) {
    return x.literal ? x.expr.text.find("float(") == std::string::npos : x.zero_padded;
  };
  v.zero_padded =
      (a.zero_padded && a.dims == v.dims && finite(b)) || (b.zero_padded && b.dims == v.dims && finite(a));
  return single(v);
}
TileTuple emit_Div(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.binary(one(kids, 0), "/", kProduct, one(kids, 1)));
}
TileTuple emit_Max2(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.call("tl.maximum", one(kids, 0), one(kids, 1)));
}
TileTuple emit_Min2(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.call("tl.minimum", one(kids, 0), one(kids, 1)));
}
TileTuple emit_Neg(KernelEmitter& k, NodeId, Kids kids) {
  Value x = k.to_float(one(kids, 0));
  Value v = x;
  v.expr = Expr{"-" + (x.expr.prec >= kUnary ? x.expr.text : "(" + x.expr.text + ")"), kUnary};
  return single(v);
}
// Whether n's value is computed from half-precision data (f16, bf16).
bool reads_half_precision(const Program& p, NodeId n) {
  std::vector<NodeId> stack{n};
  std::set<uint32_t> seen;
  while (!stack.empty()) {
    NodeId x = stack.back();
    stack.pop_back();
    if (!seen.insert(x.v).second) continue;
    for (const TensorType& t : p.type(x).get().parts)
      if (t.dtype == DType::F16 || t.dtype == DType::BF16) return true;
    for (NodeId c : p.children(x)) stack.push_back(c);
  }
  return false;
}

// exp(a - b) with b broadcast over a (a row's max against a tile of scores)
// as exp2(a*log2(e) - b*log2(e)): tl.exp of an f32 is exp2(x*log2(e)) already,
// and this way the subtraction folds into a fused multiply-add, one
// instruction per element fewer (b*log2(e) is computed on b's smaller tile).
// The price is the rounding of b*log2(e), relative 2^-24 of |b| where the
// direct form rounds |a - b|: only taken where a comes from half-precision
// data, whose own rounding (2^-11) is larger by far. (The checks hold f32
// programs to 1e-5, and a softmax over logits near 1500 misses that.)
TileTuple emit_Exp(KernelEmitter& k, NodeId n, Kids kids) {
  const Value& x = one(kids, 0);
  NodeId arg = k.program().children(n)[0];
  if (x.dtype == DType::F32 && !x.literal && k.program().node(arg).op == Op::Sub &&
      reads_half_precision(k.program(), k.program().children(arg)[0])) {
    std::span<const NodeId> ab = k.program().children(arg);
    Value a = k.to_float(k.operand(ab[0]).parts.front());
    Value b = k.to_float(k.operand(ab[1]).parts.front());
    if (!a.literal && !b.literal && a.dims == x.dims && b.dims.size() < x.dims.size()) {
      const Value log2e = k.literal(1.4426950408889634);
      return single(k.call("tl.exp2", k.binary(k.binary(a, "*", kProduct, log2e), "-", kSum,
                                               k.binary(b, "*", kProduct, log2e))));
    }
  }
  return single(k.call("tl.exp", x));
}
TileTuple emit_Log(KernelEmitter& k, NodeId, Kids kids) { return single(k.call("tl.log", one(kids, 0))); }
TileTuple emit_Sqrt(KernelEmitter& k, NodeId, Kids kids) { return single(k.call("tl.sqrt", one(kids, 0))); }
TileTuple emit_Rsqrt(KernelEmitter& k, NodeId, Kids kids) { return single(k.call("tl.rsqrt", one(kids, 0))); }
TileTuple emit_Sigmoid(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.call("tl.sigmoid", one(kids, 0)));
}
TileTuple emit_Silu(KernelEmitter& k, NodeId, Kids kids) {
  Value x = k.bind(k.to_float(one(kids, 0)), "silu_in");
  return single(k.binary(x, "*", kProduct, k.call("tl.sigmoid", x)));
}
TileTuple emit_Gelu(KernelEmitter& k, NodeId, Kids kids) {
  // The exact (erf) form, as the reference interpreter computes it:
  // x/2 (1 + erf(x/sqrt 2)). Below 0, 1 + erf cancels (gelu(-5) came out 10%
  // off in f32), so there it is x/2 erfc(|x|/sqrt 2), with erfc from the
  // Chebyshev fit of Numerical Recipes (erfcc: relative error < 1.2e-7 for
  // every argument; triton.language has no erfc).
  Value x = k.bind(k.to_float(one(kids, 0)), "gelu_in");
  Value half_x = k.bind(k.binary(k.literal(0.5), "*", kProduct, x), "gelu_half");
  Value erf = k.call("tl.erf", k.binary(x, "*", kProduct, k.literal(M_SQRT1_2)));
  Value pos = k.binary(half_x, "*", kProduct, k.binary(k.literal(1.0), "+", kSum, erf));
  Value z = k.bind(k.binary(k.call("tl.abs", x), "*", kProduct, k.literal(M_SQRT1_2)), "gelu_z");
  Value t = k.bind(k.binary(k.literal(1.0), "/", kProduct,
                            k.binary(k.literal(1.0), "+", kSum, k.binary(k.literal(0.5), "*", kProduct, z))),
                   "gelu_t");
  Value poly = k.literal(0.17087277);
  for (double c : {-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
                   1.00002368, -1.26551223})
    poly = k.binary(k.literal(c), "+", kSum, k.binary(t, "*", kProduct, poly));
  Value minus_z2 = k.binary(k.literal(0), "-", kSum, k.binary(z, "*", kProduct, z));
  Value erfc = k.binary(t, "*", kProduct, k.call("tl.exp", k.binary(minus_z2, "+", kSum, poly)));
  Value neg = k.binary(half_x, "*", kProduct, erfc);
  return single(k.where(k.compare(x, "<", k.literal(0)), neg, pos));
}
TileTuple emit_Tanh(KernelEmitter& k, NodeId, Kids kids) {
  // triton.language has no portable tanh. 2 sigmoid(2x) - 1 cancels near 0
  // (tanh(1e-6) came out 12% off in f32), and so does (1 - e) / (1 + e) with
  // e = exp(-2|x|): below |x| = 1/4 the odd Taylor polynomial to x^9
  // (relative error < 4e-9), above it sign(x) (1 - e) / (1 + e), whose
  // rounding error is a few ulp there.
  Value x = k.bind(k.to_float(one(kids, 0)), "tanh_in");
  Value ax = k.bind(k.call("tl.abs", x), "tanh_abs");
  Value e = k.bind(k.call("tl.exp", k.binary(k.literal(-2.0), "*", kProduct, ax)), "tanh_e");
  Value far = k.binary(k.binary(k.literal(1.0), "-", kSum, e), "/", kProduct,
                       k.binary(k.literal(1.0), "+", kSum, e));
  Value signed_far = k.where(k.compare(x, "<", k.literal(0)), k.binary(k.literal(0), "-", kSum, far), far);
  Value x2 = k.bind(k.binary(x, "*", kProduct, x), "tanh_x2");
  Value poly = k.literal(62.0 / 2835.0);
  for (double c : {-17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0})
    poly = k.binary(k.literal(c), "+", kSum, k.binary(x2, "*", kProduct, poly));
  Value near = k.binary(x, "*", kProduct, poly);
  return single(k.where(k.compare(ax, "<", k.literal(0.25)), near, signed_far));
}
TileTuple emit_Pow(KernelEmitter& k, NodeId n, Kids kids) {
  double c = attr_f64(k.program().node(n).attrs);
  Value x = k.to_float(one(kids, 0));
  if (c == 1) return single(x);
  if (c == 0.5) return single(k.call("tl.sqrt", x));
  if (c == -0.5) return single(k.call("tl.rsqrt", x));
  if (c == std::trunc(c) && std::fabs(c) <= 4 && c != 0) {
    Value b = k.bind(x, "pow_in");
    Value prod = b;
    for (int i = 1; i < int(std::fabs(c)); ++i) prod = k.binary(prod, "*", kProduct, b);
    return single(c > 0 ? prod : k.binary(k.literal(1.0), "/", kProduct, prod));
  }
  if (c == 0) return single(k.literal(1.0));
  if (c == std::trunc(c)) {
    // |x|^c with the sign of x for odd c.
    Value b = k.bind(x, "pow_in");
    Value mag =
        k.call("tl.exp", k.binary(k.literal(c), "*", kProduct, k.call("tl.log", k.call("tl.abs", b))));
    if (std::fmod(c, 2.0) == 0) return single(mag);
    return single(k.where(k.compare(b, "<", k.literal(0)), k.binary(k.literal(0), "-", kSum, mag), mag));
  }
  // A non-integer power of a negative number is NaN, as exp(c log x) gives.
  return single(k.call("tl.exp", k.binary(k.literal(c), "*", kProduct, k.call("tl.log", x))));
}
TileTuple emit_Cast(KernelEmitter& k, NodeId n, Kids kids) {
  DType to = attr_dtype(k.program().node(n).attrs, 0);
  const Value& x = one(kids, 0);
  if (to == DType::Bool) {
    Value v = k.compare(x, "!=", k.literal(0));
    return single(v);
  }
  Value v = x;
  v.dtype = to;
  if (x.literal) {
    // A Python float has no .to(): a 0-d tensor of the target type (a cast
    // literal under replicate reaches here, e.g. where(x < 0, -1, 0)).
    v.expr = Expr{"tl.full([], " + x.expr.text + ", " + dtype_triton(to) + ")", kAtom};
    v.literal = false;
    return single(v);
  }
  v.expr = Expr{convert_text(x.expr, x.dtype, to), kAtom};
  return single(v);
}
TileTuple emit_Lt(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.compare(one(kids, 0), "<", one(kids, 1)));
}
TileTuple emit_Le(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.compare(one(kids, 0), "<=", one(kids, 1)));
}
TileTuple emit_Eq(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.compare(one(kids, 0), "==", one(kids, 1)));
}
TileTuple emit_Where(KernelEmitter& k, NodeId, Kids kids) {
  return single(k.where(one(kids, 0), one(kids, 1), one(kids, 2)));
}

// ---- reductions --------------------------------------------------------------------

// A tuple reduction over a dim of one tile, in closed form: the components'
// plain parts first, then the repaired ones against the reduced values.
//   exp-sum J:        sum_c x_c * exp(mJ_c - mJ)        (0 where mJ_c = -inf)
//   welford-mean N:   sum_c n_c * x_c / n               (0 where n = 0)
//   welford-m2 N A:   sum_c (x_c + n_c * (A_c - A)^2)
TileTuple reduce_tuple(KernelEmitter& k, NodeId n, const DimView& d, const Reduction& r, const TileTuple& x) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  size_t count = r.components.size();
  if (x.parts.size() != count)
    k.fail(n, "reduce: the reduction has " + std::to_string(count) + " components but the operand " +
                  std::to_string(x.parts.size()));
  if (d.squeezed) {  // a block of one element: itself, or the identity state where it is past the end
    TileTuple out;
    for (size_t i = 0; i < count; ++i) out.parts.push_back(k.masked(x.parts[i], d, r.identity(i)));
    return out;
  }
  std::vector<Value> parts(count);
  std::vector<Value> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = k.bind(k.to_float(x.parts[i]), k.hint() + "_in");
  auto name = [&](size_t i) { return k.hint() + "_" + std::to_string(i); };
  for (size_t i = 0; i < count; ++i) {
    if (r.components[i].repair != Repair::None) continue;
    parts[i] = k.bind(k.reduce_dim(in[i], d, r.components[i].base), name(i));
  }
  for (size_t i = 0; i < count; ++i) {
    const RedComponent& c = r.components[i];
    if (c.repair != Repair::WelfordMean) continue;
    const Value& cnt = parts[c.arg0];
    Value total = k.reduce_dim(k.binary(in[c.arg0], "*", kProduct, in[i]), d, RedBase::Add);
    Value mean = k.binary(total, "/", kProduct, cnt);
    parts[i] = k.bind(k.where(k.compare(cnt, ">", k.literal(0)), mean, k.literal(0)), name(i));
  }
  // Per max component: where its states are empty (max -inf), and the
  // factors of its exp-sums. An empty state's exp-sums are not read: a block
  // with no valid position leaves NaN there (exp(-inf - -inf)), and so does
  // a program of a grid index mask (index_mask.h), which reads nothing.
  std::map<size_t, std::pair<Value, Value>> scales;
  for (size_t i = 0; i < count; ++i) {
    const RedComponent& c = r.components[i];
    if (c.repair == Repair::ExpSum) {
      if (!scales.count(c.arg0)) {
        const Value& mj = in[c.arg0];
        Value empty = k.bind(k.compare(mj, "==", k.literal(neg_inf)), "empty");
        Value scale = k.where(empty, k.literal(0), k.call("tl.exp", k.binary(mj, "-", kSum, parts[c.arg0])));
        scales.emplace(c.arg0, std::make_pair(empty, k.bind(scale, "scale")));
      }
      const auto& [empty, scale] = scales.at(c.arg0);
      Value term = k.where(empty, k.literal(0), k.binary(in[i], "*", kProduct, scale));
      parts[i] = k.bind(k.reduce_dim(term, d, RedBase::Add), name(i));
    } else if (c.repair == Repair::WelfordM2) {
      Value dev = k.binary(in[c.arg1], "-", kSum, parts[c.arg1]);
      Value shift = k.binary(in[c.arg0], "*", kProduct, k.binary(dev, "*", kProduct, dev));
      parts[i] = k.bind(k.reduce_dim(k.binary(in[i], "+", kSum, shift), d, RedBase::Add), name(i));
    }
  }
  return TileTuple{parts};
}

TileTuple emit_Reduce(KernelEmitter& k, NodeId n, Kids kids) {
  const Node& node = k.program().node(n);
  Symbol d = attr_sym(node.attrs, 0);
  RedId red = attr_red(node.attrs, 1);
  const TileTuple& x = kids[0];
  // The reduced dim's view is the operand's (the result no longer has it).
  DimView view = k.view_of(k.program().children(n)[0], d);
  if (red.is_plain()) return single(k.reduce_dim(x.parts.front(), view, red.get().components[0].base));
  return reduce_tuple(k, n, view, red.get(), x);
}

// tl.trans(x), or x itself when `text` is tl.trans(x) (a tile loaded in its
// buffer's order, triton_kernel.cc): the operand reaches tl.dot as loaded.
std::string transposed(const std::string& text) {
  const std::string head = "tl.trans(";
  if (text.starts_with(head) && text.back() == ')') {
    int depth = 0;
    size_t close = std::string::npos;
    for (size_t i = head.size() - 1; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0) {
        close = i;
        break;
      }
    }
    if (close == text.size() - 1) return text.substr(head.size(), text.size() - head.size() - 1);
  }
  return "tl.trans(" + text + ")";
}

// tl.permute(text, order), or text itself for the identity order.
std::string permuted(const std::string& text, const std::vector<size_t>& order) {
  std::string dims;
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) {
    identity = identity && order[i] == i;
    dims += (i ? ", " : "") + std::to_string(order[i]);
  }
  return identity ? text : "tl.permute(" + text + ", (" + dims + "))";
}

// A GEMV (dot_shape.h: gemv_shape) as one tl.dot: the vector padded to 16
// rows (row 0 the vector, the rest 0), the product's rows summed. Triton pipelines a loop's loads
// into tl.dot through shared memory, which a multiply and sum does not get:
// such GEMVs streamed a 32 MiB weight ~5-10% faster on the H200
// (bench/results/h200-2026-12-02-stream-forms). Which form is faster in a
// given kernel is measured: the GEMV_DOT constexpr picks it (the tuner's
// gemv_dot). nullopt when the contraction is not such a GEMV.
std::optional<std::string> gemv_dot_form(KernelEmitter& k, const Value& a, const Value& b, const DimView& kv,
                                         DType dtype) {
  std::optional<GemvShape> shape = gemv_shape(a.dims, b.dims, kv.dim, dtype);
  if (!shape) return std::nullopt;
  const bool a_is_vector = shape->vector_first;
  const Value& vec = a_is_vector ? a : b;
  const Value& mat = a_is_vector ? b : a;
  const size_t mat_k = shape->mat_k;
  k.gemv_dot_dim(kv);
  k.gemv_dot_dim(shape->cols);
  auto half = [&](const Value& v) {
    return v.dtype == dtype ? atom(v.expr) : convert_text(v.expr, v.dtype, dtype);
  };
  std::string rows = "tl.arange(0, 16)", zero = "tl.zeros((), " + std::string(dtype_triton(dtype)) + ")";
  std::string m = half(mat);
  if (a_is_vector) {
    // (16 x k) @ (k x cols): the matrix with k first.
    std::string v16 = "tl.where(" + rows + "[:, None] == 0, " + half(vec) + "[None, :], " + zero + ")";
    if (mat_k != 0) m = transposed(m);
    return "tl.sum(tl.dot(" + v16 + ", " + m + "), axis=0)";
  }
  // (cols x k) @ (k x 16): the matrix with k last.
  std::string v16 = "tl.where(" + rows + "[None, :] == 0, " + half(vec) + "[:, None], " + zero + ")";
  if (mat_k != 1) m = transposed(m);
  return "tl.sum(tl.dot(" + m + ", " + v16 + "), axis=1)";
}

// A contraction over k: one tl.dot when each operand's dims other than k
// are one matrix dim, padded when single and flattened when several
// (dot_shape.h); otherwise a broadcast product and tl.sum.
TileTuple contract(KernelEmitter& k, NodeId n, Kids kids) {
  const Program& p = k.program();
  Symbol kd = attr_sym(p.node(n).attrs, 0);
  DType dtype = p.type(n).get().tensor().dtype;
  const Value &a0 = one(kids, 0), &b0 = one(kids, 1);
  auto find = [&](const Value& v) {
    return std::find_if(v.dims.begin(), v.dims.end(), [&](const DimView& x) { return x.dim == kd; });
  };
  if (find(a0) == a0.dims.end() || find(b0) == b0.dims.end()) {
    // k squeezed: a block of one element, the product itself.
    return single(k.masked(k.binary(a0, "*", kProduct, b0), k.view_of(p.children(n)[0], kd), 0.0));
  }
  DimView kv = *find(a0);
  // Padded k positions must contribute 0 (and no NaN from inf * 0).
  Value a = k.masked(a0, kv, 0.0), b = k.masked(b0, kv, 0.0);

  std::optional<DotShape> shape = dot_shape(p, a.dims, b.dims, kd);
  if (!shape) {
    const Value* args[] = {&a, &b};
    std::vector<DimView> all = k.union_dims(args);
    size_t pos = size_t(std::find_if(all.begin(), all.end(), [&](const DimView& x) { return x.dim == kd; }) -
                        all.begin());
    Value prod = k.binary(a, "*", kProduct, b);
    Value out;
    out.dims = all;
    out.dims.erase(out.dims.begin() + long(pos));
    out.expr = Expr{"tl.sum(" + prod.expr.text + ", axis=" + std::to_string(pos) + ")", kAtom};
    if (std::optional<std::string> dot = gemv_dot_form(k, a, b, kv, dtype))
      out.expr = Expr{"(" + *dot + " if " + k.gemv_dot() + " else " + out.expr.text + ")", kAtom};
    out.zero_padded = a0.zero_padded && b0.zero_padded;
    return single(out);
  }
  k.dot_dim(kv);
  for (const std::vector<DimView>* run : {&shape->rows, &shape->cols})
    if (run->size() == 1) k.dot_dim(run->front());
  // The matrix dim of a run: its tile, or the product of its dims' tiles.
  auto size = [&](const std::vector<DimView>& run) {
    std::string s;
    for (const DimView& v : run) s += (s.empty() ? "" : " * ") + k.tile(v);
    return s;
  };
  // An operand as a (k x run) matrix when k_first, else (run x k).
  auto operand = [&](const Value& v, const std::vector<DimView>& run, size_t k_at, bool k_first) {
    std::string text = v.expr.text;
    bool is_f16 = dtype == DType::F16 || dtype == DType::BF16;
    if (is_f16 && v.dtype != dtype)
      text = convert_text(v.expr, v.dtype, dtype);
    else if (!is_f16)
      text = k.to_float(v).expr.text;
    if (run.size() == 1) return (k_at == 0) == k_first ? text : transposed(text);
    std::vector<size_t> order;
    if (k_first) order.push_back(k_at);
    for (size_t i = 0; i < v.dims.size(); ++i)
      if (i != k_at) order.push_back(i);
    if (!k_first) order.push_back(k_at);
    std::string kt = k.tile(kv), mt = size(run);
    return "tl.reshape(" + permuted(text, order) + ", (" + (k_first ? kt + ", " + mt : mt + ", " + kt) + "))";
  };
  std::string call = "tl.dot(" + operand(a, shape->rows, shape->a_k, false) + ", " +
                     operand(b, shape->cols, shape->b_k, true);
  if (dtype == DType::F32) call += ", input_precision=" + k.input_precision();
  call += ")";
  // tl.dot gives (rows..., cols...); the kernel orders the result's dims.
  std::vector<DimView> got = shape->rows;
  got.insert(got.end(), shape->cols.begin(), shape->cols.end());
  Value out;
  out.dims = got;
  std::sort(out.dims.begin(), out.dims.end(),
            [&](const DimView& x, const DimView& y) { return p.dims.order(x.dim) < p.dims.order(y.dim); });
  std::vector<size_t> order;
  for (const DimView& v : out.dims) order.push_back(size_t(std::find(got.begin(), got.end(), v) - got.begin()));
  std::string text = call;
  if (shape->flattened()) {
    std::string dims;
    for (const DimView& v : got) dims += (dims.empty() ? "" : ", ") + k.tile(v);
    text = "tl.reshape(" + text + ", (" + dims + "))";
  }
  out.expr = Expr{order.size() == 2 && order[0] == 1 ? "tl.trans(" + text + ")" : permuted(text, order), kAtom};
  out.zero_padded = a0.zero_padded && b0.zero_padded;
  return single(out);
}

TileTuple emit_MatMul(KernelEmitter& k, NodeId n, Kids kids) { return contract(k, n, kids); }
TileTuple emit_TileMatMul(KernelEmitter& k, NodeId n, Kids kids) { return contract(k, n, kids); }

constexpr OpEmitter kEmitters[] = {
#define EQF_OP(Enum, text, arity, attrs, props) &emit_##Enum,
#include "eqiforge/ir/ops.def"
#undef EQF_OP
};
static_assert(sizeof(kEmitters) / sizeof(kEmitters[0]) == size_t(kNumOps));

}  // namespace

OpEmitter op_emitter(Op op) { return kEmitters[size_t(op)]; }

}  // namespace eqf::codegen
