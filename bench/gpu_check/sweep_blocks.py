"""Times the top-ranked candidate of a few general bench cases over a grid of
launch parameters, to compare what the tuner and the cost model choose with
what is fastest on the device.

    python3 bench/gpu_check/sweep_blocks.py OUT.json rmsnorm_swiglu_ffn/b16 ...

For each case: the search's top candidate (no tuning), then every
configuration of block sizes (powers of two from 16 to 256 for every axis
whose estimate block is at least 16, the estimate's own value otherwise),
4 warps, 3 or 5 stages, as far as a time limit per case allows, in an order
that starts around the estimate. Each configuration is run once, checked
against eager (relative L2 error at most 1e-2) and timed by the tuner's
graph_timer (GPU time of a CUDA graph replay, L2 flushed before each; the
h200-2026-12-02d sweep ran before this and timed do_bench on the Python
forward, host time included). The JSON holds
every configuration's time or failure, the estimate's blocks and the
candidate's program text.
"""
import itertools
import json
import sys
import time

import torch

sys.path.insert(0, ".")
from bench.run import rel_l2  # noqa: E402
from bench.workloads import Case, GENERAL, make_inputs  # noqa: E402
from eqiforge.frontend import to_ir  # noqa: E402
from eqiforge.options import make_options  # noqa: E402
from eqiforge.runtime import search  # noqa: E402
from eqiforge.runtime.launch import Binding  # noqa: E402
from eqiforge.runtime.loader import load_module  # noqa: E402
from eqiforge.runtime.measure import graph_timer  # noqa: E402

# On a machine without a GPU (a check of the script), Triton's interpreter runs
# the configurations and nothing is timed.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
LIMIT_S = float(__import__("os").environ.get("SWEEP_CASE_S", "60"))


def sweep(case_id):
    name, label = case_id.split("/")
    w = [w for w in GENERAL if w.name == name][0]
    case = Case(w, w.config(label))
    args = make_inputs(case, device=DEVICE)
    fn = case.fn()
    ref = fn(*args)
    fe = to_ir(fn, *args)
    binding = Binding(fe)
    opts = make_options(top_k=4)
    found = search.find_candidates(fe.text, opts, "h200", file=f"<{fe.name}>")
    cand = found.candidates[0]
    source = search.ensure_source(cand)
    module = load_module(source, DEVICE == "cpu", None)
    inputs = binding.module_inputs(args)
    params = dict(getattr(module, "BLOCK_PARAMS", {}))
    est = {params[a]: int(b) for a, b in cand.blocks.items() if a in params}
    axes = sorted(est)
    choices = {kw: ([b for b in (16, 32, 64, 128, 256)] if est[kw] >= 16 else [est[kw]]) for kw in axes}
    # Around the estimate first: order by the distance (in doublings) from it.
    def dist(blocks):
        return sum(abs((b.bit_length()) - (est[kw].bit_length())) for kw, b in zip(axes, blocks))
    grid = sorted(itertools.product(*(choices[kw] for kw in axes)), key=lambda bl: (dist(bl), bl))
    rows, start = [], time.monotonic()
    for stages in (3, 5):
        for bl in grid:
            if time.monotonic() - start > LIMIT_S * (0.5 if stages == 3 else 1.0):
                break
            p = dict(zip(axes, bl), num_warps=4, num_stages=stages)
            row = {"params": p}
            try:
                out = module.forward(*inputs, **p)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                err = rel_l2(out[0].reshape(ref.shape), ref)
                row["error"] = err
                if err <= 1e-2:
                    row["us"] = 1e6 * graph_timer(lambda: module.forward(*inputs, **p), 20.0)
            except Exception as e:  # noqa: BLE001 -- a configuration that fails is recorded
                row["failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}" if str(e) else type(e).__name__
            rows.append(row)
    ok = sorted((r for r in rows if "us" in r), key=lambda r: r["us"])
    print(case_id, "estimate", est, "estimate_us", round(cand.estimate_s * 1e6, 1), "configs", len(rows), flush=True)
    for r in ok[:8]:
        print("   ", round(r["us"], 1), r["params"], flush=True)
    at_est = [r for r in ok if all(r["params"][k] == v for k, v in est.items()) and r["params"]["num_stages"] == 3]
    if at_est:
        print("    at the estimate:", round(at_est[0]["us"], 1), flush=True)
    return {"estimate": est, "estimate_us": cand.estimate_s * 1e6, "program": cand.program, "rows": rows}


if __name__ == "__main__":
    out = {}
    for cid in sys.argv[2:]:
        try:
            out[cid] = sweep(cid)
        except Exception as e:  # noqa: BLE001
            print(cid, "failed:", type(e).__name__, e, flush=True)
            out[cid] = {"failed": str(e)}
        json.dump(out, open(sys.argv[1], "w"), indent=1, default=str)
