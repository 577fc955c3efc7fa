"""Check emitted Triton kernels against the reference interpreter.

    python -m eqiforge.check FILE [--seed N] [--small] [--trials T] [--blocks t.0=16,s.0=4]
    python -m eqiforge.check FILE --top K [--also TILED.eqf ...] [--rules SET] [--extract-arg ARG ...]

emits the Triton module of the program in FILE (``eqiforge-opt emit``), as
written or, with ``--top K``, of each of the K best candidates that extraction
ranks for it (``eqiforge-opt extract --json --programs``), runs each module
with Triton's interpreter (``TRITON_INTERPRET=1``) on random CPU tensors, and
compares each output with the reference interpreter (``eqiforge._core.evaluate``,
float64): the program itself at the same block sizes, or, for candidates, the
program in FILE. Each trial draws fresh inputs and block sizes from
seed + trial: trial 0 uses the module's default block sizes, later trials
random sizes that often do not divide the extents. The relative L2 error of
every output is printed; the exit status is 1 if any exceeds its tolerance, 2
for a program that cannot be extracted, emitted or run. The tolerance is 1e-5,
or 1e-2 for an output computed from an fp16 or bf16 value (a half-precision
input or a cast to half precision on its way). The reference is rounded to
each output's dtype first: a kernel can store nothing closer, and a tiny
half-precision result (a subnormal) would otherwise differ from the float64
value by more than any tolerance.

Extraction takes the options of ``eqiforge-opt extract``: ``--also FILE``
(an equivalent program united with FILE's e-graph, e.g. a hand-tiled form),
``--rules SET`` (``none``: no saturation, so extraction finishes at once on
the united programs) and any other through ``--extract-arg``, e.g.
``--extract-arg=--time-limit=30 --extract-arg=--order=bfs``.

``--small`` first re-sizes every dim to a small extent (a few of 3..13, some
not multiples of the block sizes), so paper-sized workloads check in seconds.
The re-sized program is checked against itself, so constants that depend on
extents (a mean's divisor) need no change; ``--also`` programs get the same
extents.

The emitter is the ``eqiforge-opt`` executable: the one named by the
EQIFORGE_OPT environment variable, else the one installed with this Python,
else the one on PATH.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .runtime.tuner import DIMS_ITEM, program_dims

TOLERANCE_FP32 = 1e-5
TOLERANCE_HALF = 1e-2

_SMALL_EXTENTS = (3, 5, 6, 7, 9, 10, 11, 13)


class CheckError(Exception):
    """The program could not be emitted or run (not a numerical mismatch)."""


@dataclass
class Trial:
    seed: int
    blocks: dict  # axis name -> block size, unit axes included
    errors: dict = field(default_factory=dict)  # output name -> relative L2 error
    tolerances: dict = field(default_factory=dict)  # output name -> its tolerance
    forms: dict = field(default_factory=dict)  # the module's LAUNCH_FORMS switched on (name -> True)

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)

    @property
    def ok(self) -> bool:
        """Every output within its tolerance (NaN errors are inf: never ok)."""
        return all(err <= self.tolerances.get(name, TOLERANCE_FP32) for name, err in self.errors.items())


# ---- emitting and loading ---------------------------------------------------------


def _emitter() -> str:
    exe = os.environ.get("EQIFORGE_OPT")
    if not exe:  # where `pip install .` puts it: this interpreter's scripts folder, else PATH
        here = os.path.join(sysconfig.get_path("scripts"), "eqiforge-opt")
        exe = here if os.path.exists(here) else shutil.which("eqiforge-opt")
    if not exe:
        raise CheckError("cannot find eqiforge-opt: put it on PATH or set EQIFORGE_OPT to its path")
    return exe


def emit(text: str, unit_axes: list[str] | None = None, source: str = "-") -> str:
    """The Triton module of a tiled program, as Python source text."""
    cmd = [_emitter(), "emit", "-"]
    if unit_axes is not None:
        cmd += ["--unit-axes", ",".join(unit_axes) if unit_axes else "none"]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckError(done.stderr.strip().replace("<stdin>", source))
    return done.stdout


def load_module(source: str, name: str = "eqiforge_kernels"):
    """Imports module text through a temporary file (Triton's JIT reads the
    source of its kernels, so they must live in a real file). Kernels are
    interpreted when TRITON_INTERPRET=1 was set before triton was imported."""
    directory = tempfile.mkdtemp(prefix="eqiforge_check_")
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _interpret():
    """Turns on Triton's interpreter. Triton decides at import time whether its
    library functions (tl.cdiv, tl.sum, ...) are interpreted, so it must not
    have been imported without TRITON_INTERPRET=1."""
    os.environ["TRITON_INTERPRET"] = "1"
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.cdiv, InterpretedFunction):
        raise CheckError("triton was imported before TRITON_INTERPRET=1 was set; set it before importing triton")
    _scalar_index_compat()
    _bf16_dot_compat()
    _bf16_rounding_compat()


def _scalar_index_compat():
    """Triton 3.6's interpreter holds a scalar as a one-element array and turns
    it into a Python int with int(array), which NumPy 2 refuses: every loop
    bounded by a runtime value (`range(0, tl.cdiv(T, BLOCK_T))`) then fails.
    Newer interpreters squeeze the array first; give older ones the same."""
    from triton.runtime import interpreter

    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "_eqiforge_compat", False):
        return
    try:
        if "int(self.handle.data)" not in inspect.getsource(patch):
            return
    except (OSError, TypeError):
        return

    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patched._eqiforge_compat = True
    interpreter._patch_lang_tensor = patched


def _bf16_dot_compat():
    """Triton's interpreter (3.9 and older) holds bf16 tensors as uint16 and
    multiplies those integers in tl.dot: a bf16 matmul computes garbage
    (1e10 for products of numbers near 1), where the GPU multiplies the
    values. Give its dot bf16 operands as float32 (exact; the GPU accumulates
    in float32 too). The emitter keeps bf16 operands for the tensor cores."""
    from triton.runtime import interpreter
    import triton.language as tl

    builder = getattr(interpreter, "InterpreterBuilder", None)
    dot = getattr(builder, "create_dot", None)
    convert = getattr(interpreter, "_convert_float", None)
    if dot is None or convert is None or getattr(dot, "_eqiforge_compat", False):
        return

    def as_f32(h):
        if h.dtype.scalar != tl.bfloat16:
            return h
        return interpreter.TensorHandle(convert(h.data, tl.bfloat16, tl.float32, None).view(np.float32),
                                        tl.float32)

    def patched(self, a, b, d, input_precision, max_num_imprecise_acc):
        return dot(self, as_f32(a), as_f32(b), d, input_precision, max_num_imprecise_acc)

    patched._eqiforge_compat = True
    builder.create_dot = patched


def _bf16_rounding_compat():
    """Triton's interpreter (3.9 and older) converts float32 to bf16 by
    dropping the low mantissa bits (cast_impl, which `.to` without a
    rounding mode reaches through create_fp_trunc): it
    rounds toward zero, where the GPU (and PyTorch) round to nearest even.
    The bias adds up: a sum of bf16-stored squares came out 1.4% off (fuzzer
    seed 407200) where eager's bf16 is 0.2-0.4% off. Round to nearest even, as
    the GPU does, through PyTorch's conversion."""
    from triton.runtime import interpreter
    import torch
    import triton.language as tl

    builder = getattr(interpreter, "InterpreterBuilder", None)
    cast = getattr(builder, "cast_impl", None)  # what create_fp_trunc calls
    if cast is None or getattr(cast, "_eqiforge_compat", False):
        return

    def patched(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            values = torch.from_numpy(np.ascontiguousarray(src.data, dtype=np.float32))
            bits = values.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            return interpreter.TensorHandle(bits.reshape(np.shape(src.data)), tl.bfloat16)
        return cast(self, src, dst_type)

    patched._eqiforge_compat = True
    builder.cast_impl = patched


# ---- programs ----------------------------------------------------------------------


def small_extents(text: str, seed: int = 0, others: tuple = ()) -> dict:
    """Small extents for the dims of `text` (dims that a split or merge relates,
    in it or in `others`, keep theirs: their extents must stay consistent)."""
    if not DIMS_ITEM.search(text):
        raise CheckError("--small: no (dims ...) item found")
    layout_dims = set()
    for t in (text, *others):
        for op in re.finditer(r"\((?:split|merge)\s+([^()\s]+)\s+([^()\s]+)\s+([^()\s]+)", t):
            layout_dims.update(op.groups())
    rng = random.Random(seed)
    out = {}
    for name, extent in program_dims(text).items():
        if name not in layout_dims and extent > 1:
            out[name] = min(extent, rng.choice(_SMALL_EXTENTS))
    return out


def with_extents(text: str, extents: dict) -> str:
    """The program with the dims named in `extents` re-sized (a dim declared
    with another's name follows that one)."""
    match = DIMS_ITEM.search(text)
    if not match:
        raise CheckError("--small: no (dims ...) item found")

    def resize(m):
        name = m.group(1)
        return f"({name} {extents[name]})" if name in extents else m.group(0)

    body = re.sub(r"\(\s*([^()\s]+)\s+(\d+)\s*\)", resize, match.group(1))
    return text[: match.start(1)] + body + text[match.end(1) :]


def resize_small(text: str, seed: int = 0) -> str:
    """The program with every dim re-sized to a small extent (dims that a split
    or merge relates keep theirs: their extents must stay consistent)."""
    return with_extents(text, small_extents(text, seed))


def _input_dtypes(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"\(input\s+([^()\s]+)\s+([a-z0-9]+)", text)}


