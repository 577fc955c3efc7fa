"""The cost model's register estimate of each kernel against ptxas, no GPU.

    python3 bench/register_check.py FILE.eqf [FILE.eqf ...] [--top K] [--blocks a.0=64,b.0=32 ...]
                                    [--opt build/eqiforge-opt] [--out ROWS.jsonl]

For each program (a tiled one; with --top K, the K best candidates that
`eqiforge-opt extract` ranks for a high-level one), at the model's best block
sizes and at each block doubled and quadrupled (or at the --blocks choices
given), it asks `eqiforge-opt estimate --json` for every kernel's registers
and compiles the emitted module's kernels for sm_90 at 4 warps through
bench/spills.py (triton.compile and ptxas, on the CPU). One line per kernel:
ptxas's registers and spill stores (bytes per thread) beside the model's
registers (KiB, against the target's 128 KiB) and, at the end, how often the
model calls a kernel over its registers when ptxas spills at least 2 KB a
thread (slow: bench/results/h100-2026-12-06-registers), spills less, or none.
Run it without TRITON_INTERPRET (under it nothing compiles).
"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spills  # noqa: E402
from eqiforge.check import emit, estimate, extract, load_module  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SLOW_SPILL = 2048  # bytes per thread


def choices(best, block_params, given):
    """Block choices to compile: the given ones, else the model's best and
    each block doubled and quadrupled."""
    base = {a: b for a, b in best.items() if a in block_params}
    if given:
        return [{**base, **g} for g in given]
    out = [base]
    for a in base:
        out += [{**base, a: base[a] * 2}, {**base, a: base[a] * 4}]
    return out


def check(opt, path, given, rows):
    """The rows of one tiled program's kernels at each block choice."""
    text = Path(path).read_text()
    best = estimate(text, opt=opt, source=path)["block_sizes"]
    source = emit(text, source=path)
    block_params = load_module(source, "register_check_module").BLOCK_PARAMS
    for blocks in choices(best, block_params, given):
        est = estimate(text, {**best, **blocks}, opt=opt, source=path)
        params = {block_params[a]: b for a, b in blocks.items()}
        for fn, _grid, args, kwargs in spills.launches(load_module(source, "register_check_module"), params):
            regs, stores, _ = spills.ptxas_report(fn, args, dict(kwargs, num_warps=4), 90)
            kernel = next(k for k in est["kernels"] if fn.__name__.endswith(k["name"]))
            row = {"program": path, "blocks": blocks, "kernel": fn.__name__, "ptxas_registers": regs,
                   "spill_stores": stores, "model_register_bytes": kernel["register_bytes"],
                   "model_over": f"{kernel['name']}: registers" in est.get("why_infeasible", "")}
            rows.append(row)
            print(f"{Path(path).name:24s} {fn.__name__[:24]:24s} {json.dumps(blocks):48s} "
                  f"ptxas {regs:3d} regs, spills {stores:6d} B | model {kernel['register_bytes'] / 1024:6.0f} KiB"
                  f"{'  over' if row['model_over'] else ''}", flush=True)


def summary(rows):
    counts = {}
    for r in rows:
        spill = "slow" if r["spill_stores"] >= SLOW_SPILL else "some" if r["spill_stores"] else "none"
        key = (spill, "over" if r["model_over"] else "fits")
        counts[key] = counts.get(key, 0) + 1
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--top", type=int, default=0, help="check the K best candidates of each (high-level) program")
    ap.add_argument("--blocks", action="append", default=[], help="a block choice, e.g. m.0=16,k.0=256")
    ap.add_argument("--opt", default=str(REPO / "build" / "eqiforge-opt"))
    ap.add_argument("--out", help="write the rows here (JSON lines)")
    a = ap.parse_args(argv)
    given = [{k: int(v) for k, v in (kv.split("=") for kv in g.split(","))} for g in a.blocks]
    os.environ["EQIFORGE_OPT"] = a.opt  # the executable eqiforge.check's extract and emit run
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for path in a.programs:
            if a.top:
                for c in extract(Path(path).read_text(), a.top, source=path):
                    cand = os.path.join(d, f"{Path(path).stem}_c{c.rank}.eqf")
                    Path(cand).write_text(c.program + "\n")
                    check(a.opt, cand, given, rows)
            else:
                check(a.opt, path, given, rows)
    if a.out:
        Path(a.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    for (spill, model), n in sorted(summary(rows).items()):
        print(f"ptxas spills {spill:4s} (>= {SLOW_SPILL} B: slow), model {model}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
