"""Choosing a candidate by measurement (DESIGN §7).

A *configuration* is a candidate program with concrete launch parameters: a
block size per parallel axis, num_warps, num_stages and which of the module's
LAUNCH_FORMS are on (e.g. gemv_dot: GEMVs as padded tl.dot). Before a
configuration may be timed it is compiled and run on fresh random inputs and
its outputs checked against PyTorch eager (verify.py); a configuration that
fails to compile, to run or to verify is dropped and counted, never returned.
A candidate is dropped only when none of the configurations tried for it
verified.

On a GPU, tuning has two phases within the budget:

1. The candidates, in static-rank order, are compiled, verified and timed
   once at the block sizes of their own estimate (extraction's
   ``block_sizes`` and ``num_stages``, the cost model's best legal choice)
   with 4 warps, until 40% of the budget is spent (once one has verified); the
   candidates not reached are counted as untried. When a configuration fails
   to compile (a tile too large for the registers or shared memory), the
   candidate is retried smaller (fewer stages, then its largest block halved)
   in later rounds, after every other candidate has had its first try.
2. Successive halving with exploration: each round keeps the fastest third of
   the previous round's configurations and tries their untried neighbours
   (each launch form switched, each block doubled or halved within the cost
   model's legal range, the next num_warps and num_stages of the options),
   best survivor first, each timed
   with a short repetition; a configuration at least as large as one that ran
   out of resources is skipped. When the survivors' neighbourhoods are
   explored, the fastest configuration with untried neighbours goes on. At
   85% of the budget (or when nothing is left to try), the fastest nine are
   timed again with three times the repetitions, keeping the fastest third
   each time, until one is left or the budget is spent.

The order of everything is fixed by the candidates' ranks, so a run is
deterministic up to the timings. Without a GPU (Triton's interpreter),
nothing is timed: the first candidate in static-rank order that verifies wins.

Timing is GPU time (measure.graph_timer: a CUDA graph replay, L2 flushed
before each): it ranks kernels.
What launching costs on the host is the launch path's business (the lean path,
CUDA graphs) and shows in the report's per-call times.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import os
import re
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import torch

from ..options import TOLERANCE, Options
from .launch import Binding, make_runner
from .loader import kernels_of, load_copy, load_module
from .measure import graph_timer
from .search import Candidate, MissingPieceError, ensure_source
from .verify import Verdict, compare, fresh_args

# ---- configurations ------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    rank: int                                # candidate's static rank
    blocks: tuple[tuple[str, int], ...]      # (forward's keyword, block size), sorted
    num_warps: int = 4
    num_stages: int = 2
    forms: tuple[str, ...] = ()              # the module's LAUNCH_FORMS switched on, sorted

    def params(self) -> dict[str, int | bool]:
        return {**dict(self.blocks), "num_warps": self.num_warps, "num_stages": self.num_stages,
                **{name: True for name in self.forms}}

    def switched(self, form: str) -> "Config":
        """The same configuration with launch form `form` switched."""
        return dataclasses.replace(self, forms=tuple(sorted(set(self.forms) ^ {form})))

    def describe(self) -> str:
        parts = ([f"{k}={v}" for k, v in self.blocks] + [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
                 + [f"{name}=True" for name in self.forms])
        return f"candidate {self.rank} ({', '.join(parts)})"


# A program's `(dims ...)` item, its entries in group 1. A dim's extent is a
# number, or the name of a dim declared before it (`(k1_out k1)`: a kernel's
# own dim, extraction's kernel-private dims).
DIMS_ITEM = re.compile(r"\(dims((?:\s*\(\s*[^()\s]+\s+[^()\s]+\s*\))*)\s*\)")
_DIM = re.compile(r"\(\s*([^()\s]+)\s+([^()\s]+)\s*\)")


def program_dims(text: str) -> dict[str, int]:
    """The dim extents declared by a program's `(dims ...)`."""
    m = DIMS_ITEM.search(text)
    dims: dict[str, int] = {}
    for name, extent in _DIM.findall(m.group(1)) if m else ():
        dims[name] = int(extent) if extent.isdigit() else dims[extent]
    return dims


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


