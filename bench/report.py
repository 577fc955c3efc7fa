"""The benchmark report, from the rows of results.jsonl.

    python -m bench.report DIR/results.jsonl [--dest bench/results] [--plan DIR/plan.json]

Writes, under DEST, with TAG the device (h200, cpu, ...) and DATE the day of
the newest row:
  TAG-DATE.json          every row, the per-config summary and the totals;
  TAG-DATE.md            the tables: per family and timing, each config's
                         floor, every implementation's time, ours against
                         the fastest baseline, gaps to the floor; the goals of
                         the benchmarks issue; the search cost of each
                         optimize call; time spent per config; failures;
  TAG-DATE-FAMILY.png    bar charts normalized to ours (higher is better),
                         one panel per timing (needs matplotlib).

Ours is compared with the fastest baseline that ran and gave the right
values; a row that failed or gave wrong values is shown as x with its reason.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

IMPL_LABELS = {"eager": "eager", "torch_compile": "torch.compile", "sdpa_flash": "SDPA-flash", "ours": "ours"}
BASELINES = ("eager", "torch_compile", "sdpa_flash")
TIMINGS = {"do_bench": ("do_bench_s", "do_bench (median, launch included)"),
           "gpu": ("gpu_s", "GPU-only (CUDA graph replay, L2 flushed)"),
           "gpu_clean": ("gpu_clean_s", "GPU-only, L2 flushed by a read (no dirty lines to write back)")}
FAMILY_TITLES = {"general": "General programs", "attention": "Multi-head attention", "layer": "Decode layers"}
FAMILY_ORDER = ("general", "attention", "layer")
REPO = Path(__file__).resolve().parents[1]


# ---- reading -----------------------------------------------------------------------------


def load(path: Path) -> list[dict]:
    from .run import load_rows

    return load_rows(path)


def latest(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """The last row of each (config, impl); a measured row wins over a dry run."""
    out: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r.get("id"), r.get("impl"))
        if None in key:
            continue
        if r.get("status") == "dry_run" and key in out and out[key].get("status") != "dry_run":
            continue
        out[key] = r
    return out


def valid_time(row: dict | None, field: str) -> float | None:
    """The row's time if it ran and gave the right values."""
    if not row or row.get("status") != "ok":
        return None
    t = row.get(field)
    return t if isinstance(t, (int, float)) and t > 0 else None


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ---- the summary ------------------------------------------------------------------------


def summarize(rows: list[dict]) -> dict:
    last = latest(rows)
    cases: dict[str, dict] = {}
    for (cid, impl), r in last.items():
        if cid.startswith("_"):
            continue
        c = cases.setdefault(cid, {
            "id": cid, "workload": r.get("workload"), "family": r.get("family"), "title": r.get("title"),
            "config": r.get("config"), "params": r.get("params"), "floor": r.get("floor"), "impls": {},
        })
        c["impls"][impl] = r
    for c in cases.values():
        impls = c["impls"]
        c["wall_s"] = sum(r.get("wall_s") or 0 for r in impls.values())
        c["fastest"], c["speedup"], c["gap_ours"], c["gap_fastest"] = {}, {}, {}, {}
        floor_s = (c.get("floor") or {}).get("floor_s")
        for kind, (field, _) in TIMINGS.items():
            base = [(valid_time(impls.get(b), field), b) for b in BASELINES]
            base = [(t, b) for t, b in base if t]
            fastest = min(base) if base else None
            ours = valid_time(impls.get("ours"), field)
            c["fastest"][kind] = {"impl": fastest[1], "s": fastest[0]} if fastest else None
            c["speedup"][kind] = fastest[0] / ours if fastest and ours else None
            c["gap_ours"][kind] = ours / floor_s if ours and floor_s else None
            c["gap_fastest"][kind] = fastest[0] / floor_s if fastest and floor_s else None
    order = {f: i for i, f in enumerate(FAMILY_ORDER)}
    ordered = sorted(cases.values(), key=lambda c: (order.get(c["family"], 9), _workload_rank(c), c["id"]))
    totals: dict[str, dict] = {}
    for fam in FAMILY_ORDER:
        fam_cases = [c for c in ordered if c["family"] == fam]
        if not fam_cases:
            continue
        t = totals[fam] = {"configs": len(fam_cases)}
        for kind in TIMINGS:
            sp = [c["speedup"][kind] for c in fam_cases if c["speedup"][kind]]
            t[kind] = {
                "compared": len(sp),
                "geomean_speedup": geomean(sp),
                "wins": sum(1 for x in sp if x >= 1.0),
                "min_speedup": min(sp) if sp else None,
                "max_speedup": max(sp) if sp else None,
                "geomean_gap_ours": geomean([c["gap_ours"][kind] for c in fam_cases if c["gap_ours"][kind]]),
                "geomean_gap_fastest": geomean([c["gap_fastest"][kind] for c in fam_cases
                                                if c["gap_fastest"][kind]]),
            }
    return {"cases": ordered, "totals": totals}


