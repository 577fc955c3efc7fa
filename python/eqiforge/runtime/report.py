"""What was chosen and where the time goes: the report after tuning.

A ``Report`` holds the chosen program's kernels in launch order (which IR ops
each computes, its grid and loop axes, which tensors it reads and writes, its
time), the time per call through each launch path, the same-run times of
PyTorch eager and torch.compile, and the search and tuning statistics. It
prints as text, saves as JSON (the cache keeps it; ``eqiforge report`` shows
it again), and draws the kernel structure as SVG: inputs on the left, one box
per kernel with its ops, intermediate buffers after the kernel that writes
them, outputs on the right (like the layer figures of the paper).
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from .progress import format_time

# Launch paths and baselines, in the order they are shown.
TIMINGS = {
    "triton": "eqiforge, Triton's launch path",
    "lean": "eqiforge, lean launch path",
    "cuda_graph": "eqiforge, CUDA graph replay",
    "eager": "PyTorch eager",
    "torch_compile": "torch.compile",
}
OWN = ("triton", "lean", "cuda_graph")
BASELINES = ("eager", "torch_compile")


@dataclass
class KernelReport:
    name: str
    ops: list[str] = field(default_factory=list)
    grid: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    time_s: float | None = None


@dataclass
class Report:
    program: str
    device: str
    candidate_rank: int = 0
    candidates: int = 0
    estimate_s: float | None = None
    params: dict[str, int] = field(default_factory=dict)
    error: float | None = None
    kernels: list[KernelReport] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    timings: dict[str, float | None] = field(default_factory=dict)
    runner: str = "triton"   # the launch path the returned callable uses
    notes: list[str] = field(default_factory=list)
    search: dict[str, Any] = field(default_factory=dict)
    tuning: dict[str, Any] = field(default_factory=dict)
    from_cache: bool = False

    # -- numbers --

    def own_time(self) -> float | None:
        return self.timings.get(self.runner) or self.timings.get("triton")

    def speedup(self, baseline: str) -> float | None:
        own, base = self.own_time(), self.timings.get(baseline)
        if not own or not base:
            return None
        return base / own

    # -- JSON --

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Report":
        d = dict(d)
        d["kernels"] = [KernelReport(**k) for k in d.get("kernels", [])]
        known = set(Report.__dataclass_fields__)
        return Report(**{k: v for k, v in d.items() if k in known})

    # -- text --

    def text(self) -> str:
        lines = [f"eqiforge report: program {self.program} on {self.device}"
                 + (" (from the cache)" if self.from_cache else "")]
        params = ", ".join(f"{k}={v}" for k, v in self.params.items()) or "default launch parameters"
        est = f", static estimate {format_time(self.estimate_s)}" if self.estimate_s is not None else ""
        lines.append(f"chosen: candidate {self.candidate_rank} of {self.candidates}{est}; {params}")
        if self.error is not None:
            lines.append(f"verified: relative L2 error {self.error:.2e} against PyTorch eager on fresh random inputs")
        lines.append("")
        lines.append("kernels, in launch order:")
        rows = [("#", "kernel", "grid", "loops", "time", "ops")]
        for i, k in enumerate(self.kernels):
            rows.append((str(i), k.name, ", ".join(k.grid) or "-", ", ".join(k.loops) or "-",
                         format_time(k.time_s), ", ".join(k.ops) or "-"))
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for r in rows:
            lines.append("  " + "  ".join(r[c].ljust(widths[c]) for c in range(5)) + "  " + r[5])
        for k in self.kernels:
            if k.reads or k.writes:
                lines.append(f"  {k.name}: reads {', '.join(k.reads) or '-'}; writes {', '.join(k.writes) or '-'}")
        measured = {k: v for k, v in self.timings.items() if v}
        lines.append("")
        if measured:
            lines.append("time per call (back-to-back calls, host and GPU; the kernel times above are GPU time "
                         "with L2 flushed before each run):")
            for key, label in TIMINGS.items():
                if key not in self.timings:
                    continue
                t = self.timings[key]
                mark = "  <- returned" if key == self.runner else ""
                extra = ""
                if key in BASELINES and self.speedup(key):
                    extra = f"  eqiforge is {self.speedup(key):.2f}x faster" if self.speedup(key) >= 1 else \
                        f"  eqiforge is {1 / self.speedup(key):.2f}x slower"
                lines.append(f"  {label:32s} {format_time(t) if t else 'not measured':>12s}{extra}{mark}")
        else:
            lines.append("time per call: not measured (no GPU)")
        if self.search:
            lines.append("search: " + _search_line(self.search))
        if self.tuning:
            t = self.tuning
            lines.append(
                f"tuning: {t.get('configs_tried', 0)} configurations tried: {t.get('verified', 0)} verified, "
                f"{t.get('compile_failed', 0)} failed to compile, {t.get('run_failed', 0)} failed to run, "
                f"{t.get('verify_failed', 0)} gave wrong values; {t.get('measurements', 0)} measurements, "
                f"{len(t.get('rounds', []))} rounds of successive halving, {t.get('seconds', 0):.1f} s"
                + (f"; {t['duplicates']} candidates skipped, same code as a better-ranked one"
                   if t.get("duplicates") else "")
            )
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines) + "\n"

    # -- picture --

    def svg(self) -> str:
        return kernel_svg(self)


_SEARCH_KEYS = (("states_expanded", "states expanded"), ("complete_built", "complete programs"),
                ("distinct", "distinct candidates"), ("reuse_twins", "reuse twins"),
                ("skipped_equivalent", "skipped as equivalent"),
                ("pruned", "pruned"), ("seconds", "seconds"))


def _search_line(stats: dict[str, Any]) -> str:
    """Extraction's counters, the ones that say how much compression saved first."""
    parts = []
    for key, label in _SEARCH_KEYS:
        v = stats.get(key)
        if isinstance(v, float):
            parts.append(f"{label} {v:.3g}")
        elif isinstance(v, (int, str)):
            parts.append(f"{label} {v}")
    if stats.get("limit_hit"):
        parts.append("a limit was hit")
    known = {k for k, _ in _SEARCH_KEYS} | {"limit_hit"}
    for k, v in stats.items():
        if k not in known and isinstance(v, (int, str)) and not isinstance(v, bool):
            parts.append(f"{k.replace('_', ' ')} {v}")
    return ", ".join(parts)


