"""Does the way the L2 is flushed before a timed call change what the call costs?

The benchmarks and the tuner flush the L2 between timed calls so that no call
finds its inputs cached. Writing a buffer larger than the L2 (``zero_()``,
what triton.testing.do_bench does too) leaves the L2 full of dirty lines:
the timed call's reads then evict them, and DRAM writes them back while the
call runs. Reading such a buffer leaves clean lines, which are dropped for
free. This times the same calls after each kind of flush (bench/timing.py's
GPU-only time: a CUDA graph replay, events around the replay only):

    write   the 256 MiB flush buffer zeroed (dirty L2)
    read    the same buffer summed (clean L2, none of the call's data)

over reads of 16, 32 and 64 MiB: a GEMV through PyTorch (cuBLAS), the best
Triton form of bench/stream_forms.py (pointer loads into tl.dot, BK 64,
BN 64, 4 warps, 5 stages, split-K 4) and a column sum over the weight.

    python3 bench/gpu_check/flush_forms.py --out flush_forms.json
"""
from __future__ import annotations

import argparse
import json
import sys

import torch
import triton

sys.path.insert(0, ".")
from bench.stream_forms import stream  # noqa: E402
from bench.timing import L2Flusher, gpu_only_time  # noqa: E402

SPLITS, BK, BN = 4, 64, 64


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--mib", default="16,32,64")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    flusher = L2Flusher(torch.device("cuda"))
    rows = []
    for mib in (int(v) for v in a.mib.split(",")):
        K, N = mib * 2**20 // (2 * 4096), 4096
        w = torch.randn(K, N, device="cuda", dtype=torch.float16) / 64
        x16 = torch.randn(16, K, device="cuda", dtype=torch.float16)
        x1 = x16[:1].contiguous()
        out_t = torch.empty(SPLITS, 16, N, device="cuda", dtype=torch.float32)
        out_mv = torch.empty(1, N, device="cuda", dtype=torch.float16)
        out_sum = torch.empty(N, device="cuda", dtype=torch.float16)

        def triton_gemv(*_):
            stream[(N // BN, SPLITS)](x16, w, out_t, K, N, K // SPLITS, BK=BK, BN=BN, STAGES=5, TMA=False, DOT=True,
                                      num_warps=4)

        triton_gemv()
        ref = x16.float() @ w.float()
        err = ((out_t.sum(0) - ref).norm() / ref.norm()).item()
        assert err < 1e-2, f"triton GEMV wrong: relative error {err:.3g}"
        calls = {
            "torch x@W (b1)": lambda *_: torch.matmul(x1, w, out=out_mv),
            f"triton split-k dot (BK{BK} BN{BN} s{SPLITS})": triton_gemv,
            "torch W.sum(0)": lambda *_: torch.sum(w, dim=0, out=out_sum),
        }
        for name, fn in calls.items():
            row = {"mib": mib, "call": name}
            for kind, clean in (("write", False), ("read", True)):
                t, _ = gpu_only_time(fn, (w,), flusher, clean=clean)
                row[kind + "_us"] = round(t * 1e6, 2)
                row[kind + "_GBps"] = round(mib * 2**20 / t / 1e9)
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(a.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                   "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
