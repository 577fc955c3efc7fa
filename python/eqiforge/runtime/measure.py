"""Same-run timings for the report: each launch path of the chosen program,
each of its kernels, PyTorch eager and torch.compile, all on the same inputs.

Whole calls are timed by the wall clock over back-to-back calls ending in a
synchronize (``wall_timer``): a call costs the larger of its host time and its
GPU time, and for decode-sized programs the host time (the launch path)
decides (DESIGN §7). ``triton.testing.do_bench`` would hide it: its cache
flush between runs gives the host time to enqueue the next call. Kernels
alone are timed with do_bench (GPU time)."""

from __future__ import annotations

import types
from typing import Any, Callable

import torch

from .launch import GraphRunner, LeanRunner, LeanPathUnavailable, ModuleRunner, buffer_uses, record_launches
from .report import KernelReport
from .search import KernelInfo

REP_MS = 100.0


def wall_timer(fn: Callable[[], Any], rep_ms: float, rounds: int = 3) -> float:
    """Seconds per call of fn over back-to-back calls (host and GPU): after a
    warm-up, `rounds` rounds of enough calls to fill about rep_ms each; the
    fastest round's mean, so that a one-off stall (a recompilation, another
    process) does not count."""
    import time

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - start, 1e-7)
    n = max(10, min(100_000, int(rep_ms * 1e-3 / one)))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def kernel_reports(module: types.ModuleType, params: dict, inputs: list[torch.Tensor], kernels: list[KernelInfo],
                   input_names: list[str], output_names: list[str],
                   timer: Callable[[Callable[[], Any], float], float] | None) -> list[KernelReport]:
    """The kernels in launch order with what they read and write (from one
    recorded call) and, given a timer, the time of each launch alone."""
    outputs, records = record_launches(module, inputs, params)
    uses, mid_names = buffer_uses(records, inputs, outputs)
    info = {k.name: k for k in kernels}
    reports = []
    for rec, use in zip(records, uses):
        k = info.get(rec.kernel, KernelInfo(rec.kernel))

        def label(kind: str, i: int) -> str:
            if kind == "in":
                return input_names[i] if i < len(input_names) else f"input {i}"
            if kind == "out":
                return output_names[i] if i < len(output_names) else f"output {i}"
            return mid_names[i] if i < len(mid_names) else f"buffer {i}"

        reads = [label("in", i) for i in use.inputs] + [label("mid", i) for i in use.intermediates]
        writes = [label("out", i) for i in use.outputs]
        # An intermediate written by this kernel is one no earlier kernel touched.
        earlier = {m for u in uses[: len(reports)] for m in u.intermediates}
        writes += [label("mid", i) for i in use.intermediates if i not in earlier]
        reads = [r for r in reads if r not in writes]
        time_s = None
        if timer is not None:
            def launch(jit=rec.jit, grid=rec.grid, args=rec.args, kwargs=rec.kwargs):
                return jit[grid](*args, **kwargs)

            time_s = timer(launch, REP_MS)
        reports.append(KernelReport(rec.kernel, list(k.ops), list(k.grid), list(k.loops), reads, writes, time_s))
    return reports


def path_timings(module: types.ModuleType, params: dict, inputs: list[torch.Tensor],
                 timer: Callable[[Callable[[], Any], float], float] = wall_timer, bound: list[bool] | None = None
                 ) -> tuple[dict[str, float | None], list[str]]:
    """Time per call through Triton's launch path, the lean path and a CUDA graph."""
    notes = []
    base = ModuleRunner(module, params)
    timings: dict[str, float | None] = {"triton": timer(lambda: base(*inputs), REP_MS)}
    try:
        lean = LeanRunner(base, inputs)
        timings["lean"] = timer(lambda: lean(*inputs), REP_MS)
    except LeanPathUnavailable as e:
        lean = None
        timings["lean"] = None
        notes.append(f"lean launch path not available: {e}")
    try:
        graph = GraphRunner(lean or base, inputs, bound)
        timings["cuda_graph"] = timer(lambda: graph(*inputs), REP_MS)
    except Exception as e:  # noqa: BLE001 -- reported, not fatal
        timings["cuda_graph"] = None
        notes.append(f"CUDA graph capture failed: {e}")
    return timings, notes


def baseline_timings(fn: Callable, args: tuple, timer: Callable[[Callable[[], Any], float], float] = wall_timer,
                     compile_baseline: bool = True) -> tuple[dict[str, float | None], list[str]]:
    """PyTorch eager and torch.compile (default mode) on the same arguments."""
    notes = []
    with torch.no_grad():
        timings: dict[str, float | None] = {"eager": timer(lambda: fn(*args), REP_MS)}
        if compile_baseline:
            try:
                compiled = torch.compile(fn)
                compiled(*args)
                timings["torch_compile"] = timer(lambda: compiled(*args), REP_MS)
            except Exception as e:  # noqa: BLE001 -- a baseline that does not compile is reported
                timings["torch_compile"] = None
                notes.append(f"torch.compile failed on this program: {str(e).splitlines()[0][:200]}")
    return timings, notes
