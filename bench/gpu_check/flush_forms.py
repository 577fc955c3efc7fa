"""Does the way the L2 is flushed before a timed call change what the call costs?

The benchmarks and the tuner flush the L2 between timed calls so that no call
finds its inputs cached. Writing a buffer larger than the L2 (``zero_()``,
what triton.testing.do_bench does too) leaves the L2 full of dirty lines:
the timed call's reads then evict them, and DRAM writes them back while the
call runs. Reading such a buffer leaves clean lines, which are dropped for
free. This times the same calls after each kind of flush:

    write   a 256 MiB buffer zeroed (dirty L2)
    read    a 256 MiB buffer summed (clean L2, none of the call's data)
    none    no flush (what fits in the L2 stays there: a lower bound)

over reads of 16, 32 and 64 MiB: a GEMV through PyTorch (cuBLAS), a Triton
GEMV (pointer loads into tl.dot, split-K, the best form of
bench/stream_forms.py) and a plain sum over the weight (a pure read). Each
call is captured as a CUDA graph and replayed, events around the replay
only (as bench/timing.py's GPU-only time).

    python3 bench/gpu_check/flush_forms.py --out flush_forms.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import triton
import triton.language as tl

FLUSH_BYTES = 256 << 20


@triton.jit
def gemv_split_k(x_ptr, w_ptr, out_ptr, K, N, k_per_split, BK: tl.constexpr, BN: tl.constexpr):
    """out[s, :16, cols] = x[:16, ks] @ w[ks, cols] over split s's rows of w."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BN + tl.arange(0, BN)
    m = tl.arange(0, 16)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    k0 = pid_s * k_per_split
    for k in range(0, k_per_split // BK):
        rows = k0 + k * BK + tl.arange(0, BK)
        w = tl.load(w_ptr + rows[:, None] * N + cols[None, :])
        x = tl.load(x_ptr + m[:, None] * K + rows[None, :])
        acc += tl.dot(x, w)
    tl.store(out_ptr + pid_s * 16 * N + m[:, None] * N + cols[None, :], acc)


def graph_time_us(fn, flush, reps: int = 200) -> float:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for a, b in zip(starts, ends):
        flush()
        a.record()
        graph.replay()
        b.record()
    torch.cuda.synchronize()
    graph.reset()
    return statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends)) * 1e3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--mib", default="16,32,64")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    buf = torch.ones(FLUSH_BYTES // 4, device="cuda", dtype=torch.float32)
    sink = torch.empty((), device="cuda", dtype=torch.float32)
    flushes = {
        "write": lambda: buf.zero_(),
        "read": lambda: torch.sum(buf, dim=0, out=sink),
        "none": lambda: None,
    }
    rows = []
    for mib in (int(v) for v in a.mib.split(",")):
        K, N = mib * 2**20 // (2 * 4096), 4096
        w = torch.randn(K, N, device="cuda", dtype=torch.float16) / 64
        x16 = torch.randn(16, K, device="cuda", dtype=torch.float16)
        x1 = x16[:1].contiguous()
        out_t = torch.empty(4, 16, N, device="cuda", dtype=torch.float32)
        out_mv = torch.empty(1, N, device="cuda", dtype=torch.float16)
        out_sum = torch.empty(N, device="cuda", dtype=torch.float16)
        calls = {
            "torch x@W (b1)": lambda: torch.matmul(x1, w, out=out_mv),
            "triton split-k dot (BK64 BN64 s4)": lambda: gemv_split_k[(N // 64, 4)](
                x16, w, out_t, K, N, K // 4, BK=64, BN=64, num_warps=4, num_stages=5),
            "torch W.sum(0)": lambda: torch.sum(w, dim=0, out=out_sum),
        }
        gemv_split_k[(N // 64, 4)](x16, w, out_t, K, N, K // 4, BK=64, BN=64, num_warps=4, num_stages=5)
        err = ((out_t.sum(0) - x16.float() @ w.float()).norm() / (x16.float() @ w.float()).norm()).item()
        assert err < 1e-2, f"triton GEMV wrong: {err}"
        for name, fn in calls.items():
            row = {"mib": mib, "call": name}
            for fname, flush in flushes.items():
                us = graph_time_us(fn, flush)
                row[fname + "_us"] = round(us, 2)
                row[fname + "_GBps"] = round(mib * 2**20 / (us * 1e-6) / 1e9)
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                   "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
