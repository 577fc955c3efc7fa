"""The benchmark workloads, each a plain PyTorch function with its configs.

Three families:
  general    seven programs of a transformer block at 1, 8 and 16 tokens,
             hidden size 4096, every weight 4096x4096, fp16;
  attention  multi-head attention, 32 heads of dim 128: decode (one query
             token against a KV cache of 4096) at batch 1/8/16 and causal
             prefill (sequence 4096) at batch 1/4/8;
  layer      the decode layers of the case studies: QK-norm multi-head latent
             attention, mHC (manifold-constrained hyper-connections) with 4
             residual streams and 20 Sinkhorn iterations, sliding-window GQA,
             attention sinks, differential attention.

Every function is written as a user would write it (no fused library calls),
takes tensors only (shape constants are read from the tensors or bound by the
config's builder) and returns a tensor or a tuple of tensors. The decode
layers attend over a KV cache that already holds the current token: writing
the new key and value into the cache is a separate step of a serving loop,
not part of the layer's arithmetic.

Each workload also has a `small` config for checks on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

EPS = 1e-6


# ---- the building blocks -------------------------------------------------------------


def rms(x, g):
    """RMSNorm over the last dim with gain g."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * g


def l2_normalize(v):
    """nGPT's norm: divide by the L2 norm of the last dim."""
    return v / v.norm(dim=-1, keepdim=True)


# ---- general programs (x: [tokens, hidden]) ---------------------------------------------


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
    return l2_normalize(h + alpha * (l2_normalize(x @ w) - h))


def qk_norm_projections(x, wq, wk, gq, gk):
    t = x.shape[0]
    e = gq.shape[0]
    heads = wq.shape[1] // e
    q = (x @ wq).view(t, heads, e)
    k = (x @ wk).view(t, heads, e)
    return rms(q, gq).reshape(t, heads * e), rms(k, gk).reshape(t, heads * e)


# ---- multi-head attention ([batch, heads, seq, head dim]) ------------------------------


def attention_decode(q, k, v):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(s, dim=-1) @ v


