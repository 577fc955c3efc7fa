"""Fits the cost model's streaming bound to a stream_forms sweep.

The cost model (src/cost/cost_model.cc) prices a loop that streams a
weight by Little's law: the bytes its programs keep in flight F set the
bandwidth, GB/s = kernel_GBps * F / (F + half), with

    F = resident programs x (stages - 1) x the bytes of one iteration's tiles,
    resident programs = min(programs, SMs x min(programs_per_sm, smem / program smem)).

This script reads the rows of `python3 -m bench.stream_forms` (pointer loads
into tl.dot) and prints the `half` (stream_half_MiB of a target profile)
that fits them best in log space, with the fit's error and each row's
prediction.

    python3 -m bench.fit_stream bench/results/h200-2026-12-02-stream-forms/stream_forms.json \
        --kernel-GBps 2550 --sms 132 --programs-per-sm 2 --smem-KiB 227
"""

from __future__ import annotations

import argparse
import json
import math

ROWS = 16  # the activation's rows in stream_forms (a [16, BK] tile per iteration)


def in_flight_MiB(row: dict, sms: int, programs_per_sm: int, smem_bytes: int) -> float:
    weight = row["bk"] * row["bn"] * 2
    activation = ROWS * row["bk"] * 2
    smem = row["stages"] * (weight + activation)
    per_sm = min(programs_per_sm, max(1, smem_bytes // smem))
    resident = min(row["programs"], sms * per_sm)
    return resident * (row["stages"] - 1) * (weight + activation) / 2**20


def fit(rows: list[dict], peak: float, flights: list[float]) -> tuple[float, float]:
    """The half (MiB) minimizing the squared log error, by a fine scan."""
    best = (math.inf, 0.0)
    for i in range(1, 2000):
        half = i * 0.005
        err = sum(math.log(peak * f / (f + half) / r["GBps"]) ** 2 for r, f in zip(rows, flights))
        best = min(best, (err, half))
    return math.sqrt(best[0] / len(rows)), best[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="stream_forms.json")
    ap.add_argument("--form", default="ptr-dot")
    ap.add_argument("--kernel-GBps", type=float, default=2550)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--programs-per-sm", type=int, default=2)
    ap.add_argument("--smem-KiB", type=int, default=227)
    a = ap.parse_args(argv)
    rows = [r for r in json.load(open(a.results))["rows"] if r["form"] == a.form and "GBps" in r]
    if not rows:
        raise SystemExit(f"no measured rows of form {a.form!r} in {a.results}")
    flights = [in_flight_MiB(r, a.sms, a.programs_per_sm, a.smem_KiB * 1024) for r in rows]
    rms, half = fit(rows, a.kernel_GBps, flights)
    print(f"stream_half_MiB {half:.3f} (rms log error {rms:.3f} over {len(rows)} rows)")
    for r, f in sorted(zip(rows, flights), key=lambda x: x[1]):
        pred = a.kernel_GBps * f / (f + half)
        print(f"  bk {r['bk']:3d} bn {r['bn']:3d} stages {r['stages']} split {r['splits']} programs {r['programs']:4d}"
              f"  in flight {f:6.2f} MiB  measured {r['GBps']:5.0f}  model {pred:5.0f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
