"""``eqiforge.optimize``: a PyTorch function or module in, a tuned callable out.

    fast = eqiforge.optimize(model, x, budget_s=30)
    y = fast(x)                   # same outputs (values, shapes, dtypes) as model(x)
    print(fast.report.text())     # kernels, where the time goes, speedups
    fast.save("kernels.py")       # the Triton module, readable and editable

The pipeline (DESIGN §1): capture and translate (frontend), search and
extract ranked candidates (the C++ core), emit Triton, then verify every
configuration against PyTorch eager and tune on the GPU (runtime.tuner). The
result is cached on disk; a second ``optimize`` of the same program with the
same shapes, GPU and versions returns without searching.

Without a GPU (inputs on the CPU) the candidates are ranked by the cost model
only and the first that verifies runs in Triton's interpreter on CPU tensors:
slow, for testing, and said so once per process.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

from .options import OptionError, Options, make_options
from .runtime.cache import Cache, default_gpu_name, make_key, versions
from .runtime.launch import Binding, BindingError, fused_launch_note, make_runner, side_stream_note
from .runtime.loader import load_module
from .runtime.progress import Progress, format_time
from .runtime.report import Report
from .runtime import search
from .runtime.search import MissingPieceError, kernels_of_module, merge_kernel_info
from .runtime.measure import do_bench_timer, graph_timer
from .runtime.tuner import NoValidCandidate, Tuner


class InterpreterWarning(UserWarning):
    """The optimized program runs in Triton's CPU interpreter (no GPU)."""


_INTERPRETER_WARNED = False
_WARN_LOCK = threading.Lock()


def _warn_interpreter(reason: str) -> None:
    global _INTERPRETER_WARNED
    with _WARN_LOCK:
        if _INTERPRETER_WARNED:
            return
        _INTERPRETER_WARNED = True
    warnings.warn(
        f"eqiforge: {reason}; candidates are ranked by the cost model, not measured, and the optimized "
        "program runs through Triton's interpreter on the CPU (slow, for testing)",
        InterpreterWarning,
        stacklevel=5,  # the caller of optimize (through run_pipeline, compile_captured)
    )


_GPU_TARGETS = (("h200", "h200"), ("h100", "h100"), ("a100", "a100"), ("5090", "rtx5090"))


def target_for(device: torch.device) -> tuple[str, str | None]:
    """The cost-model profile for a device, and a note when it is a guess."""
    if device.type != "cuda":
        return "h200", None
    name = torch.cuda.get_device_name(device).lower()
    for needle, target in _GPU_TARGETS:
        if needle in name:
            return target, None
    return "h200", f"no cost-model profile for {torch.cuda.get_device_name(device)}; ranked with the H200's"


def _device_of(args: tuple) -> torch.device:
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.device.type == "meta":
            raise BindingError(f"example input {i} is on the meta device: it has no values, and optimize runs the "
                               "program to verify every candidate; pass real tensors (on the CPU or a GPU)")
    devices = {a.device for a in args if isinstance(a, torch.Tensor)}
    if len(devices) > 1:
        raise BindingError(f"the example inputs are on several devices: {', '.join(sorted(map(str, devices)))}")
    return devices.pop() if devices else torch.device("cpu")


class OptimizedProgram:
    """The tuned program: call it like the original (positional arguments of
    the same shapes and dtypes). Inference only: outputs carry no autograd
    history."""

    def __init__(self, binding: Binding, runner, module, source: str, params: dict, candidate_program: str,
                 ir_text: str, report: Report, interpret: bool):
        self.binding = binding
        self.runner = runner
        self.module = module
        self.source = source
        self.params = dict(params)
        self.candidate_program = candidate_program
        self.ir_text = ir_text
        self.report = report
        self.interpret = interpret

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise BindingError(f"{self.binding.name}: keyword arguments are not supported; pass them positionally")
        self.binding.check_args(args)
        outputs = self.runner(*self.binding.module_inputs(args))
        return self.binding.user_outputs(outputs)

    def save(self, path: str | Path) -> Path:
        """Writes the Triton module, with a trailer that calls it with the tuned
        launch parameters (`run(*inputs)`)."""
        path = Path(path)
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        trailer = (
            "\n\n# Launch parameters chosen by eqiforge's tuner"
            + (" (not measured: Triton's interpreter)" if self.interpret else f" on {self.report.device}")
            + ".\nTUNED = dict(" + params + ")\n\n\n"
            "def run(*inputs):\n"
            '    """forward with the tuned launch parameters."""\n'
            "    return forward(*inputs, **TUNED)\n"
        )
        path.write_text(self.source.rstrip("\n") + "\n" + trailer)
        return path

    def __repr__(self) -> str:
        return (f"<eqiforge.OptimizedProgram {self.binding.name}: {len(self.report.kernels)} kernel(s), "
                f"{'interpreter' if self.interpret else self.report.device}>")