def attention_prefill(q, k, v):
    s = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    causal = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def sdpa_decode(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def sdpa_prefill(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


# ---- decode layers of the case studies (x: [batch, hidden], one token) ----------------


def mla_qknorm_decode(x, wq, gq, ckv, kinv, w_uk, gk, w_uv, wo):
    """Multi-head latent attention with QK-norm, one decode step.

    x [B, D]; wq [D, H*E]; gq, gk [E]; ckv [B, S, C] the latent KV cache;
    kinv [B, S, H] the cached inverse RMS of each past token's expanded key
    (per head); w_uk, w_uv [C, H*E] the key and value up-projections;
    wo [H*E, D]. Keys and values are expanded from the latent cache, as the
    model is written; absorbing the up-projections into the query and the
    output is the optimizer's job. (No decoupled RoPE key: positions play no
    part in what is measured here.)
    """
    b, s, _ = ckv.shape
    heads = kinv.shape[-1]
    e = gq.shape[0]
    q = rms((x @ wq).view(b, heads, 1, e), gq)                                  # [B, H, 1, E]
    k = (ckv @ w_uk).view(b, s, heads, e) * kinv.unsqueeze(-1) * gk             # [B, S, H, E]
    v = (ckv @ w_uv).view(b, s, heads, e)
    scores = (q @ k.permute(0, 2, 3, 1)) / math.sqrt(e)                         # [B, H, 1, S]
    o = torch.softmax(scores, dim=-1) @ v.transpose(1, 2)                       # [B, H, 1, E]
    return o.reshape(b, heads * e) @ wo


def sinkhorn(logits, iters):
    """Sinkhorn-Knopp projection of exp(logits) [.., n, n] towards a doubly
    stochastic matrix: rows, then columns, `iters` times."""
    m = torch.exp(logits)
    for _ in range(iters):
        m = m / m.sum(-1, keepdim=True)
        m = m / m.sum(-2, keepdim=True)
    return m


def make_mhc_decode(sinkhorn_iters: int) -> Callable:
    """An mHC decoder layer (attention, then a SwiGLU MLP) at one decode step.

    The residual stream is n copies x [B, n, D]. Around each sublayer the
    connection reads the flattened, RMS-normalized streams and computes
    H_pre = sigmoid(.), H_post = 2 sigmoid(.) and H_res = Sinkhorn(.) (the
    scalar gates of the mHC paper are folded into the projections phi). The
    sublayer's input is H_pre . x, its output o goes back as
    x' = H_res x + H_post (x) o.
    """

    def connection(x, phi_pre, phi_post, phi_res, b_pre, b_post, b_res):
        bsz, n, d = x.shape
        flat = x.reshape(bsz, n * d)
        xn = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + EPS)
        h_pre = torch.sigmoid(xn @ phi_pre + b_pre)                                  # [B, n]
        h_post = 2.0 * torch.sigmoid(xn @ phi_post + b_post)                         # [B, n]
        h_res = sinkhorn((xn @ phi_res).view(bsz, n, n) + b_res, sinkhorn_iters)     # [B, n, n]
        return h_pre, h_post, h_res

    def mhc_decode(x, phi_pre1, phi_post1, phi_res1, b_pre1, b_post1, b_res1, g_attn, wq, k_cache, v_cache, wo,
                   phi_pre2, phi_post2, phi_res2, b_pre2, b_post2, b_res2, g_mlp, wg, wu, wd):
        bsz, n, d = x.shape
        heads, e = k_cache.shape[1], k_cache.shape[-1]
        # attention sublayer
        h_pre, h_post, h_res = connection(x, phi_pre1, phi_post1, phi_res1, b_pre1, b_post1, b_res1)
        u = (h_pre.unsqueeze(-1) * x).sum(1)                                          # [B, D]
        q = (rms(u, g_attn) @ wq).view(bsz, heads, 1, e)
        scores = (q @ k_cache.transpose(-1, -2)) / math.sqrt(e)
        attn = (torch.softmax(scores, dim=-1) @ v_cache).reshape(bsz, heads * e) @ wo
        x = h_res @ x + h_post.unsqueeze(-1) * attn.unsqueeze(1)
        # MLP sublayer
        h_pre, h_post, h_res = connection(x, phi_pre2, phi_post2, phi_res2, b_pre2, b_post2, b_res2)
        u = (h_pre.unsqueeze(-1) * x).sum(1)
        nm = rms(u, g_mlp)
        mlp = (F.silu(nm @ wg) * (nm @ wu)) @ wd
        return h_res @ x + h_post.unsqueeze(-1) * mlp.unsqueeze(1)

    return mhc_decode


def make_sliding_window_gqa_decode(window: int) -> Callable:
    """Grouped-query attention over the last `window` positions of the cache,
    one decode step: x [B, D]; wq [D, Hq*E]; k_cache, v_cache [B, Hkv, S, E]
    (the current token at position S-1); wo [Hq*E, D]."""

    def sliding_window_gqa_decode(x, wq, k_cache, v_cache, wo):
        b = x.shape[0]
        hkv, s, e = k_cache.shape[1], k_cache.shape[2], k_cache.shape[3]
        group = wq.shape[1] // (hkv * e)
        q = (x @ wq).view(b, hkv, group, e)
        scores = (q @ k_cache.transpose(-1, -2)) / math.sqrt(e)                    # [B, Hkv, G, S]
        pos = torch.arange(s, device=x.device)
        scores = scores.masked_fill(pos < s - window, float("-inf"))
        o = torch.softmax(scores, dim=-1) @ v_cache                                 # [B, Hkv, G, E]
        return o.reshape(b, hkv * group * e) @ wo

    return sliding_window_gqa_decode


def make_sliding_window_gqa_sdpa(window: int) -> Callable:
    """The same layer as a user with SDPA writes it: the window's keys and
    values sliced out of the cache (views, no copy) and SDPA's grouped-query
    form (enable_gqa: query head i reads key/value head i // group, the
    grouping of the eager version's view)."""

    def sliding_window_gqa_sdpa(x, wq, k_cache, v_cache, wo):
        b = x.shape[0]
        hkv, s, e = k_cache.shape[1], k_cache.shape[2], k_cache.shape[3]
        heads = wq.shape[1] // e
        q = (x @ wq).view(b, heads, 1, e)
        k, v = k_cache[:, :, s - window:], v_cache[:, :, s - window:]
        o = F.scaled_dot_product_attention(q, k, v, enable_gqa=heads != hkv)
        return o.reshape(b, heads * e) @ wo

    return sliding_window_gqa_sdpa


def attention_sinks_decode(x, wq, k_cache, v_cache, sinks, wo):
    """Attention with a learned sink logit per head (the softmax has one more
    entry, which takes probability mass and no value): x [B, D]; wq [D, H*E];
    k_cache, v_cache [B, H, S, E]; sinks [H]; wo [H*E, D]."""
    b = x.shape[0]
    heads, e = k_cache.shape[1], k_cache.shape[-1]
    q = (x @ wq).view(b, heads, 1, e)
    scores = (q @ k_cache.transpose(-1, -2)) / math.sqrt(e)                        # [B, H, 1, S]
    sink = sinks.view(1, heads, 1, 1)
    m = torch.maximum(scores.amax(-1, keepdim=True), sink)
    p = torch.exp(scores - m)
    denom = p.sum(-1, keepdim=True) + torch.exp(sink - m)
    o = (p @ v_cache) / denom
    return o.reshape(b, heads * e) @ wo


def make_diff_attention_decode(lambda_init: float) -> Callable:
    """Differential attention, one decode step: two softmax maps per head from
    the two halves of the query and key, their difference weighted by lam,
    a per-head RMSNorm, the (1 - lambda_init) scale and the output projection.
    x [B, D]; wq [D, H*2*d]; k_cache [B, H, 2, S, d]; v_cache [B, H, S, 2d];
    lam [H]; g [2d]; wo [H*2d, D]."""

    def diff_attention_decode(x, wq, k_cache, v_cache, lam, g, wo):
        b = x.shape[0]
        heads, d = k_cache.shape[1], k_cache.shape[-1]
        q = (x @ wq).view(b, heads, 2, 1, d)
        p = torch.softmax((q @ k_cache.transpose(-1, -2)) / math.sqrt(d), dim=-1)  # [B, H, 2, 1, S]
        diff = (p[:, :, 0:1] - lam.view(1, heads, 1, 1, 1) * p[:, :, 1:2]).squeeze(2)  # [B, H, 1, S]
        o = rms(diff @ v_cache, g) * (1.0 - lambda_init)                           # [B, H, 1, 2d]
        return o.reshape(b, heads * 2 * d) @ wo

    return diff_attention_decode


# ---- inputs -----------------------------------------------------------------------------

# How each input is drawn (fresh and non-zero; scaled so that fp16 neither
# overflows nor loses everything to rounding):
#   act        standard normal
#   weight     normal / sqrt(fan-in), fan-in = first dim: products stay O(1)
#   gain       1 + 0.1 normal
#   bias       0.5 normal
#   scale      uniform in [0.5, 1.5] (positive factors)
#   rate       uniform in [0.05, 0.5] (mixing rates)
#   unit_rows  normal, each row (last dim) scaled to unit L2 norm
INIT_KINDS = ("act", "weight", "gain", "bias", "scale", "rate", "unit_rows")


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    init: str

    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Config:
    label: str
    params: dict


@dataclass(frozen=True)
class Workload:
    name: str
    family: str
    title: str
    # params -> the plain PyTorch function for that config
    build: Callable[[dict], Callable]
    # params -> the inputs, in the function's argument order
    inputs: Callable[[dict], list[InputSpec]]
    configs: tuple[Config, ...]
    small: Config
    # params -> the same computation through F.scaled_dot_product_attention
    # (FlashAttention baseline), for plain attention and the layers a user
    # would write with it
    sdpa: Callable[[dict], Callable] | None = None
    note: str = ""

    def config(self, label: str) -> Config:
        if label == self.small.label:
            return self.small
        for c in self.configs:
            if c.label == label:
                return c
        known = ", ".join([c.label for c in self.configs] + [self.small.label])
        raise KeyError(f"workload {self.name} has no config {label!r}; it has {known}")


@dataclass(frozen=True)
class Case:
    """One workload at one config: what a benchmark row is about."""

    workload: Workload
    config: Config

    @property
    def id(self) -> str:
        return f"{self.workload.name}/{self.config.label}"

    @property
    def params(self) -> dict:
        return self.config.params

    def fn(self) -> Callable:
        return self.workload.build(self.params)

    def sdpa_fn(self) -> Callable | None:
        return self.workload.sdpa(self.params) if self.workload.sdpa else None

    def specs(self) -> list[InputSpec]:
        return self.workload.inputs(self.params)

    def input_bytes(self, elem: int = 2) -> int:
        return sum(s.numel() for s in self.specs()) * elem


def _draw(spec: InputSpec, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    shape = spec.shape
    if spec.init in ("act", "weight", "gain", "bias", "unit_rows"):
        t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
        if spec.init == "weight":
            t = t / math.sqrt(shape[0])
        elif spec.init == "gain":
            t = 1.0 + 0.1 * t
        elif spec.init == "bias":
            t = 0.5 * t
        elif spec.init == "unit_rows":
            t = t / t.norm(dim=-1, keepdim=True)
        return t
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    if spec.init == "scale":
        return 0.5 + u
    if spec.init == "rate":
        return 0.05 + 0.45 * u
    raise ValueError(f"input {spec.name}: unknown init kind {spec.init!r}; expected one of {', '.join(INIT_KINDS)}")


def make_inputs(case: Case, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float16,
                seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Fresh random inputs for a case: same seed, same values. On the meta
    device, empty tensors of the right shapes (for shape checks at full size
    without the memory)."""
    device = torch.device(device)
    specs = case.specs()
    if device.type == "meta":
        return tuple(torch.empty(s.shape, dtype=dtype, device=device) for s in specs)
    gen = torch.Generator(device=device).manual_seed(seed)
    return tuple(_draw(s, gen, device).to(dtype) for s in specs)


# ---- the table --------------------------------------------------------------------------

HIDDEN = 4096
TOKENS = (1, 8, 16)


def _fixed(fn: Callable) -> Callable[[dict], Callable]:
    return lambda p: fn


def _general_configs(extra: dict) -> tuple[Config, ...]:
    return tuple(Config(f"b{t}", {"T": t, "D": HIDDEN, "N": HIDDEN, **extra}) for t in TOKENS)


def _general_small(extra: dict) -> Config:
    return Config("small", {"T": 3, "D": 64, "N": 64, **extra})


def _w(name, k, n):
    return InputSpec(name, (k, n), "weight")


GENERAL = [
    Workload(
        "rmsnorm_gated_mlp", "general", "RMSNorm + gated MLP",
        _fixed(rmsnorm_gated_mlp),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), InputSpec("g", (p["D"],), "gain"),
                   _w("w1", p["D"], p["N"]), _w("w2", p["D"], p["N"])],
        _general_configs({}), _general_small({}),
    ),
    Workload(
        "layernorm_gemm", "general", "LayerNorm + GEMM",
        _fixed(layernorm_gemm),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), InputSpec("gamma", (p["D"],), "gain"),
                   InputSpec("beta", (p["D"],), "bias"), _w("w", p["D"], p["N"])],
        _general_configs({}), _general_small({}),
    ),
    Workload(
        "lora", "general", "LoRA (rank 16)",
        _fixed(lora),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), _w("w", p["D"], p["N"]),
                   _w("a", p["D"], p["R"]), _w("b", p["R"], p["N"])],
        _general_configs({"R": 16}), _general_small({"R": 4}),
    ),
    Workload(
        "rmsnorm_swiglu_ffn", "general", "RMSNorm + SwiGLU FFN",
        _fixed(rmsnorm_swiglu_ffn),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), InputSpec("g", (p["D"],), "gain"),
                   _w("wg", p["D"], p["N"]), _w("wu", p["D"], p["N"]), _w("wd", p["N"], p["D"])],
        _general_configs({}), _general_small({}),
    ),
    Workload(
        "gated_mlp", "general", "Gated MLP",
        _fixed(gated_mlp),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), _w("w1", p["D"], p["N"]), _w("w2", p["D"], p["N"])],
        _general_configs({}), _general_small({}),
    ),
    Workload(
        "ngpt_update", "general", "nGPT normalized update",
        _fixed(ngpt_update),
        lambda p: [InputSpec("h", (p["T"], p["D"]), "unit_rows"), InputSpec("x", (p["T"], p["D"]), "act"),
                   _w("w", p["D"], p["D"]), InputSpec("alpha", (p["D"],), "rate")],
        _general_configs({}), _general_small({}),
    ),
    Workload(
        "qk_norm_projections", "general", "QK-norm projections",
        _fixed(qk_norm_projections),
        lambda p: [InputSpec("x", (p["T"], p["D"]), "act"), _w("wq", p["D"], p["H"] * p["E"]),
                   _w("wk", p["D"], p["H"] * p["E"]), InputSpec("gq", (p["E"],), "gain"),
                   InputSpec("gk", (p["E"],), "gain")],
        _general_configs({"H": 32, "E": 128}), _general_small({"H": 4, "E": 16}),
    ),
]


def _qkv(p, q_len):
    return [InputSpec("q", (p["B"], p["H"], q_len, p["E"]), "act"),
            InputSpec("k", (p["B"], p["H"], p["S"], p["E"]), "act"),
            InputSpec("v", (p["B"], p["H"], p["S"], p["E"]), "act")]


ATTENTION = [
    Workload(
        "attention_decode", "attention", "MHA decode (KV 4096)",
        _fixed(attention_decode),
        lambda p: _qkv(p, 1),
        tuple(Config(f"b{b}", {"B": b, "H": 32, "S": 4096, "E": 128}) for b in (1, 8, 16)),
        Config("small", {"B": 2, "H": 2, "S": 40, "E": 16}),
        sdpa=_fixed(sdpa_decode),
    ),
    Workload(
        "attention_prefill", "attention", "MHA causal prefill (seq 4096)",
        _fixed(attention_prefill),
        lambda p: _qkv(p, p["S"]),
        tuple(Config(f"b{b}", {"B": b, "H": 32, "S": 4096, "E": 128}) for b in (1, 4, 8)),
        Config("small", {"B": 2, "H": 2, "S": 24, "E": 16}),
        sdpa=_fixed(sdpa_prefill),
    ),
]


def _mla_inputs(p):
    b, d, h, e, c, s = p["B"], p["D"], p["H"], p["E"], p["C"], p["S"]
    return [InputSpec("x", (b, d), "act"), _w("wq", d, h * e), InputSpec("gq", (e,), "gain"),
            InputSpec("ckv", (b, s, c), "act"), InputSpec("kinv", (b, s, h), "scale"),
            _w("w_uk", c, h * e), InputSpec("gk", (e,), "gain"), _w("w_uv", c, h * e), _w("wo", h * e, d)]


def _mhc_inputs(p):
    b, n, d, h, e, s, f = p["B"], p["n"], p["D"], p["H"], p["E"], p["S"], p["F"]

    def conn(i):
        return [_w(f"phi_pre{i}", n * d, n), _w(f"phi_post{i}", n * d, n), _w(f"phi_res{i}", n * d, n * n),
                InputSpec(f"b_pre{i}", (n,), "bias"), InputSpec(f"b_post{i}", (n,), "bias"),
                InputSpec(f"b_res{i}", (n, n), "bias")]

    return ([InputSpec("x", (b, n, d), "act")] + conn(1)
            + [InputSpec("g_attn", (d,), "gain"), _w("wq", d, h * e),
               InputSpec("k_cache", (b, h, s, e), "act"), InputSpec("v_cache", (b, h, s, e), "act"),
               _w("wo", h * e, d)]
            + conn(2)
            + [InputSpec("g_mlp", (d,), "gain"), _w("wg", d, f), _w("wu", d, f), _w("wd", f, d)])


def _swa_inputs(p):
    b, d, hq, hkv, e, s = p["B"], p["D"], p["Hq"], p["Hkv"], p["E"], p["S"]
    return [InputSpec("x", (b, d), "act"), _w("wq", d, hq * e),
            InputSpec("k_cache", (b, hkv, s, e), "act"), InputSpec("v_cache", (b, hkv, s, e), "act"),
            _w("wo", hq * e, d)]


def _sinks_inputs(p):
    b, d, h, e, s = p["B"], p["D"], p["H"], p["E"], p["S"]
    return [InputSpec("x", (b, d), "act"), _w("wq", d, h * e),
            InputSpec("k_cache", (b, h, s, e), "act"), InputSpec("v_cache", (b, h, s, e), "act"),
            InputSpec("sinks", (h,), "act"), _w("wo", h * e, d)]


def _diff_inputs(p):
    b, d, h, hd, s = p["B"], p["D"], p["H"], p["d"], p["S"]
    return [InputSpec("x", (b, d), "act"), _w("wq", d, h * 2 * hd),
            InputSpec("k_cache", (b, h, 2, s, hd), "act"), InputSpec("v_cache", (b, h, s, 2 * hd), "act"),
            InputSpec("lam", (h,), "rate"), InputSpec("g", (2 * hd,), "gain"), _w("wo", h * 2 * hd, d)]


LAYERS = [
    Workload(
        "mla_qknorm_decode", "layer", "QK-norm MLA decode (hidden 4096, KV 16K)",
        _fixed(mla_qknorm_decode), _mla_inputs,
        (Config("b1", {"B": 1, "D": 4096, "H": 32, "E": 128, "C": 512, "S": 16384}),),
        Config("small", {"B": 2, "D": 64, "H": 4, "E": 16, "C": 32, "S": 48}),
    ),
    Workload(
        "mhc_decode", "layer", "mHC layer decode (hidden 512, KV 1K)",
        lambda p: make_mhc_decode(p["iters"]), _mhc_inputs,
        (Config("b16", {"B": 16, "n": 4, "D": 512, "H": 8, "E": 64, "S": 1024, "F": 2048, "iters": 20}),),
        Config("small", {"B": 2, "n": 4, "D": 32, "H": 2, "E": 16, "S": 24, "F": 64, "iters": 20}),
    ),
    Workload(
        "sliding_window_gqa_decode", "layer", "Sliding-window GQA decode (hidden 4096, KV 16K, window 4096)",
        lambda p: make_sliding_window_gqa_decode(p["W"]), _swa_inputs,
        (Config("b1", {"B": 1, "D": 4096, "Hq": 32, "Hkv": 8, "E": 128, "S": 16384, "W": 4096}),),
        Config("small", {"B": 2, "D": 64, "Hq": 4, "Hkv": 2, "E": 16, "S": 48, "W": 16}),
        sdpa=lambda p: make_sliding_window_gqa_sdpa(p["W"]),
    ),
    Workload(
        "attention_sinks_decode", "layer", "Attention sinks decode (hidden 1024, KV 32K)",
        _fixed(attention_sinks_decode), _sinks_inputs,
        (Config("b1", {"B": 1, "D": 1024, "H": 16, "E": 64, "S": 32768}),),
        Config("small", {"B": 2, "D": 32, "H": 2, "E": 16, "S": 40}),
    ),
    Workload(
        "diff_attention_decode", "layer", "Differential attention decode (hidden 1024, KV 32K)",
        lambda p: make_diff_attention_decode(p["lambda_init"]), _diff_inputs,
        (Config("b1", {"B": 1, "D": 1024, "H": 8, "d": 64, "S": 32768, "lambda_init": 0.8}),),
        Config("small", {"B": 2, "D": 64, "H": 2, "d": 16, "S": 40, "lambda_init": 0.8}),
    ),
]

WORKLOADS: dict[str, Workload] = {w.name: w for w in GENERAL + ATTENTION + LAYERS}
FAMILIES = ("general", "attention", "layer")
# Names accepted for a family on the command line.
FAMILY_ALIASES = {"general": "general", "attention": "attention", "attn": "attention",
                  "layer": "layer", "layers": "layer"}


def cases(only: list[str] | None = None, labels: list[str] | None = None, small: bool = False) -> list[Case]:
    """The cases selected by workload names, families or case ids (`only`)
    and config labels (`labels`), in table order. `small` takes each
    workload's small config instead of its full ones."""
    selected: list[Case] = []
    want_ids: set[str] = set()
    want_workloads: set[str] = set()
    for item in only or []:
        if item in WORKLOADS:
            want_workloads.add(item)
        elif item in FAMILY_ALIASES:
            want_workloads.update(w.name for w in WORKLOADS.values() if w.family == FAMILY_ALIASES[item])
        elif "/" in item and item.split("/", 1)[0] in WORKLOADS:
            name, label = item.split("/", 1)
            WORKLOADS[name].config(label)  # raises KeyError naming the configs it has
            want_ids.add(item)
        else:
            raise KeyError(f"no workload, family or case named {item!r}; workloads: {', '.join(WORKLOADS)}; "
                           f"families: {', '.join(FAMILIES)}")
    for w in WORKLOADS.values():
        configs = (w.small,) if small else w.configs
        for c in configs:
            case = Case(w, c)
            if only and w.name not in want_workloads and case.id not in want_ids:
                continue
            if labels and c.label not in labels:
                continue
            selected.append(case)
    return selected


def case_by_id(case_id: str) -> Case:
    name, label = case_id.split("/", 1)
    if name not in WORKLOADS:
        raise KeyError(f"no workload named {name!r}")
    return Case(WORKLOADS[name], WORKLOADS[name].config(label))
