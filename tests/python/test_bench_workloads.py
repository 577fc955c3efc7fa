"""The benchmark workloads (bench/workloads.py): each small config, run in
fp16 eager on the CPU, against a float64 reference written independently
here (loops, the other algebraic form, the textbook definition); the full
configs are the ones the benchmarks issue names and have consistent shapes."""

import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import workloads as W  # noqa: E402

F64 = torch.float64


def rel_l2(got, want):
    got, want = got.to(F64), want.to(F64)
    assert got.shape == want.shape
    assert torch.isfinite(got).all()
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def softmax_rows(s):
    """Textbook softmax along the last dim, by explicit max, exp and sum."""
    m = s.max(dim=-1, keepdim=True).values
    e = torch.exp(s - m)
    return e / e.sum(dim=-1, keepdim=True)


def rms_ref(x, g, eps=W.EPS):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) / x.shape[-1] + eps) * g


def silu(z):
    return z / (1 + torch.exp(-z))


# ---- references, one per workload (float64 in, float64 out) ------------------------------


def ref_rmsnorm_gated_mlp(p, x, g, w1, w2):
    n = rms_ref(x, g)
    return silu(torch.einsum("td,dn->tn", n, w1)) * torch.einsum("td,dn->tn", n, w2)


def ref_layernorm_gemm(p, x, gamma, beta, w):
    mu = x.sum(-1, keepdim=True) / x.shape[-1]
    var = ((x - mu) ** 2).sum(-1, keepdim=True) / x.shape[-1]
    return torch.einsum("td,dn->tn", (x - mu) / torch.sqrt(var + 1e-5) * gamma + beta, w)


def ref_lora(p, x, w, a, b):
    return torch.einsum("td,dn->tn", x, w + a @ b)  # the merged adapter: x(W + AB)


def ref_rmsnorm_swiglu_ffn(p, x, g, wg, wu, wd):
    n = rms_ref(x, g)
    return torch.einsum("tn,nd->td", silu(n @ wg) * (n @ wu), wd)


def ref_gated_mlp(p, x, w1, w2):
    return silu(x @ w1) * (x @ w2)


def ref_ngpt_update(p, h, x, w, alpha):
    def unit(v):
        return v / torch.sqrt((v * v).sum(-1, keepdim=True))

    return unit(h + alpha * (unit(x @ w) - h))


def ref_qk_norm_projections(p, x, wq, wk, gq, gk):
    h, e = p["H"], p["E"]
    outs = []
    for w, g in ((wq, gq), (wk, gk)):
        y = x @ w
        cols = [rms_ref(y[:, i * e:(i + 1) * e], g) for i in range(h)]  # head by head
        outs.append(torch.cat(cols, dim=1))
    return tuple(outs)


def ref_attention_decode(p, q, k, v):
    out = torch.empty_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = (k[b, h] @ q[b, h, 0]) / math.sqrt(q.shape[-1])
            out[b, h, 0] = softmax_rows(s) @ v[b, h]
    return out


def ref_attention_prefill(p, q, k, v):
    out = torch.empty_like(q)
    for i in range(q.shape[2]):  # query i sees keys 0..i
        s = torch.einsum("bhe,bhte->bht", q[:, :, i], k[:, :, : i + 1]) / math.sqrt(q.shape[-1])
        out[:, :, i] = torch.einsum("bht,bhte->bhe", softmax_rows(s), v[:, :, : i + 1])
    return out


def ref_mla_qknorm_decode(p, x, wq, gq, ckv, kinv, w_uk, gk, w_uv, wo):
    """The absorbed form: keys and values never expanded. Score of head h at
    position t = kinv[t,h] * ckv[t] . (W_uk_h (gk * q_h)); output of head h =
    W_uv_h^T (sum_t p_t ckv[t])."""
    b_, h_, e = x.shape[0], p["H"], p["E"]
    out = torch.zeros(b_, h_ * e, dtype=F64)
    for b in range(b_):
        qx = x[b] @ wq
        for h in range(h_):
            q = rms_ref(qx[h * e:(h + 1) * e], gq)
            q_lat = w_uk[:, h * e:(h + 1) * e] @ (gk * q)               # [C]
            s = kinv[b, :, h] * (ckv[b] @ q_lat) / math.sqrt(e)          # [S]
            ctx = softmax_rows(s) @ ckv[b]                               # [C]
            out[b, h * e:(h + 1) * e] = ctx @ w_uv[:, h * e:(h + 1) * e]
    return out @ wo


