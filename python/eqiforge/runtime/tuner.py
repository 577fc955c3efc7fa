"""Choosing a candidate by measurement (DESIGN §7).

A *configuration* is a candidate program with concrete launch parameters: a
block size per parallel axis, num_warps and num_stages. Before a
configuration may be timed it is compiled and run on fresh random inputs and
its outputs checked against PyTorch eager (verify.py); a configuration that
fails to compile, to run or to verify is dropped and counted, never returned.

On a GPU, configurations are tried in static-rank order, interleaved over the
candidates (each candidate's own estimate first, then a seeded sample of its
space), each verified one timed once with a short repetition, until half of
the budget is spent or the space is exhausted; then successive halving keeps
the fastest third and times it again with three times the repetitions, until
one is left or the budget is spent. Without a GPU (Triton's interpreter),
nothing is timed: the first candidate in static-rank order that verifies wins.

Timing is GPU time (do_bench, L2 flushed between runs): it ranks kernels.
What launching costs on the host is the launch path's business (the lean path,
CUDA graphs) and shows in the report's per-call times.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

import torch

from ..options import TOLERANCE, Options
from .launch import Binding, make_runner
from .loader import load_module
from .search import Candidate, MissingPieceError, ensure_source
from .verify import Verdict, compare, fresh_args

# ---- configurations ------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    rank: int                                # candidate's static rank
    blocks: tuple[tuple[str, int], ...]      # (forward's keyword, block size), sorted
    num_warps: int = 4
    num_stages: int = 2

    def params(self) -> dict[str, int]:
        return {**dict(self.blocks), "num_warps": self.num_warps, "num_stages": self.num_stages}

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.blocks] + [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
        return f"candidate {self.rank} ({', '.join(parts)})"


_DIMS = re.compile(r"\(dims((?:\s*\([^()\s]+\s+\d+\))*)\s*\)")
_DIM = re.compile(r"\(([^()\s]+)\s+(\d+)\)")


def program_dims(text: str) -> dict[str, int]:
    """The dim extents declared by a program's `(dims ...)`."""
    m = _DIMS.search(text)
    return {name: int(n) for name, n in _DIM.findall(m.group(1))} if m else {}


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def block_choices(block_params: dict[str, str], dims: dict[str, int], sizes: Sequence[int]) -> dict[str, list[int]]:
    """For each axis (by forward's keyword): the block sizes worth trying, the
    option's sizes up to the next power of two of the extent the axis splits
    (a dim smaller than every option gets its own next power of two)."""
    out = {}
    for axis, keyword in block_params.items():
        dim, _, level = axis.rpartition(".")
        extent = dims.get(dim)
        if extent is None:
            out[keyword] = sorted(sizes)
            continue
        cap = _next_pow2(extent)
        # A level-n>0 axis splits the level n-1 block; pairs where it is not
        # smaller are dropped in config_space.
        fit = sorted(s for s in sizes if s <= cap)
        out[keyword] = fit or [cap]
    return out


def config_space(candidate: Candidate, block_params: dict[str, str], options: Options, rng: random.Random,
                 dims: dict[str, int] | None = None) -> list[Config]:
    """The candidate's configurations in the order to try them: the estimate's
    block sizes first (if extraction gave them), then a seeded shuffle of the
    rest."""
    dims = dims if dims is not None else program_dims(candidate.program)
    choices = block_choices(block_params, dims, options.block_sizes)
    keywords = sorted(choices)
    # Nested axes of one dim: the inner block must be smaller than the outer.
    nested = []
    for axis, kw in block_params.items():
        dim, _, level = axis.rpartition(".")
        if level.isdigit() and int(level) > 0 and f"{dim}.{int(level) - 1}" in block_params:
            nested.append((block_params[f"{dim}.{int(level) - 1}"], kw))

    def legal(blocks: dict[str, int]) -> bool:
        return all(blocks[inner] < blocks[outer] for outer, inner in nested)

    space = []
    for values in itertools.product(*(choices[k] for k in keywords)):
        blocks = dict(zip(keywords, values))
        if not legal(blocks):
            continue
        for w in options.num_warps:
            for s in options.num_stages:
                space.append(Config(candidate.rank, tuple(sorted(blocks.items())), w, s))
    rng.shuffle(space)
    first = []
    if candidate.blocks:
        est = {block_params[a]: v for a, v in candidate.blocks.items() if a in block_params}
        if set(est) == set(keywords):
            w = 4 if 4 in options.num_warps else options.num_warps[0]
            s = 2 if 2 in options.num_stages else options.num_stages[0]
            first = [Config(candidate.rank, tuple(sorted(est.items())), w, s)]
    return first + [c for c in space if c not in first]


