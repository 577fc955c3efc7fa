"""Bandwidth of Triton programs that stream a weight matrix, by program count.

The cost model caps a kernel's bandwidth at `programs x sm_GBps` (a kernel
with fewer programs than the GPU has SMs cannot use all of the DRAM
bandwidth). This measures what a Triton program actually streams: a
[K, N] fp16 matrix read in [BK, BN] tiles, the columns split over
N / BN programs and the rows over S programs (split-K), either summed
(`sum`) or multiplied by a [16, BK] activation tile with tl.dot (`dot`, the
GEMV-like kernels of the general workloads). Total bytes are fixed, so the
programs' count is the only thing that varies along a row of the output.

    python3 -m bench.calibrate_bw --out results.json

A last series re-reads one 4 MiB matrix from 1-128 replicas of the grid:
the bandwidth L2 serves re-reads at (the cost model's l2_GBps).

Prints one line per configuration (programs, GB/s in all, GB/s per program)
and writes the list as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def stream_sum(w_ptr, out_ptr, K, N, rows_per_split, split_stride, BK: tl.constexpr, BN: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    k0 = pid_s * split_stride
    for k in range(0, rows_per_split, BK):
        rows = k0 + k + tl.arange(0, BK)
        tile = tl.load(w_ptr + rows[:, None] * N + cols[None, :])
        acc += tl.sum(tile.to(tl.float32), axis=0)
    tl.store(out_ptr + pid_s * N + cols, acc)


@triton.jit
def stream_dot(x_ptr, w_ptr, out_ptr, K, N, rows_per_split, split_stride, BK: tl.constexpr, BN: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BN + tl.arange(0, BN)
    m = tl.arange(0, 16)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    k0 = pid_s * split_stride
    for k in range(0, rows_per_split, BK):
        rows = k0 + k + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + rows[None, :])
        tile = tl.load(w_ptr + rows[:, None] * N + cols[None, :])
        acc += tl.dot(x, tile)
    tl.store(out_ptr + pid_s * 16 * N + m[:, None] * N + cols[None, :], acc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--N", type=int, default=8192)
    args = ap.parse_args(argv)
    K, N = args.K, args.N
    dev = "cuda"
    w = torch.randn(K, N, device=dev, dtype=torch.float16)
    x = torch.randn(16, K, device=dev, dtype=torch.float16)
    bytes_ = K * N * 2
    rows = []
    for kind in ("sum", "dot"):
        for BN in (32, 64, 128):
            for S in (1, 2, 4, 8, 16):
                for warps, stages in ((4, 3), (8, 3), (4, 2), (4, 4)):
                    if (warps, stages) != (4, 3) and S not in (1, 4):
                        continue
                    BK = 128 if kind == "dot" else 64
                    if K // S < BK:
                        continue
                    programs = (N // BN) * S
                    if kind == "sum":
                        out = torch.empty(S, N, device=dev, dtype=torch.float32)
                        fn = lambda: stream_sum[(N // BN, S)](w, out, K, N, K // S, K // S, BK=BK, BN=BN,
                                                              num_warps=warps, num_stages=stages)
                    else:
                        out = torch.empty(S, 16, N, device=dev, dtype=torch.float32)
                        fn = lambda: stream_dot[(N // BN, S)](x, w, out, K, N, K // S, K // S, BK=BK, BN=BN,
                                                              num_warps=warps, num_stages=stages)
                    try:
                        fn()
                        torch.cuda.synchronize()
                        ms = triton.testing.do_bench(fn, warmup=25, rep=100)
                    except Exception as e:  # a config that does not compile is reported, not fatal
                        print(f"{kind} BN={BN} S={S} w={warps} s={stages}: failed: {e}", file=sys.stderr)
                        continue
                    gbps = bytes_ / (ms * 1e-3) / 1e9
                    row = dict(kind=kind, BN=BN, BK=BK, S=S, num_warps=warps, num_stages=stages,
                               programs=programs, us=ms * 1e3, GBps=gbps, GBps_per_program=gbps / programs)
                    rows.append(row)
                    print(f"{kind:3s} BN={BN:3d} BK={BK:3d} S={S:2d} warps={warps} stages={stages} "
                          f"programs={programs:5d} {ms*1e3:8.1f} us {gbps:7.0f} GB/s "
                          f"{gbps/programs:6.1f} GB/s/program", flush=True)
    # L2: R replicas of the grid read the same 4 MiB matrix (split_stride 0),
    # so all but the first read of each tile can come from L2.
    Kl, Nl = 1024, 2048
    wl = torch.randn(Kl, Nl, device=dev, dtype=torch.float16)
    xl = torch.randn(16, Kl, device=dev, dtype=torch.float16)
    for R in (1, 8, 32, 128):
        out = torch.empty(R, 16, Nl, device=dev, dtype=torch.float32)
        fn = lambda: stream_dot[(Nl // 64, R)](xl, wl, out, Kl, Nl, Kl, 0, BK=128, BN=64, num_warps=4, num_stages=3)
        fn()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(fn, warmup=25, rep=100)
        total = R * Kl * Nl * 2
        gbps = total / (ms * 1e-3) / 1e9
        rows.append(dict(kind="l2_dot", BN=64, BK=128, S=R, num_warps=4, num_stages=3, programs=(Nl // 64) * R,
                         us=ms * 1e3, GBps=gbps, GBps_per_program=gbps / ((Nl // 64) * R)))
        print(f"l2  replicas={R:3d} programs={(Nl // 64) * R:5d} {ms*1e3:8.1f} us {gbps:7.0f} GB/s read "
              f"(one 4 MiB matrix read {R} times)", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "K": K, "N": N,
                       "triton": triton.__version__, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
