"""Which load form lets a Triton program stream a weight matrix fastest.

The general workloads are GEMV-like: a [K, N] fp16 weight read once, a few
activation rows. bench/calibrate_bw.py measured that pointer loads feeding
tl.dot reach at most ~2.6 TB/s on the H200 (a CUDA copy reaches ~3.9), and
the cost model's kernel_GBps is that figure. This compares, on the same
matrix and output, the forms a kernel generator could emit:

    ptr-dot   pointer loads of the weight tile, tl.dot with [16, BK] rows
    tma-dot   the weight through a tensor descriptor (TMA on Hopper)
    ptr-sum   one row: x[:, None] * w summed over BK on the FP units
    tma-sum   the same with the weight through a tensor descriptor

over tile shapes, num_warps, num_stages and a split of K over S programs
(each split writes its own partial rows; the sum of the S partials is not
timed, it is one small extra kernel in a real program).

    python3 -m bench.stream_forms --out stream_forms.json [--k 4096 --n 4096]

Times are triton.testing.do_bench medians (L2 cleared between repetitions);
each result is checked against torch before it is timed.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def stream(x_ptr, w_ptr, out_ptr, K, N, k_per_split, BK: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr,
           TMA: tl.constexpr, DOT: tl.constexpr):
    """TMA: the weight through a tensor descriptor, else pointer loads. DOT:
    [16, BK] rows times the tile with tl.dot, else one row multiplied and
    summed on the FP units."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BN + tl.arange(0, BN)
    m = tl.arange(0, 16)
    if TMA:
        desc = tl.make_tensor_descriptor(w_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    if DOT:
        acc = tl.zeros([16, BN], dtype=tl.float32)
    else:
        acc = tl.zeros([BN], dtype=tl.float32)
    k0 = pid_s * k_per_split
    for k in tl.range(0, k_per_split // BK, num_stages=STAGES):
        rows = k0 + k * BK + tl.arange(0, BK)
        if TMA:
            w = desc.load([k0 + k * BK, pid_n * BN])
        else:
            w = tl.load(w_ptr + rows[:, None] * N + cols[None, :])
        if DOT:
            x = tl.load(x_ptr + m[:, None] * K + rows[None, :])
            acc += tl.dot(x, w)
        else:
            x = tl.load(x_ptr + rows)
            acc += tl.sum(x.to(tl.float32)[:, None] * w.to(tl.float32), axis=0)
    if DOT:
        tl.store(out_ptr + pid_s * 16 * N + m[:, None] * N + cols[None, :], acc)
    else:
        tl.store(out_ptr + pid_s * N + cols, acc)


# form -> (TMA, DOT); the rows of x are 16 with DOT, else 1.
FORMS = {"ptr-dot": (False, True), "tma-dot": (True, True), "ptr-sum": (False, False), "tma-sum": (True, False)}


def _alloc(size: int, alignment: int, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--forms", default=",".join(FORMS))
    p.add_argument("--bk", default="64,128,256")
    p.add_argument("--bn", default="32,64,128")
    p.add_argument("--warps", default="4,8")
    p.add_argument("--stages", default="3,5")
    p.add_argument("--splits", default="1,4")
    p.add_argument("--time-limit-s", type=float, default=240.0)
    a = p.parse_args(argv)
    ints = lambda s: [int(v) for v in s.split(",")]
    triton.set_allocator(_alloc)
    torch.manual_seed(0)
    K, N = a.k, a.n
    w = torch.randn(K, N, device="cuda", dtype=torch.float16) / 64
    x16 = torch.randn(16, K, device="cuda", dtype=torch.float16)
    ref = x16.float() @ w.float()
    rows = []
    start = time.time()
    # The forms vary fastest, so a time limit cuts every form's sweep at the same place.
    for bk, bn, warps, stages, splits, form in itertools.product(
            ints(a.bk), ints(a.bn), ints(a.warps), ints(a.stages), ints(a.splits), a.forms.split(",")):
        if time.time() - start > a.time_limit_s:
            print("time limit reached", file=sys.stderr)
            break
        tma, dot = FORMS[form]
        m = 16 if dot else 1
        if K % (bk * splits):
            continue
        x = x16[:m].contiguous()
        out = torch.empty(splits, m, N, device="cuda", dtype=torch.float32)
        grid = (N // bn, splits)
        row = {"form": form, "bk": bk, "bn": bn, "warps": warps, "stages": stages, "splits": splits,
               "programs": grid[0] * grid[1]}
        try:
            run = lambda: stream[grid](x, w, out, K, N, K // splits, BK=bk, BN=bn, STAGES=stages, TMA=tma,
                                       DOT=dot, num_warps=warps)
            run()
            torch.cuda.synchronize()
            err = ((out.sum(0) - ref[:m]).norm() / ref[:m].norm()).item()
            if not err < 1e-2:
                raise RuntimeError(f"wrong result: relative error {err:.3g}")
            ms = triton.testing.do_bench(run, warmup=10, rep=40)
            row.update(us=ms * 1e3, GBps=K * N * 2 / (ms * 1e-3) / 1e9)
        except Exception as e:  # a configuration the compiler refuses is a row, not the end
            row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump({"k": K, "n": N, "device": torch.cuda.get_device_name(), "triton": triton.__version__,
                   "rows": rows}, f, indent=1)
    best = {}
    for r in rows:
        if "GBps" in r and r["GBps"] > best.get(r["form"], {}).get("GBps", 0):
            best[r["form"]] = r
    for form, r in best.items():
        print(f"best {form}: {r['GBps']:.0f} GB/s {r['us']:.1f} us  {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