_HALF = ("f16", "bf16")


def _items(text: str) -> list:
    """The program's items as nested lists of atoms (layouts `[..]` too)."""
    tokens = re.findall(r"[()\[\]]|[^\s()\[\]]+", re.sub(r";[^\n]*", "", text))
    stack = [[]]
    for tok in tokens:
        if tok in "([":
            stack.append([])
        elif tok in ")]":
            if len(stack) < 2:
                raise CheckError("unbalanced brackets in the program text")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or not stack[0] or not isinstance(stack[0][0], list):
        raise CheckError("expected one (program ...) form")
    return [i for i in stack[0][0] if isinstance(i, list) and i]


def output_tolerances(text: str) -> dict:
    """Each output's tolerance: TOLERANCE_HALF if its value depends on an
    fp16/bf16 value (a half-precision input, or a cast to f16/bf16 on the way
    from the inputs), else TOLERANCE_FP32."""
    half_inputs = {n for n, d in _input_dtypes(text).items() if d in _HALF}
    lets, half = {}, {}

    def depends_on_half(expr) -> bool:
        if isinstance(expr, str):
            if expr in half_inputs or expr in _HALF:  # an input, or a cast's dtype
                return True
            if expr in lets:
                if expr not in half:
                    half[expr] = False  # names are defined before use: no cycles
                    half[expr] = depends_on_half(lets[expr])
                return half[expr]
            return False
        return any(depends_on_half(e) for e in expr)

    out = {}
    for item in _items(text):
        if item[0] == "let" and len(item) == 3:
            lets[item[1]] = item[2]
        elif item[0] == "output" and len(item) >= 3:
            out[item[1]] = TOLERANCE_HALF if depends_on_half(item[-1]) else TOLERANCE_FP32
    return out