# ---- SVG -----------------------------------------------------------------------------

_PALETTE = ["#dbeafe", "#dcfce7", "#fef3c7", "#fce7f3", "#ede9fe", "#cffafe", "#fee2e2", "#e0e7ff"]
_EDGE = ["#2563eb", "#16a34a", "#d97706", "#db2777", "#7c3aed", "#0891b2", "#dc2626", "#4f46e5"]
_FONT = "font-family='Helvetica, Arial, sans-serif'"

_BUF_W, _BUF_H = 130, 26
_KER_W = 200
_GAP = 60
_TOP = 56


def _esc(s: str) -> str:
    return html.escape(str(s), quote=True)


def kernel_svg(report: Report) -> str:
    """The kernel structure as a standalone SVG document."""
    kernels = report.kernels
    # Columns: inputs, then per kernel its box and the intermediates it writes, then outputs.
    intermediates_by_kernel: list[list[str]] = []
    seen: set[str] = set(report.inputs) | set(report.outputs)
    for k in kernels:
        mine = [w for w in k.writes if w not in seen]
        seen.update(mine)
        intermediates_by_kernel.append(mine)
    x = 20
    pos: dict[str, tuple[float, float, float, float]] = {}   # buffer -> (x, y, w, h)
    boxes: list[tuple[float, float, float, float]] = []
    height = _TOP

    def place_buffers(names: list[str], x0: float) -> float:
        y = _TOP + 20
        for n in names:
            pos[n] = (x0, y, _BUF_W, _BUF_H)
            y += _BUF_H + 14
        return y

    inputs = report.inputs or sorted({r for k in kernels for r in k.reads if r not in seen})
    height = max(height, place_buffers(inputs, x))
    x += _BUF_W + _GAP
    for k, mids in zip(kernels, intermediates_by_kernel):
        h = 58 + 20 * max(1, len(k.ops)) + 10
        boxes.append((x, _TOP, _KER_W, h))
        height = max(height, _TOP + h)
        x += _KER_W + _GAP
        if mids:
            height = max(height, place_buffers(mids, x))
            x += _BUF_W + _GAP
    outputs = report.outputs or [w for k in kernels for w in k.writes if w not in pos]
    height = max(height, place_buffers(outputs, x))
    width = x + _BUF_W + 20
    height += 30

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
           f"viewBox='0 0 {width:.0f} {height:.0f}' {_FONT}>",
           "<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' "
           "orient='auto-start-reverse'><path d='M 0 0 L 10 5 L 0 10 z' fill='#555'/></marker></defs>",
           "<rect width='100%' height='100%' fill='white'/>"]
    title = f"{report.program}: {len(kernels)} kernel{'s' if len(kernels) != 1 else ''} on {report.device}"
    own = report.own_time()
    if own:
        title += f", {format_time(own)} per call"
    out.append(f"<text x='20' y='28' font-size='16' font-weight='bold'>{_esc(title)}</text>")

    # Edges first, so boxes are drawn over them.
    for i, (k, box) in enumerate(zip(kernels, boxes)):
        color = _EDGE[i % len(_EDGE)]
        kx, ky, kw, kh = box
        for r in k.reads:
            if r in pos:
                bx, by, bw, bh = pos[r]
                out.append(_curve(bx + bw, by + bh / 2, kx, ky + 30, "#777"))
        for w in k.writes:
            if w in pos:
                bx, by, bw, bh = pos[w]
                out.append(_curve(kx + kw, ky + 30, bx, by + bh / 2, color))
    for name, (bx, by, bw, bh) in pos.items():
        kind = "input" if name in inputs else "output" if name in outputs else "buffer"
        fill = {"input": "#f3f4f6", "output": "#e5e7eb", "buffer": "#fff7ed"}[kind]
        out.append(f"<rect x='{bx}' y='{by}' width='{bw}' height='{bh}' rx='13' fill='{fill}' stroke='#555'/>")
        out.append(f"<text x='{bx + bw / 2}' y='{by + 17}' font-size='12' text-anchor='middle'>"
                   f"{_esc(_short(name, 18))}</text>")
    for i, (k, (kx, ky, kw, kh)) in enumerate(zip(kernels, boxes)):
        fill, stroke = _PALETTE[i % len(_PALETTE)], _EDGE[i % len(_EDGE)]
        out.append(f"<rect x='{kx}' y='{ky}' width='{kw}' height='{kh}' rx='8' fill='{fill}' stroke='{stroke}' "
                   "stroke-width='2'/>")
        out.append(f"<text x='{kx + 10}' y='{ky + 20}' font-size='13' font-weight='bold'>"
                   f"{_esc(_short(k.name, 26))}</text>")
        sub = f"grid {', '.join(k.grid) or '1'}" + (f"; loop {', '.join(k.loops)}" if k.loops else "")
        out.append(f"<text x='{kx + 10}' y='{ky + 36}' font-size='11' fill='#333'>{_esc(_short(sub, 32))}</text>")
        if k.time_s:
            out.append(f"<text x='{kx + kw - 10}' y='{ky + 20}' font-size='11' text-anchor='end'>"
                       f"{_esc(format_time(k.time_s))}</text>")
        for j, op in enumerate(k.ops or ["(copy)"]):
            oy = ky + 48 + 20 * j
            out.append(f"<rect x='{kx + 10}' y='{oy}' width='{kw - 20}' height='16' rx='3' fill='white' "
                       f"stroke='{stroke}' stroke-opacity='0.5'/>")
            out.append(f"<text x='{kx + kw / 2}' y='{oy + 12}' font-size='11' text-anchor='middle'>{_esc(op)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _curve(x1: float, y1: float, x2: float, y2: float, color: str) -> str:
    mid = (x1 + x2) / 2
    return (f"<path d='M {x1:.1f} {y1:.1f} C {mid:.1f} {y1:.1f}, {mid:.1f} {y2:.1f}, {x2:.1f} {y2:.1f}' "
            f"fill='none' stroke='{color}' stroke-width='1.5' marker-end='url(#arrow)'/>")


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