def _workload_rank(c: dict) -> tuple:
    try:
        from .workloads import WORKLOADS

        names = list(WORKLOADS)
        rank = names.index(c["workload"]) if c["workload"] in names else len(names)
    except Exception:  # noqa: BLE001
        rank = 0
    m = re.match(r"b(\d+)$", str(c.get("config")))
    return (rank, int(m.group(1)) if m else 0)


def meta_of(rows: list[dict]) -> dict:
    measured = [r for r in rows if r.get("impl") != "ceilings"]
    devices = sorted({r.get("device") for r in measured if r.get("device")})
    times = sorted(r.get("time") for r in rows if r.get("time"))
    versions = next((r.get("versions") for r in reversed(measured) if r.get("versions")), {})
    ceilings = next((r for r in reversed(rows) if r.get("impl") == "ceilings" and r.get("status") == "ok"), None)
    return {"devices": devices, "first": times[0] if times else None, "last": times[-1] if times else None,
            "versions": versions, "runs": sorted({r.get("run") for r in rows if r.get("run")}),
            "ceilings": {k: ceilings.get(k) for k in ("copy_bytes_per_s", "mma_flop_per_s")} if ceilings else None}


def tag_of(meta: dict) -> str:
    devices = [d for d in meta["devices"] if d not in ("unknown",)]
    if any("h200" in d.lower() for d in devices):
        return "h200"
    if devices and all(d == "cpu" for d in devices):
        return "cpu"
    if devices and all(d == "dry run" for d in devices):
        return "dry-run"
    if devices:
        return re.sub(r"[^a-z0-9]+", "-", devices[0].lower()).strip("-") or "device"
    return "device"


def date_of(meta: dict) -> str:
    if meta.get("last"):
        return str(meta["last"])[:10]
    return _dt.date.today().isoformat()


# ---- search cost -------------------------------------------------------------------------

# Where each column may be found in optimize's report (first that exists wins).
SEARCH_COLUMNS = [
    ("e-nodes", ["search.egraph.enodes", "search.enodes", "search.e_nodes", "search.egraph_nodes"]),
    ("e-classes", ["search.egraph.eclasses", "search.eclasses", "search.e_classes"]),
    ("saturation s", ["search.egraph.saturation_seconds", "search.saturation_seconds", "search.saturation_s"]),
    ("extraction s", ["search.seconds", "search.extraction_seconds", "search.extract_seconds"]),
    ("states expanded", ["search.states_expanded"]),
    ("candidates", ["candidates", "search.distinct"]),
    ("tuning s", ["tuning.seconds"]),
    ("candidates tuned", ["tuning.candidates"]),
    ("configs measured", ["tuning.configs_tried", "tuning.measurements"]),
]


