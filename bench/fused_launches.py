"""Fused launches against separate ones, the kernels fixed (GPU; no tuning).

The emitter runs the independent kernels of each launch level of a module
side by side in one fused kernel (forward's default); `separate_launches=True`
launches them one by one. This times both forms of the same kernels: each
subgraph of a workload, captured and cut as `eqiforge.optimize` does, is
searched once, its first candidate emitted, and where that module has fused
kernels (its FUSED table) the module's forward is timed in both forms at the
candidate's estimated block sizes and stages (4 warps): GPU time of a CUDA
graph replay with the L2 flushed (`measure.graph_timer`, what the tuner ranks
by), after both forms matched the subgraph evaluated in PyTorch on random
inputs (`verify.compare`, the tuner's check).

    python3 -m bench.fused_launches --workload mhc_decode --target h100 --out fused.json

Prints one line per subgraph with fused kernels and writes them as JSON
(kernels, launches, whether both forms matched PyTorch, µs fused and
separate). With --small (no
GPU needed) the dims are made small and the forms run in Triton's
interpreter, values only: a check of this script, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


def _inputs(ir, device, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for i, (_, dtype, _) in enumerate(ir.inputs):
        t = torch.randn(ir.input_shape(i), generator=g) * 0.5
        out.append(t.to(getattr(torch, _DTYPES.get(dtype, "float32"))).to(device))
    return out


def _params(module, cand) -> dict:
    params = {kw: int(cand.blocks[axis]) for axis, kw in getattr(module, "BLOCK_PARAMS", {}).items()
              if axis in cand.blocks}
    if cand.stages:
        params["num_stages"] = int(cand.stages)
    return params


def measure(workload: str, target: str, partition_ops: int, small: bool, rep_ms: float,
            limit: int | None = None) -> list[dict]:
    import torch

    from bench.stack_search import stack_case
    from bench.workloads import cases
    from eqiforge.frontend import to_ir
    from eqiforge.options import Options
    from eqiforge.runtime import partition, search
    from eqiforge.runtime.loader import load_module
    from eqiforge.runtime.measure import graph_timer
    from eqiforge.runtime.verify import compare

    case = cases([workload])[0]
    fn, inputs = stack_case(case, 1)
    text = to_ir(fn, *inputs).text
    if small:
        from eqiforge.check import resize_small

        text = resize_small(text, seed=1)
    plan = partition.partition_program(text, partition_ops)
    opts = Options()
    device = "cpu" if small else "cuda"
    rows, seen = [], set()
    for sg in plan.subgraphs:
        if sg.hash in seen or (limit is not None and len(rows) >= limit):
            continue
        seen.add(sg.hash)
        found = search.find_candidates(sg.program, opts, target, file=f"<{sg.name}>")
        if not found.candidates:
            continue
        cand = found.candidates[0]
        module = load_module(search.ensure_source(cand), interpret=small)
        fused = getattr(module, "FUSED", {})
        if not fused:
            continue
        kernels = [k for k in module.WRITES if k not in fused]
        ir = partition.IRProgram(sg.program)
        args = _inputs(ir, device, seed=len(rows))
        params = _params(module, cand)
        row = {"subgraph": sg.name, "kernels": len(kernels),
               "launches": len(kernels) - sum(len(m) - 1 for m in fused.values()), "params": params}
        with torch.no_grad():
            want = ir(*args)
            row["matches_pytorch"] = all(
                compare(module.forward(*args, **params, separate_launches=split), want).ok for split in (False, True))
            if not small and row["matches_pytorch"]:
                row["fused_s"] = graph_timer(lambda: module.forward(*args, **params), rep_ms)
                row["separate_s"] = graph_timer(lambda: module.forward(*args, **params, separate_launches=True),
                                                rep_ms)
        rows.append(row)
        timing = (f"fused {row['fused_s'] * 1e6:.1f} us, separate {row['separate_s'] * 1e6:.1f} us, "
                  f"{row['separate_s'] / row['fused_s']:.2f}x") if "fused_s" in row else "not timed"
        print(f"{sg.name}: {row['kernels']} kernels in {row['launches']} launches; both forms match PyTorch: "
              f"{row['matches_pytorch']}; {timing}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="mhc_decode", help="a bench.workloads workload (its first config)")
    ap.add_argument("--target", default="h100", help="the cost model's hardware profile")
    ap.add_argument("--partition-ops", type=int, default=16)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--small", action="store_true", help="small dims, Triton's interpreter, values only")
    ap.add_argument("--limit", type=int, help="stop after this many subgraphs with fused kernels")
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    if args.small:
        os.environ["TRITON_INTERPRET"] = "1"
    rows = measure(args.workload, args.target, args.partition_ops, args.small, args.rep_ms, args.limit)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"workload": args.workload, "target": args.target, "rows": rows}, f, indent=1)
    return 0 if all(r["matches_pytorch"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