def optimize(fn_or_module: Callable | torch.nn.Module, *example_inputs: Any, **options: Any):
    """Optimizes `fn_or_module` for the shapes and dtypes of `example_inputs`.

    Returns a callable with the same signature and outputs. Options (see
    eqiforge.options.Options): budget_s, target, cache_dir, cache, node_limit,
    search_time_s, extract_time_s, top_k, extract_mode, memory_limit_mb, partition_ops, cut_compare_ops,
    fuse_cuts, verbose, unsupported ("error" | "fallback"), block_sizes, num_warps, num_stages,
    cuda_graphs, baselines, seed. A bad option raises OptionError naming it.
    """
    opts = make_options(**options)
    if not callable(fn_or_module):
        raise TypeError(f"optimize expects a function or a torch.nn.Module, got {type(fn_or_module).__name__}")
    return run_pipeline(fn_or_module, example_inputs, opts)


def run_pipeline(fn, example_inputs: tuple, opts: Options, *, strict: bool = True):
    """optimize with checked options. `strict=False` captures without
    TorchDynamo (torch.export's non-strict mode), for graphs that Dynamo has
    already captured: the backend runs inside Dynamo's own compilation."""
    from .frontend import UnsupportedOpError, to_ir

    progress = Progress(opts.verbose)
    try:
        device = _device_of(example_inputs)
        with progress.stage("capturing and translating the program"):
            try:
                fe = to_ir(fn, *example_inputs, strict=strict)
            except UnsupportedOpError as e:
                if opts.unsupported != "fallback":
                    raise
                progress.info(f"{e}; optimizing the parts that have an IR form, the rest runs in PyTorch")
                fe = None
        if fe is None:
            from .runtime.fallback import optimize_parts

            return optimize_parts(fn, example_inputs, opts, progress, strict=strict)
        return compile_captured(fe, fn, example_inputs, opts, progress, device)
    finally:
        progress.done()


