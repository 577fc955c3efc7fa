"""The whole-optimizer fuzzer: random programs through saturation, extraction,
code generation and Triton's interpreter, each candidate checked against the
reference interpreter.

    python -m eqiforge.fuzz [--mode ci|long] [--seed S] [--count N] [--jobs J] [--save DIR]

For each seed S, S+1, ..., S+N-1:

1. ``eqiforge-opt gen-program --seed S`` draws a small random program (the
   generator of the C++ tests, ``src/interp/random_program.h``): matmuls,
   pointwise ops with broadcasting, sum/max reductions, softmax chains,
   masks from ``iota``, casts, split/merge/rename, finite-valued and within
   the range of their dtypes (``--finite --in-range``),
   at the high level (the ``plain`` form);
2. ``eqiforge-opt extract`` saturates its e-graph with the rule library and
   extracts the K best candidates (bounded nodes and time);
3. each candidate is emitted (``eqiforge-opt emit``), run with Triton's
   interpreter (``TRITON_INTERPRET=1``) on fresh random inputs and block sizes
   (trial 0: the module's defaults, later trials random sizes), and compared
   with the reference interpreter evaluating the generated program in float64
   (``eqiforge.check``: relative L2 error at most 1e-5, or 1e-2 for an output
   computed from fp16/bf16 values; the reference rounded to the output's dtype).

With ``--also-tiled`` the generator's tile-level twin of the program (the same
computation with some subterms already tiled: partition/combine, preduce,
collect, repaired reductions) is united with the program's e-graph, so
extraction can also pick those forms.

Each program ends as one of:

    ok            every candidate within the tolerance
    no-candidate  extraction found none (the reason: its limit, or all invalid /
                  infeasible), or refused the program with an error
    wrong         a candidate computed a different result
    crash         eqiforge-opt failed internally or died, emission failed for a
                  candidate extraction produced, the module raised or did not
                  run, or the worker process died
    timeout       extraction or a candidate's run took longer than its limit

Everything depends on the seed only (programs, inputs, block sizes; extraction
is deterministic unless its time limit stops it), so a failure reproduces with
the printed command lines. The exit status is 1 if any program is wrong or
crashed, else 0 (timeouts and programs without candidates are reported, not
failures).

Programs are checked by worker processes (``--jobs``), each of which imports
torch and Triton once; a worker that dies or overruns its program's time limit
is replaced.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field

from . import check, worker_pool
from .runtime.tuner import program_dims

STATUSES = ("ok", "no-candidate", "wrong", "crash", "timeout")
FAILURES = ("wrong", "crash")


@dataclass(frozen=True)
class Config:
    """What a run draws and how hard it searches. `gen_args` go to
    `eqiforge-opt gen-program`, `extract_args` to `eqiforge-opt extract`."""

    top: int = 2                       # candidates checked per program
    trials: int = 2                    # input / block-size draws per candidate
    gen_args: tuple = ()
    extract_args: tuple = ()
    also_tiled: bool = False           # unite the generator's tile-level twin
    extract_timeout_s: float = 60.0    # wall-clock limit of the extract process
    program_timeout_s: float = 240.0   # everything for one program, in its worker


# Small programs: extents up to 13, a few ops. The e-graph and the extraction
# are bounded so one program takes seconds; best-first extraction stops after
# --candidates feasible candidates and ranks those.
_SMALL_GEN = ("--finite", "--in-range", "--min-output-rank", "1", "--extent", "13", "--min-ops", "2",
              "--max-ops", "8", "--inputs", "3", "--outputs", "2", "--rank", "3")
_BOUNDS = ("--node-limit", "20000", "--sat-time-limit", "5", "--time-limit", "10", "--candidates", "8")

MODES = {
    # A few hundred programs in minutes on 2 cores.
    "ci": dict(count=200, config=Config(top=2, trials=2, gen_args=_SMALL_GEN, extract_args=_BOUNDS)),
    # Larger programs (extents up to 17, up to 12 ops), more candidates and
    # trials, the tiled twin united every other program (odd seeds).
    "long": dict(count=5000, config=Config(
        top=3, trials=3,
        gen_args=("--finite", "--in-range", "--min-output-rank", "1", "--extent", "17", "--min-ops", "2",
                  "--max-ops", "12", "--inputs", "4", "--outputs", "3", "--rank", "3"),
        extract_args=("--node-limit", "40000", "--sat-time-limit", "10", "--time-limit", "20",
                      "--candidates", "16"),
        extract_timeout_s=120.0, program_timeout_s=480.0)),
}


@dataclass
class Result:
    seed: int
    status: str
    detail: str = ""                   # the reason, error message or worst error
    stage: str = ""                    # gen, extract, setup, emit, run, reference, worker
    candidates: int = 0
    worst_error: float = 0.0
    seconds: float = 0.0
    also_tiled: bool = False
    noise: bool = False                # ok only within the program's noise floor
    program: str = ""                  # the generated program (kept for failures)

    def line(self) -> str:
        extra = f" [{self.stage}]" if self.stage and self.status != "ok" else ""
        detail = f": {_first_line(self.detail)}" if self.detail else ""
        return f"seed {self.seed}: {self.status}{extra} ({self.candidates} candidates, {self.seconds:.1f} s){detail}"


def _first_line(text: str, width: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


# ---- one program ---------------------------------------------------------------------


def generate(seed: int, gen_args=(), form: str = "plain") -> str:
    """The generator's program for `seed`, as IR text."""
    cmd = [check._emitter(), "gen-program", "--seed", str(seed), "--form", form, *gen_args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise check.CheckError(f"gen-program exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _extract(text: str, config: Config, also: str | None) -> tuple[list, dict]:
    """The candidates and the JSON report of `eqiforge-opt extract`; raises
    subprocess.TimeoutExpired, or _Stop for a failed run."""
    cmd = [check._emitter(), "extract", "-", "--json", "--programs", "--top", str(config.top),
           *config.extract_args]
    if also is not None:
        cmd += ["--also", also]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=config.extract_timeout_s)
    if done.returncode == 2 and "<stdin>" in done.stderr:  # an eqf::Error about the program: refused
        raise _Stop("no-candidate", "extract", "refused: " + done.stderr.strip())
    if done.returncode == 2:  # about something else (a target profile, an option): every program would fail
        raise _Stop("crash", "setup", f"eqiforge-opt extract: {done.stderr.strip()}")
    if done.returncode != 0:
        what = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        raise _Stop("crash", "extract", f"eqiforge-opt extract {what}: {done.stderr.strip()}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise _Stop("crash", "extract", f"eqiforge-opt extract printed no JSON object: {e}") from None
    return report.get("candidates", []), report


def no_candidate_reason(report: dict, text: str = "") -> str:
    """Why extraction found nothing, from its JSON report (and the program's
    output types: extraction has no filling for an output without a dim of
    extent > 1)."""
    parts = []
    if text:
        parts += _scalar_outputs(text) + _copied_inputs(text)
    if report.get("limit_hit"):
        parts.append("stopped by its limit")
    for key in ("invalid", "infeasible", "dead_ends"):
        if report.get(key):
            parts.append(f"{report[key]} {key.replace('_', '-')}")
    if report.get("states_expanded", 0) == 0:
        parts.append("no valid filling for some output (no state expanded)")
    else:
        parts.append(f"{report.get('complete_built', 0)} complete built, {report['states_expanded']} states")
    stop = report.get("egraph", {}).get("stop")
    if stop:
        parts.append(f"saturation: {stop}")
    return ", ".join(parts)


def _scalar_outputs(text: str) -> list[str]:
    from . import _core

    dims = program_dims(text)
    out = []
    for name, type_text in _core.check(text):
        names = type_text[type_text.index("[") + 1 : type_text.rindex("]")].split()
        if not names:
            out.append(f"output {name} is a scalar")
        elif all(dims.get(d, 0) == 1 for d in names):
            out.append(f"output {name} has only dims of extent 1")
    return out


_LAYOUT_OPS = ("rename", "split", "merge")


def _copied_inputs(text: str) -> list[str]:
    """Outputs that are an input under layout ops only (no kernel computes
    them: extraction has no filling for a copy)."""
    items = check._items(text)
    inputs = {i[1] for i in items if i[0] == "input"}
    lets = {i[1]: i[2] for i in items if i[0] == "let" and len(i) == 3}
    out = []
    for i in items:
        if i[0] != "output":
            continue
        e = i[-1]
        while True:
            if isinstance(e, str) and e in lets:
                e = lets[e]
            elif isinstance(e, list) and e and e[0] in _LAYOUT_OPS:
                e = e[-1]
            else:
                break
        if isinstance(e, str) and e in inputs:
            out.append(f"output {i[1]} is input {e} relaid out")
    return out


class _Stop(Exception):
    def __init__(self, status: str, stage: str, detail: str):
        super().__init__(detail)
        self.status, self.stage, self.detail = status, stage, detail


def fuzz_one(seed: int, config: Config) -> Result:
    """Generates, extracts, emits and checks the program of `seed`."""
    start = time.monotonic()
    result = Result(seed, "ok", also_tiled=config.also_tiled)
    try:
        try:
            text = generate(seed, config.gen_args)
            tiled = generate(seed, config.gen_args, "tiled") if config.also_tiled else None
        except check.CheckError as e:
            raise _Stop("crash", "gen", str(e)) from None
        except subprocess.TimeoutExpired:
            raise _Stop("timeout", "gen", "gen-program ran past 60 s") from None
        result.program = text
        also_path = None
        try:
            if tiled is not None:
                also_path = _temp_file(tiled, f"fuzz_tiled_{seed}.eqf")
            candidates, report = _extract(text, config, also_path)
        except subprocess.TimeoutExpired:
            raise _Stop("timeout", "extract", f"extraction ran past {config.extract_timeout_s:g} s") from None
        finally:
            if also_path:
                os.unlink(also_path)
        result.candidates = len(candidates)
        if not candidates:
            raise _Stop("no-candidate", "extract", no_candidate_reason(report, text))
        for c in candidates:
            rank = c["rank"]
            try:
                source = check.emit(c["program"], source=f"seed {seed} candidate {rank}")
            except check.CheckError as e:
                raise _Stop("crash", "emit", f"candidate {rank}: {e}") from None
            module = None
            try:
                module = check.load_module(source, f"fuzz_{seed}_c{rank}")
                trials = check.check_program(c["program"], seed=seed, trials=config.trials, module=module,
                                             reference=text, source=f"candidate {rank}")
            except check.CheckError as e:
                raise _Stop("crash", "reference", f"candidate {rank}: {e}") from None
            except Exception as e:  # the emitted module failed to compile or to run
                tb = traceback.format_exception_only(type(e), e)
                raise _Stop("crash", "run", f"candidate {rank}: {''.join(tb).strip()}") from None
            finally:  # load_module's temporary folder (kept when the module did not even import)
                if module is not None and getattr(module, "__file__", None):
                    shutil.rmtree(os.path.dirname(module.__file__), ignore_errors=True)
            worst = max(t.max_error for t in trials)
            result.worst_error = max(result.worst_error, worst)
            bad = next((t for t in trials if not t.ok and not _within_noise(text, t)), None)
            if bad is not None:
                blocks = " ".join(f"{a}={b}" for a, b in bad.blocks.items()) or "-"
                errors = ", ".join(f"{n} {e:.3g} (tolerance {bad.tolerances[n]:g})" for n, e in bad.errors.items())
                raise _Stop("wrong", "run",
                            f"candidate {rank}: relative error {bad.max_error:.3g} "
                            f"(trial seed {bad.seed}, blocks {blocks}: {errors})")
            result.noise = result.noise or any(not t.ok for t in trials)
        result.detail = f"largest relative error {result.worst_error:.3g}" + (
            " (past the tolerance within the noise floor)" if result.noise else "")
    except _Stop as s:
        result.status, result.stage, result.detail = s.status, s.stage, s.detail
    result.seconds = time.monotonic() - start
    return result


# A failing output is held against the program's own sensitivity to
# rounding: its relative change when every floating input moves by a random
# relative step -- 2^-20 for fp32 outputs (about 16 ulp of f32, what a few
# roundings per element amount to), the unit roundoff of the coarsest half
# type for outputs computed from half-precision values (2^-9 with bf16,
# 2^-12 with f16 only). Sums that cancel (0.005 from terms near 0.5) amplify
# any f32 kernel's rounding past 1e-5 relative, and a bf16 intermediate that
# a candidate stores and reads back (a row max, rounded by 2^-9, under an
# exp) shifts a result past 1e-2, however the kernel is written. Within
# NOISE_FACTOR times that change, and never past the cap, an output is not
# counted as wrong.
#
# Inputs are not the only values a kernel rounds: an intermediate computed
# from iota or constants (t1 = sum t^2 = 650 beside x ~ 1 in t1 - (x + t1),
# fuzzer seed 300980: 2.5e-5 off in every f32 candidate) moves no input, and
# an output that is exactly 0 (the variance of a constant column, seed
# 300160) is 1e-31 in float64 -- the rounding of the mean -- so any kernel's
# result is "relative error 1" against it. The second floor, rounding_floor,
# moves every value the program rounds (arithmetic, casts, sums,
# contractions) by NOISE_ROUNDING times its dtype's unit roundoff -- 4, so
# that a sum's or a dot's accumulated rounding (a tree of log2 n levels) is
# covered -- and a failing output is held against the larger of the two
# floors. Only outputs held to the fp32 tolerance get it: the emitter
# computes half-precision values in f32 (rounding to f16/bf16 only where a
# value is stored, which the input floor at the half step already models),
# so every half node rounded at 4 x 2^-8 would excuse anything under
# NOISE_CAP_HALF. An output whose rounding floor is NOISE_ZERO or more
# (rounding alone changes it by half or more: it is numerically zero, its
# norm is rounding) is not held to the cap: within NOISE_FACTOR times that
# floor its error is rounding of the same size, however large relative to a
# norm of 1e-31. A floor that is not finite (a perturbed value left a
# function's domain) excuses nothing.
NOISE_STEP = 2.0 ** -20
NOISE_FACTOR = 10.0
NOISE_CAP = 1e-3
NOISE_CAP_HALF = 5e-2
NOISE_ROUNDING = 4.0
NOISE_ROUNDING_DRAWS = 3
NOISE_ZERO = 0.5


def half_step(text: str) -> float:
    """The unit roundoff of the coarsest half-precision type in the program."""
    return 2.0 ** -9 if re.search(r"\bbf16\b", text) else 2.0 ** -12


def _trial_inputs(text: str, seed: int) -> dict:
    """The inputs of trial seed `seed`, rounded to their dtypes as the check does."""
    from . import _core

    dtypes = check._input_dtypes(text)
    return {n: check.round_to(v, dtypes.get(n, "f64")) for n, v in _core.random_inputs(text, seed).items()}


@functools.lru_cache(maxsize=4)
def _reference(text: str, seed: int) -> tuple:
    """The inputs of trial seed `seed` and the reference interpreter's
    outputs on them; the noise checks of one failing trial share them (not
    to be modified)."""
    from . import _core

    inputs = _trial_inputs(text, seed)
    return inputs, _core.evaluate(text, seed=seed, blocks={}, inputs=inputs)


def noise_floor(text: str, seed: int, draws: int = 3, step: float = NOISE_STEP) -> dict:
    """Each output's relative change under random relative input
    perturbations of `step` (the largest over `draws` draws), on the inputs
    of trial seed `seed`."""
    import numpy as np

    from . import _core

    dtypes = check._input_dtypes(text)
    inputs, want = _reference(text, seed)
    floating = {n for n, d in dtypes.items() if d in ("f16", "bf16", "f32", "f64")}
    rng = np.random.default_rng(seed)
    floor = {name: 0.0 for name in want}
    for _ in range(draws):
        moved = {n: (v * (1 + step * rng.uniform(-1, 1, np.shape(v))) if n in floating else v)
                 for n, v in inputs.items()}
        got = _core.evaluate(text, seed=seed, blocks={}, inputs=moved)
        for name in floor:
            floor[name] = max(floor[name], check.relative_error(np.asarray(got[name]), np.asarray(want[name])))
    return floor


def rounding_floor(text: str, seed: int, draws: int = NOISE_ROUNDING_DRAWS,
                   scale: float = NOISE_ROUNDING) -> dict:
    """Each output's relative change when every rounded value of the program
    (arithmetic, casts, sums, contractions) moves by a random relative
    `scale` times its dtype's unit roundoff (the largest over `draws` draws),
    on the inputs of trial seed `seed`."""
    import numpy as np

    from . import _core

    inputs, want = _reference(text, seed)
    floor = {name: 0.0 for name in want}
    for draw in range(draws):
        got = _core.evaluate(text, seed=seed, blocks={}, inputs=inputs, rounding=scale,
                             rounding_seed=seed * draws + draw)
        for name in floor:
            floor[name] = max(floor[name], check.relative_error(np.asarray(got[name]), np.asarray(want[name])))
    return floor


def smallest_normal(text: str, half: bool) -> float:
    """The smallest normal number of an output's dtype: fp16's for half
    outputs of a program with fp16 values, else fp32's (bf16 has fp32's
    exponent range; an f64 output is compared in f64, where this is far
    below any random program's values)."""
    return 2.0 ** -14 if half and re.search(r"\bf16\b", text) else 2.0 ** -126


def _subnormal_outputs(text: str, trial, failing: dict, half: set) -> set:
    """The failing outputs whose reference values are below their dtype's
    normal range as a whole (L2 norm under its smallest normal number) and
    whose error is too: a subnormal value carries fewer bits the smaller it
    is (7e-44 in f32 has 6), and a GPU may flush it to zero, so such an
    output is zero at its dtype's resolution, however large the relative
    error of its few bits (fuzzer seed 908581: gelu deep in its negative
    tail, -3e-45 and -7e-44, 4.5e-2 off)."""
    import numpy as np

    want = _reference(text, trial.seed)[1]
    out = set()
    for name, error in failing.items():
        tiny = smallest_normal(text, name in half)
        norm = float(np.linalg.norm(np.asarray(want[name], dtype=np.float64).ravel()))
        if math.isfinite(error) and norm < tiny and error * norm <= tiny:
            out.add(name)
    return out


def _within_noise(text: str, trial) -> bool:
    """Every failing output of `trial` is within the noise floor of the
    program on that trial's inputs (and under its cap, unless it is
    numerically zero), or zero at its dtype's resolution."""
    failing = {n: e for n, e in trial.errors.items() if not e <= trial.tolerances.get(n, check.TOLERANCE_FP32)}
    if not failing:
        return True
    half = {n for n in failing if trial.tolerances.get(n) == check.TOLERANCE_HALF}
    failing = {n: e for n, e in failing.items() if n not in _subnormal_outputs(text, trial, failing, half)}
    if not failing:
        return True
    # Rounding alone moving an output by half or more makes it numerically
    # zero, whatever its dtype (fuzzer seed 905249: (t0 + 1e-6) - t0 in f16,
    # 1e-6 against the f32 rounding of t0 ~ 10 in the kernel).
    rounding = {n: f for n, f in rounding_floor(text, trial.seed).items() if n in failing and math.isfinite(f)}

    def numerically_zero(name: str, error: float) -> bool:
        r = rounding.get(name, 0.0)
        return r >= NOISE_ZERO and error <= NOISE_FACTOR * r

    if any(not e <= NOISE_CAP_HALF and not numerically_zero(n, e) for n, e in failing.items() if n in half):
        return False
    floors = {}
    if len(half) < len(failing):
        floors.update({n: f for n, f in noise_floor(text, trial.seed).items() if n not in half})
    if half:
        floors.update({n: f for n, f in noise_floor(text, trial.seed, step=half_step(text)).items() if n in half})

    def excused(name: str, error: float) -> bool:
        cap = NOISE_CAP_HALF if name in half else NOISE_CAP
        # A half output's rounding floor is its own roundoff, which the
        # half-step input floor already counts; only a numerically zero one
        # is excused by it.
        r = 0.0 if name in half else rounding.get(name, 0.0)
        if error <= min(cap, NOISE_FACTOR * max(floors.get(name, 0.0), r)):
            return True
        return numerically_zero(name, error)  # no cap

    return all(excused(n, e) for n, e in failing.items())


def _temp_file(text: str, name: str) -> str:
    import tempfile

    fd, path = tempfile.mkstemp(prefix="eqiforge_", suffix="_" + name)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def reproduce_commands(result: Result, config: Config) -> list[str]:
    """Command lines that rebuild the failing program and check it again."""
    gen = " ".join(["eqiforge-opt gen-program --seed", str(result.seed), *config.gen_args])
    cmds = [f"{gen} > seed{result.seed}.eqf"]
    also = ""
    if result.also_tiled:
        cmds.append(f"{gen} --form tiled > seed{result.seed}_tiled.eqf")
        also = f" --also seed{result.seed}_tiled.eqf"
    args, extract_args = list(config.extract_args), ""
    while args:  # options with their values, as --extract-arg=--node-limit=20000
        item = args.pop(0)
        if args and not args[0].startswith("--"):
            item += "=" + args.pop(0)
        extract_args += f" --extract-arg={item}"
    cmds.append(f"python -m eqiforge.check seed{result.seed}.eqf --top {config.top} --seed {result.seed} "
                f"--trials {config.trials}{also}{extract_args}")
    return cmds


# ---- workers -------------------------------------------------------------------------------


def _init_worker() -> None:
    # Triton decides at import whether its kernels are interpreted; the
    # check turns it on before the first import.
    os.environ["TRITON_INTERPRET"] = "1"


def _check_job(job, config: Config) -> dict:
    seed, also_tiled = job
    return asdict(fuzz_one(seed, Config(**{**asdict(config), "also_tiled": also_tiled})))


def _result(outcome: worker_pool.Outcome) -> Result:
    seed, tiled = outcome.job
    if outcome.kind == "done":
        r = Result(**outcome.value)
    elif outcome.kind == "timeout":
        r = Result(seed, "timeout", f"program {outcome.detail}", "run", also_tiled=tiled)
    else:  # a bug in the driver itself, or the worker died: this program's crash
        r = Result(seed, "crash", outcome.detail, "worker", also_tiled=tiled)
    r.seconds = r.seconds or outcome.seconds
    return r


def run(seeds, config: Config, jobs: int = 1, also_tiled_odd: bool = False, report=None):
    """Checks the program of every seed with `jobs` worker processes (a worker
    that dies or overruns config.program_timeout_s is replaced); yields each
    Result as it finishes (not in seed order). `also_tiled_odd`: unite the
    tiled twin for odd seeds (and for all of them under config.also_tiled)."""
    work = [(s, config.also_tiled or (also_tiled_odd and s % 2 == 1)) for s in seeds]
    for outcome in worker_pool.run(work, _check_job, (config,), workers=jobs, timeout_s=config.program_timeout_s,
                                   init=_init_worker):
        yield _result(outcome)


# ---- the command ----------------------------------------------------------------------------------


@dataclass
class Summary:
    counts: dict = field(default_factory=lambda: {s: 0 for s in STATUSES})
    reasons: dict = field(default_factory=dict)   # no-candidate reason -> count
    failures: list = field(default_factory=list)  # Results that are wrong or crashed
    timeouts: list = field(default_factory=list)
    candidates: int = 0
    noise: list = field(default_factory=list)    # seeds ok within the noise floor only
    seconds: float = 0.0

    def add(self, r: Result) -> None:
        self.counts[r.status] += 1
        if r.status == "ok" and r.noise:
            self.noise.append(r.seed)
        self.candidates += r.candidates if r.status in ("ok", "wrong") else 0
        if r.status == "no-candidate":
            key = _first_line(r.detail, 100)
            self.reasons[key] = self.reasons.get(key, 0) + 1
        elif r.status in FAILURES:
            self.failures.append(r)
        elif r.status == "timeout":
            self.timeouts.append(r)

    @property
    def programs(self) -> int:
        return sum(self.counts.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqiforge.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="ci",
                        help="ci: small programs, 200 by default; long: larger ones, 5000 by default")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--count", type=int, help="number of programs (default: the mode's)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--top", type=int, help="candidates checked per program (default: the mode's)")
    parser.add_argument("--trials", type=int, help="trials per candidate (default: the mode's)")
    parser.add_argument("--also-tiled", choices=("never", "odd", "always"),
                        help="unite the generator's tiled twin (default: never in ci, odd seeds in long)")
    parser.add_argument("--extract-arg", action="append", default=[], metavar="ARG",
                        help="one more argument for `eqiforge-opt extract`, e.g. --extract-arg=--target=h100 "
                        "(repeatable)")
    parser.add_argument("--save", metavar="DIR", help="write each failing program to DIR/seed<N>.eqf")
    parser.add_argument("--json", metavar="FILE", help="write every result to FILE (one JSON object a line)")
    parser.add_argument("--quiet", action="store_true", help="print only failures, a line every 50 programs "
                        "and the summary")
    args = parser.parse_args(argv)
    mode = MODES[args.mode]
    config: Config = mode["config"]
    changes = {}
    if args.top is not None:
        changes["top"] = max(1, args.top)
    if args.trials is not None:
        changes["trials"] = max(1, args.trials)
    tiled = args.also_tiled or ("odd" if args.mode == "long" else "never")
    changes["also_tiled"] = tiled == "always"
    changes["extract_args"] = (*config.extract_args, *args.extract_arg)
    config = Config(**{**asdict(config), **changes})
    count = mode["count"] if args.count is None else args.count
    seeds = range(args.seed, args.seed + count)

    try:
        check._emitter()
    except check.CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"fuzz ({args.mode}): seeds {seeds.start}..{seeds.stop - 1}, top {config.top} candidates, "
          f"{config.trials} trials each, {args.jobs} jobs, tiled twin: {tiled}", flush=True)
    summary = Summary()
    start = time.monotonic()
    log = open(args.json, "w") if args.json else None
    try:
        for r in run(seeds, config, args.jobs, also_tiled_odd=tiled == "odd"):
            summary.add(r)
            n = summary.programs
            if r.status in FAILURES:
                print(f"[{n}/{count}] {r.line()}", flush=True)
                for line in r.detail.strip().splitlines()[1:12]:
                    print(f"      {line}")
                if args.save:
                    os.makedirs(args.save, exist_ok=True)
                    path = os.path.join(args.save, f"seed{r.seed}.eqf")
                    with open(path, "w") as f:
                        f.write(f"; fuzz seed {r.seed}: {r.status} [{r.stage}]: {_first_line(r.detail, 200)}\n")
                        f.write(r.program)
            elif not args.quiet:
                print(f"[{n}/{count}] {r.line()}", flush=True)
            elif n % 50 == 0:
                c = summary.counts
                print(f"[{n}/{count}] ok {c['ok']}, no candidate {c['no-candidate']}, wrong {c['wrong']}, "
                      f"crash {c['crash']}, timeout {c['timeout']} ({time.monotonic() - start:.0f} s)", flush=True)
            if log:
                row = asdict(r)
                if r.status not in FAILURES:
                    row.pop("program")
                log.write(json.dumps(row) + "\n")
                log.flush()
    finally:
        if log:
            log.close()
    summary.seconds = time.monotonic() - start
    print_summary(summary, config)
    return 1 if summary.failures else 0


def print_summary(summary: Summary, config: Config) -> None:
    c = summary.counts
    print(f"\n{summary.programs} programs in {summary.seconds:.0f} s: ok {c['ok']} "
          f"({summary.candidates} candidates checked), no candidate {c['no-candidate']}, wrong {c['wrong']}, "
          f"crash {c['crash']}, timeout {c['timeout']}")
    if summary.noise:
        print(f"ok within the noise floor only: seeds {' '.join(map(str, sorted(summary.noise)))}")
    if summary.reasons:
        print("no candidate:")
        for reason, n in sorted(summary.reasons.items(), key=lambda kv: -kv[1]):
            print(f"  {n:5d}  {reason}")
    for r in sorted(summary.timeouts, key=lambda r: r.seed):
        print(f"timeout: seed {r.seed} [{r.stage}] {_first_line(r.detail)}")
    for r in sorted(summary.failures, key=lambda r: r.seed):
        print(f"\nFAIL {r.line()}")
        for cmd in reproduce_commands(r, config):
            print(f"  {cmd}")


if __name__ == "__main__":
    sys.exit(main())
