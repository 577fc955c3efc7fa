"""The cost model's estimate of bench/narrow_tiles' GEMV next to its measured time.

bench/narrow_tiles.py times out[n] = sum_k x[k] * W[k, n] in [BK, BN] tiles
(BK = K: one iteration, no loop). The same program, tiled the same way, is
a candidate extraction builds for a GEMV: a grid over blocks of n and a
loop over blocks of k (`preduce k.0`), or with the whole k in one tile.
This asks `eqiforge-opt estimate` for each row's tiling at its block sizes
and prints both, so that a change to the cost model can be checked against
the GPU without it.

    python3 -m bench.model_vs_gemv narrow_tiles.json --target h100 [--opt build/eqiforge-opt]

It also reads bench/stream_forms.py's results: their multiply-and-sum rows
without a split of K (`ptr-sum`, split 1) are the same GEMV.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

from eqiforge.check import estimate

REPO = Path(__file__).resolve().parent.parent

HEADER = """(program gemv
  (dims (k {K}) (n {N}))
  (input x f16 [k])
  (input w f16 [k n])
"""
LOOP = "  (output y [n] (combine n.0 n (preduce k.0 + (tile_matmul k (partition k.0 k (replicate n.0 x)) " \
       "(partition k.0 k (partition n.0 n w)))))))\n"
WHOLE = "  (output y [n] (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w)))))\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="narrow_tiles.json")
    ap.add_argument("--target", default="h100")
    built = REPO / "build" / "eqiforge-opt"
    ap.add_argument("--opt", default=str(built) if built.exists() else shutil.which("eqiforge-opt"),
                    help="eqiforge-opt (default: build/eqiforge-opt, else the one on PATH)")
    a = ap.parse_args(argv)
    if not a.opt:
        raise SystemExit("no eqiforge-opt: build it (build/eqiforge-opt) or give --opt")
    data = json.load(open(a.results))
    if "K" not in data:  # stream_forms.json
        data = {"device": f"{data['device']} (stream_forms ptr-sum, split 1)", "K": data["k"], "N": data["n"],
                "rows": [dict(BN=r["bn"], BK=r["bk"], programs=r["programs"], us=r["us"]) for r in data["rows"]
                         if r["form"] == "ptr-sum" and r["splits"] == 1 and "us" in r]}
    K, N = data["K"], data["N"]
    best: dict[tuple[int, int], dict] = {}  # the fastest launch (warps, stages) of each tiling
    for r in data["rows"]:
        if "form" in r:  # narrow_tiles' split-k and cuBLAS rows: printed below, not modelled
            continue
        key = (r["BN"], r["BK"])
        if key not in best or r["us"] < best[key]["us"]:
            best[key] = r
    print(f"{data['device']}, K={K} N={N}; model: --target {a.target}")
    print("  BN   BK  programs  measured us  model us  model/measured  model bound")
    logs = []
    for (bn, bk), r in sorted(best.items()):
        whole = bk >= K
        program = HEADER.format(K=K, N=N) + (WHOLE if whole else LOOP)
        blocks = {"n.0": bn} if whole else {"n.0": bn, "k.0": bk}
        e = estimate(program, blocks, a.target, opt=a.opt, source=f"BN={bn} BK={bk}")
        kern = e["kernels"][0]
        ratio = e["estimated_us"] / r["us"]
        logs.append(math.log(ratio))
        print(f"{bn:4d} {bk:5d} {r['programs']:8d} {r['us']:12.1f} {e['estimated_us']:9.1f} {ratio:14.2f}  "
              f"{kern['bound']}{'' if e.get('feasible', True) else ' (infeasible)'}")
    others = [r for r in data["rows"] if "form" in r]
    for r in others:
        if r["form"] == "torch.matmul":
            print(f"torch.matmul (cuBLAS): {r['us']:.1f} us")
    split = [r for r in others if r["form"] == "split"]
    if split:
        s = min(split, key=lambda r: r["us"])
        print(f"fastest split-k (partials + merge kernel): {s['us']:.1f} us at BN={s['BN']} BK={s['BK']} "
              f"S={s['S']} warps={s['num_warps']} ({len(split)} measured)")
    rms = math.sqrt(sum(x * x for x in logs) / len(logs))
    print(f"rms log error {rms:.3f} over {len(logs)} tilings; geometric mean model/measured "
          f"{math.exp(sum(logs) / len(logs)):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