def ref_mhc_decode(p, x, phi_pre1, phi_post1, phi_res1, b_pre1, b_post1, b_res1, g_attn, wq, k_cache, v_cache, wo,
                   phi_pre2, phi_post2, phi_res2, b_pre2, b_post2, b_res2, g_mlp, wg, wu, wd):
    n, h_, e = p["n"], p["H"], p["E"]

    def sigmoid(z):
        return 1 / (1 + torch.exp(-z))

    def coefficients(xb, phi_pre, phi_post, phi_res, b_pre, b_post, b_res):
        flat = xb.reshape(-1)
        xn = flat / torch.sqrt((flat * flat).mean() + W.EPS)
        m = torch.exp((xn @ phi_res).reshape(n, n) + b_res)
        for _ in range(p["iters"]):
            for i in range(n):
                m[i] = m[i] / m[i].sum()
            for j in range(n):
                m[:, j] = m[:, j] / m[:, j].sum()
        return sigmoid(xn @ phi_pre + b_pre), 2 * sigmoid(xn @ phi_post + b_post), m

    out = torch.empty_like(x)
    for b in range(x.shape[0]):
        xb = x[b]
        pre, post, res = coefficients(xb, phi_pre1, phi_post1, phi_res1, b_pre1, b_post1, b_res1)
        u = sum(pre[i] * xb[i] for i in range(n))
        q = rms_ref(u, g_attn) @ wq
        heads = []
        for h in range(h_):
            s = k_cache[b, h] @ q[h * e:(h + 1) * e] / math.sqrt(e)
            heads.append(softmax_rows(s) @ v_cache[b, h])
        attn = torch.cat(heads) @ wo
        xb = torch.stack([sum(res[i, j] * xb[j] for j in range(n)) + post[i] * attn for i in range(n)])
        pre, post, res = coefficients(xb, phi_pre2, phi_post2, phi_res2, b_pre2, b_post2, b_res2)
        u = sum(pre[i] * xb[i] for i in range(n))
        nm = rms_ref(u, g_mlp)
        mlp = (silu(nm @ wg) * (nm @ wu)) @ wd
        out[b] = torch.stack([sum(res[i, j] * xb[j] for j in range(n)) + post[i] * mlp for i in range(n)])
    return out


def ref_sliding_window_gqa_decode(p, x, wq, k_cache, v_cache, wo):
    """Only the window's keys, each query head against its group's KV head."""
    hq, hkv, e, s, w = p["Hq"], p["Hkv"], p["E"], p["S"], p["W"]
    group = hq // hkv
    out = torch.zeros(x.shape[0], hq * e, dtype=F64)
    for b in range(x.shape[0]):
        q = x[b] @ wq
        for h in range(hq):
            kv = h // group
            keys, values = k_cache[b, kv, s - w:], v_cache[b, kv, s - w:]
            pr = softmax_rows(keys @ q[h * e:(h + 1) * e] / math.sqrt(e))
            out[b, h * e:(h + 1) * e] = pr @ values
    return out @ wo


def ref_attention_sinks_decode(p, x, wq, k_cache, v_cache, sinks, wo):
    """The sink as one more softmax entry that carries no value (append the
    sink logit, softmax, drop its column)."""
    h_, e = p["H"], p["E"]
    out = torch.zeros(x.shape[0], h_ * e, dtype=F64)
    for b in range(x.shape[0]):
        q = x[b] @ wq
        for h in range(h_):
            s = k_cache[b, h] @ q[h * e:(h + 1) * e] / math.sqrt(e)
            pr = softmax_rows(torch.cat([s, sinks[h:h + 1]]))[:-1]
            out[b, h * e:(h + 1) * e] = pr @ v_cache[b, h]
    return out @ wo