# The launch parameters a candidate starts from: what the emitted modules
# default to, and a middle ground for Hopper-class GPUs.
START_WARPS = 4
START_STAGES = 3
# Emitted kernels pad every tile dimension to at least 16 (tl.dot's minimum),
# so halving a block of 16 or less does not make its tiles smaller: it is no
# remedy for a configuration that ran out of registers or shared memory.
_TILE_FLOOR = 16


@dataclass
class Space:
    """Where one candidate's configurations may go, by the cost model's rules:
    block sizes are powers of two from 1 up to the next power of two of what
    the axis splits (its dim's extent at level 0), and an inner level of a dim
    is never larger than its outer level; warps and stages come from the
    options. Axes whose block is fixed to 1 (the module's UNIT_AXES) have no
    keyword and so never change. `forms` are the module's LAUNCH_FORMS:
    switches between two forms of a kernel (e.g. gemv_dot), each off at the
    start and switched by a neighbour step."""

    rank: int
    keywords: list[str]              # forward's block keywords, outer levels before inner ones
    caps: dict[str, int]             # the largest legal block of each keyword
    outer: dict[str, str]            # keyword -> keyword of the enclosing level of the same dim
    num_warps: tuple[int, ...]
    num_stages: tuple[int, ...]
    forms: tuple[str, ...] = ()

    def normalize(self, blocks: dict[str, int]) -> dict[str, int]:
        """Inner levels clamped to their outer level's block, as the cost model does."""
        for kw in self.keywords:
            if kw in self.outer:
                blocks[kw] = min(blocks[kw], blocks[self.outer[kw]])
        return blocks

    def config(self, blocks: dict[str, int], num_warps: int, num_stages: int, forms: tuple[str, ...] = ()) -> Config:
        return Config(self.rank, tuple(sorted(blocks.items())), num_warps, num_stages, forms)


def make_space(rank: int, block_params: dict[str, str], dims: dict[str, int], options: Options,
               estimate: dict[str, int] | None = None, forms: tuple[str, ...] = ()) -> Space:
    """The legal space of a candidate whose module has `block_params` ({axis:
    keyword}, e.g. {"k.0": "block_k0", "k.1": "block_k1"}) in a program with
    dim extents `dims`. `estimate` ({axis: block}) is legal by definition: no
    cap is set below it."""
    estimate = estimate or {}
    level = {}
    outer = {}
    for axis, kw in block_params.items():
        dim, _, lv = axis.rpartition(".")
        level[kw] = int(lv) if lv.isdigit() else 0
        if level[kw] > 0 and f"{dim}.{level[kw] - 1}" in block_params:
            outer[kw] = block_params[f"{dim}.{level[kw] - 1}"]
    keywords = sorted(block_params.values(), key=lambda kw: (level[kw], list(block_params.values()).index(kw)))
    caps = {}
    fallback = max(options.block_sizes)
    for axis, kw in block_params.items():
        dim = axis.rpartition(".")[0]
        # What a level-0 axis splits is its dim; an inner level is further
        # bounded by its outer level's block (Space.normalize). A dim whose
        # extent the program does not declare gets the options' largest size.
        cap = _next_pow2(dims[dim]) if dim in dims else fallback
        if axis in estimate:
            cap = max(cap, _next_pow2(estimate[axis]))
        caps[kw] = cap
    return Space(rank, keywords, caps, outer, tuple(sorted(set(options.num_warps))),
                 tuple(sorted(set(options.num_stages))), tuple(sorted(set(forms))))


def _preferred(values: tuple[int, ...], want: int) -> int:
    """`want` if the options allow it, else the allowed value nearest to it."""
    return want if want in values else min(values, key=lambda v: (abs(v - want), v))


def start_config(candidate: Candidate, block_params: dict[str, str], space: Space) -> Config:
    """The configuration a candidate is tried at first: exactly the block sizes
    of its static estimate, with START_WARPS and the estimate's stages
    (START_STAGES when it has none; the allowed value nearest). Axes the
    estimate does not size (an extraction without block sizes) get the emitted
    module's defaults: min(next power of two of the extent, 64) at level 0,
    half the outer block inside."""
    return _start_at(candidate.blocks, candidate.stages, block_params, space)