def compile_captured(fe, fn, example_inputs: tuple, opts: Options, progress: Progress,
                     device: torch.device | None = None) -> OptimizedProgram:
    """Search, tuning and caching for a program the front end has translated."""
    device = device if device is not None else _device_of(example_inputs)
    interpret = device.type != "cuda"
    if interpret:
        _warn_interpreter(
            "the inputs are on the CPU (move them to the GPU to tune there)" if torch.cuda.is_available()
            else "no GPU found"
        )
    target, target_note = (opts.target, None) if opts.target else target_for(device)
    binding = Binding(fe)
    binding.check_args(example_inputs)
    gpu = default_gpu_name(device)
    key = make_key(
        fe.text,
        [(tuple(i.shape), str(i.dtype)) for i in fe.inputs],
        gpu,
        {**opts.key_fields(), "target": target},
        versions(),
    )
    cache = Cache(opts.resolved_cache_dir()) if opts.cache else None
    module_dir = opts.resolved_cache_dir() / "modules" if opts.cache else None
    if cache is not None:
        entry = cache.load(key)
        if entry is not None:
            program = _from_cache(entry, binding, fe, example_inputs, interpret, opts, module_dir, progress)
            if program is not None:
                progress.info(f"cache hit: {entry.path}")
                return program

    from .runtime import partition as partitioning

    plan, found, why = None, None, ""
    with progress.stage("search, extraction and static ranking"):
        if partitioning.has_partitioning():
            # Large programs are cut up front; the plan also counts the operators.
            plan = partitioning.partition_program(fe.text, opts.partition_ops or 1 << 30)
            why = f"{plan.ops} operators, more than partition_ops={opts.partition_ops}"
            if len(plan.subgraphs) <= 1:
                plan = None
        if plan is None:
            found = search.find_candidates(fe.text, opts, target, file=f"<{fe.name}>")
    # A whole program whose search found nothing is cut into subgraphs. One
    # whose search hit a limit but found candidates keeps them (they are
    # complete programs, fusion across the whole included) and is cut only if
    # none of them verifies.
    if plan is None and not found.candidates:
        plan = _fallback_plan(fe, opts, found)
        why = "the whole-program search found no candidate" + (
            " (it hit a search limit)" if found.stats.get("limit_hit") else "")
    searcher = None
    limited = found is not None and found.stats.get("limit_hit")
    ops = 0
    if plan is None and found.candidates and partitioning.has_partitioning():
        ops = partitioning.partition_program(fe.text, 1 << 30).ops
    if plan is None and (limited or (opts.cut_compare_ops and ops >= opts.cut_compare_ops)):
        # The whole search's best is only the best it reached (it stopped at
        # a limit, or after enough candidates of a large program): the cut
        # program's subgraphs are searched too, and the cost model picks
        # between the two.
        cut = _fallback_plan(fe, opts, found)
        if cut is not None and len(cut.subgraphs) > 1:
            searcher = partitioning.PartitionedSearch(opts, target, interpret, progress, module_dir)
            because = "the whole search hit a limit" if limited else f"{ops} operators, cut_compare_ops={opts.cut_compare_ops}"
            with progress.stage(f"searching the {len(cut.subgraphs)} subgraphs too ({because})"):
                cut_estimate = partitioning.static_estimate(searcher, cut)
            whole_estimate = found.candidates[0].estimate_s
            if cut_estimate is not None and whole_estimate is not None and cut_estimate < whole_estimate:
                plan = cut
                why = (f"the whole-program search {'hit a limit' if limited else 'ended'}; its best estimate "
                       f"{format_time(whole_estimate)}, the subgraphs' {format_time(cut_estimate)}")
    if plan is not None:
        return compile_partitioned(fe, fn, example_inputs, opts, progress, binding, plan, why, target,
                                   interpret, gpu, module_dir, searcher)
    if not found.candidates:
        raise NoValidCandidate(f"extraction found no candidate programs for {fe.name} "
                               f"({search.no_candidate_reason(found.stats)})")
    best_estimate = found.candidates[0].estimate_s
    progress.info(f"{len(found.candidates)} candidates; best static estimate "
                  f"{format_time(best_estimate) if best_estimate is not None else '-'}")

    stage = "verifying candidates in Triton's interpreter" if interpret else \
        f"verifying and tuning on {gpu} (budget {opts.budget_s:g} s)"
    with progress.stage(stage):
        tuner = Tuner(binding, fn, example_inputs, found.candidates, opts, interpret=interpret,
                      progress=progress, module_dir=module_dir)
        try:
            result = tuner.run()
        except NoValidCandidate as e:
            plan = _fallback_plan(fe, opts, found) if found.stats.get("limit_hit") else None
            if plan is None:
                raise
            why = f"no candidate of the whole-program search (which hit a limit) verified: {str(e).splitlines()[0]}"
            tuned = None
        else:
            tuned = result
    if tuned is None:
        return compile_partitioned(fe, fn, example_inputs, opts, progress, binding, plan, why, target,
                                   interpret, gpu, module_dir)
    result = tuned
    best = result.best
    params = best.config.params()
    inputs = binding.module_inputs(example_inputs)
    notes = [target_note] if target_note else []
    with progress.stage("building the launch path and the report"):
        runner, runner_notes = make_runner(best.module, params, inputs, lean=not interpret,
                                           cuda_graphs=opts.cuda_graphs and not interpret,
                                           bound=binding.bound_mask())
        notes += runner_notes
        report = _report(fe, binding, fn, example_inputs, best, found, result.stats, params, inputs, runner, gpu,
                         interpret, opts, notes)
    program = OptimizedProgram(binding, runner, best.module, best.candidate.source, params, best.candidate.program,
                               fe.text, report, interpret)
    if cache is not None:
        path = cache.store(key, {
            "program": best.candidate.program,
            "source": best.candidate.source,
            "params": params,
            "rank": best.candidate.rank,
            "interpret": interpret,
            "report": report.to_json(),
        })
        if path is not None:
            progress.info(f"cached: {path}")
    own = report.own_time()
    progress.info(f"chosen: {best.config.describe()}" + (f", {format_time(own)} per call" if own else ""))
    return program


def _fallback_plan(fe, opts: Options, found):
    """The partition of a program whose whole search failed (None when it
    cannot be cut: one operator, no allowed cut, or no partitioning in this
    build)."""
    from .runtime import partition as partitioning

    if not partitioning.has_partitioning():
        return None
    ops = partitioning.partition_program(fe.text, 1 << 30).ops
    if ops <= 1:
        return None
    # A plan of one subgraph would be the program whose search just failed:
    # fallback_plan gives None when no bound cuts it (values without a dim of
    # extent > 1, copies).
    return partitioning.fallback_plan(fe.text, ops, opts)


