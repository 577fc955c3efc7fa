"""How fast a GEMV streams a weight in narrow tiles (few contiguous bytes a row).

The cost model prices a load whose rows hold few contiguous bytes at a
fraction of the DRAM bandwidth (`dram_efficiency` in
src/cost/cost_model.cc). This measures it for the form the emitter writes
at batch 1 without tl.dot: out[n] = sum_k x[k] * W[k, n], each program
owning BN columns and looping over K in [BK, BN] tiles (BK = K: one
iteration, the whole column strip at once), the product summed on the FP
units. W is [K, N] fp16, row-major. K and N are constexprs, as the
emitter passes extents and strides: with them passed at run time (the
2026-12-07 sweep in bench/results/h100-2026-12-07-general) the kernel was
slower than emitted kernels of the same tiling.

    python3 -m bench.narrow_tiles --out narrow_tiles.json

With it, for comparison: torch.matmul (cuBLAS) on the same operands, and
split-k forms: S programs per column block each sum K/S rows into an fp32
partial, a second kernel adds the S partials (what a preduce over a grid
axis lowers to). Both kernels are in the time.

Prints one line per configuration (µs, GB/s) and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def gemv_sum(x_ptr, w_ptr, out_ptr, K: tl.constexpr, N: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k in range(0, K, BK):
        rows = k + tl.arange(0, BK)
        x = tl.load(x_ptr + rows).to(tl.float32)
        tile = tl.load(w_ptr + rows[:, None] * N + cols[None, :]).to(tl.float32)
        acc += tl.sum(x[:, None] * tile, axis=0)
    tl.store(out_ptr + cols, acc.to(tl.float16))


@triton.jit
def gemv_split_partials(x_ptr, w_ptr, part_ptr, K: tl.constexpr, N: tl.constexpr, BK: tl.constexpr,
                        BN: tl.constexpr, KS: tl.constexpr):
    # Program (n block, k split): the sum over its KS rows of BN columns, in fp32.
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k in range(pid_s * KS, pid_s * KS + KS, BK):
        rows = k + tl.arange(0, BK)
        x = tl.load(x_ptr + rows).to(tl.float32)
        tile = tl.load(w_ptr + rows[:, None] * N + cols[None, :]).to(tl.float32)
        acc += tl.sum(x[:, None] * tile, axis=0)
    tl.store(part_ptr + pid_s * N + cols, acc)


@triton.jit
def gemv_split_merge(part_ptr, out_ptr, N: tl.constexpr, S: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    parts = tl.load(part_ptr + tl.arange(0, S)[:, None] * N + cols[None, :])
    tl.store(out_ptr + cols, tl.sum(parts, axis=0).to(tl.float16))


def measure(fn, out, want, K, N, label: str, **row) -> dict | None:
    """Runs fn once (checked against want), then times it: the row with
    us, GB/s and the error added, printed; None (reported) when the
    configuration does not compile or launch."""
    try:
        fn()
        torch.cuda.synchronize()
        err = float((out.float() - want).norm() / want.norm())
        ms = triton.testing.do_bench(fn, warmup=25, rep=100)
    except Exception as e:  # noqa: BLE001 -- a config that does not compile is reported
        print(f"{label}: failed: {str(e).splitlines()[0]}", file=sys.stderr)
        return None
    gbps = K * N * 2 / (ms * 1e-3) / 1e9
    print(f"{label} {ms * 1e3:8.1f} us {gbps:7.0f} GB/s  err {err:.1e}", flush=True)
    return dict(row, us=ms * 1e3, GBps=gbps, rel_err=err)


def split_rows(x, w, out, want, K, N):
    """Split-k: S programs per column block write fp32 partial sums, a
    second kernel adds them (the form a preduce over a grid axis lowers to,
    through a buffer of partials)."""
    rows = []
    part = torch.empty(64, N, device="cuda", dtype=torch.float32)
    for BN in (64, 128, 256):
        for S in (4, 8, 16, 32):
            for BK in (32, 64, 128):
                KS = K // S
                if KS % BK or BK * BN > 32768:
                    continue
                for warps, stages in ((4, 3), (4, 5)):
                    def fn():
                        gemv_split_partials[(N // BN, S)](x, w, part, K, N, BK=BK, BN=BN, KS=KS,
                                                          num_warps=warps, num_stages=stages)
                        gemv_split_merge[(N // 256,)](part, out, N, S=S, BN=256, num_warps=4)
                    row = measure(fn, out, want, K, N,
                                  f"split BN={BN:4d} S={S:3d} BK={BK:4d} warps={warps} stages={stages} "
                                  f"programs={N // BN * S:5d}",
                                  form="split", BN=BN, BK=BK, S=S, num_warps=warps, num_stages=stages,
                                  programs=N // BN * S, row_bytes=BN * 2)
                    if row:
                        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--N", type=int, default=4096)
    ap.add_argument("--max-tile", type=int, default=65536, help="largest BK x BN tried")
    ap.add_argument("--no-split", action="store_true", help="skip the split-k forms")
    args = ap.parse_args(argv)
    K, N = args.K, args.N
    w = torch.randn(K, N, device="cuda", dtype=torch.float16)
    x = torch.randn(K, device="cuda", dtype=torch.float16)
    out = torch.empty(N, device="cuda", dtype=torch.float16)
    want = (x.float() @ w.float())
    rows = []
    for BN in (8, 16, 32, 64, 128):
        for BK in sorted({b for b in (64, 256, 512, 1024, 2048) if b <= K} | {K}):
            if BK * BN > args.max_tile:
                continue
            # Triton pipelines the loads of a loop without dots too (h200-2026-12-02-stream-forms:
            # BK 256, BN 32, 5 stages 17.9 us against 22.0 at 3), so a loop is also tried at 5.
            for warps, stages in ((4, 3), (8, 3)) + (((4, 5),) if BK < K else ()):
                fn = lambda: gemv_sum[(N // BN,)](x, w, out, K, N, BK=BK, BN=BN, num_warps=warps, num_stages=stages)
                row = measure(fn, out, want, K, N,
                              f"BN={BN:4d} ({BN * 2:4d} B a row) BK={BK:5d} warps={warps} stages={stages} "
                              f"programs={N // BN:5d}",
                              BN=BN, BK=BK, num_warps=warps, num_stages=stages, programs=N // BN, row_bytes=BN * 2)
                if row:
                    rows.append(row)
    ms = triton.testing.do_bench(lambda: torch.matmul(x, w, out=out), warmup=25, rep=100)
    rows.append(dict(form="torch.matmul", us=ms * 1e3, GBps=K * N * 2 / (ms * 1e-3) / 1e9))
    print(f"torch.matmul (cuBLAS) {ms * 1e3:8.1f} us {K * N * 2 / (ms * 1e-3) / 1e9:7.0f} GB/s", flush=True)
    if not args.no_split:
        rows += split_rows(x, w, out, want, K, N)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "K": K, "N": N, "triton": triton.__version__,
                       "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
