"""The PyTorch front end, one operator at a time: each program is captured,
translated to IR text, type-checked, evaluated with the reference interpreter
on the same inputs as PyTorch eager, and compared in float64.

The helpers here are shared by the other test_frontend_*.py files.
"""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

import eqiforge
from eqiforge.frontend import to_ir

TOLERANCE = 1e-9  # max |ours - eager| / max |eager|, both in float64


def randn(*shape, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed + 1000 * len(shape) + sum(shape))
    t = torch.randn(shape, generator=g, dtype=torch.float64)
    return t.abs() + 0.5 if positive else t


def evaluate_ir(result, *args):
    """Runs the IR program on the tensors PyTorch gets: {output name: array}."""
    inputs = {name: t.to(torch.float64).numpy() for name, t in result.input_tensors(*args).items()}
    return eqiforge.evaluate(result.text, inputs=inputs)


def max_rel_error(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.to(torch.float64), want.to(torch.float64)
    assert got.shape == want.shape
    same_special = (torch.isnan(got) & torch.isnan(want)) | (torch.isinf(want) & (got == want))
    assert torch.equal(torch.isnan(got), torch.isnan(want)), "NaN in different places"
    finite = ~same_special
    if not finite.any():
        return 0.0
    diff = (got[finite] - want[finite]).abs().max().item()
    scale = max(want[finite].abs().max().item(), 1e-300)
    return diff / scale


def check_against_eager(fn, *args, name=None):
    """Translates fn on args (float64), checks the text, compares with eager.
    Returns the FrontendResult for further assertions."""
    if isinstance(fn, torch.nn.Module):
        fn = copy.deepcopy(fn).double().eval()
    result = to_ir(fn, *args, name=name)
    types = eqiforge.typecheck(result.text)  # parses and type-checks, or raises IRError
    assert [n for n, _ in types] == result.output_names
    with torch.no_grad():
        want = fn(*args)
    got = result.outputs_to_torch(evaluate_ir(result, *args))
    flat_want = torch.utils._pytree.tree_leaves(want)
    flat_got = torch.utils._pytree.tree_leaves(got)
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype == torch.bool:
            assert torch.equal(g, w), f"mask differs\n{result.text}"
        else:
            err = max_rel_error(g, w)
            assert err <= TOLERANCE, f"max relative error {err:.3g}\n{result.text}"
    return result


# ---- one operator each ------------------------------------------------------------------------

X = (3, 5)  # the default input shape

POINTWISE = {
    "add": (lambda x, y: x + y, [X, X]),
    "add_alpha": (lambda x, y: torch.add(x, y, alpha=0.5), [X, X]),
    "add_scalar": (lambda x: x + 2.5, [X]),
    "sub": (lambda x, y: x - y, [X, X]),
    "rsub_scalar": (lambda x: 1.5 - x, [X]),
    "mul": (lambda x, y: x * y, [X, X]),
    "mul_scalar": (lambda x: x * -3, [X]),
    "div": (lambda x, y: x / y, [X, (X, "positive")]),
    "div_scalar": (lambda x: x / 7, [X]),
    "scalar_div": (lambda x: 2 / x, [(X, "positive")]),
    "neg": (lambda x: -x, [X]),
    "exp": (torch.exp, [X]),
    "log": (torch.log, [(X, "positive")]),
    "sqrt": (torch.sqrt, [(X, "positive")]),
    "rsqrt": (torch.rsqrt, [(X, "positive")]),
    "pow_2": (lambda x: x.pow(2), [X]),
    "pow_3": (lambda x: x**3, [X]),
    "pow_half": (lambda x: torch.pow(x, 0.5), [(X, "positive")]),
    "scalar_pow": (lambda x: 2.0**x, [X]),
    "square": (torch.square, [X]),
    "reciprocal": (torch.reciprocal, [(X, "positive")]),
    "sigmoid": (torch.sigmoid, [X]),
    "silu": (F.silu, [X]),
    "gelu": (F.gelu, [X]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [X]),
    "tanh": (torch.tanh, [X]),
    "relu": (torch.relu, [X]),
    "relu_module": (torch.nn.ReLU(), [X]),
    "abs": (torch.abs, [X]),
    "clamp": (lambda x: x.clamp(-0.5, 0.7), [X]),
    "clamp_min": (lambda x: x.clamp_min(0.1), [X]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [X]),
    "hardsigmoid_decomposed_by_torch": (F.hardsigmoid, [X]),
    "exp2": (torch.exp2, [X]),
    "log2": (torch.log2, [(X, "positive")]),
    "log1p": (torch.log1p, [(X, "positive")]),
    "expm1": (torch.expm1, [X]),
    "maximum": (torch.maximum, [X, X]),
    "minimum": (torch.minimum, [X, X]),
    "broadcast_row": (lambda x, b: x + b, [X, (5,)]),
    "broadcast_col": (lambda x, c: x * c, [X, (3, 1)]),
    "broadcast_outer": (lambda c, r: c - r, [(3, 1), (1, 5)]),
    "broadcast_3d": (lambda x, y: x / (y.abs() + 1), [(2, 3, 5), (3, 1)]),
    "x_plus_x_t": (lambda x: x + x.T, [(4, 4)]),
}

REDUCTIONS = {
    "sum_last": (lambda x: x.sum(-1), [X]),
    "sum_keepdim": (lambda x: x - x.sum(0, keepdim=True), [X]),
    "sum_all": (lambda x: x.sum(), [X]),
    "sum_two_dims": (lambda x: x.sum((0, 2)), [(2, 3, 4)]),
    "mean": (lambda x: x.mean(-1, keepdim=True), [X]),
    "mean_all": (lambda x: x.mean(), [X]),
    "amax": (lambda x: x.amax(-1), [X]),
    "amax_keepdim": (lambda x: x.amax(0, keepdim=True) * x, [X]),
    "amin": (lambda x: x.amin(1), [X]),
    "max_all": (lambda x: x.max(), [X]),
    "max_dim_values": (lambda x: x.max(dim=-1).values, [X]),
    "min_dim_keepdim": (lambda x: x - torch.min(x, 0, keepdim=True)[0], [X]),
    "logsumexp_decomposed_by_torch": (lambda x: torch.logsumexp(x, -1), [X]),
    "var_unbiased": (lambda x: x.var(-1), [X]),
    "var_mean": (lambda x: torch.var_mean(x, -1), [X]),
    "std_mean": (lambda x: torch.std_mean(x, 0, keepdim=True), [X]),
    "var_biased_keepdim": (lambda x: x.var(-1, unbiased=False, keepdim=True), [X]),
    "var_correction": (lambda x: torch.var(x, dim=0, correction=2), [X]),
    "std": (lambda x: x.std(-1), [X]),
    "softmax": (lambda x: torch.softmax(x, -1), [X]),
    "softmax_dim0": (lambda x: F.softmax(x, dim=0), [X]),
    "log_softmax": (lambda x: F.log_softmax(x, -1), [X]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b, eps=1e-5), [X, (5,), (5,)]),
    "layer_norm_no_affine": (lambda x: F.layer_norm(x, (5,)), [X]),
    "layer_norm_two_dims": (lambda x: F.layer_norm(x, (3, 4)), [(2, 3, 4)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (5,), w, eps=1e-6), [X, (5,)]),
    "rms_norm_default_eps": (lambda x: F.rms_norm(x, (5,)), [X]),
    "normalize": (lambda x: F.normalize(x, dim=-1), [X]),
    "norm_method": (lambda x: x / x.norm(dim=-1, keepdim=True), [X]),
    "normalize_p1_dim0": (lambda x: F.normalize(x, p=1.0, dim=0), [X]),
    "vector_norm_inf": (lambda x: torch.linalg.vector_norm(x, ord=math.inf, dim=-1), [X]),
}

