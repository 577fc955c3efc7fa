"""How the benchmarks time a callable: the same way for ours and every baseline.

Three numbers per implementation (on the GPU):
  do_bench   triton.testing.do_bench's median: what a Python caller sees,
             launch overhead included. do_bench warms up, then times each
             call with CUDA events and clears the L2 before it; on top of
             that, where the inputs fit in the L2, calls rotate among several
             input sets so no call finds its inputs cached.
  GPU-only   the call captured once as a CUDA graph and replayed, the L2
             flushed (a 256 MB write) before every replay, events around the
             replay alone: the time of the kernels without the host's
             launch path.
  GPU-only, clean L2   the same replay after a flush that reads the
             buffer instead. A write leaves the L2 full of dirty lines,
             and DRAM writes them back while the timed call's reads evict
             them: a call reading 32 MiB then moves up to twice its bytes
             (do_bench's own flush is such a write). A read leaves clean
             lines, dropped for free: closer to a decode step, whose
             weights are read-only (bench/gpu_check/flush_forms.py).
On the CPU (checks only): the median wall time of a few calls.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import statistics
import time
from typing import Any, Callable

import torch

L2_BYTES = 60 * 2**20          # H200: PyTorch reports 60 MB of L2
FLUSH_BYTES = 256 * 2**20      # written between timed GPU-only replays


def rotation_count(input_bytes: int, l2_bytes: int = L2_BYTES, cover: int = 3, cap: int = 32) -> int:
    """How many input sets to rotate among: one if the inputs do not fit in
    the L2, else enough that the sets together cover it `cover` times."""
    if input_bytes <= 0 or input_bytes >= l2_bytes:
        return 1
    return max(2, min(cap, math.ceil(cover * l2_bytes / input_bytes)))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def do_bench_time(fn: Callable, arg_sets: list[tuple], warmup_ms: float = 25, rep_ms: float = 100,
                  context: Callable[[], Any] | None = None) -> float:
    """Seconds per call, do_bench's median, rotating among `arg_sets`."""
    from triton.testing import do_bench

    sets = itertools.cycle(arg_sets)
    with (context() if context else contextlib.nullcontext()):
        ms = do_bench(lambda: fn(*next(sets)), warmup=warmup_ms, rep=rep_ms, return_mode="median")
    return ms * 1e-3


class L2Flusher:
    """A buffer larger than the L2. Writing it evicts whatever was cached and
    leaves dirty lines; reading it (clean=True) leaves clean ones."""

    def __init__(self, device: torch.device, nbytes: int = FLUSH_BYTES):
        self.buf = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        self.sink = torch.empty((), dtype=torch.float32, device=device)

    def flush(self, clean: bool = False) -> None:
        if clean:
            torch.sum(self.buf, dim=0, out=self.sink)
        else:
            self.buf.zero_()


def gpu_only_time(fn: Callable, args: tuple, flusher: L2Flusher, target_ms: float = 100.0, min_reps: int = 10,
                  max_reps: int = 500, context: Callable[[], Any] | None = None,
                  clean: bool = False) -> tuple[float, int]:
    """(median seconds per replay, replays timed) of fn(*args) captured as a
    CUDA graph, with the L2 flushed before each replay (by a read: clean).

    The flush is queued before the start event, and the replay is queued
    while the flush runs, so the events bracket the graph's kernels only."""
    device = args[0].device if args and isinstance(args[0], torch.Tensor) else torch.device("cuda")
    graph = torch.cuda.CUDAGraph()
    with (context() if context else contextlib.nullcontext()):
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(2):  # lazy initialization (handles, autotuning, allocations) outside the capture
                fn(*args)
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        with torch.cuda.graph(graph):
            out = fn(*args)
    try:
        graph.replay()
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flusher.flush(clean)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize(device)
        estimate_ms = max(start.elapsed_time(end), 1e-3)
        reps = int(min(max_reps, max(min_reps, target_ms / estimate_ms)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            flusher.flush(clean)
            starts[i].record()
            graph.replay()
            ends[i].record()
        torch.cuda.synchronize(device)
        times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        return statistics.median(times) * 1e-3, reps
    finally:
        del out
        graph.reset()


def cpu_time(fn: Callable, arg_sets: list[tuple], budget_s: float = 0.3, min_reps: int = 3,
             max_reps: int = 20, context: Callable[[], Any] | None = None) -> float:
    """Median wall seconds per call on the CPU, after one warm-up call."""
    sets = itertools.cycle(arg_sets)
    times: list[float] = []
    with (context() if context else contextlib.nullcontext()):
        fn(*next(sets))
        began = time.perf_counter()
        while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - began < budget_s):
            args = next(sets)
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure_ceilings(device: torch.device, copy_bytes: int = 2**30, n: int = 8192) -> dict:
    """The two ceilings of the floor, measured on this GPU: a device-to-device
    copy (bytes read plus bytes written per second) and an n^3 fp16 matrix
    product on random data (flop/s). do_bench medians."""
    from triton.testing import do_bench

    def copy_ms() -> float:
        src = torch.randint(0, 127, (copy_bytes,), dtype=torch.int8, device=device)
        dst = torch.empty_like(src)
        return do_bench(lambda: dst.copy_(src), warmup=25, rep=100, return_mode="median")

    def mm_ms() -> float:
        a = torch.randn(n, n, dtype=torch.float16, device=device)
        b = torch.randn(n, n, dtype=torch.float16, device=device)
        return do_bench(lambda: a @ b, warmup=25, rep=200, return_mode="median")

    copy, mm = copy_ms(), mm_ms()
    _sync(device)
    return {"copy_bytes_per_s": 2 * copy_bytes / (copy * 1e-3), "mma_flop_per_s": 2 * n**3 / (mm * 1e-3)}
