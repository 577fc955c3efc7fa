"""Which forms of the causal-prefill kernel are fast on the device: the
search's top candidate as emitted, against one probe kernel written here in
a few forms that differ from it in one respect each, all over one grid of
launch parameters, timed the same way (graph_timer: a CUDA graph replay, L2
flushed). It is a measurement of where the emitted kernel loses, not a
kernel of eqiforge's: nothing in the package uses it.

    python3 bench/gpu_check/attention_forms.py OUT.json [b1]
    (FORMS_ONLY=emitted,split: those forms only; FORMS_LIMIT_S: seconds per form)

Forms of the probe (flags of one kernel):
  block    the emitted kernel's merge: each block's max, exp against it, and
           the block's sum and P.V rescaled into the running state (alpha and
           beta, each guarded against a -inf max)
  running  exp against the running max (max of the state's and the block's):
           the block's terms need no rescaling (no beta)
  exp2     running + log2(e) folded into the scale, exp2
  split    exp2 + the blocks wholly below the diagonal in a loop without the
           causal mask, the diagonal blocks in a second, masked loop
Each form is checked against SDPA (rel. L2 <= 1e-2) before it is timed.
"""
import itertools
import math
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, ".")
from bench.gpu_check.forms import DEVICE, finish, report_form, time_config, top_candidate  # noqa: E402

LIMIT_S = float(__import__("os").environ.get("FORMS_LIMIT_S", "70"))
FORMS = {"block": (0, 0, 0), "running": (1, 0, 0), "exp2": (1, 1, 0), "split": (1, 1, 1)}
GRID = [dict(BM=bm, BN=bn, num_warps=w, num_stages=st)
        for bm, bn, w, st in itertools.product((64, 128), (32, 64, 128), (4, 8), (2, 3))]


@triton.jit
def _blocks(acc, l_i, m_i, q, k_base, v_base, offs_m, lo, hi, qk_scale,
            BN: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr, RUNNING: tl.constexpr,
            EXP2: tl.constexpr):
    offs_d = tl.arange(0, D)
    for start in range(lo, hi, BN):
        offs_n = start + tl.arange(0, BN)
        k = tl.load(k_base + offs_n[:, None] * D + offs_d[None, :])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
        v = tl.load(v_base + offs_n[:, None] * D + offs_d[None, :])
        if RUNNING:
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            if EXP2:
                p = tl.math.exp2(s - m_use[:, None])
                alpha = tl.math.exp2(m_i - m_use)
            else:
                p = tl.exp(s - m_use[:, None])
                alpha = tl.exp(m_i - m_use)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m_i = m_new
        else:
            m_b = tl.max(s, 1)
            p = tl.exp(s - m_b[:, None])
            m_new = tl.maximum(m_i, m_b)
            alpha = tl.where(m_i == float("-inf"), 0.0, tl.exp(m_i - m_new))
            beta = tl.where(m_b == float("-inf"), 0.0, tl.exp(m_b - m_new))
            pv = tl.dot(p.to(tl.float16), v)
            l_i = l_i * alpha + tl.where(m_b == float("-inf"), 0.0, tl.sum(p, 1)) * beta
            acc = acc * alpha[:, None] + tl.where((m_b == float("-inf"))[:, None], 0.0, pv) * beta[:, None]
            m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _probe(q_ptr, k_ptr, v_ptr, o_ptr, S, sm_scale,
           BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr,
           RUNNING: tl.constexpr, EXP2: tl.constexpr, SPLIT: tl.constexpr):
    h = tl.program_id(0)
    pm = tl.program_id(1)
    offs_m = pm * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    base = h.to(tl.int64) * S * D
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634 if EXP2 else sm_scale
    hi = tl.minimum((pm + 1) * BM, S)
    if SPLIT:
        lo = (pm * BM) // BN * BN
        acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, 0, lo, qk_scale,
                                BN, D, False, RUNNING, EXP2)
        acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, lo, hi, qk_scale,
                                BN, D, True, RUNNING, EXP2)
    else:
        acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, 0, hi, qk_scale,
                                BN, D, True, RUNNING, EXP2)
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def probe(form, q, k, v, BM, BN, num_warps, num_stages):
    h, s, d = q.shape
    out = torch.empty_like(q)
    running, exp2, split = FORMS[form]
    _probe[(h, triton.cdiv(s, BM))](q, k, v, out, s, 1.0 / math.sqrt(d), BM=BM, BN=BN, D=d, RUNNING=running,
                                    EXP2=exp2, SPLIT=split, num_warps=num_warps, num_stages=num_stages)
    return out


def main(path, label="b1"):
    args, sdpa, ref, module, inputs, result = top_candidate("attention_prefill", label)
    params = result["block_params"]
    q, k, v = args
    # The probe runs one head of one batch per program row: [B*H, S, D].
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]).contiguous() for t in (q, k, v))
    grid = GRID if DEVICE == "cuda" else GRID[:1]
    only = __import__("os").environ.get("FORMS_ONLY")
    for form in only.split(",") if only else ["emitted", *FORMS]:
        start = time.monotonic()
        for cfg in grid:
            if time.monotonic() - start > LIMIT_S:
                break
            if form == "emitted":
                kw = {params.get("s.0", "block_s0"): cfg["BM"], params.get("t.0", "block_t0"): cfg["BN"],
                      "num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}
                row = time_config(lambda: module.forward(*inputs, **kw)[0], ref)
            else:
                row = time_config(lambda: probe(form, q3, k3, v3, **cfg), ref)
            row.update(form=form, **cfg)
            result["rows"].append(row)
        report_form(result, form, ("BM", "BN", "num_warps", "num_stages"), path, top=4)
    finish(result, sdpa, args, path)


if __name__ == "__main__":
    main(sys.argv[1], *(sys.argv[2:3]))
