"""Which forms of the decode-attention split kernel are fast on the device:
the search's top candidate as emitted (a split of the keys, one block per
program, and a merge kernel), against one probe written here in forms that
differ from it in one respect each, over one grid of launch parameters,
timed the same way (graph_timer: a CUDA graph replay, L2 flushed). It is a
measurement of where the emitted kernel loses, not a kernel of eqiforge's:
nothing in the package uses it.

    python3 bench/gpu_check/decode_forms.py OUT.json [b1]
    (FORMS_ONLY=emitted,hoist: those forms only; FORMS_LIMIT_S: seconds per form)

Forms of the probe's split kernel (each program: NB key blocks of BT keys of
one head, then its partial max, sum and P.V to a buffer that a merge kernel
reduces, as the emitted pair does):
  order   the emitted order: load K, scores, max and exp, then load V
  hoist   the V tile's load issued with K's, before the scores
Both take NB > 1 blocks per program in a loop (fewer programs, each
streaming longer; num_stages then pipelines the loop's loads).
Each form is checked against SDPA (rel. L2 <= 1e-2) before it is timed.
"""
import itertools
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, ".")
from bench.gpu_check.forms import DEVICE, finish, report_form, time_config, top_candidate  # noqa: E402

LIMIT_S = float(os.environ.get("FORMS_LIMIT_S", "60"))
FORMS = {"order": 0, "hoist": 1}
GRID = [dict(BT=bt, NB=nb, num_warps=w, num_stages=st)
        for bt, nb, w, st in itertools.product((64, 128, 256), (1, 2, 4), (4, 8), (2, 3, 4))
        if bt * nb <= 512]


@triton.jit
def _split(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr, T, sm_scale,
           BT: tl.constexpr, NB: tl.constexpr, D: tl.constexpr, HOIST: tl.constexpr):
    c = tl.program_id(0)
    h = tl.program_id(1)
    C = tl.num_programs(0)
    offs_d = tl.arange(0, D)
    base = h.to(tl.int64) * T * D
    q = tl.load(q_ptr + h * D + offs_d).to(tl.float32) * (sm_scale * 1.4426950408889634)
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros((D,), tl.float32)
    for i in range(NB):
        offs_t = (c * NB + i) * BT + tl.arange(0, BT)
        k = tl.load(k_ptr + base + offs_t[:, None] * D + offs_d[None, :])
        if HOIST:
            v = tl.load(v_ptr + base + offs_t[:, None] * D + offs_d[None, :])
        s = tl.sum(q[None, :] * k.to(tl.float32), axis=1)
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new)
        if not HOIST:
            v = tl.load(v_ptr + base + offs_t[:, None] * D + offs_d[None, :])
        l_i = l_i * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        m_i = m_new
    tl.store(m_ptr + h * C + c, m_i)
    tl.store(l_ptr + h * C + c, l_i)
    tl.store(acc_ptr + (h * C + c) * D + offs_d, acc)


@triton.jit
def _merge(m_ptr, l_ptr, acc_ptr, o_ptr, C: tl.constexpr, D: tl.constexpr):
    h = tl.program_id(0)
    offs_c = tl.arange(0, C)
    offs_d = tl.arange(0, D)
    m = tl.load(m_ptr + h * C + offs_c)
    l = tl.load(l_ptr + h * C + offs_c)
    acc = tl.load(acc_ptr + (h * C + offs_c[:, None]) * D + offs_d[None, :])
    mx = tl.max(m, axis=0)
    w = tl.math.exp2(m - mx)
    o = tl.sum(acc * w[:, None], axis=0) / tl.sum(l * w, axis=0)
    tl.store(o_ptr + h * D + offs_d, o.to(tl.float16))


def probe(form, q, k, v, BT, NB, num_warps, num_stages):
    h, t, d = k.shape
    chunks = triton.cdiv(t, BT * NB)
    m = torch.empty((h, chunks), device=q.device, dtype=torch.float32)
    l = torch.empty_like(m)
    acc = torch.empty((h, chunks, d), device=q.device, dtype=torch.float32)
    out = torch.empty((h, d), device=q.device, dtype=q.dtype)
    _split[(chunks, h)](q, k, v, m, l, acc, t, 1.0 / math.sqrt(d), BT=BT, NB=NB, D=d, HOIST=FORMS[form],
                        num_warps=num_warps, num_stages=num_stages)
    _merge[(h,)](m, l, acc, out, C=chunks, D=d, num_warps=4)
    return out


def main(path, label="b1"):
    args, sdpa, ref, module, inputs, result = top_candidate("attention_decode", label)
    params = result["block_params"]
    q, k, v = args
    q2 = q.reshape(-1, q.shape[-1]).contiguous()
    k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]).contiguous() for t in (k, v))
    grid = GRID if DEVICE == "cuda" else [dict(BT=64, NB=2, num_warps=4, num_stages=2)]
    only = os.environ.get("FORMS_ONLY")
    for form in only.split(",") if only else ["emitted", *FORMS]:
        start = time.monotonic()
        seen = set()
        for cfg in grid:
            if time.monotonic() - start > LIMIT_S:
                break
            if form == "emitted":
                key = (cfg["BT"] * cfg["NB"], cfg["num_warps"], cfg["num_stages"])
                if key in seen:
                    continue
                seen.add(key)
                kw = {params.get("t.0", "block_t0"): cfg["BT"] * cfg["NB"], "num_warps": cfg["num_warps"],
                      "num_stages": cfg["num_stages"]}
                row = time_config(lambda: module.forward(*inputs, **kw)[0], ref)
            else:
                row = time_config(lambda: probe(form, q2, k3, v3, **cfg), ref)
            row.update(form=form, **cfg)
            result["rows"].append(row)
        report_form(result, form, ("BT", "NB", "num_warps", "num_stages"), path, top=5)
    finish(result, sdpa, args, path)


if __name__ == "__main__":
    main(sys.argv[1], *(sys.argv[2:3]))