def start_configs(candidate: Candidate, block_params: dict[str, str], space: Space) -> list[Config]:
    """start_config, then each launch form of the space with an estimate of
    its own (extraction's "forms") switched on at that estimate's blocks and
    stages: a form's best blocks are not the other form's (a GEMV's tl.dot
    form streams its weight in pipelined loops of a few hundred rows, the
    multiply and sum in whole-k strips), so one step from the first start
    would not reach them."""
    out = [start_config(candidate, block_params, space)]
    for name in space.forms:
        if name in candidate.form_starts:
            blocks, stages = candidate.form_starts[name]
            c = dataclasses.replace(_start_at(blocks, stages, block_params, space), forms=(name,))
            if c not in out:
                out.append(c)
    return out


def _start_at(estimate: dict[str, int], stages: int | None, block_params: dict[str, str], space: Space) -> Config:
    """A configuration at an estimate's blocks ({axis: block}) and stages."""
    est = {block_params[a]: int(v) for a, v in estimate.items() if a in block_params}
    blocks: dict[str, int] = {}
    for kw in space.keywords:
        if kw in est:
            blocks[kw] = est[kw]
        elif kw in space.outer:
            blocks[kw] = max(1, blocks[space.outer[kw]] // 2)
        else:
            blocks[kw] = min(space.caps[kw], 64)
    stages = stages or START_STAGES
    return space.config(blocks, _preferred(space.num_warps, START_WARPS), _preferred(space.num_stages, stages))


def _adjacent(values: tuple[int, ...], v: int) -> list[int]:
    """The allowed values just above and just below v."""
    above = [x for x in values if x > v]
    below = [x for x in values if x < v]
    return ([min(above)] if above else []) + ([max(below)] if below else [])


def neighbours(config: Config, space: Space) -> list[Config]:
    """The configurations one step from `config`, in a fixed order: each of
    the space's forms switched (the largest change of the kernel: its loads
    and its arithmetic), each block doubled, then halved (keyword by keyword,
    staying legal), then the next num_warps up and down, then the next
    num_stages up and down."""
    blocks = dict(config.blocks)
    out: list[Config] = []
    for name in space.forms:
        out.append(config.switched(name))
    for kw in space.keywords:
        b = blocks[kw]
        for nb in (b * 2, b // 2):
            if nb < 1 or nb > space.caps[kw] or (kw in space.outer and nb > blocks[space.outer[kw]]):
                continue
            out.append(space.config(space.normalize({**blocks, kw: nb}), config.num_warps, config.num_stages,
                                    config.forms))
    for w in _adjacent(space.num_warps, config.num_warps):
        out.append(dataclasses.replace(config, num_warps=w))
    for s in _adjacent(space.num_stages, config.num_stages):
        out.append(dataclasses.replace(config, num_stages=s))
    seen: set[Config] = {config}
    unique = []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


# The launch form that runs every kernel in a launch of its own (off: the
# independent kernels of a level share one fused launch).
SEPARATE = "separate_launches"


def shrink(config: Config, space: Space, out_of_resources: bool) -> Config | None:
    """A smaller configuration to try after `config` failed: fewer pipeline
    stages when it ran out of resources (the stages multiply the shared memory
    of pipelined loads; START_STAGES from more, the fewest allowed from
    START_STAGES or fewer), else its largest block above the tile floor halved;
    None when there is nothing left to shrink. (A configuration whose fused
    launches failed is first tried in separate launches: Tuner._split.)"""
    if out_of_resources and config.num_stages > START_STAGES and START_STAGES in space.num_stages:
        return dataclasses.replace(config, num_stages=START_STAGES)
    if out_of_resources and config.num_stages > space.num_stages[0]:
        return dataclasses.replace(config, num_stages=space.num_stages[0])
    blocks = dict(config.blocks)
    big = [kw for kw in space.keywords if blocks[kw] > _TILE_FLOOR]
    if not big:
        return None
    kw = max(big, key=lambda k: blocks[k])  # the first of the largest, in keyword order
    blocks[kw] //= 2
    return space.config(space.normalize(blocks), config.num_warps, config.num_stages, config.forms)


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


# ---- the tuner -----------------------------------------------------------------------


class NoValidCandidate(RuntimeError):
    """Every candidate failed to compile, run or verify."""


@dataclass
class TuneStats:
    candidates: int = 0
    # Configurations compiled and run (each counted once in one of the next
    # four, except one that verified and then failed while timing).
    configs_tried: int = 0
    compile_failed: int = 0       # configurations (and modules that did not import)
    run_failed: int = 0
    verify_failed: int = 0
    verified: int = 0
    measurements: int = 0
    # Candidates none of whose tried configurations verified (or whose module
    # could not be emitted), and candidates the budget left untried.
    candidates_dropped: int = 0
    candidates_untried: int = 0
    # Neighbour configurations tried while exploring (phase 2), and those not
    # tried because they are at least as large as one that ran out of resources.
    explored: int = 0
    configs_skipped: int = 0
    # Candidates whose emitted code equals an earlier one's (comments aside):
    # programs distinct in the IR (a division written as a product, ...)
    # that lower to the same kernels are timed once.
    duplicates: int = 0
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
    """Errors raised while Triton compiles (or refuses) a kernel: its compile
    and resource errors by type, and anything raised from inside its compiler
    or backends (an MLIR pass that fails raises a plain RuntimeError)."""
    mod = type(e).__module__ or ""
    if mod.startswith("triton.compiler") or type(e).__name__ in ("OutOfResources", "CompilationError", "PTXASError"):
        return True
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/triton/compiler/" in name or "/triton/backends/" in name:
            return True
        tb = tb.tb_next
    return False


def _is_out_of_resources(e: BaseException) -> bool:
    return type(e).__name__ == "OutOfResources" or "out of resource" in str(e).lower()


# Compilation fails for single configurations (too large a tile for the
# registers or shared memory) and a smaller one may compile: a candidate whose
# first configuration failed to compile is retried smaller, up to this many
# failed compilations in all. Wrong values or a failed run point at the
# candidate: it is not retried.
_MAX_COMPILE_FAILURES_WITHOUT_SUCCESS = 4
# Repetitions (ms of do_bench) of a configuration's first timing, and the
# share of the budget after which no new configuration is started (the rest
# times the survivors again with more repetitions).
_FIRST_REP_MS = 10.0
_EXPLORE_SHARE = 0.85
# The share of the budget after which phase 1 starts no further candidate
# once one has verified: the rest goes to the neighbours of the fastest. The
# top candidates of a search are often one structure in slightly different
# forms, and compiling a configuration takes most of a second, so without a
# cap phase 1 took the whole budget of 15 s and explored nothing (the 12-02c
# general runs: "explored 0"), keeping the estimate's blocks, which missed
# faster ones by up to 1.5x.
_CANDIDATE_SHARE = 0.4
_ETA = 3
# How many of the fastest configurations the final successive halving starts
# from (two rounds with eta 3).
_FINAL_HALVING = 9


def code_signature(source: str) -> str:
    """A module's code without its docstring and comments: two candidates
    with the same signature run the same kernels."""
    lines = []
    in_doc = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith('"""'):
            # A docstring line (one-line, or the start or end of a block).
            if not (len(stripped) > 3 and stripped.endswith('"""')):
                in_doc = not in_doc
            continue
        if in_doc or not stripped or stripped.startswith("#"):
            continue
        lines.append(line)
    return "\n".join(lines)


# Threads that compile configurations ahead of the tuner (0: none; the
# environment variable EQIFORGE_COMPILE_THREADS sets it). Compiling a
# configuration takes 0.3-1.5 s (Triton's compiler and ptxas; triton 3.9
# compiles two sm_90 kernels on two threads in 0.59x the time of one after
# the other), timing it a few ms: the tuner's budget of 15 s went to
# compiling 9-16 configurations. Off by default until it has been measured
# on the GPU machine's triton 3.6.
def _compile_threads() -> int:
    try:
        return max(0, min(16, int(os.environ.get("EQIFORGE_COMPILE_THREADS", "0"))))
    except ValueError:
        return 0


COMPILE_THREADS = _compile_threads()


class _WarmupOnly:
    """A kernel whose launches only compile it (Triton's warmup)."""

    def __init__(self, jit):
        self.jit = jit

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.jit.run(*args, grid=grid, warmup=True, **kwargs)


def _compile_only(source: str, module_dir, inputs: list[torch.Tensor], params: dict) -> None:
    """Runs forward in a private copy of the module with every launch replaced
    by a compilation: the kernels land in Triton's on-disk cache, where the
    module proper finds them."""
    module = load_copy(source, module_dir)
    for name, jit in kernels_of(module).items():
        setattr(module, name, _WarmupOnly(jit))
    with torch.no_grad(), torch.cuda.device(inputs[0].device):
        module.forward(*inputs, **params)


class Precompiler:
    """Compiles configurations ahead on `threads` threads, in the order given.
    A configuration is compiled at most once; `wait` blocks until one handed
    in is done (its failures are left for the tuner's own run to report)."""

    def __init__(self, threads: int, inputs: list[torch.Tensor], module_dir=None):
        usable = threads > 0 and bool(inputs) and all(t.is_cuda for t in inputs)
        self.pool = concurrent.futures.ThreadPoolExecutor(threads, "eqiforge-compile") if usable else None
        self.inputs, self.module_dir = inputs, module_dir
        self.futures: dict[Config, concurrent.futures.Future] = {}

    def submit(self, source: str | None, config: Config) -> None:
        if self.pool is None or source is None or config in self.futures:
            return
        self.futures[config] = self.pool.submit(_compile_only, source, self.module_dir, self.inputs,
                                                config.params())

    def wait(self, config: Config | None) -> None:
        future = self.futures.get(config) if config is not None else None
        if future is not None:
            try:
                future.result()
            except Exception:  # noqa: BLE001 -- the tuner's own compilation reports it
                pass

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


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
        self.timer = timer if timer is not None else graph_timer
        self.clock, self.source_of, self.module_dir, self.lean = clock, source_of, module_dir, lean
        self.stats = TuneStats(candidates=len(candidates))
        # One set of fresh random inputs for verification and timing.
        self.args = fresh_args(example_args, options.seed + 1)
        self.inputs = binding.module_inputs(self.args)
        with torch.no_grad():
            self.references = binding.flat_outputs(reference(*self.args))
        self.modules: dict[int, types.ModuleType | None] = {}
        self.sources: dict[int, str] = {}
        self.spaces: dict[int, Space] = {}
        # Every configuration tried, in order, with what became of it:
        # "verified", "failed to compile", "failed to run", "wrong values",
        # "failed while timing".
        self.history: list[tuple[Config | None, str]] = []
        self._tried: set[Config] = set()
        self._attempted: set[int] = set()   # ranks with a module that failed or a configuration tried
        self._compile_failures: dict[int, int] = {}
        self._successes: dict[int, int] = {}
        self._too_large: dict[int, list[Config]] = {}
        # How the last configuration evaluated failed: "compile" (then
        # whether it ran out of resources), "run", "wrong", or None.
        self._last_failure: str | None = None
        self._last_out_of_resources = False
        self._signatures: dict[str, int] = {}  # code signature -> rank of its first candidate
        self.precompiler = Precompiler(COMPILE_THREADS if self.measured and not interpret else 0, self.inputs,
                                       module_dir)

    def _duplicate(self, cand: Candidate) -> bool:
        """Whether cand's module runs the same code as an earlier candidate's
        (counted once per candidate)."""
        if self._module(cand) is None:
            return False
        first = self._signatures.setdefault(code_signature(self.sources[cand.rank]), cand.rank)
        if first == cand.rank:
            return False
        self.stats.duplicates += 1
        return True

    # -- one configuration --

    def _module(self, cand: Candidate) -> types.ModuleType | None:
        if cand.rank not in self.modules:
            try:
                source = self.source_of(cand)
                self.sources[cand.rank] = source
                self.modules[cand.rank] = load_module(source, self.interpret, self.module_dir)
            except MissingPieceError:
                raise
            except Exception as e:  # noqa: BLE001 -- a candidate that cannot be emitted or imported is dropped
                self.stats.compile_failed += 1
                self._attempted.add(cand.rank)
                self._failure(f"candidate {cand.rank}: could not be emitted or imported: {_one_line(e)}")
                self.modules[cand.rank] = None
        return self.modules[cand.rank]

    def _space(self, cand: Candidate) -> Space | None:
        """The candidate's legal space (None if its module does not load)."""
        if cand.rank not in self.spaces:
            module = self._module(cand)
            if module is None:
                return None
            self.spaces[cand.rank] = make_space(cand.rank, dict(getattr(module, "BLOCK_PARAMS", {})),
                                                program_dims(cand.program), self.options, cand.blocks,
                                                tuple(getattr(module, "LAUNCH_FORMS", ())))
        return self.spaces[cand.rank]

    def _failure(self, line: str) -> None:
        """A configuration or candidate that failed: kept for reports and
        errors, and shown as it happens (verbose), so that a run on a GPU says
        why."""
        self.stats.note(line)
        if self.progress is not None:
            self.progress.info(line)

    def evaluate(self, cand: Candidate, config: Config | None) -> Trial | None:
        """Compiles and verifies one configuration (None: the module's defaults)."""
        module = self._module(cand)
        if module is None:
            return None
        self._attempted.add(cand.rank)
        if config is not None:
            self._tried.add(config)
        self.stats.configs_tried += 1
        self._last_failure, self._last_out_of_resources = None, False
        self.precompiler.wait(config)
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
                self._compile_failures[cand.rank] = self._compile_failures.get(cand.rank, 0) + 1
                self._last_failure, self._last_out_of_resources = "compile", _is_out_of_resources(e)
                if self._last_out_of_resources and config is not None:
                    self._too_large.setdefault(cand.rank, []).append(config)
                self.history.append((config, "failed to compile"))
                self._failure(f"{label}: failed to compile: {_one_line(e)}")
            else:
                self.stats.run_failed += 1
                self._last_failure = "run"
                self.history.append((config, "failed to run"))
                self._failure(f"{label}: failed to run: {_one_line(e)}")
            return None
        outs = self.binding_outputs(outputs)
        verdict: Verdict = compare(outs, self.references, [o.name for o in self.binding.outputs])
        if not verdict.ok:
            self.stats.verify_failed += 1
            self._last_failure = "wrong"
            self.history.append((config, "wrong values"))
            self._failure(f"{label}: {verdict.reason or f'relative L2 error {verdict.error:.3g} > {TOLERANCE:g}'}")
            return None
        self.stats.verified += 1
        self.history.append((config, "verified"))
        return Trial(config or Config(cand.rank, ()), cand, module, verdict.error)

    def binding_outputs(self, outputs) -> list[torch.Tensor]:
        flat = []
        for info, t in zip(self.binding.outputs, outputs):
            flat.append(t.reshape(info.shape) if tuple(t.shape) != info.shape else t)
        if len(outputs) != len(self.binding.outputs):
            flat.extend(outputs[len(self.binding.outputs):])
        return flat

    def _split(self, cand: Candidate, config: Config, space: Space) -> Config | None:
        """`config` in separate launches when it just failed in its fused ones
        (to compile, run or verify: a fused kernel needs the registers of its
        largest member and may need the shared memory of all) and nothing of
        the candidate has verified."""
        if (self._last_failure is None or self._successes.get(cand.rank, 0) or SEPARATE not in space.forms
                or SEPARATE in config.forms):
            return None
        split = config.switched(SEPARATE)
        return None if split in self._tried else split

    def _retry(self, cand: Candidate, config: Config, space: Space) -> Config | None:
        """What to try next for a candidate whose `config` just failed and none
        of whose configurations has verified: the same sizes in separate
        launches when its fused launches failed in any way (to compile, run
        or verify: every member is still a kernel of its own), a smaller
        configuration after a failed compilation (while fewer than the limit
        have failed), else nothing."""
        if split := self._split(cand, config, space):
            return split
        if (self._last_failure != "compile" or self._successes.get(cand.rank, 0)
                or self._compile_failures.get(cand.rank, 0) >= _MAX_COMPILE_FAILURES_WITHOUT_SUCCESS):
            return None
        retry = shrink(config, space, self._last_out_of_resources)
        return None if retry is None or retry in self._tried else retry

    def _dominated(self, config: Config) -> bool:
        """At least as large as a configuration of the same candidate that ran
        out of resources: every block and the stages no smaller, the same warps
        and forms."""
        blocks = dict(config.blocks)
        for f in self._too_large.get(config.rank, []):
            if (f.num_warps == config.num_warps and f.forms == config.forms and config.num_stages >= f.num_stages
                    and all(blocks.get(k, 0) >= v for k, v in f.blocks)):
                return True
        return False

    def measure(self, trial: Trial, rep_ms: float) -> float:
        if trial.runner is None:
            trial.runner, trial.notes = make_runner(trial.module, trial.config.params(), self.inputs, lean=self.lean)
        t = self.timer(_Timed(trial.runner, self.inputs, trial.config), rep_ms)
        trial.time_s, trial.rep_ms = t, rep_ms
        self.stats.measurements += 1
        return t

    def _try(self, cand: Candidate, config: Config, rep_ms: float) -> Trial | None:
        """Compiles, verifies and times one configuration."""
        trial = self.evaluate(cand, config)
        if trial is None:
            return None
        try:
            self.measure(trial, rep_ms)
        except Exception as e:  # noqa: BLE001 -- a configuration that cannot be timed is dropped
            self.stats.run_failed += 1
            self._last_failure = "run"
            self.history[-1] = (config, "failed while timing")
            self._failure(f"{config.describe()}: failed while timing: {_one_line(e)}")
            return None
        self._successes[cand.rank] = self._successes.get(cand.rank, 0) + 1
        return trial

    # -- whole runs --

    def run(self) -> TuneResult:
        start = self.clock()
        try:
            if not self.measured:
                return self._run_static()
            return self._run_measured(start)
        finally:
            self.precompiler.close()
            self._count_candidates()
            self.stats.seconds = self.clock() - start

    def _count_candidates(self) -> None:
        self.stats.candidates_dropped = sum(1 for r in self._attempted if not self._successes.get(r, 0))
        self.stats.candidates_untried = len({c.rank for c in self.candidates} - self._attempted)

    def _fail(self) -> NoValidCandidate:
        self._count_candidates()
        s = self.stats
        lines = "\n  ".join(s.failures) or "no candidates"
        untried = ""
        if s.candidates_untried:
            untried = (f", {s.candidates_untried} not tried within the budget of {self.options.budget_s:g} s"
                       if self.measured else f", {s.candidates_untried} not tried")
        return NoValidCandidate(
            f"no candidate compiled and matched PyTorch eager (relative L2 error <= {TOLERANCE:g}): "
            f"{s.configs_tried} configurations tried: {s.compile_failed} failed to compile, "
            f"{s.run_failed} failed to run, {s.verify_failed} gave wrong values; "
            f"{s.candidates_dropped} of {s.candidates} candidates dropped{untried}\n  {lines}"
        )

    def _run_static(self) -> TuneResult:
        """Interpreter: the first candidate in rank order that verifies, with
        the estimate's block sizes (or the module's defaults)."""
        trials = []
        for i, cand in enumerate(self.candidates):
            self._progress(f"verifying candidate {cand.rank} in Triton's interpreter", len(self.candidates) - i)
            module = self._module(cand)
            if module is None or self._duplicate(cand):
                continue
            config = None
            block_params = getattr(module, "BLOCK_PARAMS", {})
            if cand.blocks and all(a in cand.blocks for a in block_params):
                config = Config(cand.rank, tuple(sorted((block_params[a], cand.blocks[a]) for a in block_params)))
            trial = self.evaluate(cand, config)
            if trial is None and (split := self._split(cand, config or Config(cand.rank, ()), self._space(cand))):
                trial = self.evaluate(cand, split)
            if trial is None:
                continue
            self._successes[cand.rank] = 1
            trials.append(trial)
            return TuneResult(trial, self.stats, trials)
        raise self._fail()

    def _run_measured(self, start: float) -> TuneResult:
        deadline = start + self.options.budget_s
        explore_end = start + self.options.budget_s * _EXPLORE_SHARE
        candidates_end = start + self.options.budget_s * _CANDIDATE_SHARE
        by_rank = {c.rank: c for c in self.candidates}
        trials: list[Trial] = []

        def out_of_time() -> bool:
            # No new configuration past the deadline, nor past the exploration
            # share once something has been measured.
            now = self.clock()
            return now >= deadline or (bool(trials) and now >= explore_end)

        def best() -> Trial | None:
            return min(trials, key=lambda t: t.time_s) if trials else None

        def no_more_candidates() -> bool:
            return out_of_time() or (bool(trials) and self.clock() >= candidates_end)

        # Phase 1: every candidate at its estimate's configuration, in rank
        # order, until the candidates' share of the budget is spent;
        # candidates that failed are retried smaller in later rounds.
        todo: list[tuple[Candidate, Config | None]] = [(c, None) for c in self.candidates]
        self._prefetch_starts()
        while todo and not no_more_candidates():
            retries = []
            for i, (cand, config) in enumerate(todo):
                if no_more_candidates():
                    break
                space = self._space(cand)
                if space is None or (config is None and self._duplicate(cand)):
                    continue
                configs = ([config] if config is not None else
                           start_configs(cand, dict(getattr(self.modules[cand.rank], "BLOCK_PARAMS", {})), space))
                for j, config in enumerate(configs):
                    if j and no_more_candidates():  # the first was checked before the module loaded
                        break
                    trial = self._try(cand, config, _FIRST_REP_MS)
                    if trial is not None:
                        trials.append(trial)
                    else:
                        retry = self._retry(cand, config, space)
                        if retry is not None:
                            retries.append((cand, retry))
                self._progress(f"tuning: {len(trials)} verified", len(todo) - i - 1 + len(retries), best())
            todo = retries
        if not trials:
            raise self._fail()

        # Phase 2: successive halving over the measured configurations and
        # their neighbours: each round keeps the fastest third of the previous
        # round's survivors and their neighbours, and tries the survivors'
        # untried neighbours, best survivor first, until the budget's
        # exploration share is spent or no configuration timed has an untried
        # neighbour.
        pool = list(trials)
        keep = len(pool)
        while not out_of_time():
            keep = max(1, math.ceil(keep / _ETA))
            survivors = sorted(pool, key=lambda t: t.time_s)[:keep]
            fresh: list[Config] = []
            for survivor in survivors:
                for c in neighbours(survivor.config, self.spaces[survivor.config.rank]):
                    if c not in self._tried and c not in fresh:
                        fresh.append(c)
            if not fresh:
                # The survivors' neighbourhoods are explored: go on from the
                # fastest configuration timed that has untried neighbours.
                for t in sorted(trials, key=lambda t: t.time_s):
                    fresh = [c for c in neighbours(t.config, self.spaces[t.config.rank]) if c not in self._tried]
                    if fresh:
                        survivors = [t]
                        break
            if not fresh:
                break
            for c in fresh:
                if not self._dominated(c):
                    self.precompiler.submit(self.sources.get(c.rank), c)
            new = []
            for j, c in enumerate(fresh):
                if out_of_time():
                    break
                if self._dominated(c):
                    # At least as large as one that ran out of resources (in
                    # this round too): it would not compile either.
                    self._tried.add(c)
                    self.stats.configs_skipped += 1
                    continue
                self.stats.explored += 1
                trial = self._try(by_rank[c.rank], c, _FIRST_REP_MS)
                if trial is not None:
                    trials.append(trial)
                    new.append(trial)
                self._progress(f"exploring neighbours of the best {len(survivors)}: {len(trials)} verified",
                               len(fresh) - j - 1, best())
            pool = survivors + new

        # The final halving starts from the fastest few of every configuration
        # timed, not only the last round's: a short first timing can be noisy.
        final = sorted(trials, key=lambda t: t.time_s)[:_FINAL_HALVING]
        index = {id(t): t for t in final}

        def remeasure(key, rep_ms):
            t = self.measure(index[key], rep_ms)
            self._progress(f"successive halving, {rep_ms:g} ms per configuration", None, best())
            return t

        best_key, _, rounds = successive_halving(
            {id(t): t.time_s for t in final}, remeasure, rep_ms=_FIRST_REP_MS, deadline=deadline, clock=self.clock,
            eta=_ETA,
        )
        self.stats.rounds = rounds
        return TuneResult(index[best_key], self.stats, trials)

    def _prefetch_starts(self) -> None:
        """Hands every candidate's start configuration to the precompiler, in
        rank order (candidates whose module does not load are left to phase 1)."""
        if self.precompiler.pool is None:
            return
        signatures = set()
        for cand in self.candidates:
            try:
                space = self._space(cand)
            except MissingPieceError:
                return
            if space is not None:
                signature = code_signature(self.sources[cand.rank])
                if signature in signatures:
                    continue  # phase 1 skips it as a duplicate
                signatures.add(signature)
                for config in start_configs(cand, dict(getattr(self.modules[cand.rank], "BLOCK_PARAMS", {})), space):
                    self.precompiler.submit(self.sources.get(cand.rank), config)

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
