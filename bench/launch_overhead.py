"""Where a call of an optimized program spends its host time (GPU only).

do_bench times what a Python caller sees: when the host takes longer to
launch a call than the GPU takes to run it, the difference shows. This
splits one call of ``eqiforge.optimize``'s result into its stages
(argument check, module inputs, runner, outputs), times eager's call the
same way, and profiles a few hundred calls with cProfile.

    python3 -m bench.launch_overhead --only layernorm_gemm/b1 --out DIR

Writes DIR/launch-overhead.json and DIR/launch-overhead.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from pathlib import Path

import torch

from . import timing, workloads as W


def host_us(fn, reps: int = 300) -> tuple[float, float]:
    """Host µs per call (enqueue only) and µs per call until the GPU is done,
    back to back without flushes."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / reps * 1e6, (t2 - t0) / reps * 1e6


def profile_text(fn, reps: int = 300, top: int = 25) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue()


def probe(case: W.Case, budget_s: float, opts: dict) -> dict:
    import eqiforge

    fn = case.fn()
    args = W.make_inputs(case, "cuda", torch.float16, 1)
    example = W.make_inputs(case, "cuda", torch.float16, 2)
    t = time.perf_counter()
    run = eqiforge.optimize(fn, *example, budget_s=budget_s, baselines=False, **opts)
    setup = time.perf_counter() - t
    runner = getattr(run, "runner", None)   # a composed program has one per subgraph
    row: dict = {"id": case.id, "optimize_s": setup, "kernels": len(run.report.kernels),
                 "runner": type(runner).__name__ if runner is not None else type(run).__name__}
    # The input sets bench.run rotates among (inputs that fit in the L2).
    sets = [args] + [W.make_inputs(case, "cuda", torch.float16, 10 + i)
                     for i in range(1, timing.rotation_count(case.input_bytes()))]
    with torch.no_grad():
        stages = {"call": lambda: run(*args), "eager": lambda: fn(*args)}
        if runner is not None:
            b = run.binding
            inputs = b.module_inputs(args)
            outputs = runner(*inputs)
            stages.update({
                "check_args": lambda: b.check_args(args),
                "module_inputs": lambda: b.module_inputs(args),
                "runner": lambda: runner(*inputs),
                "user_outputs": lambda: b.user_outputs(outputs),
            })
        row["host_us"] = {}
        row["back_to_back_us"] = {}
        for name, f in stages.items():
            h, total = host_us(f)
            row["host_us"][name] = h
            row["back_to_back_us"][name] = total
        # bench.run's do_bench (timing.do_bench_time), on one input set and
        # rotating among them.
        row["rotating_sets"] = len(sets)
        row["do_bench_us"] = {}
        for name, f in (("call", run), ("eager", fn)):
            row["do_bench_us"][name] = timing.do_bench_time(f, [args]) * 1e6
            row["do_bench_us"][f"{name}_rotating"] = timing.do_bench_time(f, sets) * 1e6
        # Calls that left the lean path for Triton's launch path.
        fallback = getattr(runner, "fallback", None)
        if fallback is not None:
            count = [0]

            def counted(*a):
                count[0] += 1
                return fallback(*a)

            runner.fallback = counted
            for a in sets * 3:
                run(*a)
            runner.fallback = fallback
            row["lean_fallbacks"] = f"{count[0]} of {len(sets) * 3}"
        row["profile"] = profile_text(stages["call"])
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", required=True, help="comma-separated case ids (workload/config)")
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=10.0)
    p.add_argument("--top-k", type=int, default=8)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in W.cases(a.only.split(",")):
        row = probe(case, a.budget_s, {"top_k": a.top_k})
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)
    (out / "launch-overhead.json").write_text(json.dumps(rows, indent=1))
    lines = [f"# Host time per call ({torch.cuda.get_device_name()})", "",
             "Host µs per call (enqueue only), by stage; do_bench medians (µs) of the same inputs "
             "every call and of the input sets bench.run rotates among.", "",
             "| case | kernels | runner | call | check_args | module_inputs | runner | user_outputs | eager "
             "| do_bench call | do_bench eager | sets | do_bench call, rotating | do_bench eager, rotating "
             "| lean fallbacks |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def num(v):
        return "–" if v is None else f"{v:.1f}"

    for r in rows:
        h, d = r["host_us"], r["do_bench_us"]
        lines.append(f"| {r['id']} | {r['kernels']} | {r['runner']} | " +
                     " | ".join(num(h.get(k)) for k in ("call", "check_args", "module_inputs", "runner",
                                                         "user_outputs", "eager")) + " | " +
                     " | ".join(num(d.get(k)) for k in ("call", "eager")) + f" | {r['rotating_sets']} | " +
                     " | ".join(num(d.get(k)) for k in ("call_rotating", "eager_rotating")) +
                     f" | {r.get('lean_fallbacks', '–')} |")
    lines.append("")
    for r in rows:
        lines += [f"## {r['id']}: cProfile of 300 calls", "", "```", r["profile"], "```", ""]
    (out / "launch-overhead.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