def compile_partitioned(fe, fn, example_inputs: tuple, opts: Options, progress: Progress, binding: Binding, plan,
                        why: str, target: str, interpret: bool, gpu: str, module_dir, searcher=None):
    """Each subgraph of `plan` searched and tuned on its own (identical ones
    once), composed into one callable and checked against eager
    (runtime/partition.py). `searcher`: one that already holds some of the
    subgraphs' searches."""
    from .runtime import partition as partitioning

    repeat = f"; the cuts repeat every {plan.period} operators, {plan.units} times" if plan.period else ""
    progress.info(f"partitioned: {why}; {len(plan.subgraphs)} subgraphs of at most {plan.max_ops} operators "
                  f"({plan.distinct()} distinct{repeat})")
    inputs = binding.module_inputs(example_inputs)
    if searcher is None:
        searcher = partitioning.PartitionedSearch(opts, target, interpret, progress, module_dir)
    searcher.stats.reason = why
    with progress.stage("searching and tuning the subgraphs"):
        composed = searcher.compose(plan, inputs)
    with progress.stage("checking the composed program against eager"):
        verdict = partitioning.verify_composed(composed, binding, fn, example_inputs, opts)
    if not verdict.ok:
        raise NoValidCandidate(f"the composed subgraphs of {fe.name} do not match PyTorch eager: {verdict.reason}")
    timings: dict[str, float | None] = {}
    notes = [f"partitioned into {len(plan.subgraphs)} subgraphs ({plan.distinct()} distinct, "
             f"{plan.boundary_bytes} bytes through materialized boundaries): {why}"]
    kernels = _step_kernel_reports(composed, inputs, None if interpret else graph_timer, notes)
    for g in searcher.stats.fused:
        times = g["time_s"]
        measured = (f"; measured {format_time(times[0])} -> {format_time(times[1])}"
                    if None not in times else "")
        notes.append(f"fusion across cuts: subgraphs {', '.join(map(str, g['subgraphs']))} "
                     f"{'joined' if g['kept'] else 'kept apart'} ({len(g['fused'])} boundaries fed tile by tile): "
                     f"{g['kernels'][0]} kernels -> {g['kernels'][1]}, estimate {format_time(g['estimate_s'][0])} -> "
                     f"{format_time(g['estimate_s'][1])}{measured}"
                     + (f"; {g['apart']}" if g.get("apart") else ""))
    fused = fused_launch_note([s.piece.runner for s in composed.steps])
    if fused:
        notes.append(fused)
    streams = side_stream_note([s.piece.runner for s in composed.steps], composed.stream_plan)
    if streams:
        notes.append(streams)
    if not interpret:
        timings["triton"] = do_bench_timer(lambda: composed(*inputs), 100.0)
        if opts.baselines:
            from .runtime.measure import baseline_timings

            base, base_notes = baseline_timings(fn, example_inputs)
            timings.update(base)
            notes += base_notes
    estimates = [s.piece.estimate_s for s in composed.steps]
    report = Report(
        program=fe.name,
        device="Triton interpreter (CPU)" if interpret else gpu,
        candidate_rank=1,
        candidates=sum(p.candidates for p in searcher.pieces.values()),
        estimate_s=sum(estimates) if all(e is not None for e in estimates) else None,
        error=verdict.error,
        kernels=kernels,
        inputs=[i.name for i in fe.inputs],
        outputs=[o.name for o in fe.outputs],
        timings=timings,
        runner="triton" if interpret else "lean",
        notes=notes,
        search={**partitioning.summed([p.search for p in searcher.pieces.values()]),
                "subgraphs": len(plan.subgraphs), "distinct_subgraphs": plan.distinct(),
                "searched": searcher.stats.searched, "reused": searcher.stats.reused,
                "refined": searcher.stats.refined, "partition": plan.to_json()},
        tuning={**partitioning.summed([p.tuning for p in searcher.pieces.values()]),
                "partition": searcher.stats.to_json()},
    )
    return partitioning.ComposedProgram(binding, composed, fe.text, report, interpret, searcher.stats)


