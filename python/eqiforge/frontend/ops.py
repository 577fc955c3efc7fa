"""The op table: one small translator per ATen operator.

``TABLE`` maps each ``OpOverload`` to a function ``(cx, a) -> Val`` where
``cx`` is the Translator (translate.py: broadcasting, reductions, matmul,
reshape) and ``a`` the node's arguments by schema name, tensors as Vals.
Operators missing here are decomposed by PyTorch before translation when it
knows how (capture.py), and reported with the user's source line otherwise.

Decompositions use the IR's own operators (include/eqiforge/ir/ops.def):
softmax is exp(x - max) / sum, variance the mean of squared deviations,
relu max2(x, 0), reciprocal div(1, x), and so on.
"""

from __future__ import annotations

import math

import torch

from .dims import PRIO_ATTENTION, PRIO_INDEX
from .expr import Dim, Lit, term
from .translate import Unavailable, Val

aten = torch.ops.aten

TABLE: dict = {}

# Nodes that compute nothing the IR needs (runtime checks of PyTorch's own).
IGNORED = frozenset({aten._assert_tensor_metadata.default})


def register(*overloads):
    def add(fn):
        for op in overloads:
            if op in TABLE:
                raise AssertionError(f"{op} registered twice")
            TABLE[op] = fn
        return fn

    return add


def _scaled(cx, v, alpha):
    return v if alpha is None or alpha == 1 else cx.pointwise("mul", v, alpha)


# ---- pointwise arithmetic -----------------------------------------------------------------


@register(aten.add.Tensor, aten.add.Scalar)
def _add(cx, a):
    return cx.pointwise("add", a.self, _scaled(cx, a.other, a.alpha))


@register(aten.sub.Tensor, aten.sub.Scalar)
def _sub(cx, a):
    return cx.pointwise("sub", a.self, _scaled(cx, a.other, a.alpha))


@register(aten.rsub.Tensor, aten.rsub.Scalar)
def _rsub(cx, a):
    return cx.pointwise("sub", a.other, _scaled(cx, a.self, a.alpha))


@register(aten.mul.Tensor, aten.mul.Scalar)
def _mul(cx, a):
    return cx.pointwise("mul", a.self, a.other)