def interleave(lists: list[list[Config]]) -> list[Config]:
    """Round-robin over the candidates' lists, in rank order."""
    out = []
    for group in itertools.zip_longest(*lists):
        out.extend(c for c in group if c is not None)
    return out


# ---- successive halving --------------------------------------------------------------


@dataclass
class HalvingRound:
    rep_ms: float
    alive: int        # configurations in the round
    measured: int     # how many were timed before the deadline


def successive_halving(
    times: dict[Hashable, float],
    measure: Callable[[Hashable, float], float],
    *,
    rep_ms: float,
    deadline: float,
    clock: Callable[[], float],
    eta: int = 3,
    max_rep_ms: float = 3000.0,
) -> tuple[Hashable, dict[Hashable, float], list[HalvingRound]]:
    """`times`: every item's time measured with `rep_ms` of repetitions. Each
    round keeps the fastest ceil(n/eta) items and measures them again with eta
    times the repetitions, until one item is left (measured with the most
    repetitions) or `deadline` (by `clock`) passes. Returns the winner, every
    item's latest time, and the rounds."""
    if not times:
        raise ValueError("successive_halving needs at least one measured item")
    latest = dict(times)
    alive = sorted(latest, key=lambda k: latest[k])
    rounds: list[HalvingRound] = []
    while len(alive) > 1 and clock() < deadline:
        alive = alive[: max(1, math.ceil(len(alive) / eta))]
        rep_ms = min(rep_ms * eta, max_rep_ms)
        measured = 0
        for k in alive:
            if clock() >= deadline:
                break
            latest[k] = measure(k, rep_ms)
            measured += 1
        rounds.append(HalvingRound(rep_ms, len(alive), measured))
        alive = sorted(alive, key=lambda k: latest[k])
    return alive[0], latest, rounds


