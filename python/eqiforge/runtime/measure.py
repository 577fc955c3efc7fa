"""Same-run timings for the report: each launch path of the chosen program,
each of its kernels, PyTorch eager and torch.compile, all on the same inputs.

Whole calls are timed by the wall clock over back-to-back calls ending in a
synchronize (``wall_timer``): a call costs the larger of its host time and its
GPU time, and for decode-sized programs the host time (the launch path)
decides (DESIGN §7). ``triton.testing.do_bench`` would hide it: its cache
flush between runs gives the host time to enqueue the next call. Kernels
alone are timed with do_bench (GPU time); the tuner times configurations by
``graph_timer`` (GPU time of a CUDA graph replay, L2 flushed)."""

from __future__ import annotations

import statistics
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


def do_bench_timer(fn: Callable[[], Any], rep_ms: float) -> float:
    """Seconds per call of fn on the GPU (median), by triton.testing.do_bench."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=max(1, int(rep_ms // 4)), rep=max(1, int(rep_ms)), return_mode="median") * 1e-3


_FLUSH_BYTES = 256 << 20  # larger than the L2 of every target (the H200's: 60 MiB)
_flush_buffers: dict[torch.device, torch.Tensor] = {}


def graph_timer(fn: Callable[[], Any], rep_ms: float) -> float:
    """Seconds of GPU time per call of fn (median): fn captured once as a CUDA
    graph and replayed, the L2 flushed before each replay, the events around
    the replay only. Unlike do_bench on the call itself, a slow launch path
    does not show: the tuner ranks kernels, and the host cost of launching
    them is the launch path's business (the 12-02 block sweeps through
    do_bench on the Python path ranked configurations by host noise, 2-4x
    apart between neighbours). Falls back to do_bench when fn cannot be
    captured."""
    device = torch.device("cuda", torch.cuda.current_device())
    try:
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            fn()  # lazy initialization outside the capture
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    except Exception:  # noqa: BLE001 -- a call that cannot be captured is timed by do_bench
        torch.cuda.synchronize(device)
        return do_bench_timer(fn, rep_ms)
    flush = _flush_buffers.get(device)
    if flush is None:
        flush = _flush_buffers[device] = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device=device)
    try:
        def replay_ms(n: int) -> list[float]:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            for a, b in zip(starts, ends):
                flush.zero_()
                a.record()
                graph.replay()
                b.record()
            torch.cuda.synchronize(device)
            return [a.elapsed_time(b) for a, b in zip(starts, ends)]

        one = max(min(replay_ms(2)), 1e-3)
        times = replay_ms(int(min(1000, max(5, rep_ms / one))))
        return statistics.median(times) * 1e-3
    finally:
        graph.reset()


def kernel_reports(module: types.ModuleType, params: dict, inputs: list[torch.Tensor], kernels: list[KernelInfo],
                   input_names: list[str], output_names: list[str],
                   timer: Callable[[Callable[[], Any], float], float] | None) -> list[KernelReport]:
    """The kernels in launch order with what they read and write (from one
    recorded call) and, given a timer, the time of each launch alone."""
    outputs, records = record_launches(module, inputs, params)
    uses, mid_names = buffer_uses(records, inputs, outputs)
    info = {k.name: k for k in kernels}
    # A fused launch (the module's FUSED table) runs several kernels: it
    # reports their ops together, its members named.
    for name, members in getattr(module, "FUSED", {}).items():
        parts = [info.get(m, KernelInfo(m)) for m in members]
        info[name] = KernelInfo(f"{name} ({' + '.join(members)})",
                                list(dict.fromkeys(op for p in parts for op in p.ops)),
                                list(dict.fromkeys(a for p in parts for a in p.grid)),
                                list(dict.fromkeys(a for p in parts for a in p.loops)))
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
        reports.append(KernelReport(k.name, list(k.ops), list(k.grid), list(k.loops), reads, writes, time_s))
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