def ref_diff_attention_decode(p, x, wq, k_cache, v_cache, lam, g, wo):
    h_, d = p["H"], p["d"]
    out = torch.zeros(x.shape[0], h_ * 2 * d, dtype=F64)
    for b in range(x.shape[0]):
        q = x[b] @ wq
        for h in range(h_):
            qh = q[h * 2 * d:(h + 1) * 2 * d]
            a1 = softmax_rows(k_cache[b, h, 0] @ qh[:d] / math.sqrt(d))
            a2 = softmax_rows(k_cache[b, h, 1] @ qh[d:] / math.sqrt(d))
            o = (a1 - lam[h] * a2) @ v_cache[b, h]
            out[b, h * 2 * d:(h + 1) * 2 * d] = rms_ref(o, g) * (1 - p["lambda_init"])
    return out @ wo


REFERENCES = {name[4:]: fn for name, fn in globals().items() if name.startswith("ref_")}


def test_every_workload_has_a_reference():
    assert set(REFERENCES) == set(W.WORKLOADS)


@pytest.mark.parametrize("name", sorted(W.WORKLOADS))
def test_small_config_eager_matches_float64_reference(name):
    case = W.Case(W.WORKLOADS[name], W.WORKLOADS[name].small)
    args16 = W.make_inputs(case, "cpu", torch.float16, seed=11)
    args64 = [a.to(F64) for a in args16]
    want = REFERENCES[name](case.params, *args64)
    wants = want if isinstance(want, tuple) else (want,)
    with torch.no_grad():
        exact = case.fn()(*args64)
        half = case.fn()(*args16)
    exact = exact if isinstance(exact, tuple) else (exact,)
    half = half if isinstance(half, tuple) else (half,)
    assert len(exact) == len(half) == len(wants)
    for e, h, w in zip(exact, half, wants):
        assert h.dtype == torch.float16
        # Same values in float64: the workload means what the reference says.
        assert rel_l2(e, w) < 1e-10, name
        # In fp16 it lands where fp16 arithmetic lands.
        assert rel_l2(h, w) < 1e-2, name


def test_mhc_residual_mixing_is_doubly_stochastic():
    logits = torch.randn(3, 4, 4, dtype=F64)
    m = W.sinkhorn(logits, 20)
    assert torch.allclose(m.sum(-2), torch.ones(3, 4, dtype=F64), atol=1e-12)
    assert torch.allclose(m.sum(-1), torch.ones(3, 4, dtype=F64), atol=1e-3)
    assert (m > 0).all()


def test_sliding_window_ignores_keys_outside_the_window():
    w = W.WORKLOADS["sliding_window_gqa_decode"]
    case = W.Case(w, w.small)
    args = list(W.make_inputs(case, "cpu", F64, seed=3))
    before = case.fn()(*args)
    s, win = case.params["S"], case.params["W"]
    args[2] = args[2].clone()
    args[3] = args[3].clone()
    args[2][:, :, : s - win] = 1e3   # keys and values the window does not reach
    args[3][:, :, : s - win] = -1e3
    assert torch.equal(case.fn()(*args), before)


def test_sliding_window_sdpa_form_is_the_layer():
    w = W.WORKLOADS["sliding_window_gqa_decode"]
    for config in (w.small, W.Config("mha", {**w.small.params, "Hkv": 4})):  # grouped, and one head per key head
        case = W.Case(w, config)
        args = W.make_inputs(case, "cpu", F64, seed=5)
        with torch.no_grad():
            assert rel_l2(case.sdpa_fn()(*args), case.fn()(*args)) < 1e-12


# ---- the configs are the issue's -----------------------------------------------------------


def test_general_configs():
    general = [w for w in W.WORKLOADS.values() if w.family == "general"]
    assert len(general) == 7
    for w in general:
        assert [c.label for c in w.configs] == ["b1", "b8", "b16"]
        for c in w.configs:
            assert c.params["D"] == c.params["N"] == 4096
            assert c.params["T"] == int(c.label[1:])
    assert W.WORKLOADS["lora"].configs[0].params["R"] == 16
    assert W.WORKLOADS["qk_norm_projections"].configs[0].params["H"] == 32
    assert W.WORKLOADS["qk_norm_projections"].configs[0].params["E"] == 128
    assert len(W.cases(["general"])) == 21