def _step_kernel_reports(composed, inputs: list, timer, notes: list) -> list:
    """The kernels of a composition's steps in launch order, each named after
    its step, with what it reads and writes and, given a timer, its time
    alone; a nested composition's step lists its kernels as the search
    described them."""
    from .runtime.measure import kernel_reports
    from .runtime.partition import IRProgram
    from .runtime.report import KernelReport

    def plain(step) -> list:
        return [KernelReport(f"{step.subgraph.name}.{k.name}", list(k.ops), list(k.grid), list(k.loops))
                for k in step.piece.kernels]

    rows = []
    try:
        for step, args in zip(composed.steps, composed.step_arguments(*inputs)):
            if step.piece.module is None:
                rows += plain(step)
                continue
            ir = IRProgram(step.subgraph.program)
            for row in kernel_reports(step.piece.module, step.piece.params, args, step.piece.kernels,
                                      [n for n, _, _ in ir.inputs], [n for n, _ in ir.outputs], timer):
                row.name = f"{step.subgraph.name}.{row.name}"
                rows.append(row)
    except Exception as e:  # noqa: BLE001 -- the program is verified; only the report's detail is lost
        notes.append(f"kernel reads, writes and times not reported: {type(e).__name__}: {str(e).splitlines()[0]}")
        return [row for step in composed.steps for row in plain(step)]
    return rows


def _report(fe, binding, fn, example_inputs, best, found, stats, params, inputs, runner, gpu, interpret, opts,
            notes) -> Report:
    from .runtime.measure import baseline_timings, kernel_reports, path_timings

    timer = None if interpret else graph_timer
    kernels = merge_kernel_info(best.candidate.kernels, kernels_of_module(best.module, best.candidate.source))
    in_names = [i.name for i in fe.inputs]
    out_names = [o.name for o in fe.outputs]
    kernel_rows = kernel_reports(best.module, params, inputs, kernels, in_names, out_names, timer)
    timings: dict[str, float | None] = {}
    if timer is not None:
        own, own_notes = path_timings(best.module, params, inputs, bound=binding.bound_mask())
        timings.update(own)
        notes += own_notes
        if opts.baselines:
            base, base_notes = baseline_timings(fn, example_inputs)
            timings.update(base)
            notes += base_notes
    runner_kind = {"lean": "lean", "cuda-graph": "cuda_graph"}.get(getattr(runner, "kind", ""), "triton")
    notes = notes + [line for line in (fused_launch_note([runner]), side_stream_note([runner])) if line]
    return Report(
        program=fe.name,
        device="Triton interpreter (CPU)" if interpret else gpu,
        candidate_rank=best.candidate.rank,
        candidates=len(found.candidates),
        estimate_s=best.candidate.estimate_s,
        params=dict(params),
        error=best.error,
        kernels=kernel_rows,
        inputs=in_names,
        outputs=out_names,
        timings=timings,
        runner=runner_kind,
        notes=notes,
        search=dict(found.stats),
        tuning=stats.to_json(),
    )


def _from_cache(entry, binding, fe, example_inputs, interpret, opts, module_dir, progress) -> OptimizedProgram | None:
    """The program of a cache entry, or None (with a warning) if it cannot be loaded."""
    from .runtime.cache import CacheWarning

    p = entry.payload
    try:
        source, params, candidate = p["source"], dict(p["params"]), p["program"]
        module = load_module(source, interpret, module_dir)
        # Launch parameters that forward does not take would fail at the first
        # call, not here: an entry written by hand or by another tool.
        accepted = inspect.signature(module.forward).parameters
        unknown = sorted(k for k in params if k not in accepted)
        if unknown:
            raise TypeError(f"its launch parameters {', '.join(unknown)} are not arguments of the module's forward")
        inputs = binding.module_inputs(example_inputs)
        runner, _ = make_runner(module, params, inputs, lean=not interpret,
                                cuda_graphs=opts.cuda_graphs and not interpret, bound=binding.bound_mask())
        report = Report.from_json(p["report"])
        report.from_cache = True
    except Exception as e:  # noqa: BLE001 -- an entry that does not load is ignored, never used
        warnings.warn(f"eqiforge cache: ignoring entry {entry.path}: it does not load ({type(e).__name__}: {e}); "
                      "the program will be tuned again", CacheWarning, stacklevel=4)
        return None
    return OptimizedProgram(binding, runner, module, source, params, candidate, fe.text, report, interpret)


__all__ = ["BindingError", "InterpreterWarning", "MissingPieceError", "NoValidCandidate", "OptimizedProgram",
           "OptionError", "optimize"]