def _output_dtypes(text: str) -> dict:
    """Each output's dtype, from the type checker ("f16[m k]" -> "f16")."""
    from . import _core

    return {name: t.split("[", 1)[0].strip() for name, t in _core.check(text)}


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded to a floating dtype, back in float64 (other
    dtypes unchanged)."""
    import torch

    to = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}.get(dtype)
    if to is None:
        return values
    return torch.from_numpy(np.ascontiguousarray(values)).to(to).to(torch.float64).numpy()


def _split_size(axis: str, blocks: dict, dims: dict) -> int | None:
    """What an axis splits: its dim's extent at level 0, else the outer block
    (None while that is not known yet, e.g. a collected dim's count)."""
    dim, level = axis.rsplit(".", 1)
    level = int(level)
    if level > 0:
        return blocks.get(f"{dim}.{level - 1}")
    if dim in dims:
        return dims[dim]
    if dim.startswith("c_"):  # c_<axis>: the number of blocks of that axis
        inner = dim[2:]
        if inner in blocks:
            return math.ceil(_split_size(inner, blocks, dims) / blocks[inner])
    return None


def choose_blocks(axes: list, dims: dict, unit_axes, rng: random.Random | None, given: dict) -> dict:
    """Block sizes for every axis: given ones, 1 for unit axes, the module's
    defaults (rng None) or random sizes in [1, what the axis splits]."""
    blocks = {}
    pending = list(axes)
    while pending:
        later = []
        for a in pending:
            size = _split_size(a, blocks, dims)
            if size is None:
                later.append(a)
            elif a in given:
                blocks[a] = given[a]
            elif a in unit_axes:
                blocks[a] = 1
            elif rng is None:
                blocks[a] = min(1 << max(size - 1, 0).bit_length(), 64) if a.endswith(".0") else max(1, size // 2)
            else:
                blocks[a] = rng.randint(1, size)
        if len(later) == len(pending):
            raise CheckError(f"cannot size axis {later[0]}")
        pending = later
    return blocks


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| (L2). Positions where both hold the same
    value -- equal infinities (an f16 result past 65504) and NaN against NaN
    included -- count as no difference; any other infinity or NaN in either
    is an infinite error."""
    if got.shape != want.shape:
        return math.inf
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    differ = ~same
    if not (np.isfinite(got[differ]).all() and np.isfinite(want[differ]).all()):
        return math.inf
    diff = np.linalg.norm((got[differ] - want[differ]).ravel())
    scale = np.linalg.norm(want[np.isfinite(want)].ravel())
    err = float(diff / scale) if scale > 0 else float(diff)
    return math.inf if math.isnan(err) else err  # NaN must not pass a `<=` nor vanish in max()


# ---- the check ----------------------------------------------------------------------


def check_program(
    text: str,
    seed: int = 0,
    trials: int = 3,
    blocks: dict | None = None,
    unit_axes: list[str] | None = None,
    source: str = "-",
    module=None,
    reference: str | None = None,
) -> list[Trial]:
    """Runs the emitted module of `text` against the reference interpreter
    over `trials` trials; returns each trial's block sizes and errors. The
    reference is `text` itself at the same block sizes, or the program
    `reference` (e.g. the naive program a candidate was extracted from) on the
    same inputs."""
    _interpret()
    import torch

    from . import _core

    try:
        _core.check(text, source)
    except ValueError as e:
        raise CheckError(str(e)) from None
    if module is None:
        module = load_module(emit(text, unit_axes, source))
    dims = program_dims(text)
    torch_dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
                    "i32": torch.int32, "bool": torch.bool}
    dtypes = _input_dtypes(text)
    # Tolerances and output dtypes of the program whose values are the
    # reference (a candidate's reference is the program it was extracted
    # from: the same outputs, names and dtypes).
    ref_text = text if reference is None else reference
    tolerances = output_tolerances(ref_text)
    out_dtypes = _output_dtypes(ref_text)
    results = []
    for t in range(trials):
        trial_seed = seed + t
        rng = None if t == 0 else random.Random(trial_seed)
        sizes = choose_blocks(_core.axes(text, source), dims, set(module.UNIT_AXES), rng, blocks or {})
        # The values the kernel gets: the reference computes on the same
        # (a bf16 pair that rounds to one value must not compare differently).
        inputs = {n: round_to(v, dtypes.get(n, "f64"))
                  for n, v in _core.random_inputs(text, trial_seed, source).items()}
        if reference is None:
            want = _core.evaluate(text, seed=trial_seed, blocks=sizes, inputs=inputs, file=source)
        else:
            ref_axes = set(_core.axes(reference))
            ref_blocks = {a: b for a, b in sizes.items() if a in ref_axes}
            want = _core.evaluate(reference, seed=trial_seed, blocks=ref_blocks, inputs=inputs)
        kwargs = {param: sizes[axis] for axis, param in module.BLOCK_PARAMS.items()}
        args = [torch.tensor(inputs[name]).to(torch_dtypes[dtypes[name]]) for name in module.INPUTS]
        # Every form of the kernels on the same inputs: the default, then each
        # of the module's LAUNCH_FORMS switched on.
        for forms in [{}] + [{name: True} for name in getattr(module, "LAUNCH_FORMS", ())]:
            with np.errstate(all="ignore"):  # padded positions may compute inf/nan; stores mask them
                got = module.forward(*args, **kwargs, **forms)
            trial = Trial(trial_seed, sizes, forms=forms)
            for name, value in zip(module.OUTPUTS, got):
                expected = round_to(want[name], out_dtypes.get(name, "f64"))
                trial.errors[name] = relative_error(value.to(torch.float64).numpy(), expected)
                trial.tolerances[name] = tolerances.get(name, TOLERANCE_FP32)
            results.append(trial)
    return results


def tolerance_for(text: str) -> float:
    """The largest of the outputs' tolerances (output_tolerances)."""
    return max(output_tolerances(text).values(), default=TOLERANCE_FP32)


def _parse_blocks(text: str | None) -> dict:
    out = {}
    for item in (text or "").replace(",", " ").split():
        axis, _, size = item.partition("=")
        if not size.isdigit() or int(size) < 1:
            raise CheckError(f"--blocks expects AXIS=N items such as t.0=16, got '{item}'")
        out[axis] = int(size)
    return out


# ---- candidates ----------------------------------------------------------------------


@dataclass
class Candidate:
    rank: int
    program: str            # the candidate's program text
    estimate_us: float | None = None
    kernels: list = field(default_factory=list)  # "name grid [..] loops [..]"


def extract(text: str, top: int, extract_args: list[str] | None = None, source: str = "-") -> list[Candidate]:
    """The `top` best candidates that `eqiforge-opt extract` ranks for `text`
    (fewer when extraction finds fewer), with their programs."""
    cmd = [_emitter(), "extract", "-", "--json", "--programs", "--top", str(top), *(extract_args or [])]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckError(done.stderr.strip().replace("<stdin>", source))
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise CheckError(f"eqiforge-opt extract printed no JSON object: {e}") from None
    out = []
    for c in report.get("candidates", []):
        kernels = [f"{k['name']} grid [{' '.join(k['grid'])}] loops [{' '.join(k['loops'])}]"
                   for k in c.get("kernels", [])]
        out.append(Candidate(c["rank"], c["program"], c.get("estimated_us"), kernels))
    return out


def estimate(text: str, blocks: dict | None = None, target: str | None = None, opt: str | None = None,
             source: str = "-") -> dict:
    """`eqiforge-opt estimate --json` of the tiled program `text`: at the
    block sizes `blocks` ({axis: block}), else at the cost model's best.
    `opt`: the eqiforge-opt to run (default: the one extract runs)."""
    cmd = [opt or _emitter(), "estimate", "-", "--json"]
    if target:
        cmd += ["--target", target]
    for axis, b in (blocks or {}).items():
        cmd += ["--block", f"{axis}={b}"]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckError(done.stderr.strip().replace("<stdin>", source))
    return json.loads(done.stdout)


def check_candidates(
    text: str,
    top: int,
    extract_args: list[str] | None = None,
    seed: int = 0,
    trials: int = 3,
    blocks: dict | None = None,
    unit_axes: list[str] | None = None,
    source: str = "-",
) -> list[tuple[Candidate, list[Trial]]]:
    """Extracts the `top` best candidates of `text` and checks each emitted
    module against the reference interpreter evaluating `text`."""
    candidates = extract(text, top, extract_args, source)
    if not candidates:
        raise CheckError(f"{source}: extraction found no candidate")
    results = []
    for c in candidates:
        where = f"{source} (candidate {c.rank})"
        results.append((c, check_program(c.program, seed, trials, blocks, unit_axes, where, reference=text)))
    return results


def _still_equivalent(text: str, also: list[str], names: list[str]) -> None:
    """Re-sized --also programs must still compute FILE's outputs: a constant
    that depends on an extent (a mean's divisor written as a number) does not
    follow the re-sizing, and extraction would then unite programs that differ."""
    from . import _core

    for t, name in zip(also, names):
        try:
            err = _core.equiv(text, t, seed=0, trials=2)
        except ValueError as e:
            raise CheckError(f"--small: {name} re-sized: {e}") from None
        if not err <= _core.TOLERANCE:
            raise CheckError(f"--small: {name} is not equivalent to the program any more once re-sized "
                             f"(relative error {err:.3g}): a constant depends on an extent; check without --small")


def _print_trials(trials: list[Trial], indent: str) -> tuple[float, bool]:
    """Prints each trial; returns the largest error and whether all passed."""
    worst, ok = 0.0, True
    for t in trials:
        blocks = " ".join([f"{a}={b}" for a, b in t.blocks.items()] + list(t.forms)) or "-"
        errors = "  ".join(f"{name} {err:.3g}" + ("" if err <= t.tolerances.get(name, TOLERANCE_FP32) else " (FAIL)")
                           for name, err in t.errors.items())
        print(f"{indent}seed {t.seed}  blocks {blocks}:  {errors}")
        worst = max(worst, t.max_error)
        ok = ok and t.ok
    return worst, ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eqiforge.check",
        description=__doc__.split("\n\n")[0],
        epilog="With --top, FILE is usually the naive program; --also, --rules and --extract-arg go to "
        "`eqiforge-opt extract` (see `eqiforge-opt extract --help`).",
    )
    parser.add_argument("file", help="a type-checked program (IR text)")
    parser.add_argument("--seed", type=int, default=0, help="seed of inputs and block sizes (default 0)")
    parser.add_argument("--trials", type=int, default=3, help="number of trials (default 3)")
    parser.add_argument("--small", action="store_true", help="re-size every dim to a small extent first")
    parser.add_argument("--blocks", help="fixed block sizes, e.g. t.0=16,s.0=4 (others vary by trial)")
    parser.add_argument("--unit-axes", help="axes fixed to block size 1, comma-separated, or none")
    parser.add_argument("--top", type=int, metavar="K",
                        help="check the K best candidates of FILE's extraction instead of FILE as written")
    parser.add_argument("--also", action="append", default=[], metavar="FILE",
                        help="with --top: an equivalent program united with FILE's e-graph (repeatable)")
    parser.add_argument("--rules", metavar="SET",
                        help="with --top: saturation rules (default: the library's schedule; none: no saturation)")
    parser.add_argument("--extract-arg", action="append", default=[], metavar="ARG",
                        help="with --top: one more argument for `eqiforge-opt extract`, "
                        "e.g. --extract-arg=--time-limit=30 (repeatable)")
    args = parser.parse_args(argv)
    if args.top is None and (args.also or args.rules or args.extract_arg):
        parser.error("--also, --rules and --extract-arg need --top K")
    if args.top is not None and args.top < 1:
        parser.error("--top expects a positive number of candidates")
    units = None
    if args.unit_axes is not None:
        units = [] if args.unit_axes == "none" else args.unit_axes.split(",")
    try:
        with open(args.file) as f:
            text = f.read()
        also = []
        for path in args.also:
            with open(path) as f:
                also.append(f.read())
        if args.small:
            extents = small_extents(text, args.seed, tuple(also))
            text = with_extents(text, extents)
            also = [with_extents(t, extents) for t in also]
            _still_equivalent(text, also, args.also)
        tol = tolerance_for(text)
        blocks = _parse_blocks(args.blocks)
        trials = max(args.trials, 1)
        if args.top is None:
            results = [(None, check_program(text, args.seed, trials, blocks, units, args.file))]
        else:
            with tempfile.TemporaryDirectory(prefix="eqiforge_check_") as tmp:
                extract_args = []
                for i, t in enumerate(also):  # re-sized copies under --small
                    path = os.path.join(tmp, f"also{i}.eqf") if args.small else args.also[i]
                    if args.small:
                        with open(path, "w") as f:
                            f.write(t)
                    extract_args += ["--also", path]
                if args.rules:
                    extract_args += ["--rules", args.rules]
                extract_args += args.extract_arg
                results = check_candidates(text, args.top, extract_args, args.seed, trials, blocks, units,
                                           args.file)
    except (CheckError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    small = " (small dims)" if args.small else ""
    worst, ok = 0.0, True
    tols = output_tolerances(text)
    if len(set(tols.values())) > 1:
        half = " ".join(sorted(n for n, t in tols.items() if t == TOLERANCE_HALF))
        tol_text = f"tolerance {TOLERANCE_FP32:g}, {TOLERANCE_HALF:g} for {half} (half precision)"
    else:
        tol_text = f"tolerance {tol:g}"
    if args.top is None:
        print(f"check {args.file}: {trials} trials, {tol_text}{small}")
        worst, ok = _print_trials(results[0][1], "  ")
    else:
        found = f"{len(results)} of the top {args.top} candidates" if len(results) < args.top else \
            f"top {len(results)} candidate" + ("s" if len(results) > 1 else "")
        print(f"check {args.file}: {found}, {trials} trials each, {tol_text}{small}")
        for c, ts in results:
            est = f"{c.estimate_us:.2f} us estimated" if c.estimate_us is not None else "no estimate"
            print(f"  candidate {c.rank} ({est}): " + "; ".join(c.kernels))
            err, passed = _print_trials(ts, "    ")
            print(f"    {'ok' if passed else 'FAIL'}: candidate {c.rank}, largest relative error {err:.3g}")
            worst, ok = max(worst, err), ok and passed
    print(f"{'ok' if ok else 'FAIL'}: largest relative error {worst:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