def test_attention_and_layer_configs():
    dec, pre = W.WORKLOADS["attention_decode"], W.WORKLOADS["attention_prefill"]
    assert [c.params["B"] for c in dec.configs] == [1, 8, 16]
    assert [c.params["B"] for c in pre.configs] == [1, 4, 8]
    for c in dec.configs + pre.configs:
        assert (c.params["H"], c.params["S"], c.params["E"]) == (32, 4096, 128)
    assert dec.sdpa is not None and pre.sdpa is not None
    layers = {w.name: w.configs[0].params for w in W.WORKLOADS.values() if w.family == "layer"}
    assert layers["mla_qknorm_decode"]["B"] == 1 and layers["mla_qknorm_decode"]["D"] == 4096
    assert layers["mla_qknorm_decode"]["S"] == 16384
    assert (layers["mhc_decode"]["B"], layers["mhc_decode"]["D"], layers["mhc_decode"]["S"]) == (16, 512, 1024)
    assert (layers["mhc_decode"]["n"], layers["mhc_decode"]["iters"]) == (4, 20)
    assert (layers["sliding_window_gqa_decode"]["D"], layers["sliding_window_gqa_decode"]["S"]) == (4096, 16384)
    for name in ("attention_sinks_decode", "diff_attention_decode"):
        assert (layers[name]["B"], layers[name]["D"], layers[name]["S"]) == (1, 1024, 32768)


@pytest.mark.parametrize("case", W.cases(), ids=lambda c: c.id)
def test_full_config_shapes_on_meta(case):
    args = W.make_inputs(case, "meta")
    assert [tuple(a.shape) for a in args] == [s.shape for s in case.specs()]
    out = case.fn()(*args)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        assert o.dtype == torch.float16
    p = case.params
    if case.workload.family == "general":
        assert all(tuple(o.shape) == (p["T"], p["D"]) for o in outs)
    elif case.workload.name == "mhc_decode":
        assert tuple(outs[0].shape) == (p["B"], p["n"], p["D"])
    elif case.workload.family == "layer":
        assert tuple(outs[0].shape) == (p["B"], p["D"])
    else:
        assert tuple(outs[0].shape) == tuple(args[0].shape)


# ---- inputs ---------------------------------------------------------------------------------


def test_inputs_are_fresh_nonzero_and_deterministic():
    case = W.Case(W.WORKLOADS["mhc_decode"], W.WORKLOADS["mhc_decode"].small)
    a = W.make_inputs(case, "cpu", torch.float16, seed=5)
    b = W.make_inputs(case, "cpu", torch.float16, seed=5)
    c = W.make_inputs(case, "cpu", torch.float16, seed=6)
    for x, y, z, spec in zip(a, b, c, case.specs()):
        assert x.dtype == torch.float16 and tuple(x.shape) == spec.shape
        assert torch.equal(x, y)
        assert not torch.equal(x, z), spec.name
        assert torch.isfinite(x).all()
        assert (x != 0).float().mean() > 0.99, spec.name
    kinds = {s.init for w in W.WORKLOADS.values() for s in w.inputs(w.small.params)}
    assert kinds <= set(W.INIT_KINDS)


def test_positive_inputs_are_positive():
    case = W.Case(W.WORKLOADS["mla_qknorm_decode"], W.WORKLOADS["mla_qknorm_decode"].small)
    args = dict(zip([s.name for s in case.specs()], W.make_inputs(case, "cpu", torch.float32, seed=1)))
    assert (args["kinv"] >= 0.5).all() and (args["kinv"] <= 1.5).all()
    case = W.Case(W.WORKLOADS["ngpt_update"], W.WORKLOADS["ngpt_update"].small)
    h = W.make_inputs(case, "cpu", torch.float32, seed=1)[0]
    assert torch.allclose(h.norm(dim=-1), torch.ones(h.shape[0]), atol=1e-5)


def test_case_selection():
    assert [c.id for c in W.cases(["lora"], ["b8"])] == ["lora/b8"]
    assert [c.id for c in W.cases(["attention_prefill/b4"])] == ["attention_prefill/b4"]
    assert len(W.cases(["layers"])) == 5
    assert len(W.cases(["attention"])) == 6
    assert len(W.cases()) == 32
    assert all(c.config.label == "small" for c in W.cases(small=True))
    assert len(W.cases(small=True)) == len(W.WORKLOADS)
    with pytest.raises(KeyError, match="no workload"):
        W.cases(["lorra"])
    with pytest.raises(KeyError, match="has no config"):
        W.cases(["lora/b3"])