def do_bench_timer(fn: Callable[[], Any], rep_ms: float) -> float:
    """Seconds per call of fn on the GPU (median), by triton.testing.do_bench."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=max(1, int(rep_ms // 4)), rep=max(1, int(rep_ms)), return_mode="median") * 1e-3


# ---- the tuner -----------------------------------------------------------------------


class NoValidCandidate(RuntimeError):
    """Every candidate failed to compile, run or verify."""


@dataclass
class TuneStats:
    candidates: int = 0
    configs_tried: int = 0
    compile_failed: int = 0
    run_failed: int = 0
    verify_failed: int = 0
    verified: int = 0
    measurements: int = 0
    candidates_dropped: int = 0
    seconds: float = 0.0
    rounds: list[HalvingRound] = field(default_factory=list)
    # The first few failures, one line each, for reports and errors.
    failures: list[str] = field(default_factory=list)

    def failed(self) -> int:
        return self.compile_failed + self.run_failed + self.verify_failed

    def note(self, line: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(line)

    def to_json(self) -> dict:
        d = {k: v for k, v in vars(self).items() if k != "rounds"}
        d["rounds"] = [vars(r) for r in self.rounds]
        return d


@dataclass
class Trial:
    """A configuration that compiled and verified."""

    config: Config
    candidate: Candidate
    module: types.ModuleType
    error: float                  # relative L2 error against eager
    time_s: float | None = None   # latest measurement (GPU only)
    rep_ms: float = 0.0
    runner: Any = None
    notes: list[str] = field(default_factory=list)


@dataclass
class TuneResult:
    best: Trial
    stats: TuneStats
    trials: list[Trial]


def _is_compile_error(e: BaseException) -> bool:
    """Errors raised while Triton compiles (or refuses) a kernel."""
    mod = type(e).__module__ or ""
    return mod.startswith("triton.compiler") or type(e).__name__ in ("OutOfResources", "CompilationError")


# A candidate is given up after this many wrong or failed runs, or this many
# failed compilations, with no configuration verified: wrong values point at
# the candidate, while compilation fails for single configurations too (too
# large a tile for the registers or shared memory).
_MAX_WRONG_WITHOUT_SUCCESS = 3
_MAX_COMPILE_FAILURES_WITHOUT_SUCCESS = 8


class Tuner:
    def __init__(
        self,
        binding: Binding,
        reference: Callable,
        example_args: tuple,
        candidates: list[Candidate],
        options: Options,
        *,
        interpret: bool,
        measure: bool | None = None,
        progress=None,
        timer: Callable[[Callable[[], Any], float], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        source_of: Callable[[Candidate], str] = ensure_source,
        module_dir=None,
        lean: bool = True,
    ):
        self.binding, self.reference, self.options = binding, reference, options
        self.candidates, self.interpret = candidates, interpret
        # Timing needs a GPU; tests time interpreted modules with a fake timer.
        self.measured = (not interpret) if measure is None else measure
        self.progress = progress
        self.timer = timer if timer is not None else do_bench_timer
        self.clock, self.source_of, self.module_dir, self.lean = clock, source_of, module_dir, lean
        self.stats = TuneStats(candidates=len(candidates))
        # One set of fresh random inputs for verification and timing.
        self.args = fresh_args(example_args, options.seed + 1)
        self.inputs = binding.module_inputs(self.args)
        with torch.no_grad():
            self.references = binding.flat_outputs(reference(*self.args))
        self.modules: dict[int, types.ModuleType | None] = {}
        self._wrong: dict[int, int] = {}
        self._compile_failures: dict[int, int] = {}
        self._successes: dict[int, int] = {}

    # -- one configuration --

    def _module(self, cand: Candidate) -> types.ModuleType | None:
        if cand.rank not in self.modules:
            try:
                source = self.source_of(cand)
                self.modules[cand.rank] = load_module(source, self.interpret, self.module_dir)
            except MissingPieceError:
                raise
            except Exception as e:  # noqa: BLE001 -- a candidate that cannot be emitted or imported is dropped
                self.stats.compile_failed += 1
                self.stats.candidates_dropped += 1
                self.stats.note(f"candidate {cand.rank}: could not be emitted or imported: {_one_line(e)}")
                self.modules[cand.rank] = None
        return self.modules[cand.rank]

    def evaluate(self, cand: Candidate, config: Config | None) -> Trial | None:
        """Compiles and verifies one configuration (None: the module's defaults)."""
        module = self._module(cand)
        if module is None:
            return None
        self.stats.configs_tried += 1
        params = config.params() if config is not None else {}
        label = config.describe() if config is not None else f"candidate {cand.rank} (default launch parameters)"
        try:
            with torch.no_grad():
                outputs = module.forward(*self.inputs, **params)
                if self.inputs and self.inputs[0].is_cuda:
                    torch.cuda.synchronize(self.inputs[0].device)
        except Exception as e:  # noqa: BLE001 -- any failure drops this configuration
            if _is_compile_error(e):
                self.stats.compile_failed += 1
                self.stats.note(f"{label}: failed to compile: {_one_line(e)}")
                self._compile_failures[cand.rank] = self._compile_failures.get(cand.rank, 0) + 1
            else:
                self.stats.run_failed += 1
                self.stats.note(f"{label}: failed to run: {_one_line(e)}")
                self._wrong[cand.rank] = self._wrong.get(cand.rank, 0) + 1
            return None
        outs = self.binding_outputs(outputs)
        verdict: Verdict = compare(outs, self.references, [o.name for o in self.binding.outputs])
        if not verdict.ok:
            self.stats.verify_failed += 1
            self.stats.note(f"{label}: {verdict.reason or f'relative L2 error {verdict.error:.3g} > {TOLERANCE:g}'}")
            self._wrong[cand.rank] = self._wrong.get(cand.rank, 0) + 1
            return None
        self.stats.verified += 1
        self._successes[cand.rank] = self._successes.get(cand.rank, 0) + 1
        return Trial(config or Config(cand.rank, ()), cand, module, verdict.error)

    def binding_outputs(self, outputs) -> list[torch.Tensor]:
        flat = []
        for info, t in zip(self.binding.outputs, outputs):
            flat.append(t.reshape(info.shape) if tuple(t.shape) != info.shape else t)
        if len(outputs) != len(self.binding.outputs):
            flat.extend(outputs[len(self.binding.outputs):])
        return flat

    def _abandoned(self, rank: int) -> bool:
        if self._successes.get(rank, 0):
            return False
        return (self._wrong.get(rank, 0) >= _MAX_WRONG_WITHOUT_SUCCESS
                or self._compile_failures.get(rank, 0) >= _MAX_COMPILE_FAILURES_WITHOUT_SUCCESS)

    def measure(self, trial: Trial, rep_ms: float) -> float:
        if trial.runner is None:
            trial.runner, trial.notes = make_runner(trial.module, trial.config.params(), self.inputs, lean=self.lean)
        t = self.timer(_Timed(trial.runner, self.inputs, trial.config), rep_ms)
        trial.time_s, trial.rep_ms = t, rep_ms
        self.stats.measurements += 1
        return t

    # -- whole runs --

    def run(self) -> TuneResult:
        start = self.clock()
        try:
            if not self.measured:
                return self._run_static()
            return self._run_measured(start)
        finally:
            self.stats.seconds = self.clock() - start

    def _fail(self) -> NoValidCandidate:
        lines = "\n  ".join(self.stats.failures) or "no candidates"
        return NoValidCandidate(
            f"no candidate compiled and matched PyTorch eager (relative L2 error <= {TOLERANCE:g}): "
            f"{self.stats.compile_failed} failed to compile, {self.stats.run_failed} failed to run, "
            f"{self.stats.verify_failed} gave wrong values\n  {lines}"
        )

    def _run_static(self) -> TuneResult:
        """Interpreter: the first candidate in rank order that verifies, with
        the estimate's block sizes (or the module's defaults)."""
        trials = []
        for i, cand in enumerate(self.candidates):
            self._progress(f"verifying candidate {cand.rank} in Triton's interpreter", len(self.candidates) - i)
            module = self._module(cand)
            if module is None:
                continue
            config = None
            block_params = getattr(module, "BLOCK_PARAMS", {})
            if cand.blocks and all(a in cand.blocks for a in block_params):
                config = Config(cand.rank, tuple(sorted((block_params[a], cand.blocks[a]) for a in block_params)))
            trial = self.evaluate(cand, config)
            if trial is None:
                self.stats.candidates_dropped += 1
                continue
            trials.append(trial)
            return TuneResult(trial, self.stats, trials)
        raise self._fail()

    def _run_measured(self, start: float) -> TuneResult:
        budget = self.options.budget_s
        deadline = start + budget
        first_phase_end = start + budget / 2
        rng = random.Random(self.options.seed)
        spaces = []
        for cand in self.candidates:
            module = self._module(cand)
            if module is None:
                spaces.append([])
                continue
            spaces.append(config_space(cand, dict(getattr(module, "BLOCK_PARAMS", {})), self.options, rng))
        queue = interleave(spaces)
        by_rank = {c.rank: c for c in self.candidates}
        trials: list[Trial] = []
        rep0 = 10.0
        for i, config in enumerate(queue):
            if (trials and self.clock() >= first_phase_end) or self.clock() >= deadline:
                break
            if self._abandoned(config.rank):
                continue
            trial = self.evaluate(by_rank[config.rank], config)
            if trial is None:
                if self._abandoned(config.rank):
                    self.stats.candidates_dropped += 1
                continue
            try:
                self.measure(trial, rep0)
            except Exception as e:  # noqa: BLE001 -- a configuration that cannot be timed is dropped
                self.stats.run_failed += 1
                self.stats.note(f"{config.describe()}: failed while timing: {_one_line(e)}")
                continue
            trials.append(trial)
            best = min(trials, key=lambda t: t.time_s)
            self._progress(f"tuning: {len(trials)} verified", len(queue) - i - 1, best)
        if not trials:
            raise self._fail()
        index = {id(t): t for t in trials}

        def remeasure(key, rep_ms):
            t = self.measure(index[key], rep_ms)
            self._progress(f"successive halving, {rep_ms:g} ms per configuration", None,
                           min(trials, key=lambda x: x.time_s))
            return t

        best_key, _, rounds = successive_halving(
            {id(t): t.time_s for t in trials}, remeasure, rep_ms=rep0, deadline=deadline, clock=self.clock
        )
        self.stats.rounds = rounds
        return TuneResult(index[best_key], self.stats, trials)

    def _progress(self, stage: str, left: int | None, best: Trial | None = None) -> None:
        if self.progress is None:
            return
        self.progress.update(stage, left=left, best=None if best is None else (best.config.describe(), best.time_s))


class _Timed:
    """What the timer calls: one run of a configuration (which it names, for
    timers that need to know)."""

    def __init__(self, runner, inputs, config: Config):
        self.runner, self.inputs, self.config = runner, inputs, config

    def __call__(self):
        return self.runner(*self.inputs)


def _one_line(e: BaseException) -> str:
    """The exception's first line, and its last when that says more (Triton's
    compile errors put the position first and the reason last)."""
    lines = [line.strip() for line in f"{type(e).__name__}: {e}".splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    text = lines[0] if len(lines) == 1 or lines[-1] in lines[0] else f"{lines[0]} ... {lines[-1]}"
    return text[:400]