def _lookup(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def search_cost(row: dict) -> dict[str, Any]:
    report = (row.get("ours") or {}).get("report") or {}
    out: dict[str, Any] = {}
    for name, paths in SEARCH_COLUMNS:
        out[name] = next((v for v in (_lookup(report, p) for p in paths) if v is not None), None)
    out["kernels"] = len(report["kernels"]) if isinstance(report.get("kernels"), list) else None
    out["launch path"] = report.get("runner")
    out["optimize s"] = row.get("setup_s")
    out["from cache"] = report.get("from_cache") if report else None
    return out


# ---- Markdown ----------------------------------------------------------------------------


def _us(t: float | None) -> str:
    if t is None:
        return "–"
    us = t * 1e6
    if us < 1:
        return f"{us:.3g}"
    return f"{us:.1f}" if us < 1000 else f"{us:,.0f}"


def _x(v: float | None, digits: int = 2) -> str:
    return f"{v:.{digits}f}x" if v else "–"


def _num(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


def _cell(row: dict | None, field: str, notes: list[str]) -> str:
    if row is None:
        return "–"
    t = valid_time(row, field)
    if t is not None:
        return _us(t)
    status = row.get("status")
    if status == "dry_run":
        return "(dry run)"
    if status == "ok":  # ran, but this timing is missing: failed, or not measured on this device
        from .run import TIMING_FAILED

        failed = [n for n in row.get("notes", []) if n.startswith(TIMING_FAILED[field])]
        if not failed:
            return "n/a"
        reason = "; ".join(failed)
    else:
        reason = row.get("reason") or status
    note = f"{row['id']} {IMPL_LABELS.get(row['impl'], row['impl'])}: {status}: {reason}"
    if note not in notes:
        notes.append(note)
    return f"× [{notes.index(note) + 1}]"


def markdown(summary: dict, meta: dict, rows: list[dict], plan: dict | None) -> str:
    cases, totals = summary["cases"], summary["totals"]
    v = meta.get("versions") or {}
    lines = ["# Benchmarks: eqiforge against PyTorch eager, torch.compile and FlashAttention", ""]
    lines.append(f"Device: {', '.join(meta['devices']) or '–'}; torch {v.get('torch', '–')}, triton "
                 f"{v.get('triton', '–')}, eqiforge {v.get('eqiforge', '–')}, Python {v.get('python', '–')}. "
                 f"Rows from {meta.get('first') or '–'} to {meta.get('last') or '–'}.")
    lines.append("")
    from .floors import BANDWIDTH, MMA_RATE

    ceil = meta.get("ceilings")
    measured = (f" Measured in this run: copy {ceil['copy_bytes_per_s'] / 1e12:.2f} TB/s, fp16 matrix product "
                f"{ceil['mma_flop_per_s'] / 1e12:.0f} TFLOP/s." if ceil else "")
    lines.append(f"Floor = max(bytes / {BANDWIDTH / 1e12:.1f} TB/s, flops / {MMA_RATE / 1e12:.0f} TFLOP/s): "
                 "each input read once, each output written once, matrix flops of the cheapest known form "
                 f"(bench/floors.py).{measured} Times in µs. Speedup = fastest correct baseline / ours; "
                 "gap = time / floor. The same timings for everyone: do_bench (triton.testing.do_bench median, "
                 "what a Python caller sees), GPU-only (CUDA graph replay, L2 flushed between replays by a "
                 "write) and, where measured, GPU-only after a flush by a read (no dirty lines for the call "
                 "to write back; bench/timing.py). "
                 "Correct = relative L2 error against eager ≤ 1e-2, NaN fails.")
    lines.append("")
    notes: list[str] = []

    if totals:
        lines += ["## Summary", "",
                  "| family | timing | configs | compared | geomean speedup | ours ≥ fastest | min | max | "
                  "geomean gap ours | geomean gap fastest baseline |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for fam, t in totals.items():
            for kind in TIMINGS:
                k = t[kind]
                lines.append(f"| {FAMILY_TITLES.get(fam, fam)} | {kind} | {t['configs']} | {k['compared']} | "
                             f"{_x(k['geomean_speedup'])} | {k['wins']}/{k['compared']} | {_x(k['min_speedup'])} | "
                             f"{_x(k['max_speedup'])} | {_x(k['geomean_gap_ours'], 1)} | "
                             f"{_x(k['geomean_gap_fastest'], 1)} |")
        lines.append("")
        lines += goals(cases)

    for fam in FAMILY_ORDER:
        fam_cases = [c for c in cases if c["family"] == fam]
        if not fam_cases:
            continue
        impls = [i for i in ("eager", "torch_compile", "sdpa_flash", "ours")
                 if any(i in c["impls"] for c in fam_cases)]
        for kind, (field, label) in TIMINGS.items():
            lines += [f"## {FAMILY_TITLES.get(fam, fam)}: {label}", ""]
            head = ["config", "floor µs", "bound"] + [IMPL_LABELS[i] for i in impls] + \
                ["fastest baseline", "ours speedup", "gap ours", "gap fastest"]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            for c in fam_cases:
                fl = c.get("floor") or {}
                fastest = c["fastest"][kind]
                cells = [c["id"], _us(fl.get("floor_s")), fl.get("bound", "–")]
                cells += [_cell(c["impls"].get(i), field, notes) for i in impls]
                cells += [IMPL_LABELS.get(fastest["impl"], "–") if fastest else "–", _x(c["speedup"][kind]),
                          _x(c["gap_ours"][kind], 1), _x(c["gap_fastest"][kind], 1)]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")

    ours_rows = [c["impls"]["ours"] for c in cases if "ours" in c["impls"]]
    with_report = [r for r in ours_rows if (r.get("ours") or {}).get("report")]
    lines += ["## Search cost of each optimize call", ""]
    if with_report:
        cols = [name for name, _ in SEARCH_COLUMNS] + ["kernels", "launch path", "optimize s", "from cache"]
        lines.append("| config | " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * (len(cols) + 1))
        missing: set[str] = set()
        for r in with_report:
            sc = search_cost(r)
            missing.update(k for k, val in sc.items() if val is None)
            lines.append(f"| {r['id']} | " + " | ".join(_num(sc[k]) for k in cols) + " |")
        lines.append("")
        if missing:
            lines.append("Empty columns (–): " + ", ".join(sorted(missing)) + " — not exposed by optimize's "
                         "report for those rows (a cache hit reports the search of the run that filled the cache).")
            lines.append("")
    else:
        why = sorted({f"{r['id']}: {r.get('status')}: {r.get('reason') or '-'}" for r in ours_rows})
        lines.append("No optimize call produced a report" + (":" if why else "."))
        lines += [f"- {w}" for w in why[:40]]
        lines.append("")

    lines += ["## Time spent per config", "",
              "Wall seconds of each job (inputs, compile or optimize, checks and both timings); setup in brackets.",
              ""]
    impls_all = [i for i in ("eager", "sdpa_flash", "torch_compile", "ours") if any(i in c["impls"] for c in cases)]
    lines.append("| config | " + " | ".join(IMPL_LABELS[i] for i in impls_all) + " | total |")
    lines.append("|" + "---|" * (len(impls_all) + 2))
    grand = 0.0
    for c in cases:
        cells = []
        for i in impls_all:
            r = c["impls"].get(i)
            if r is None or r.get("wall_s") is None:
                cells.append("–")
            else:
                setup = f" ({r['setup_s']:.1f})" if r.get("setup_s") else ""
                cells.append(f"{r['wall_s']:.1f}{setup}")
        grand += c["wall_s"]
        lines.append(f"| {c['id']} | " + " | ".join(cells) + f" | {c['wall_s']:.1f} |")
    lines.append("| total | " + " | ".join("" for _ in impls_all) + f" | {grand:.1f} |")
    lines.append("")

    if plan:
        have = {(c["id"], i) for c in cases for i, r in c["impls"].items() if r.get("status") != "dry_run"}
        not_run = [f"{j['id']} {j['impl']}" for j in plan.get("jobs", []) if (j["id"], j["impl"]) not in have]
        if not_run:
            lines += ["## Not run", "", f"{len(not_run)} planned job(s) have no measured row (budget, or a "
                      "dry run): " + ", ".join(not_run[:60]) + (" …" if len(not_run) > 60 else ""), ""]

    if notes:
        lines += ["## Failures and missing timings", ""]
        lines += [f"{i}. {n}" for i, n in enumerate(notes, 1)]
        lines.append("")
    grouped: dict[str, list[str]] = {}
    for c in cases:
        for i, r in c["impls"].items():
            if r.get("status") == "dry_run":
                continue
            for n in r.get("notes", []):
                grouped.setdefault(n, []).append(f"{c['id']} {IMPL_LABELS.get(i, i)}")
            report = (r.get("ours") or {}).get("report") or {}
            for n in report.get("notes", []) or []:
                grouped.setdefault(f"optimize's report: {n}", []).append(c["id"])
    if grouped:
        lines += ["## Notes", ""]
        for n, where in grouped.items():
            shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
            lines.append(f"- {n} ({shown})")
        lines.append("")
    return "\n".join(lines)


def goals(cases: list[dict]) -> list[str]:
    """The targets of the benchmarks issue, with the measured numbers."""
    by_id = {c["id"]: c for c in cases}
    out = ["## Goals of the benchmarks issue", "", "| goal | do_bench | GPU-only |", "|---|---|---|"]

    def vs(cid: str, baseline: str, kind: str) -> float | None:
        c = by_id.get(cid)
        if not c:
            return None
        field = TIMINGS[kind][0]
        b, o = valid_time(c["impls"].get(baseline), field), valid_time(c["impls"].get("ours"), field)
        return b / o if b and o else None

    general = [c for c in cases if c["family"] == "general"]
    if general:
        cells = []
        for kind in TIMINGS:
            sp = [c["speedup"][kind] for c in general if c["speedup"][kind]]
            slower = sum(1 for x in sp if x < 1)
            cells.append(f"{_x(geomean(sp))} over {len(sp)}/{len(general)}, {slower} slower" if sp else "–")
        out.append(f"| general: geomean ≥ 2x over the fastest baseline, none slower | {cells[0]} | {cells[1]} |")
    for cid, base, goal in (("attention_decode/b1", "sdpa_flash", "decode b1: ≥ 1.5x SDPA-flash"),
                            ("attention_decode/b8", "eager", "decode b8: match eager (≥ 1x)"),
                            ("attention_decode/b16", "eager", "decode b16: match eager (≥ 1x)"),
                            ("attention_prefill/b1", "sdpa_flash", "prefill b1: ≥ 1.1x SDPA-flash"),
                            ("attention_prefill/b4", "sdpa_flash", "prefill b4: ≥ 1.1x SDPA-flash"),
                            ("attention_prefill/b8", "sdpa_flash", "prefill b8: ≥ 1.1x SDPA-flash")):
        if cid in by_id:
            out.append(f"| {goal} | {_x(vs(cid, base, 'do_bench'))} | {_x(vs(cid, base, 'gpu'))} |")
    cells = []
    for kind in TIMINGS:
        gaps = [c["gap_ours"][kind] for c in cases if c["gap_ours"][kind]]
        cells.append(f"{sum(1 for g in gaps if g <= 1.5)}/{len(gaps)}" if gaps else "–")
    out.append(f"| ours within 1.5x of the floor | {cells[0]} | {cells[1]} |")
    out.append("")
    return out


# ---- charts ------------------------------------------------------------------------------


def charts(summary: dict, dest: Path, stem: str) -> tuple[list[Path], str | None]:
    """One PNG per family: bars normalized to ours (ours = 1, higher is
    better), a panel per timing. Returns (paths, why none were drawn)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return [], f"no charts: matplotlib is not available ({type(e).__name__})"
    colors = {"eager": "#9ca3af", "torch_compile": "#60a5fa", "sdpa_flash": "#f59e0b", "ours": "#16a34a"}
    paths = []
    for fam in FAMILY_ORDER:
        fam_cases = [c for c in summary["cases"] if c["family"] == fam]
        if not fam_cases:
            continue
        impls = [i for i in ("eager", "torch_compile", "sdpa_flash", "ours") if any(i in c["impls"] for c in fam_cases)]
        width_in = min(26.0, max(7.0, 0.32 * len(fam_cases) * len(impls) + 2))
        fig, axes = plt.subplots(len(TIMINGS), 1, figsize=(width_in, 7.5), squeeze=False)
        for ax, (kind, (field, label)) in zip(axes[:, 0], TIMINGS.items()):
            width = 0.8 / len(impls)
            tops = []
            for j, impl in enumerate(impls):
                for x, c in enumerate(fam_cases):
                    ours = valid_time(c["impls"].get("ours"), field)
                    ref = ours or (c["fastest"][kind] or {}).get("s")
                    t = valid_time(c["impls"].get(impl), field)
                    pos = x - 0.4 + width * (j + 0.5)
                    if t and ref:
                        h = ref / t
                        tops.append(h)
                        ax.bar(pos, h, width, color=colors[impl], label=IMPL_LABELS[impl] if x == 0 else None)
                    else:
                        ax.bar(pos, 0, width, color=colors[impl], label=IMPL_LABELS[impl] if x == 0 else None)
                        if impl in c["impls"] or impl == "ours":
                            ax.text(pos, 0.02, "×", ha="center", va="bottom", color="#dc2626", fontsize=11)
            top = max(tops + [1.0])
            for x, c in enumerate(fam_cases):
                if c["speedup"][kind]:
                    ax.text(x, top * 1.04, f"{c['speedup'][kind]:.2f}x", ha="center", va="bottom", fontsize=7)
            ax.axhline(1.0, color="#374151", linewidth=0.8, linestyle="--")
            ax.set_xticks(range(len(fam_cases)))
            ax.set_xticklabels([c["id"].replace("/", "\n") for c in fam_cases], fontsize=7)
            ax.set_ylim(0, top * 1.2)
            sp = geomean([c["speedup"][kind] for c in fam_cases if c["speedup"][kind]])
            ours_any = any(valid_time(c["impls"].get("ours"), field) for c in fam_cases)
            norm = ("normalized to ours, higher is better; × failed or wrong (a config without ours is "
                    "normalized to its fastest baseline)" if ours_any
                    else "normalized to the fastest baseline (ours did not run), higher is better")
            title = [f"{FAMILY_TITLES.get(fam, fam)}, {label}"] + textwrap.wrap(norm, 110)
            if sp:
                title.append(f"geomean speedup of ours over the fastest baseline {sp:.2f}x (per config over the bars)")
            ax.set_title("\n".join(title), fontsize=8)
            ax.set_ylabel("relative performance")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
        fig.tight_layout()
        path = dest / f"{stem}-{fam}.png"
        fig.savefig(path, dpi=130)
        plt.close(fig)
        paths.append(path)
    return paths, None


# ---- writing -----------------------------------------------------------------------------


def write_report(rows: list[dict], dest: Path, plan: dict | None = None) -> list[Path]:
    """Writes the JSON, the Markdown and the charts under dest; returns their paths."""
    dest.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    meta = meta_of(rows)
    stem = f"{tag_of(meta)}-{date_of(meta)}"
    md = markdown(summary, meta, rows, plan)
    pngs, why = charts(summary, dest, stem)
    if why:
        md += f"\n{why}\n"
    md_path = dest / f"{stem}.md"
    md_path.write_text(md)
    js_path = dest / f"{stem}.json"
    cases = [{k: v for k, v in c.items() if k != "impls"} | {"impls": sorted(c["impls"])} for c in summary["cases"]]
    js_path.write_text(json.dumps({"meta": meta, "totals": summary["totals"], "configs": cases, "rows": rows},
                                  indent=1, default=str) + "\n")
    return [js_path, md_path] + pngs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.report", description="The benchmark report from results.jsonl.")
    p.add_argument("results", help="a results.jsonl written by python -m bench.run")
    p.add_argument("--dest", default=str(REPO / "bench" / "results"), help="where to write (default bench/results)")
    p.add_argument("--plan", default=None, help="the run's plan.json (lists the jobs not run); default beside results")
    args = p.parse_args(argv)
    results = Path(args.results)
    rows = load(results)
    if not rows:
        print(f"bench.report: no rows in {results}", file=sys.stderr)
        return 1
    plan_path = Path(args.plan) if args.plan else results.parent / "plan.json"
    plan = json.loads(plan_path.read_text()) if plan_path.exists() else None
    for path in write_report(rows, Path(args.dest), plan):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
