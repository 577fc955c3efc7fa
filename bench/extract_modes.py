#!/usr/bin/env python3
"""The three extraction modes side by side on the workload files (the
paper's figure 10: states expanded and enumeration time per mode).

    python3 bench/extract_modes.py --opt build/eqiforge-opt --out DIR
           [--workloads ngpt rmsnorm_swiglu ...] [--modes early after none]
           [--order best|bfs] [--candidates 16] [--time-limit 20]

Each (workload, mode) is one `eqiforge-opt extract examples/workloads/W.eqf
--mode M --order O --candidates C --time-limit T --json` in its own process
(saturated with the rule library's default schedule). Modes:
  early  early compression: a partial program ≈-equivalent to one already
         seen is not expanded (Algorithm 1);
  after  every partial program is expanded, complete programs are
         de-duplicated under ≈ at the end;
  none   every partial program is expanded and every complete program is a
         candidate (duplicates included).
With the best-first order each run stops after C feasible candidates, so
`none` stops early on duplicates and its counts are not a like-for-like
comparison; with `--order bfs --candidates 0` every mode enumerates the
whole space, which on the saturated workloads only early finishes.
A run that hits the time limit is shown as such: its states are a lower
bound of what finishing takes.

Writes DIR/extract-modes.json, DIR/extract-modes.md and, where matplotlib is
installed, DIR/extract-modes.png (states expanded and seconds per mode, log
scale).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = ("gated_mlp", "layernorm_gemm", "lora", "ngpt", "qknorm_proj", "rmsnorm_mlp", "rmsnorm_swiglu",
             "attention_decode", "attention_prefill")
MODES = ("early", "after", "none")
FIELDS = ("states_expanded", "complete_built", "distinct", "skipped_equivalent", "seconds", "enumerate_seconds",
          "limit_hit", "limit", "enough")


def run_one(opt: str, workload: str, mode: str, order: str, candidates: int, time_limit: float) -> dict:
    path = REPO / "examples" / "workloads" / f"{workload}.eqf"
    cmd = [opt, "extract", str(path), "--mode", mode, "--order", order, "--candidates", str(candidates),
           "--time-limit", str(time_limit), "--max-states", "100000000", "--top", "0", "--json"]
    row = {"workload": workload, "mode": mode, "order": order, "candidates": candidates, "command": cmd[1:]}
    before = os.times()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=time_limit * 4 + 120)
    after = os.times()
    row["cpu_s"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        row["error"] = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return row
    d = json.loads(proc.stdout)
    row.update({k: d.get(k) for k in FIELDS})
    row["egraph"] = d.get("egraph", {})
    return row


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:,.0f}x" if a and b else "-"


def markdown(rows: list[dict], meta: dict) -> str:
    out = [f"# Extraction modes, {meta['date']}", "",
           f"Machine: {meta['machine']}. Order `{meta['order']}`, candidates {meta['candidates']}, "
           f"time limit {meta['time_limit']} s per run. Command per row: `eqiforge-opt extract "
           f"examples/workloads/W.eqf --mode M --order {meta['order']} --candidates {meta['candidates']} "
           f"--time-limit {meta['time_limit']} --max-states 100000000 --top 0 --json`.", "",
           "States are deterministic; seconds are wall time of the extraction (`seconds`), cpu s the whole "
           "process (parse and saturation included). `stopped`: the run hit its time limit, so its states "
           "are a lower bound.", "",
           "| workload | mode | states expanded | complete built | distinct | seconds | cpu s | stopped | "
           "states / early's |", "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    by = {(r["workload"], r["mode"]): r for r in rows}
    for w in dict.fromkeys(r["workload"] for r in rows):
        early = by.get((w, "early"), {}).get("states_expanded")
        for m in MODES:
            r = by.get((w, m))
            if not r:
                continue
            if "error" in r:
                out.append(f"| {w} | {m} | error: {r['error']} | | | | | | |")
                continue
            stopped = (r.get("limit") or "yes") if r.get("limit_hit") else ""
            out.append(f"| {w} | {m} | {r['states_expanded']:,} | {r['complete_built']:,} | {r['distinct']:,} | "
                       f"{r['seconds']:.2f} | {r['cpu_s']:.2f} | {stopped} | "
                       f"{'' if m == 'early' else ratio(r['states_expanded'], early)} |")
    return "\n".join(out) + "\n"


def chart(rows: list[dict], dest: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001 -- charts are optional
        return f"no chart: matplotlib is not available ({type(e).__name__})"
    ws = list(dict.fromkeys(r["workload"] for r in rows if "error" not in r))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.4 * len(ws)) * 1.3, 4.2))
    width = 0.8 / len(MODES)
    by = {(r["workload"], r["mode"]): r for r in rows if "error" not in r}
    for ax, field, title in ((axes[0], "states_expanded", "states expanded"), (axes[1], "seconds", "seconds")):
        for i, m in enumerate(MODES):
            xs, ys, hatch = [], [], []
            for j, w in enumerate(ws):
                r = by.get((w, m))
                if r and r.get(field):
                    xs.append(j + (i - (len(MODES) - 1) / 2) * width)
                    ys.append(r[field])
                    hatch.append(bool(r.get("limit_hit")))
            bars = ax.bar(xs, ys, width, label=m)
            for b, h in zip(bars, hatch):
                if h:
                    b.set_hatch("//")
        ax.set_yscale("log")
        ax.set_title(title + " (hatched: stopped by the time limit)")
        ax.set_xticks(range(len(ws)))
        ax.set_xticklabels(ws, rotation=30, ha="right")
        ax.legend()
    fig.tight_layout()
    fig.savefig(dest / "extract-modes.png", dpi=120)
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--opt", default=str(REPO / "build" / "eqiforge-opt"))
    p.add_argument("--out", required=True)
    p.add_argument("--workloads", nargs="*", default=list(WORKLOADS))
    p.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    p.add_argument("--order", default="best", choices=("best", "bfs"))
    p.add_argument("--candidates", type=int, default=16)
    p.add_argument("--time-limit", type=float, default=20.0)
    a = p.parse_args(argv)
    dest = Path(a.out)
    dest.mkdir(parents=True, exist_ok=True)
    meta = {"date": _dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "order": a.order, "candidates": a.candidates, "time_limit": a.time_limit}
    rows = []
    for w in a.workloads:
        for m in a.modes:
            r = run_one(a.opt, w, m, a.order, a.candidates, a.time_limit)
            rows.append(r)
            print(w, m, *(f"{k}={r.get(k)}" for k in ("states_expanded", "distinct", "seconds", "limit_hit")),
                  r.get("error", ""), flush=True)
    (dest / "extract-modes.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (dest / "extract-modes.md").write_text(markdown(rows, meta))
    why = chart(rows, dest)
    if why:
        print(why, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