CONTRACTIONS = {
    "matmul": (lambda a, b: a @ b, [(3, 4), (4, 5)]),
    "matmul_vec_mat": (lambda a, b: a @ b, [(4,), (4, 5)]),
    "matmul_mat_vec": (lambda a, b: torch.matmul(a, b), [(3, 4), (4,)]),
    "matmul_dot": (lambda a, b: a @ b, [(4,), (4,)]),
    "matmul_batched_broadcast": (lambda a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_outer_k1": (lambda a, b: a @ b, [(3, 1), (1, 5)]),
    "mm": (torch.mm, [(3, 4), (4, 5)]),
    "bmm": (torch.bmm, [(2, 3, 4), (2, 4, 5)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(2, 3, 4), (5, 4), (5,)]),
    "linear_module": (torch.nn.Linear(4, 6), [(3, 4)]),
    "linear_no_bias": (torch.nn.Linear(4, 6, bias=False), [(2, 3, 4)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(5,), (3, 4), (4, 5)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "einsum_decomposed_by_torch": (lambda a, b: torch.einsum("bhsd,bhtd->bhst", a, b), [(2, 3, 4, 5), (2, 3, 6, 5)]),
    "x_at_x": (lambda x: x @ x, [(4, 4)]),
    "gram": (lambda x: x @ x.T, [(3, 4)]),
}

LAYOUT = {
    "transpose": (lambda x: x.transpose(0, 1) * 2, [X]),
    "permute": (lambda x: x.permute(2, 0, 1) + 1, [(2, 3, 4)]),
    "t_then_matmul": (lambda a, b: a.t() @ b, [(4, 3), (4, 5)]),
    "view_split": (lambda x: x.view(3, 2, 4).sum(-1), [(3, 8)]),
    "reshape_merge": (lambda x: x.reshape(6, 4) * 2, [(2, 3, 4)]),
    "reshape_merge_then_split": (lambda x: x.reshape(2, 12).reshape(4, 6) + 1, [(2, 3, 4)]),
    "flatten": (lambda x: x.flatten(), [(2, 3, 4)]),
    "unflatten": (lambda x: x.unflatten(-1, (2, 3)), [(4, 6)]),
    "heads_and_back": (lambda x: x.view(3, 2, 4).transpose(0, 1).transpose(0, 1).reshape(3, 8), [(3, 8)]),
    "merge_after_transpose": (lambda x: x.transpose(0, 1).reshape(12), [(3, 4)]),
    "unsqueeze": (lambda x, y: x.unsqueeze(1) * y, [(3, 4), (3, 2, 4)]),
    "squeeze": (lambda x: x.squeeze(1) + 1, [(3, 1, 4)]),
    "expand": (lambda x: x.unsqueeze(0).expand(2, 3, 4), [(3, 4)]),
    "expand_then_reduce": (lambda x: x.expand(3, 4).sum(0), [(1, 4)]),
    "expand_then_merge": (lambda x: x[:, None, :].expand(3, 2, 4).reshape(6, 4), [(3, 4)]),
    "contiguous": (lambda x: x.transpose(0, 1).contiguous() + 1, [X]),
    "size_one_input": (lambda q, k: q @ k.transpose(-1, -2), [(2, 1, 4), (2, 6, 4)]),
    "identity": (lambda x: x, [X]),
    "several_outputs": (lambda x: (x * 2, x.T, {"again": x * 2}), [X]),
    "zero_dim_input": (lambda x, a: x * a, [X, ()]),
    "constant_output": (lambda x: torch.ones(3, 4) + x.sum(), [X]),
    "expanded_output": (lambda x: x.sum(-1, keepdim=True).expand(3, 5), [X]),
}

# The interpreter computes in float64 whatever the dtype (dtypes constrain typing
# and code generation only), so these inputs are exact in float16 and the
# arithmetic after the casts is exact too.
CASTS = {
    "half_float": (lambda x: x.half().float(), [(X, "f16")]),
    "to_float32": (lambda x: x.to(torch.float32) * 2, [(X, "f16")]),
    "type_float16": (lambda x: x.type(torch.float16), [(X, "f16")]),
    "float_of_half_sum": (lambda x: (x.half() + x.half()).double(), [(X, "f16")]),
    "softmax_with_dtype": (lambda x: F.softmax(x.float(), -1, dtype=torch.float64), [(X, "f16")]),
    "mixed_precision_promotes": (lambda x, y: x.float() * y, [(X, "f16"), (X, "f16")]),
}

MASKS = {
    "causal_ge": (lambda x: x.masked_fill(~(torch.arange(4)[:, None] >= torch.arange(4)[None, :]), -math.inf),
                  [(4, 4)]),
    "tril_ones": (lambda x: x.masked_fill(torch.ones(4, 4, dtype=torch.bool).tril() == 0, float("-inf")), [(4, 4)]),
    "triu_full": (lambda x: x + torch.full((4, 4), float("-inf")).triu(1), [(4, 4)]),
    "sliding_window": (
        lambda x: torch.where(
            (torch.arange(5)[:, None] >= torch.arange(5)[None, :])
            & (torch.arange(5)[:, None] - torch.arange(5)[None, :] < 2),
            x, -math.inf),
        [(5, 5)]),
    "constant_mask_logic": (
        lambda x: x.masked_fill(~(torch.ones(4, 4, dtype=torch.bool) & (torch.arange(4)[:, None] >= torch.arange(4))),
                                -math.inf),
        [(4, 4)]),
    "constant_condition": (lambda x: torch.where(torch.ones(3, 1, dtype=torch.bool), x, 0.0).sum(0), [(1, 5)]),
    "constant_or": (lambda x: (torch.zeros(3, 5, dtype=torch.bool) | (x > 0)), [(5,)]),
    "where_tensors": (lambda c, a, b: torch.where(c > 0, a, b), [X, X, X]),
    "bool_input_mask": (lambda x, m: x.masked_fill(m, 0.0), [X, (X, "bool")]),
    "int_input_mask": (lambda x, m: x.masked_fill(m == 0, -math.inf), [X, (X, "int")]),
    "where_scalar": (lambda c, a: torch.where(c < 0.5, a, 0.0), [X, X]),
    "masked_fill_input_mask": (lambda x, m: x.masked_fill(m > 0, 0.0), [X, X]),
    "mask_output": (lambda x: torch.arange(4)[:, None] >= torch.arange(4)[None, :], [(1,)]),
    "ne_and_or": (lambda x, y: torch.where((x != y) | (x > 0), x, y), [X, X]),
    "arange_float": (lambda x: x * torch.arange(5, dtype=torch.float64) * 0.5, [X]),
    "arange_start_step": (lambda x: x + torch.arange(1, 10, 2), [X]),
    "tril_tensor": (lambda x: torch.tril(x, diagonal=-1), [(4, 5)]),
    "triu_tensor": (lambda x: x.triu(), [(5, 4)]),
}

CASES = {**POINTWISE, **REDUCTIONS, **CONTRACTIONS, **LAYOUT, **CASTS, **MASKS}


def make_args(specs, seed=0):
    """specs: a shape, or (shape, kind) with kind "positive" (> 0), "f16"
    (exact in float16), "bool" or "int" (0/1 masks)."""
    args = []
    for i, spec in enumerate(specs):
        shape, kind = (spec[0], spec[1]) if len(spec) == 2 and isinstance(spec[1], str) else (spec, "")
        t = randn(*shape, seed=seed + i, positive=kind == "positive")
        if kind == "f16":
            t = t.half().double()
        elif kind in ("bool", "int"):
            t = t > 0 if kind == "bool" else (t > 0).long()
        args.append(t)
    return args


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_eager(case):
    fn, specs = CASES[case]
    check_against_eager(fn, *make_args(specs), name=case)


def test_scaled_dot_product_attention_plain():
    q, k, v = randn(2, 3, 5, 4, seed=1), randn(2, 3, 6, 4, seed=2), randn(2, 3, 6, 7, seed=3)
    check_against_eager(F.scaled_dot_product_attention, q, k, v)


def test_scaled_dot_product_attention_causal_and_scale():
    q, k, v = randn(2, 3, 6, 4, seed=1), randn(2, 3, 6, 4, seed=2), randn(2, 3, 6, 4, seed=3)
    r = check_against_eager(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
                            q, k, v)
    assert "(iota t)" in r.text and "(iota s)" in r.text


def test_scaled_dot_product_attention_additive_and_bool_masks():
    q, k, v = randn(2, 5, 4, seed=1), randn(2, 6, 4, seed=2), randn(2, 6, 4, seed=3)
    bias = randn(5, 6, seed=4)
    check_against_eager(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, bias)
    keep = randn(5, 6, seed=5) > -0.5
    keep[:, 0] = True  # no row fully masked
    check_against_eager(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0), q, k, v,
                        keep.double())


def test_scaled_dot_product_attention_grouped_query_heads():
    q, k, v = randn(1, 4, 3, 8, seed=1), randn(1, 2, 5, 8, seed=2), randn(1, 2, 5, 8, seed=3)
    r = check_against_eager(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)
    # Keys are not copied per query head: the query heads are split into (h, g).
    assert "(split h h1 g q)" in r.text.replace("h1 g", "h1 g") or "(split" in r.text
    assert "(merge" in r.text
