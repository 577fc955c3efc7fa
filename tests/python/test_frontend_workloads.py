"""The benchmark workloads (issue 8) at small sizes, written as a user would
write them, through the front end and the reference interpreter against eager."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

import eqiforge
from eqiforge.frontend import to_ir
from test_frontend import TOLERANCE, check_against_eager, evaluate_ir, max_rel_error, randn

T, D, N, R = 3, 16, 24, 4  # tokens, hidden, intermediate, LoRA rank
H, E = 4, 8  # heads x head dim (H * E = 32)


def rms(x, g, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rmsnorm_gated_mlp(x, g, w1, w2):
    n = rms(x, g)
    return F.silu(n @ w1) * (n @ w2)


def layernorm_gemm(x, gamma, beta, w):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=1e-5) @ w


def lora(x, w, a, b):
    return x @ w + (x @ a) @ b


def rmsnorm_swiglu_ffn(x, g, wg, wu, wd):
    n = rms(x, g)
    return (F.silu(n @ wg) * (n @ wu)) @ wd


def gated_mlp(x, w1, w2):
    return F.silu(x @ w1) * (x @ w2)


def ngpt_update(h, x, w, alpha):
    def norm(v):
        return v / v.norm(dim=-1, keepdim=True)

    return norm(h + alpha * (norm(x @ w) - h))


def qk_norm_projections(x, wq, wk, gq, gk):
    t = x.shape[0]
    q = (x @ wq).view(t, H, E)
    k = (x @ wk).view(t, H, E)
    return rms(q, gq).reshape(t, H * E), rms(k, gk).reshape(t, H * E)


def attention_decode(q, k, v):
    # q: [B, H, 1, E], k/v: [B, H, S, E] (a KV cache)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(s, dim=-1) @ v


def attention_prefill_causal(q, k, v):
    s = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def self_attention_block(x, wq, wk, wv, wo):
    b, s, d = x.shape
    q = (x @ wq).view(b, s, H, E).transpose(1, 2)
    k = (x @ wk).view(b, s, H, E).transpose(1, 2)
    v = (x @ wv).view(b, s, H, E).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).reshape(b, s, d) @ wo


class RMSNormMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.RMSNorm(D, eps=1e-6)
        self.gate = torch.nn.Linear(D, N, bias=False)
        self.up = torch.nn.Linear(D, N, bias=False)
        self.down = torch.nn.Linear(N, D, bias=False)

    def forward(self, x):
        n = self.norm(x)
        return self.down(F.silu(self.gate(n)) * self.up(n))


class LayerNormGemm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(D)
        self.proj = torch.nn.Linear(D, N)

    def forward(self, x):
        return self.proj(self.norm(x))


WORKLOADS = {
    "rmsnorm_gated_mlp": (rmsnorm_gated_mlp, [(T, D), (D,), (D, N), (D, N)]),
    "layernorm_gemm": (layernorm_gemm, [(T, D), (D,), (D,), (D, N)]),
    "lora": (lora, [(T, D), (D, N), (D, R), (R, N)]),
    "rmsnorm_swiglu_ffn": (rmsnorm_swiglu_ffn, [(T, D), (D,), (D, N), (D, N), (N, D)]),
    "gated_mlp": (gated_mlp, [(T, D), (D, N), (D, N)]),
    "qk_norm_projections": (qk_norm_projections, [(T, D), (D, H * E), (D, H * E), (E,), (E,)]),
    "attention_decode": (attention_decode, [(2, H, 1, E), (2, H, 7, E), (2, H, 7, E)]),
    "attention_prefill_causal": (attention_prefill_causal, [(2, H, 6, E), (2, H, 6, E), (2, H, 6, E)]),
    "self_attention_block": (self_attention_block, [(2, 5, H * E), (H * E, H * E), (H * E, H * E),
                                                    (H * E, H * E), (H * E, H * E)]),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_eager(name):
    fn, shapes = WORKLOADS[name]
    args = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    check_against_eager(fn, *args, name=name)


def test_ngpt_update_matches_eager():
    h, x, w, alpha = randn(T, D, seed=1), randn(T, D, seed=2), randn(D, D, seed=3), randn(D, seed=4) * 0.1
    check_against_eager(ngpt_update, h, x, w, alpha, name="ngpt_update")


def test_attention_decode_through_sdpa():
    q, k, v = randn(2, H, 1, E, seed=1), randn(2, H, 9, E, seed=2), randn(2, H, 9, E, seed=3)
    check_against_eager(F.scaled_dot_product_attention, q, k, v, name="decode_sdpa")


def test_attention_prefill_through_sdpa_causal():
    q, k, v = randn(1, H, 7, E, seed=1), randn(1, H, 7, E, seed=2), randn(1, H, 7, E, seed=3)
    check_against_eager(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v,
                        name="prefill_sdpa")


@pytest.mark.parametrize("module", [RMSNormMLP, LayerNormGemm])
def test_module_workload_matches_eager(module):
    torch.manual_seed(0)
    result = check_against_eager(module(), randn(T, D, seed=5))
    kinds = {i.kind for i in result.inputs}
    assert kinds == {"arg", "parameter"}
    assert result.inputs[0].name == "x" and result.inputs[0].kind == "arg"


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_in_half_precision_means_the_same(name):
    """The benchmarks run in float16: the IR is typed f16, and (the interpreter
    computing in float64 whatever the dtype) it means what eager computes in
    float64 on the same values."""
    fn, shapes = WORKLOADS[name]
    args = [randn(*s, seed=i).half() for i, s in enumerate(shapes)]
    r = to_ir(fn, *args, name=name)
    assert set(re.findall(r"\(input \w+ (\w+) ", r.text)) == {"f16"}
    eqiforge.typecheck(r.text)
    got = evaluate_ir(r, *args)
    with torch.no_grad():
        want = fn(*[a.double() for a in args])
    want = (want,) if isinstance(want, torch.Tensor) else want
    for info, w in zip(r.outputs, want):
        err = max_rel_error(torch.from_numpy(got[info.name]), w.reshape(got[info.name].shape))
        assert err <= TOLERANCE, f"{info.name}: max relative error {err:.3g}\n{r.text}"
