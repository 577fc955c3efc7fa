"""Check emitted Triton kernels against the reference interpreter.

    python -m eqiforge.check FILE [--seed N] [--small] [--trials T] [--blocks t.0=16,s.0=4]

emits the Triton module of the tiled program in FILE (``eqiforge-opt emit``),
runs it with Triton's interpreter (``TRITON_INTERPRET=1``) on random CPU
tensors, and compares each output with the reference interpreter evaluating
the same program at the same block sizes (``eqiforge._core.evaluate``, float64).
Each trial draws fresh inputs and block sizes from seed + trial: trial 0 uses
the module's default block sizes, later trials random sizes that often do not
divide the extents. The relative L2 error of every output is printed; the exit
status is 1 if any exceeds the tolerance (1e-5 for fp32 programs, 1e-2 when an
input is fp16 or bf16), 2 for a program that cannot be emitted.

``--small`` first re-sizes every dim to a small extent (a few of 3..13, some
not multiples of the block sizes), so paper-sized workloads check in seconds.
The re-sized program is checked against itself, so constants that depend on
extents (a mean's divisor) need no change.

The emitter is the ``eqiforge-opt`` executable: the one named by the
EQIFORGE_OPT environment variable, else the one installed with this Python,
else the one on PATH.
"""

from __future__ import annotations

import argparse
import importlib.util
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

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)


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


# ---- programs ----------------------------------------------------------------------


def resize_small(text: str, seed: int = 0) -> str:
    """The program with every dim re-sized to a small extent (dims that a split
    or merge relates keep theirs: their extents must stay consistent)."""
    match = re.search(r"\(dims((?:\s*\(\s*[^()\s]+\s+\d+\s*\))+)\s*\)", text)
    if not match:
        raise CheckError("--small: no (dims ...) item found")
    layout_dims = set()
    for op in re.finditer(r"\((?:split|merge)\s+([^()\s]+)\s+([^()\s]+)\s+([^()\s]+)", text):
        layout_dims.update(op.groups())
    rng = random.Random(seed)

    def small(m):
        name, extent = m.group(1), int(m.group(2))
        if name in layout_dims or extent <= 1:
            return m.group(0)
        return f"({name} {min(extent, rng.choice(_SMALL_EXTENTS))})"

    body = re.sub(r"\(\s*([^()\s]+)\s+(\d+)\s*\)", small, match.group(1))
    return text[: match.start(1)] + body + text[match.end(1) :]


def _dims(text: str) -> dict:
    match = re.search(r"\(dims((?:\s*\(\s*[^()\s]+\s+\d+\s*\))+)\s*\)", text)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\(\s*([^()\s]+)\s+(\d+)\s*\)", match.group(1))}


def _input_dtypes(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"\(input\s+([^()\s]+)\s+([a-z0-9]+)", text)}


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
    if got.shape != want.shape:
        return math.inf
    if np.isnan(got).any() and not np.isnan(want).any():
        return math.inf
    diff = np.linalg.norm((got - want).ravel())
    scale = np.linalg.norm(want.ravel())
    return float(diff / scale) if scale > 0 else float(diff)


# ---- the check ----------------------------------------------------------------------


def check_program(
    text: str,
    seed: int = 0,
    trials: int = 3,
    blocks: dict | None = None,
    unit_axes: list[str] | None = None,
    source: str = "-",
    module=None,
) -> list[Trial]:
    """Runs the emitted module of `text` against the reference interpreter
    over `trials` trials; returns each trial's block sizes and errors."""
    _interpret()
    import torch

    from . import _core

    try:
        _core.check(text, source)
    except ValueError as e:
        raise CheckError(str(e)) from None
    if module is None:
        module = load_module(emit(text, unit_axes, source))
    dims = _dims(text)
    torch_dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
                    "i32": torch.int32, "bool": torch.bool}
    dtypes = _input_dtypes(text)
    results = []
    for t in range(trials):
        trial_seed = seed + t
        rng = None if t == 0 else random.Random(trial_seed)
        sizes = choose_blocks(_core.axes(text, source), dims, set(module.UNIT_AXES), rng, blocks or {})
        inputs = _core.random_inputs(text, trial_seed, source)
        want = _core.evaluate(text, seed=trial_seed, blocks=sizes, inputs=inputs, file=source)
        kwargs = {param: sizes[axis] for axis, param in module.BLOCK_PARAMS.items()}
        args = [torch.tensor(inputs[name]).to(torch_dtypes[dtypes[name]]) for name in module.INPUTS]
        with np.errstate(all="ignore"):  # padded positions may compute inf/nan; stores mask them
            got = module.forward(*args, **kwargs)
        trial = Trial(trial_seed, sizes)
        for name, value in zip(module.OUTPUTS, got):
            trial.errors[name] = relative_error(value.to(torch.float64).numpy(), want[name])
        results.append(trial)
    return results


def tolerance_for(text: str) -> float:
    half = any(d in ("f16", "bf16") for d in _input_dtypes(text).values())
    return TOLERANCE_HALF if half else TOLERANCE_FP32


def _parse_blocks(text: str | None) -> dict:
    out = {}
    for item in (text or "").replace(",", " ").split():
        axis, _, size = item.partition("=")
        if not size.isdigit() or int(size) < 1:
            raise CheckError(f"--blocks expects AXIS=N items such as t.0=16, got '{item}'")
        out[axis] = int(size)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqiforge.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="a type-checked tiled program (IR text)")
    parser.add_argument("--seed", type=int, default=0, help="seed of inputs and block sizes (default 0)")
    parser.add_argument("--trials", type=int, default=3, help="number of trials (default 3)")
    parser.add_argument("--small", action="store_true", help="re-size every dim to a small extent first")
    parser.add_argument("--blocks", help="fixed block sizes, e.g. t.0=16,s.0=4 (others vary by trial)")
    parser.add_argument("--unit-axes", help="axes fixed to block size 1, comma-separated, or none")
    args = parser.parse_args(argv)
    try:
        with open(args.file) as f:
            text = f.read()
        if args.small:
            text = resize_small(text, args.seed)
        units = None
        if args.unit_axes is not None:
            units = [] if args.unit_axes == "none" else args.unit_axes.split(",")
        tol = tolerance_for(text)
        trials = check_program(text, args.seed, max(args.trials, 1), _parse_blocks(args.blocks), units, args.file)
    except (CheckError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"check {args.file}: {len(trials)} trials, tolerance {tol:g}" + (" (small dims)" if args.small else ""))
    worst = 0.0
    for t in trials:
        blocks = " ".join(f"{a}={b}" for a, b in t.blocks.items()) or "-"
        errors = "  ".join(f"{name} {err:.3g}" for name, err in t.errors.items())
        print(f"  seed {t.seed}  blocks {blocks}:  {errors}")
        worst = max(worst, t.max_error)
    ok = worst <= tol
    print(f"{'ok' if ok else 'FAIL'}: largest relative error {worst:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