@register(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div(cx, a):
    if getattr(a, "rounding_mode", None) is not None:
        raise cx.unsupported(f"with rounding_mode={a.rounding_mode!r} is not supported")
    return cx.pointwise("div", a.self, a.other)


@register(aten.maximum.default)
def _maximum(cx, a):
    return cx.pointwise("max2", a.self, a.other)


@register(aten.minimum.default)
def _minimum(cx, a):
    return cx.pointwise("min2", a.self, a.other)


def _unary(ir_op):
    def fn(cx, a):
        return cx.pointwise(ir_op, a.self)

    return fn


for _op, _ir in [
    (aten.neg.default, "neg"),
    (aten.exp.default, "exp"),
    (aten.log.default, "log"),
    (aten.sqrt.default, "sqrt"),
    (aten.rsqrt.default, "rsqrt"),
    (aten.sigmoid.default, "sigmoid"),
    (aten.silu.default, "silu"),
    (aten.tanh.default, "tanh"),
]:
    register(_op)(_unary(_ir))


@register(aten.pow.Tensor_Scalar)
def _pow(cx, a):
    return cx.pointwise("pow", a.self, attrs=(float(a.exponent),))


@register(aten.pow.Scalar)
def _pow_scalar_base(cx, a):
    # c ** x = exp(x * log c), for a positive base.
    base = float(a.self)
    if base <= 0:
        raise cx.unsupported(f"with base {base} is not supported (only a positive number ** tensor)")
    return cx.pointwise("exp", cx.pointwise("mul", a.exponent, math.log(base)))


@register(aten.exp2.default)
def _exp2(cx, a):
    return cx.pointwise("exp", cx.pointwise("mul", a.self, math.log(2.0)))


@register(aten.log2.default)
def _log2(cx, a):
    return cx.pointwise("div", cx.pointwise("log", a.self), math.log(2.0))


# log1p and expm1 as log(1 + x) and exp(x) - 1: equal in real arithmetic (the
# IR's semantics); in low precision they lose the digits of a tiny x, which
# matters only where the result is compared with values near zero.
@register(aten.log1p.default)
def _log1p(cx, a):
    return cx.pointwise("log", cx.pointwise("add", a.self, 1.0))


@register(aten.expm1.default)
def _expm1(cx, a):
    return cx.pointwise("sub", cx.pointwise("exp", a.self), 1.0)


@register(aten.square.default)
def _square(cx, a):
    return cx.pointwise("mul", a.self, a.self)


@register(aten.reciprocal.default)
def _reciprocal(cx, a):
    return cx.pointwise("div", 1.0, a.self)


@register(aten.relu.default)
def _relu(cx, a):
    return cx.pointwise("max2", a.self, 0.0)


@register(aten.abs.default)
def _abs(cx, a):
    return cx.pointwise("max2", a.self, cx.pointwise("neg", a.self))


@register(aten.gelu.default)
def _gelu(cx, a):
    if a.approximate == "none":
        return cx.pointwise("gelu", a.self)
    # tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    pw = cx.pointwise
    x = cx.let(cx.val(a.self), cx.sub_hint("x"))
    cubic = pw("add", x, pw("mul", pw("pow", x, attrs=(3.0,)), 0.044715))
    inner = pw("mul", cubic, math.sqrt(2.0 / math.pi))
    return pw("mul", pw("mul", x, 0.5), pw("add", pw("tanh", inner), 1.0))


@register(aten.leaky_relu.default)
def _leaky_relu(cx, a):
    x = cx.val(a.self)
    return cx.where(cx.compare("lt", 0.0, x), x, cx.pointwise("mul", x, a.negative_slope))


@register(aten.elu.default)
def _elu(cx, a):
    """scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1)); F.selu is elu with its constants."""
    pw = cx.pointwise
    x = cx.let(cx.val(a.self), cx.sub_hint("x"))
    below = pw("mul", pw("sub", pw("exp", _scaled(cx, x, a.input_scale)), 1.0), float(a.alpha))
    return _scaled(cx, cx.where(cx.compare("lt", 0.0, x), x, below), a.scale)


@register(aten.sign.default)
def _sign(cx, a):
    # (x > 0) - (x < 0), the comparisons cast to x's dtype
    x = cx.let(cx.val(a.self), cx.sub_hint("x"))
    dtype = cx.out_dtype
    return cx.pointwise("sub", cx.cast(cx.compare("lt", 0.0, x), dtype), cx.cast(cx.compare("lt", x, 0.0), dtype))


@register(aten.clamp.default)
def _clamp(cx, a):
    x = a.self
    if a.min is not None:
        x = cx.pointwise("max2", x, a.min)
    if a.max is not None:
        x = cx.pointwise("min2", x, a.max)
    return cx.val(x)


@register(aten.clamp_min.default)
def _clamp_min(cx, a):
    return cx.pointwise("max2", a.self, a.min)


@register(aten.clamp_max.default)
def _clamp_max(cx, a):
    return cx.pointwise("min2", a.self, a.max)


@register(aten.hardtanh.default)
def _hardtanh(cx, a):
    return cx.pointwise("min2", cx.pointwise("max2", a.self, a.min_val), a.max_val)


# ---- comparisons, masks, where ---------------------------------------------------------------


def _cmp(ir_op, swap):
    def fn(cx, a):
        x, y = (a.other, a.self) if swap else (a.self, a.other)
        return cx.compare(ir_op, x, y)

    return fn


for _name, _ir, _swap in [("lt", "lt", False), ("le", "le", False), ("gt", "lt", True), ("ge", "le", True),
                          ("eq", "eq", False)]:
    _packet = getattr(aten, _name)
    register(_packet.Tensor, _packet.Scalar)(_cmp(_ir, _swap))


@register(aten.ne.Tensor, aten.ne.Scalar)
def _ne(cx, a):
    return cx.logical_not(cx.compare("eq", a.self, a.other))


def _bools(cx, *vals):
    for v in vals:
        v = cx.val(v)
        if not v.literal and v.dtype != "bool":
            raise cx.unsupported("on non-bool tensors is not supported (the IR has logic on masks only)")


@register(aten.logical_and.default, aten.bitwise_and.Tensor, aten.__and__.Tensor)
def _and(cx, a):
    _bools(cx, a.self, a.other)
    return cx.logical_and(a.self, a.other)


@register(aten.logical_or.default, aten.bitwise_or.Tensor, aten.__or__.Tensor)
def _or(cx, a):
    _bools(cx, a.self, a.other)
    return cx.logical_or(a.self, a.other)


@register(aten.logical_not.default, aten.bitwise_not.default)
def _not(cx, a):
    _bools(cx, a.self)
    return cx.logical_not(a.self)


@register(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(cx, a):
    return cx.where(a.condition, a.self, a.other)


@register(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(cx, a):
    return cx.where(a.mask, a.value, a.self)


def _triangle(cx, a, lower):
    """tril keeps j - i <= diagonal, triu keeps j - i >= diagonal (i: row, j: column)."""
    x = cx.val(a.self)
    offset = cx.pointwise("sub", cx.index(x, -1), cx.index(x, -2), dtype="i32")
    keep = cx.compare("le", offset, a.diagonal) if lower else cx.compare("le", a.diagonal, offset)
    if x.dtype == "bool":
        return cx.logical_and(x, keep)
    return cx.where(keep, x, 0.0)


@register(aten.tril.default)
def _tril(cx, a):
    return _triangle(cx, a, lower=True)


@register(aten.triu.default)
def _triu(cx, a):
    return _triangle(cx, a, lower=False)


# ---- tensors made from nothing -----------------------------------------------------------------


def _full(cx, value):
    """A constant of the node's shape: a literal, every dim missing (broadcast)."""
    shape = cx.out_shape
    dims = [None if s == 1 else cx.fresh(s) for s in shape]
    missing = {p for p, d in enumerate(dims) if d is not None}
    value = float(value)
    if cx.out_dtype == "bool":
        value = 1.0 if value else 0.0
    return Val(Lit(value), tuple(dims), cx.out_dtype, frozenset(missing))


@register(aten.full.default, aten.full_like.default, aten.new_full.default)
def _full_op(cx, a):
    return _full(cx, a.fill_value)


@register(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default)
def _zeros(cx, a):
    return _full(cx, 0)


@register(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def _ones(cx, a):
    return _full(cx, 1)


@register(aten.scalar_tensor.default)
def _scalar_tensor(cx, a):
    return _full(cx, a.s)


@register(aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(cx, a):
    start = getattr(a, "start", 0) or 0
    step = getattr(a, "step", 1) or 1
    (n,) = cx.out_shape
    if n == 1:
        return Val(Lit(float(start)), (None,), cx.out_dtype)
    d = cx.fresh(n, "i", PRIO_INDEX)
    v = cx.make(term("iota", attrs=(Dim(d),)), [d], "i32")
    if cx.out_dtype != "i32":
        v = cx.cast(v, cx.out_dtype)
    if step != 1:
        v = cx.pointwise("mul", v, step)
    if start != 0:
        v = cx.pointwise("add", v, start)
    return v


# ---- reductions -------------------------------------------------------------------------------------


def _dtype_arg(cx, a, x):
    dtype = getattr(a, "dtype", None)
    return cx.cast(x, cx.out_dtype) if dtype is not None else x


@register(aten.sum.dim_IntList, aten.sum.default)
def _sum(cx, a):
    x = cx.val(a.self)
    if x.dtype == "bool":
        x = cx.cast(x, "i32")
    x = _dtype_arg(cx, a, x)
    return cx.reduce(x, cx.positions(x, getattr(a, "dim", None)), "sum", bool(getattr(a, "keepdim", False)))


@register(aten.mean.dim, aten.mean.default)
def _mean(cx, a):
    x = _dtype_arg(cx, a, cx.val(a.self))
    return cx.mean(x, cx.positions(x, getattr(a, "dim", None)), bool(getattr(a, "keepdim", False)))


@register(aten.amax.default)
def _amax(cx, a):
    x = cx.val(a.self)
    return cx.reduce(x, cx.positions(x, a.dim), "max", a.keepdim)


@register(aten.amin.default)
def _amin(cx, a):
    x = cx.val(a.self)
    return cx.reduce(x, cx.positions(x, a.dim), "min", a.keepdim)


@register(aten.max.default, aten.min.default)
def _max_all(cx, a):
    x = cx.val(a.self)
    return cx.reduce(x, list(range(x.rank)), "max" if _is_max(cx) else "min")


@register(aten.max.dim, aten.min.dim)
def _max_dim(cx, a):
    x = cx.val(a.self)
    values = cx.reduce(x, cx.positions(x, a.dim), "max" if _is_max(cx) else "min", a.keepdim)
    name = "aten.max" if _is_max(cx) else "aten.min"
    return values, Unavailable(name, f"{name}'s indices are not supported (the IR has no argmax)")


def _is_max(cx):
    return cx.node.target._opname == "max"


def _correction(a) -> float:
    c = getattr(a, "correction", None)
    if c is not None:
        return float(c)
    unbiased = getattr(a, "unbiased", True)
    return 1.0 if unbiased in (None, True) else 0.0


@register(aten.var.dim, aten.var.correction, aten.var.default)
def _var(cx, a):
    x = cx.val(a.self)
    return cx.variance(x, cx.positions(x, getattr(a, "dim", None)), _correction(a), bool(getattr(a, "keepdim", False)))


@register(aten.std.dim, aten.std.correction, aten.std.default)
def _std(cx, a):
    return cx.pointwise("sqrt", _var(cx, a))


@register(aten.var_mean.correction, aten.var_mean.dim)
def _var_mean(cx, a):
    x = cx.val(a.self)
    ps, keepdim = cx.positions(x, getattr(a, "dim", None)), bool(getattr(a, "keepdim", False))
    return cx.variance(x, ps, _correction(a), keepdim), cx.mean(x, ps, keepdim)


@register(aten.std_mean.correction, aten.std_mean.dim)
def _std_mean(cx, a):
    var, mean = _var_mean(cx, a)
    return cx.pointwise("sqrt", var, dtype=var.dtype), mean  # two results: no single node dtype


# ---- normalizations ------------------------------------------------------------------------------------


def _softmax_parts(cx, x, p):
    """(x - max, exp(x - max)) along position p."""
    if x.dims[p] is not None:
        cx.softmax_dims.append(x.dims[p])
    m = cx.let(cx.reduce(x, [p], "max", keepdim=True), cx.sub_hint("max"))
    shifted = cx.let(cx.pointwise("sub", x, m, dtype=x.dtype), cx.sub_hint("shifted"))
    e = cx.let(cx.pointwise("exp", shifted, dtype=x.dtype), cx.sub_hint("exp"))
    return shifted, e


def _softmax_input(cx, a):
    x = cx.val(a.self)
    dtype = getattr(a, "dtype", None)
    if dtype is not None or getattr(a, "half_to_float", False):
        x = cx.cast(x, cx.out_dtype)
    return x, a.dim % x.rank if x.rank else 0


@register(aten.softmax.int, aten._softmax.default)
def _softmax(cx, a):
    x, p = _softmax_input(cx, a)
    if x.rank == 0:
        return cx.pointwise("div", x, x)
    _, e = _softmax_parts(cx, x, p)
    total = cx.let(cx.reduce(e, [p], "sum", keepdim=True), cx.sub_hint("sum"))
    return cx.pointwise("div", e, total, dtype=x.dtype)


@register(aten.log_softmax.int, aten._log_softmax.default)
def _log_softmax(cx, a):
    x, p = _softmax_input(cx, a)
    shifted, e = _softmax_parts(cx, x, p)
    total = cx.reduce(e, [p], "sum", keepdim=True)
    return cx.pointwise("sub", shifted, cx.pointwise("log", total, dtype=x.dtype), dtype=x.dtype)


def _affine(cx, y, weight, bias):
    if weight is not None:
        y = cx.pointwise("mul", y, weight)
    if bias is not None:
        y = cx.pointwise("add", y, bias)
    return y


@register(aten.layer_norm.default)
def _layer_norm(cx, a):
    x = cx.val(a.input)
    ps = list(range(x.rank - len(a.normalized_shape), x.rank))
    mu = cx.let(cx.mean(x, ps, keepdim=True), cx.sub_hint("mean"))
    xc = cx.let(cx.pointwise("sub", x, mu, dtype=x.dtype), cx.sub_hint("centered"))
    var = cx.let(cx.mean(cx.pointwise("mul", xc, xc, dtype=x.dtype), ps, keepdim=True), cx.sub_hint("var"))
    r = cx.pointwise("rsqrt", cx.pointwise("add", var, a.eps, dtype=x.dtype), dtype=x.dtype)
    return _affine(cx, cx.pointwise("mul", xc, r, dtype=x.dtype), a.weight, a.bias)


@register(aten.rms_norm.default)
def _rms_norm(cx, a):
    x = cx.val(a.input)
    ps = list(range(x.rank - len(a.normalized_shape), x.rank))
    eps = a.eps if a.eps is not None else torch.finfo(_TORCH_FLOATS.get(x.dtype, torch.float32)).eps
    ms = cx.mean(cx.pointwise("mul", x, x, dtype=x.dtype), ps, keepdim=True)
    r = cx.let(cx.pointwise("rsqrt", cx.pointwise("add", ms, eps, dtype=x.dtype), dtype=x.dtype), cx.sub_hint("rstd"))
    return _affine(cx, cx.pointwise("mul", x, r, dtype=x.dtype), a.weight, None)


_TORCH_FLOATS = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}


@register(aten.linalg_vector_norm.default)
def _vector_norm(cx, a):
    x = cx.val(a.self)
    if a.dtype is not None:
        x = cx.cast(x, cx.out_dtype)
    ps = cx.positions(x, a.dim)
    order = float(a.ord)
    if order == 2:
        return cx.pointwise("sqrt", cx.reduce(cx.pointwise("mul", x, x), ps, "sum", a.keepdim))
    absx = cx.let(cx.pointwise("max2", x, cx.pointwise("neg", x)), cx.sub_hint("abs"))
    if order == 1:
        return cx.reduce(absx, ps, "sum", a.keepdim)
    if order == math.inf:
        return cx.reduce(absx, ps, "max", a.keepdim)
    if order == -math.inf:
        return cx.reduce(absx, ps, "min", a.keepdim)
    if order > 0:
        s = cx.reduce(cx.pointwise("pow", absx, attrs=(order,)), ps, "sum", a.keepdim)
        return cx.pointwise("pow", s, attrs=(1.0 / order,))
    raise cx.unsupported(f"with ord={a.ord} is not supported")


# ---- contraction -----------------------------------------------------------------------------------------


@register(aten.matmul.default, aten.mm.default, aten.bmm.default)
def _matmul(cx, a):
    return cx.matmul(a.self, a.other if hasattr(a, "other") else a.mat2)


@register(aten.linear.default)
def _linear(cx, a):
    w = cx.val(a.weight)
    y = cx.matmul(a.input, cx.transpose(w, -1, -2) if w.rank == 2 else w)
    return cx.pointwise("add", y, a.bias) if a.bias is not None else y


@register(aten.addmm.default, aten.baddbmm.default)
def _addmm(cx, a):
    y = _scaled(cx, cx.matmul(getattr(a, "mat1", None) or a.batch1, getattr(a, "mat2", None) or a.batch2), a.alpha)
    return cx.pointwise("add", _scaled(cx, a.self, a.beta), y)


@register(aten.scaled_dot_product_attention.default)
def _sdpa(cx, a):
    """softmax(q k^T * scale + mask) v, as PyTorch's math reference computes it."""
    if a.dropout_p:
        raise cx.unsupported(f"with dropout_p={a.dropout_p} is not supported")
    q, k, v = cx.val(a.query), cx.val(a.key), cx.val(a.value)
    e = cx.solver.extent(q.dims[-1]) if q.dims[-1] is not None else 1
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(e)
    grouped = a.enable_gqa and q.rank >= 3 and _extent(cx, q, -3) != _extent(cx, k, -3)
    for val, names in ((q, "hse"), (k, "hte"), (v, "htf")):
        for p, name in zip((-3, -2, -1), names):
            if val.rank >= -p:
                cx.hint(val.dims[p], "hkv" if grouped and name == "h" and val is not q else name, PRIO_ATTENTION)
        if val.rank >= 4:
            cx.hint(val.dims[-4], "b", PRIO_ATTENTION)
    if grouped:
        # Query head h = h_kv * G + g attends to key/value head h_kv, as
        # repeat_interleave does: split the query heads instead of copying keys.
        query_heads = q.dims[-3]
        hq, hkv = _extent(cx, q, -3), _extent(cx, k, -3)
        qshape = [_extent(cx, q, i) for i in range(q.rank)]
        q = cx.reshape(q, qshape[:-3] + [hkv, hq // hkv] + qshape[-2:])
        cx.hint(q.dims[-3], "g", PRIO_ATTENTION)
        k, v = cx.unsqueeze(k, -3), cx.unsqueeze(v, -3)
    scores = cx.pointwise("mul", cx.matmul(q, cx.transpose(k, -1, -2)), scale, dtype=q.dtype)
    if a.is_causal:  # top-left aligned, as torch.tril(ones(L, S)): key j <= query i
        keep = cx.compare("le", cx.index(scores, -1), cx.index(scores, -2))
        scores = cx.where(keep, scores, -math.inf)
    if a.attn_mask is not None:
        mask = cx.val(a.attn_mask)
        if mask.dtype == "bool":
            scores = cx.where(mask, scores, -math.inf)
        else:
            scores = cx.pointwise("add", scores, mask, dtype=q.dtype)
    scores = cx.let(scores, cx.sub_hint("scores"))
    last = scores.rank - 1
    _, p = _softmax_parts(cx, scores, last)
    total = cx.let(cx.reduce(p, [last], "sum", keepdim=True), cx.sub_hint("sum"))
    probs = cx.pointwise("div", p, total, dtype=q.dtype)
    out = cx.matmul(probs, v)
    if grouped:
        shape = [_extent(cx, out, i) for i in range(out.rank)]
        out = cx.reshape(out, shape[:-4] + [shape[-4] * shape[-3]] + shape[-2:])
        cx.solver.try_unify(out.dims[-3], query_heads)  # the heads keep their name
    return out


def _extent(cx, v, p):
    d = v.dims[p]
    return 1 if d is None else cx.solver.extent(d)


# ---- layout ------------------------------------------------------------------------------------------------


@register(aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
          aten.unflatten.int)
def _reshape(cx, a):
    return cx.reshape(cx.val(a.self), cx.out_shape)


@register(aten.permute.default)
def _permute(cx, a):
    return cx.permute(cx.val(a.self), a.dims)


@register(aten.transpose.int)
def _transpose(cx, a):
    return cx.transpose(cx.val(a.self), a.dim0, a.dim1)


@register(aten.t.default, aten.numpy_T.default)
def _t(cx, a):
    x = cx.val(a.self)
    return cx.permute(x, list(reversed(range(x.rank))))


@register(aten.unsqueeze.default)
def _unsqueeze(cx, a):
    return cx.unsqueeze(cx.val(a.self), a.dim)


@register(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(cx, a):
    x = cx.val(a.self)
    return cx.reshape(x, cx.out_shape)


@register(aten.expand.default)
def _expand(cx, a):
    return cx.expand(cx.val(a.self), cx.out_shape)


@register(aten.expand_as.default)
def _expand_as(cx, a):
    return cx.expand(cx.val(a.self), cx.out_shape)


@register(aten.contiguous.default, aten.clone.default, aten.alias.default, aten.detach.default,
          aten.detach_.default, aten.lift_fresh_copy.default)
def _identity(cx, a):
    return cx.val(a.self)


@register(torch.ops.prims.copy_strided.default)
def _copy_strided(cx, a):
    # A copy into the given strides: PyTorch's decompositions (torch.lerp's)
    # restore a memory layout with it; the IR's layouts are logical.
    return cx.val(a.a)


@register(aten.dropout.default)
def _dropout(cx, a):
    if a.train and a.p:
        raise cx.unsupported(f"in training mode (p={a.p}) is not supported; call module.eval()")
    return cx.val(a.input)


# The IR has no slicing. Part of a short dim is selected instead: the slice
# [start, start + L) of a dim d of extent E is sum over d of
# where(iota(d) == iota(j) + start, x, 0), j a new dim of extent L (none when
# L = 1). It reads the whole dim, so it is only worth it on short dims (two
# attention maps, a few streams), not on a sequence.
SELECT_MAX_EXTENT = 64


def _select_part(cx, x, p: int, start: int, length: int, keep: bool):
    """x's positions p restricted to [start, start + length); keep=False drops
    the position (select, length 1)."""
    extent = _extent(cx, x, p)
    if extent > SELECT_MAX_EXTENT:
        raise cx.unsupported(f"of part of a dim of extent {extent} is not supported (the IR has no slicing; "
                             f"parts of dims up to {SELECT_MAX_EXTENT} are selected by a masked sum)")
    if p in x.missing or x.dims[p] is None:  # constant along p: only the extent changes
        dims = list(x.dims)
        missing = set(x.missing)
        if not keep:
            del dims[p]
            missing = {q - (q > p) for q in missing if q != p}
        else:
            dims[p] = None if length == 1 else cx.fresh(length)
            missing = missing - {p} if length == 1 else missing | {p}
        return Val(x.expr, tuple(dims), x.dtype, frozenset(missing))
    index = cx.index(x, p)
    if length == 1:
        mask = cx.compare("eq", index, start)
        picked = cx.where(mask, x, 0)
        return cx.reduce(picked, [p], "sum", keepdim=keep)
    # The new dim j after position p: [.., d, j, ..], then d summed away.
    j = cx.fresh(length)
    wide = cx.unsqueeze(x, p + 1)
    index = cx.unsqueeze(index, p + 1)
    dims = [None] * wide.rank
    dims[p + 1] = j
    target = cx.make(term("iota", attrs=(Dim(j),)), dims, "i32")
    if start:
        target = cx.pointwise("add", target, start, dtype="i32")
    mask = cx.compare("eq", index, target)
    picked = cx.where(mask, wide, 0)
    return cx.reduce(picked, [p], "sum")


@register(aten.slice.Tensor)
def _slice(cx, a):
    x = cx.val(a.self)
    if (a.step or 1) != 1:
        raise cx.unsupported(f"with step {a.step} is not supported (the IR has no strided slicing)")
    if tuple(cx.out_shape) == tuple(_extent(cx, x, i) for i in range(x.rank)):
        return x
    p = a.dim % x.rank
    extent = _extent(cx, x, p)
    start = a.start or 0
    start = max(0, min(extent, start + extent if start < 0 else start))
    length = cx.out_shape[p]
    return _select_part(cx, x, p, start, length, keep=True)


@register(aten.select.int)
def _select(cx, a):
    x = cx.val(a.self)
    p = a.dim % x.rank
    extent = _extent(cx, x, p)
    index = a.index + extent if a.index < 0 else a.index
    return _select_part(cx, x, p, index, 1, keep=False)


@register(aten.to.dtype, aten.to.dtype_layout, aten._to_copy.default, aten.type_as.default, aten.to.other,
          aten.to.device)
def _to(cx, a):
    return cx.cast(cx.val(a.self), cx.out_dtype)
