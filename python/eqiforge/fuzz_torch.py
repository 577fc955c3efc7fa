"""The front-end fuzzer: random PyTorch programs through ``eqiforge.optimize``,
checked against eager PyTorch.

    python -m eqiforge.fuzz_torch [--mode ci|long] [--seed S] [--count N] [--save DIR]

For each seed S, S+1, ..., S+N-1:

1. ``generate(S)`` draws a small random PyTorch program -- a plain Python
   function over torch tensors, written to a file of its own so that the
   front end's errors can quote its lines -- from the operators the front end
   translates (``frontend/ops.py``): matmul / ``@`` / ``F.linear`` /
   ``addmm`` / ``bmm``, pointwise arithmetic with broadcasting and Python
   numbers, exp / log / sqrt / rsqrt / sigmoid / silu / tanh / gelu / ...,
   sum / mean / amax / amin / max / var / std / norms with ``keepdim``,
   softmax and log-softmax, layer norm and RMS norm (the functions and the
   chains written out), attention (``scaled_dot_product_attention`` and the
   written-out form with a causal mask), reshape / view / flatten /
   unflatten / transpose / permute / unsqueeze / squeeze / expand, casts
   between float32, float16 and bfloat16, comparisons, ``torch.where``,
   ``masked_fill``, ``tril`` / ``triu`` and ``arange``; and a few operators
   PyTorch may decompose into those (softplus, elu, logsumexp, normalize,
   ...). Extents are small, odd and prime as well as powers of two; values
   are kept finite (magnitudes are tracked and rescaled, log / sqrt /
   division get positive operands). A fraction of the programs use one
   operator the IR cannot express (cumsum, sort, a partial slice, argmax,
   ...): the front end must refuse those with an error naming the operator
   and the program's line. Everything depends on the seed only.
2. ``eqiforge.optimize(fn, *example_inputs, cache=False, top_k=K, ...)`` on
   CPU tensors (the candidates run in Triton's interpreter).
3. The returned program and every other candidate the search handed to the
   tuner (their modules loaded as the tuner loads them, at the block sizes of
   their estimate and at random power-of-two sizes the GPU tuner could pick)
   run on fresh random inputs (never the example inputs, never zeros) and
   are compared with eager PyTorch on the same inputs: the relative L2 error
   of every output at most 1e-5, or 1e-2 for an output computed from an
   fp16/bf16 value (``eqiforge.check``'s tolerances), the same shape and
   dtype. A failing output is not counted as wrong when it is within the
   program's noise floor (``eqiforge.fuzz``'s rule: 10x the output's change
   when the inputs, or every rounded value, move by a unit roundoff, capped),
   evaluated with the reference interpreter on the front end's IR.

Each program ends as one of:

    ok            every output of the optimized program and of every candidate
                  checked within the tolerance
    rejected      the front end refused the program with an eqiforge error that
                  names an operator and the program's source line
    no-candidate  the search found no candidate, or none verified (the reason)
    wrong         the optimized program or a candidate computed other values,
                  shapes or dtypes than eager
    crash         anything else: a raw exception out of optimize, a refusal
                  without the operator or the line, a candidate that did not
                  emit or run, the worker process died
    timeout       the program ran past its time limit

The exit status is 1 if any program is wrong or crashed, else 0. ``--save
DIR`` writes every failing program as ``DIR/seed<N>.py``: a standalone
script that checks the program again when run (``python DIR/seed<N>.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field

from . import check, worker_pool
from .fuzz import NOISE_CAP, NOISE_CAP_HALF, NOISE_FACTOR, NOISE_ROUNDING, NOISE_ROUNDING_DRAWS, NOISE_STEP, \
    NOISE_ZERO, half_step

STATUSES = ("ok", "rejected", "no-candidate", "wrong", "crash", "timeout")
FAILURES = ("wrong", "crash")


@dataclass(frozen=True)
class Config:
    """What a run draws and how hard optimize searches."""

    extents: tuple = (2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13)
    min_ops: int = 2
    max_ops: int = 8
    max_inputs: int = 4
    max_outputs: int = 2
    max_rank: int = 3
    reject_rate: float = 0.06          # share of programs with one operator the IR cannot express
    module_rate: float = 0.35          # share of programs written as an nn.Module with layers and parameters
    half_rate: float = 0.25            # share of inputs in fp16/bf16
    trials: int = 2                    # fresh input draws per program
    top_k: int = 3                     # candidates handed to the tuner, each checked
    node_limit: int = 20000
    search_time_s: float = 5.0
    extract_time_s: float = 10.0
    program_timeout_s: float = 300.0


MODES = {
    # Small programs: about 5-10 s each on one core.
    "ci": dict(count=200, config=Config()),
    # Larger programs, more candidates and trials, rank-4 values.
    "long": dict(count=2000, config=Config(
        extents=(2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17), max_ops=12, max_inputs=5, max_outputs=3,
        max_rank=4, trials=3, top_k=4, node_limit=40000, search_time_s=10.0, extract_time_s=20.0,
        program_timeout_s=600.0)),
}


# ---- the generator ---------------------------------------------------------------------

F32, F16, BF16, BOOL = "float32", "float16", "bfloat16", "bool"
HALF = (F16, BF16)
# Values are rescaled past this magnitude: exp, products and fp16 stay finite.
MAX_MAG = 24.0


@dataclass
class InputSpec:
    """One argument: normal(a, b) (mean, std) or uniform(a, b) (a > 0: positive)."""

    name: str
    shape: tuple
    dtype: str
    dist: str
    a: float
    b: float

    def as_tuple(self) -> tuple:
        return (self.name, tuple(self.shape), self.dtype, self.dist, self.a, self.b)


@dataclass
class Value:
    name: str
    shape: tuple
    dtype: str
    half: bool                  # computed from an fp16/bf16 value (tolerance 1e-2)
    mag: float                  # a bound on |value| for typical inputs
    lb: float | None = None     # every value >= lb > 0 (None: sign unknown)
    leaf: bool = False          # an input or a cast of one: exact in every implementation
    uses: int = 0
    copy: bool = False          # an input under layout ops only (no kernel computes it)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class Program:
    seed: int
    mode: str
    body: list                  # lines of the function's body
    inputs: list                # InputSpec
    outputs: list               # names of the returned values
    half_outputs: tuple         # per output: computed from a half-precision value
    reject: tuple | None = None  # (body index, operator names) of the one operator the IR cannot express
    ops: list = field(default_factory=list)  # the generator's op kinds, for coverage
    # An nn.Module (its layers, parameters and buffers made by these lines of
    # __init__, from torch.manual_seed(seed)) rather than a plain function.
    init: list | None = None

    def source(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        ret = ", ".join(self.outputs)
        head = [
            f'"""eqiforge front-end fuzzer: program of seed {self.seed} (mode {self.mode}).',
            "",
            "Run this file to check it again with eqiforge.optimize against eager PyTorch.",
            '"""',
            "import torch",
            "import torch.nn.functional as F",
            "",
            "",
        ]
        if self.init is None:
            head.append(f"def program({args}):")
            indent, tail = "    ", []
        else:
            head += ["class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()",
                     *[f"        {line}" for line in self.init], "", f"    def forward(self, {args}):"]
            indent, tail = "        ", [f"torch.manual_seed({self.seed})", "program = Model().eval()", "", ""]
        lines = head + [f"{indent}{line}" for line in self.body] + [f"{indent}return {ret}", "", ""] + tail
        reject = None
        if self.reject is not None:
            reject = (len(head) + self.reject[0] + 1, tuple(self.reject[1]))
        lines += [
            "# (name, shape, dtype, distribution, a, b): normal(mean a, std b) or uniform(a, b)",
            "INPUTS = [",
            *[f"    {i.as_tuple()!r}," for i in self.inputs],
            "]",
            "# Outputs computed from an fp16/bf16 value (held to 1e-2, the others to 1e-5).",
            f"HALF_OUTPUTS = {tuple(self.half_outputs)!r}",
            "# (line, operator names) of an operator the front end must refuse, or None.",
            f"REJECT = {reject!r}",
            f"SEED = {self.seed}",
            f"MODE = {self.mode!r}",
            "",
            'if __name__ == "__main__":',
            "    import sys",
            "",
            "    from eqiforge.fuzz_torch import check_file",
            "",
            "    sys.exit(check_file(__file__))",
        ]
        return "\n".join(lines) + "\n"


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def _promote(*dtypes: str) -> str:
    ds = [d for d in dtypes if d != BOOL]
    if not ds:
        return BOOL
    if F32 in ds or (F16 in ds and BF16 in ds):
        return F32
    return ds[0]


def _fmt(x: float) -> str:
    text = repr(float(x))
    return text


_DT = {F32: "torch.float32", F16: "torch.float16", BF16: "torch.bfloat16", BOOL: "torch.bool"}


class _Gen:
    def __init__(self, seed: int, attempt: int, config: Config, mode: str):
        self.rng = random.Random(f"{seed}:{attempt}")
        self.seed, self.config, self.mode = seed, config, mode
        self.body: list[str] = []
        self.inputs: list[InputSpec] = []
        self.values: list[Value] = []
        self.ops: list[str] = []
        self.reject = None
        self.must_output: list[Value] = []
        self.counter = 0
        r = self.rng
        ext = config.extents
        self.dims = [r.choice(ext) for _ in range(5)]
        self.init: list[str] | None = [] if r.random() < config.module_rate else None

    # -- helpers --

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def emit(self, expr: str, shape, dtype, half, mag, lb=None, kind="", leaf=False) -> Value:
        if dtype != BOOL and mag > MAX_MAG:  # rescale: keeps exp, products and fp16 finite
            k = math.ceil(math.log2(mag / 4.0))
            s = 2.0 ** -k
            expr = f"({expr}) * {_fmt(s)}"
            mag, lb = mag * s, (lb * s if lb is not None else None)
        v = Value(self.fresh(), tuple(shape), dtype, half, mag, lb, leaf)
        self.body.append(f"{v.name} = {expr}")
        self.values.append(v)
        if kind:
            self.ops.append(kind)
        return v

    def new_input(self, shape, dtype=None, positive=False, scale=1.0) -> Value:
        r = self.rng
        if dtype is None:
            u = r.random()
            dtype = F16 if u < self.config.half_rate / 2 else BF16 if u < self.config.half_rate else F32
        name = f"x{len(self.inputs)}"
        if positive:
            lo = r.choice((0.25, 0.5, 1.0))
            spec = InputSpec(name, tuple(shape), dtype, "uniform", lo, lo + r.choice((1.0, 2.0)))
            v = Value(name, tuple(shape), dtype, dtype in HALF, spec.b, lo, leaf=True)
        else:
            mean = r.choice((0.0, 0.0, 0.0, 0.5, -0.25))
            spec = InputSpec(name, tuple(shape), dtype, "normal", mean, scale)
            v = Value(name, tuple(shape), dtype, dtype in HALF, abs(mean) + 3.5 * scale, None, leaf=True)
        self.inputs.append(spec)
        self.values.append(v)
        return v

    def member(self, prefix: str, init: str) -> str:
        """A layer, parameter or buffer of the module: `self.<prefix><n>`."""
        name = f"{prefix}{len(self.init)}"
        self.init.append(init.format(name=name))
        return f"self.{name}"

    def pick(self, pred=lambda v: True, fresh_bias=True) -> Value | None:
        cands = [v for v in self.values if v.dtype != BOOL and pred(v)]
        if not cands:
            return None
        weights = [(1 + i) * (3 if v.uses == 0 and fresh_bias else 1) for i, v in enumerate(cands)]
        return self.rng.choices(cands, weights)[0]

    def use(self, *vals) -> None:
        for v in vals:
            if isinstance(v, Value):
                v.uses += 1

    def rand_shape(self, rank: int) -> tuple:
        r = self.rng
        return tuple(r.choice(self.dims) for _ in range(rank))

    def positive(self, a: Value, lb_min: float = 0.05) -> tuple[str, float, float]:
        """An expression of a that is >= lb > 0: (text, mag, lb)."""
        if a.lb is not None and a.lb >= lb_min:
            return a.name, a.mag, a.lb
        r = self.rng
        choice = r.randrange(5 if a.mag <= 4 else 4)
        if choice == 0:
            return f"({a.name} * {a.name} + 0.5)", a.mag * a.mag + 0.5, 0.5
        if choice == 1:
            return f"({a.name}.abs() + 0.25)", a.mag + 0.25, 0.25
        if choice == 2:
            return f"(torch.sigmoid({a.name}) + 0.1)", 1.1, 0.1
        if choice == 3:
            return f"{a.name}.clamp(min=0.125)", max(a.mag, 0.125), 0.125
        return f"torch.exp({a.name})", math.exp(a.mag), math.exp(-a.mag)

    def cast_to(self, a: Value, dtype: str) -> str:
        return a.name if a.dtype == dtype else f"{a.name}.to({_DT[dtype]})"

    # -- op families: each returns True when it emitted something --

    def op_unary(self) -> bool:
        r = self.rng
        a = self.pick()
        if a is None:
            return False
        n, m = a.name, a.mag
        kinds = ["neg", "sigmoid", "silu", "tanh", "gelu", "gelu_tanh", "relu", "abs", "square", "pow3", "leaky",
                 "clamp", "clamp_min", "clamp_max", "hardtanh", "exp", "expm1", "exp2", "pow_base", "log", "log2",
                 "log1p", "sqrt", "rsqrt", "reciprocal", "pow_half"]
        kind = r.choice(kinds)
        if kind in ("exp", "expm1", "exp2", "pow_base") and m > 5:
            kind = "tanh"
        if kind == "pow3" and m > 3:
            kind = "square"
        self.use(a)
        sh, dt, hf = a.shape, a.dtype, a.half
        if kind == "neg":
            return bool(self.emit(r.choice((f"-{n}", f"torch.neg({n})")), sh, dt, hf, m, kind="neg"))
        if kind == "sigmoid":
            return bool(self.emit(r.choice((f"torch.sigmoid({n})", f"{n}.sigmoid()", f"F.sigmoid({n})")), sh, dt, hf,
                                  1.0, 1.0 / (1.0 + math.exp(min(m, 30))), kind="sigmoid"))
        if kind == "silu":
            return bool(self.emit(r.choice((f"F.silu({n})", f"{n} * torch.sigmoid({n})")), sh, dt, hf, m, kind="silu"))
        if kind == "tanh":
            return bool(self.emit(r.choice((f"torch.tanh({n})", f"{n}.tanh()")), sh, dt, hf, 1.0, kind="tanh"))
        if kind == "gelu":
            return bool(self.emit(f"F.gelu({n})", sh, dt, hf, m, kind="gelu"))
        if kind == "gelu_tanh":
            return bool(self.emit(f'F.gelu({n}, approximate="tanh")', sh, dt, hf, m, kind="gelu_tanh"))
        if kind == "relu":
            return bool(self.emit(r.choice((f"torch.relu({n})", f"F.relu({n})", f"{n}.relu()")), sh, dt, hf, m,
                                  kind="relu"))
        if kind == "abs":
            return bool(self.emit(r.choice((f"{n}.abs()", f"torch.abs({n})")), sh, dt, hf, m, kind="abs"))
        if kind == "square":
            return bool(self.emit(r.choice((f"{n} * {n}", f"{n}.square()", f"{n} ** 2", f"torch.pow({n}, 2)")),
                                  sh, dt, hf, m * m, kind="square"))
        if kind == "pow3":
            return bool(self.emit(f"{n} ** 3", sh, dt, hf, m ** 3, kind="pow3"))
        if kind == "leaky":
            return bool(self.emit(f"F.leaky_relu({n}, {r.choice((0.01, 0.1, 0.2))})", sh, dt, hf, m, kind="leaky_relu"))
        if kind == "clamp":
            c = r.choice((0.5, 1.0, 2.0))
            return bool(self.emit(r.choice((f"{n}.clamp({-c}, {c})", f"torch.clamp({n}, min={-c}, max={c})")), sh, dt,
                                  hf, c, kind="clamp"))
        if kind == "clamp_min":
            c = r.choice((-0.5, 0.0, 0.25))
            return bool(self.emit(r.choice((f"{n}.clamp(min={c})", f"torch.clamp_min({n}, {c})")), sh, dt, hf,
                                  max(m, abs(c)), c if c > 0 else None, kind="clamp_min"))
        if kind == "clamp_max":
            c = r.choice((-0.25, 0.0, 0.5))
            return bool(self.emit(r.choice((f"{n}.clamp(max={c})", f"torch.clamp_max({n}, {c})")), sh, dt, hf, m,
                                  kind="clamp_max"))
        if kind == "hardtanh":
            return bool(self.emit(f"F.hardtanh({n})", sh, dt, hf, 1.0, kind="hardtanh"))
        if kind == "exp":
            return bool(self.emit(r.choice((f"torch.exp({n})", f"{n}.exp()")), sh, dt, hf, math.exp(m), math.exp(-m),
                                  kind="exp"))
        if kind == "expm1":
            return bool(self.emit(f"torch.expm1({n})", sh, dt, hf, math.exp(m), kind="expm1"))
        if kind == "exp2":
            return bool(self.emit(f"torch.exp2({n})", sh, dt, hf, 2 ** m, 2 ** -m, kind="exp2"))
        if kind == "pow_base":
            return bool(self.emit(f"torch.pow(2.0, {n})", sh, dt, hf, 2 ** m, 2 ** -m, kind="pow_scalar_base"))
        # positive domains
        p, pm, plb = self.positive(a, 0.05)
        if kind == "log":
            return bool(self.emit(r.choice((f"torch.log({p})", f"{p}.log()")), sh, dt, hf,
                                  max(abs(math.log(plb)), math.log(pm)) + 0.1, kind="log"))
        if kind == "log2":
            return bool(self.emit(f"torch.log2({p})", sh, dt, hf, max(abs(math.log2(plb)), math.log2(pm)) + 0.1,
                                  kind="log2"))
        if kind == "log1p":
            return bool(self.emit(f"torch.log1p({p})", sh, dt, hf, math.log1p(pm), math.log1p(plb), kind="log1p"))
        if kind == "sqrt":
            return bool(self.emit(r.choice((f"torch.sqrt({p})", f"{p}.sqrt()")), sh, dt, hf, math.sqrt(pm),
                                  math.sqrt(plb), kind="sqrt"))
        if kind == "pow_half":
            return bool(self.emit(f"{p} ** 0.5", sh, dt, hf, math.sqrt(pm), math.sqrt(plb), kind="pow_half"))
        if kind == "rsqrt":
            return bool(self.emit(r.choice((f"torch.rsqrt({p})", f"{p}.rsqrt()")), sh, dt, hf, 1 / math.sqrt(plb),
                                  1 / math.sqrt(pm), kind="rsqrt"))
        return bool(self.emit(r.choice((f"torch.reciprocal({p})", f"1.0 / {p}", f"{p}.reciprocal()")), sh, dt, hf,
                              1 / plb, 1 / pm, kind="reciprocal"))

    def other_operand(self, a: Value) -> Value:
        """A value that broadcasts with a: an existing one, or a new input."""
        r = self.rng
        same = self.pick(lambda v: v is not a and _broadcast(v.shape, a.shape) == a.shape)
        if same is not None and r.random() < 0.6:
            return same
        shape = list(a.shape)
        form = r.randrange(4)
        if form == 1 and shape:
            shape[r.randrange(len(shape))] = 1
        elif form == 2 and len(shape) > 1:
            shape = shape[r.randrange(1, len(shape)):]
        elif form == 3 and len(shape) < self.config.max_rank and len(self.inputs) < self.config.max_inputs:
            # a's dims broadcast over a new leading dim: the result is larger than a
            shape = [r.choice(self.dims)] + [1 if r.random() < 0.5 else s for s in shape]
        if len(self.inputs) >= self.config.max_inputs + 2 and same is not None:
            return same
        return self.new_input(tuple(shape), positive=r.random() < 0.3)

    def op_binary(self) -> bool:
        r = self.rng
        a = self.pick()
        if a is None:
            return False
        kind = r.choice(["add", "sub", "mul", "div", "maximum", "minimum", "add_alpha", "sub_alpha", "scalar_add",
                         "scalar_mul", "rsub", "scalar_div", "scalar_rdiv", "addcmul", "lerp"])
        if kind.startswith("scalar") or kind == "rsub":
            c = r.choice((0.5, 1.5, 2.0, -0.75, 3.0))
            self.use(a)
            if kind == "scalar_add":
                return bool(self.emit(r.choice((f"{a.name} + {c}", f"{c} + {a.name}", f"torch.add({a.name}, {c})")),
                                      a.shape, a.dtype, a.half, a.mag + abs(c), kind="add_scalar"))
            if kind == "scalar_mul":
                return bool(self.emit(r.choice((f"{a.name} * {c}", f"{c} * {a.name}", f"torch.mul({a.name}, {c})")),
                                      a.shape, a.dtype, a.half, a.mag * abs(c), kind="mul_scalar"))
            if kind == "rsub":
                return bool(self.emit(f"{c} - {a.name}", a.shape, a.dtype, a.half, a.mag + abs(c), kind="rsub"))
            if kind == "scalar_div":
                return bool(self.emit(f"{a.name} / {c}", a.shape, a.dtype, a.half, a.mag / abs(c), kind="div_scalar"))
            p, pm, plb = self.positive(a, 0.1)
            return bool(self.emit(f"{c} / {p}", a.shape, a.dtype, a.half, abs(c) / plb, kind="rdiv_scalar"))
        if self.init is not None and a.dtype == F32 and a.shape and r.random() < 0.5 and \
                kind in ("add", "sub", "mul", "maximum", "minimum"):
            n = a.shape[-1]
            buf = self.member("scale", f'self.register_buffer("{{name}}", torch.rand({n}) + 0.5)')
            op = {"add": "+", "sub": "-", "mul": "*"}.get(kind)
            text = f"{a.name} {op} {buf}" if op else f"torch.{kind}({a.name}, {buf})"
            self.use(a)
            return bool(self.emit(text, a.shape, a.dtype, a.half, a.mag * 1.5 + 1.5, kind="nn_buffer"))
        b = self.other_operand(a)
        shape = _broadcast(a.shape, b.shape)
        if shape is None or len(shape) > self.config.max_rank:
            return False
        self.use(a, b)
        dt, hf = _promote(a.dtype, b.dtype), a.half or b.half
        x, y = a.name, b.name
        if kind == "add":
            return bool(self.emit(r.choice((f"{x} + {y}", f"torch.add({x}, {y})")), shape, dt, hf, a.mag + b.mag,
                                  kind="add"))
        if kind == "sub":
            return bool(self.emit(r.choice((f"{x} - {y}", f"torch.sub({x}, {y})")), shape, dt, hf, a.mag + b.mag,
                                  kind="sub"))
        if kind == "mul":
            return bool(self.emit(r.choice((f"{x} * {y}", f"torch.mul({x}, {y})")), shape, dt, hf, a.mag * b.mag,
                                  (a.lb * b.lb) if a.lb and b.lb else None, kind="mul"))
        if kind == "div":
            p, pm, plb = self.positive(b, 0.1)
            return bool(self.emit(r.choice((f"{x} / {p}", f"torch.div({x}, {p})")), shape, dt, hf, a.mag / plb,
                                  (a.lb / pm) if a.lb else None, kind="div"))
        if kind == "maximum":
            return bool(self.emit(f"torch.maximum({x}, {y})", shape, dt, hf, max(a.mag, b.mag),
                                  max(a.lb or 0, b.lb or 0) or None, kind="maximum"))
        if kind == "minimum":
            return bool(self.emit(f"torch.minimum({x}, {y})", shape, dt, hf, max(a.mag, b.mag),
                                  min(a.lb, b.lb) if a.lb and b.lb else None, kind="minimum"))
        if kind == "add_alpha":
            return bool(self.emit(f"torch.add({x}, {y}, alpha=0.5)", shape, dt, hf, a.mag + b.mag / 2, kind="add_alpha"))
        if kind == "sub_alpha":
            return bool(self.emit(f"torch.sub({x}, {y}, alpha=2)", shape, dt, hf, a.mag + 2 * b.mag, kind="sub_alpha"))
        if kind == "addcmul":  # may be decomposed into mul and add
            return bool(self.emit(f"torch.addcmul({x}, {y}, {y}, value=0.5)", shape, dt, hf, a.mag + b.mag ** 2 / 2,
                                  kind="addcmul"))
        return bool(self.emit(f"torch.lerp({x}, {y}, 0.25)", shape, dt, hf, max(a.mag, b.mag), kind="lerp"))

    def reduce_dims(self, a: Value):
        """(dim argument text, positions) of a reduction over one or two dims of extent > 1."""
        r = self.rng
        big = [i for i, s in enumerate(a.shape) if s > 1]
        if not big:
            return None
        ps = [r.choice(big)]
        if len(big) >= 2 and a.rank >= 3 and r.random() < 0.25:
            ps = sorted(r.sample(big, 2))
        neg = r.random() < 0.4
        txt = [str(p - a.rank) if neg else str(p) for p in ps]
        return (txt[0] if len(ps) == 1 else "(" + ", ".join(txt) + ")"), ps

    def op_reduce(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1 and any(s > 1 for s in v.shape))
        if a is None:
            return False
        got = self.reduce_dims(a)
        if got is None:
            return False
        dim, ps = got
        keep = r.random() < 0.5
        if not keep and len(ps) == a.rank:
            keep = True
        shape = tuple((1 if i in ps else s) for i, s in enumerate(a.shape)) if keep else \
            tuple(s for i, s in enumerate(a.shape) if i not in ps)
        n = math.prod(a.shape[p] for p in ps)
        kd = ", keepdim=True" if keep else ""
        x = a.name
        kind = r.choice(["sum", "mean", "amax", "amin", "max_values", "min_values", "var", "std", "norm2", "norm1",
                         "norminf", "logsumexp"])
        if kind in ("max_values", "min_values") and len(ps) > 1:
            kind = "amax"
        if kind == "logsumexp" and a.mag > 8:
            kind = "sum"
        self.use(a)
        dt, hf = a.dtype, a.half
        if kind == "sum":
            return bool(self.emit(r.choice((f"{x}.sum(dim={dim}{kd})", f"torch.sum({x}, {dim}{kd})")), shape, dt, hf,
                                  a.mag * n, a.lb * n if a.lb else None, kind="sum"))
        if kind == "mean":
            return bool(self.emit(r.choice((f"{x}.mean(dim={dim}{kd})", f"torch.mean({x}, {dim}{kd})")), shape, dt, hf,
                                  a.mag, a.lb, kind="mean"))
        if kind == "amax":
            return bool(self.emit(r.choice((f"{x}.amax(dim={dim}{kd})", f"torch.amax({x}, {dim}{kd})")), shape, dt, hf,
                                  a.mag, a.lb, kind="amax"))
        if kind == "amin":
            return bool(self.emit(f"{x}.amin(dim={dim}{kd})", shape, dt, hf, a.mag, a.lb, kind="amin"))
        if kind == "max_values":
            return bool(self.emit(r.choice((f"{x}.max(dim={dim}{kd}).values", f"torch.max({x}, {dim}{kd})[0]")), shape,
                                  dt, hf, a.mag, a.lb, kind="max_dim"))
        if kind == "min_values":
            return bool(self.emit(f"{x}.min(dim={dim}{kd}).values", shape, dt, hf, a.mag, a.lb, kind="min_dim"))
        if kind in ("var", "std"):
            corr = r.choice((0, 1)) if n > 1 else 0
            form = r.choice((f"correction={corr}", f"unbiased={bool(corr)}"))
            fn = "var" if kind == "var" else "std"
            return bool(self.emit(f"torch.{fn}({x}, dim={dim}, {form}{kd})", shape, dt, hf,
                                  a.mag * a.mag * 2 if kind == "var" else a.mag * 1.5, kind=kind))
        if kind == "norm2":
            return bool(self.emit(r.choice((f"torch.linalg.vector_norm({x}, dim={dim}{kd})", f"{x}.norm(dim={dim}{kd})")),
                                  shape, dt, hf, a.mag * math.sqrt(n), kind="vector_norm"))
        if kind == "norm1":
            return bool(self.emit(f"torch.linalg.vector_norm({x}, ord=1, dim={dim}{kd})", shape, dt, hf, a.mag * n,
                                  kind="vector_norm_1"))
        if kind == "norminf":
            return bool(self.emit(f"torch.linalg.vector_norm({x}, ord=float('inf'), dim={dim}{kd})", shape, dt, hf,
                                  a.mag, kind="vector_norm_inf"))
        return bool(self.emit(f"torch.logsumexp({x}, dim={dim}{kd})", shape, dt, hf, a.mag + math.log(n) + 0.1,
                              kind="logsumexp"))

    def op_softmax(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1 and any(s > 1 for s in v.shape))
        if a is None:
            return False
        big = [i for i, s in enumerate(a.shape) if s > 1]
        p = r.choice(big)
        dim = str(p - a.rank) if r.random() < 0.5 else str(p)
        self.use(a)
        x = a.name
        kind = r.choice(["softmax", "softmax", "log_softmax", "softmax_f32"])
        if kind == "softmax":
            return bool(self.emit(r.choice((f"torch.softmax({x}, dim={dim})", f"{x}.softmax(dim={dim})",
                                            f"F.softmax({x}, dim={dim})")), a.shape, a.dtype, a.half, 1.0, kind="softmax"))
        if kind == "softmax_f32":
            return bool(self.emit(f"torch.softmax({x}, dim={dim}, dtype=torch.float32)", a.shape, F32, a.half, 1.0,
                                  kind="softmax_dtype"))
        return bool(self.emit(f"F.log_softmax({x}, dim={dim})", a.shape, a.dtype, a.half,
                              2 * a.mag + math.log(a.shape[p]) + 0.1, kind="log_softmax"))

    def op_norm(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1 and v.shape[-1] > 1)
        if a is None:
            return False
        n = a.shape[-1]
        x = a.name
        kind = r.choice(["layer_norm", "rms_norm", "rms_chain", "ln_chain", "normalize"])
        self.use(a)
        dt, hf = a.dtype, a.half
        w = b = None
        if kind in ("layer_norm", "rms_norm") and r.random() < 0.6 and len(self.inputs) < self.config.max_inputs + 2:
            w = self.new_input((n,), dtype=a.dtype, positive=r.random() < 0.5)
            if kind == "layer_norm" and r.random() < 0.6:
                b = self.new_input((n,), dtype=a.dtype)
        wm = w.mag if w else 1.0
        bm = b.mag if b else 0.0
        mag = math.sqrt(n) * wm + bm
        hf = hf or bool(w and w.half) or bool(b and b.half)
        if kind in ("layer_norm", "rms_norm") and self.init is not None and a.dtype == F32:
            cls = "LayerNorm" if kind == "layer_norm" else "RMSNorm"
            layer = self.member("norm", f"self.{{name}} = torch.nn.{cls}({n})")
            return bool(self.emit(f"{layer}({x})", a.shape, dt, hf, math.sqrt(n), kind="nn_" + kind))
        if kind == "layer_norm":
            args = f"{x}, ({n},)" + (f", {w.name}" if w else "") + (f", {b.name}" if b else "")
            eps = r.choice(("", ", eps=1e-5", ", eps=1e-6"))
            self.use(w, b)
            return bool(self.emit(f"F.layer_norm({args}{eps})", a.shape, dt, hf, mag, kind="layer_norm"))
        if kind == "rms_norm":
            args = f"{x}, ({n},)" + (f", {w.name}" if w else "")
            self.use(w)
            return bool(self.emit(f"F.rms_norm({args}, eps=1e-6)", a.shape, dt, hf, mag, kind="rms_norm"))
        if kind == "rms_chain":
            pw = r.choice((f"{x}.pow(2)", f"{x} * {x}", f"{x}.square()"))
            return bool(self.emit(f"{x} * torch.rsqrt({pw}.mean(-1, keepdim=True) + 1e-6)", a.shape, dt, hf,
                                  math.sqrt(n), kind="rms_norm_chain"))
        if kind == "normalize":
            return bool(self.emit(f"F.normalize({x}, dim=-1)", a.shape, dt, hf, 1.0, kind="normalize"))
        m = self.emit(f"{x}.mean(dim=-1, keepdim=True)", a.shape[:-1] + (1,), dt, hf, a.mag)
        c = self.emit(f"{x} - {m.name}", a.shape, dt, hf, 2 * a.mag)
        m.uses += 1
        c.uses += 1
        var = r.choice((f"({c.name} * {c.name}).mean(dim=-1, keepdim=True)",
                        f"{x}.var(dim=-1, keepdim=True, unbiased=False)"))
        return bool(self.emit(f"{c.name} / torch.sqrt({var} + 1e-5)", a.shape, dt, hf, math.sqrt(n),
                              kind="layer_norm_chain"))

    def op_matmul(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: 2 <= v.rank <= 3 and v.shape[-1] > 1)
        if a is None:
            return False
        k = a.shape[-1]
        x = a.name
        kind = r.choice(["matmul", "matmul", "linear", "mm", "bmm", "addmm", "gram", "transposed", "vector"])
        if kind in ("mm", "addmm") and a.rank != 2:
            kind = "matmul"
        if kind == "bmm" and a.rank != 3:
            batched = self.pick(lambda v: v.rank == 3 and v.shape[-1] > 1)
            if batched is None:
                kind = "matmul"
            else:
                a, k, x = batched, batched.shape[-1], batched.name
        nout = r.choice(self.dims)
        scale = 1.0 / math.sqrt(k)
        # an existing right operand of the same dtype and a matching contraction dim
        existing = self.pick(lambda v: v is not a and v.rank == 2 and v.shape[0] == k and v.dtype == a.dtype)
        self.use(a)
        dt, hf = a.dtype, a.half
        lead = a.shape[:-1]
        if kind == "gram":
            return bool(self.emit(r.choice((f"{x} @ {x}.transpose(-1, -2)", f"torch.matmul({x}, {x}.mT)")),
                                  lead + (a.shape[-2],), dt, hf, a.mag * a.mag * k, kind="matmul_gram"))
        if kind == "vector":
            v = self.new_input((k,), dtype=a.dtype, scale=scale)
            self.use(v)
            return bool(self.emit(f"{x} @ {v.name}", lead, dt, hf, a.mag * v.mag * k, kind="matmul_vector"))
        if self.init is not None and kind in ("matmul", "mm", "transposed") and r.random() < 0.5:
            kind = "linear"  # a module's layers, mostly
        if kind == "linear" and self.init is not None and a.dtype == F32:
            bias = r.random() < 0.6
            layer = self.member("lin", f"self.{{name}} = torch.nn.Linear({k}, {nout}, bias={bias})")
            return bool(self.emit(f"{layer}({x})", lead + (nout,), dt, hf, a.mag * math.sqrt(k) + 1, kind="nn_linear"))
        if kind == "matmul" and self.init is not None and a.dtype == F32 and r.random() < 0.5:
            w = self.member("w", f"self.{{name}} = torch.nn.Parameter(torch.randn({k}, {nout}) * {_fmt(scale)})")
            return bool(self.emit(f"{x} @ {w}", lead + (nout,), dt, hf, a.mag * 3.5 * math.sqrt(k),
                                  kind="nn_parameter"))
        if kind == "linear":
            w = self.new_input((nout, k), dtype=a.dtype, scale=scale)
            bias = self.new_input((nout,), dtype=a.dtype) if r.random() < 0.5 else None
            self.use(w, bias)
            args = f"{x}, {w.name}" + (f", {bias.name}" if bias else "")
            return bool(self.emit(f"F.linear({args})", lead + (nout,), dt, hf or w.half,
                                  a.mag * w.mag * k + (bias.mag if bias else 0), kind="linear"))
        if kind == "transposed":
            w = self.new_input((nout, k), dtype=a.dtype, scale=scale)
            self.use(w)
            t = r.choice((f"{w.name}.t()", f"{w.name}.T", f"{w.name}.transpose(0, 1)"))
            return bool(self.emit(f"{x} @ {t}", lead + (nout,), dt, hf, a.mag * w.mag * k, kind="matmul_transposed"))
        if kind == "bmm":
            w = self.new_input((a.shape[0], k, nout), dtype=a.dtype, scale=scale)
            self.use(w)
            return bool(self.emit(f"torch.bmm({x}, {w.name})", lead + (nout,), dt, hf, a.mag * w.mag * k, kind="bmm"))
        w = existing if existing is not None and r.random() < 0.4 else \
            self.new_input((k, nout), dtype=a.dtype, scale=scale)
        self.use(w)
        n2 = w.shape[1]
        mag = a.mag * w.mag * k
        hf = hf or w.half
        if kind == "mm":
            return bool(self.emit(f"torch.mm({x}, {w.name})", lead + (n2,), dt, hf, mag, kind="mm"))
        if kind == "addmm":
            bias = self.new_input((n2,), dtype=a.dtype)
            self.use(bias)
            return bool(self.emit(f"torch.addmm({bias.name}, {x}, {w.name})", lead + (n2,), dt, hf, mag + bias.mag,
                                  kind="addmm"))
        return bool(self.emit(r.choice((f"{x} @ {w.name}", f"torch.matmul({x}, {w.name})")), lead + (n2,), dt, hf, mag,
                              kind="matmul"))

    def op_attention(self) -> bool:
        r = self.rng
        if len(self.inputs) + 3 > self.config.max_inputs + 3:
            return False
        rank = r.choice((3, 4)) if self.config.max_rank >= 4 else 3
        b = r.choice(self.dims)
        h = r.choice((2, 3))
        s, t, e = r.choice(self.dims), r.choice(self.dims), r.choice(self.dims)
        lead = (b,) if rank == 3 else (b, h)
        dtype = r.choice((F32, F32, F16, BF16))
        causal = r.random() < 0.4
        if causal:
            t = s
        q0 = self.pick(lambda v: v.shape == lead + (s, e) and v.dtype == dtype)
        q = q0 if q0 is not None and r.random() < 0.5 else self.new_input(lead + (s, e), dtype=dtype)
        k = self.new_input(lead + (t, e), dtype=dtype)
        v = self.new_input(lead + (t, e if r.random() < 0.5 else r.choice(self.dims)), dtype=dtype)
        self.use(q, k, v)
        out = lead + (s, v.shape[-1])
        hf = dtype in HALF
        if r.random() < 0.5:
            flag = ", is_causal=True" if causal else ""
            return bool(self.emit(f"F.scaled_dot_product_attention({q.name}, {k.name}, {v.name}{flag})", out, dtype,
                                  hf, v.mag, kind="sdpa"))
        scale = _fmt(1.0 / math.sqrt(e))
        sc = self.emit(f"{q.name} @ {k.name}.transpose(-2, -1) * {scale}", lead + (s, t), dtype, hf,
                       q.mag * k.mag * math.sqrt(e))
        sc.uses += 1
        if causal:
            mask = r.choice((f"torch.ones({s}, {t}, dtype=torch.bool).triu(1)",
                             f"torch.triu(torch.ones({s}, {t}, dtype=torch.bool), diagonal=1)"))
            sc2 = self.emit(f"{sc.name}.masked_fill({mask}, float('-inf'))", sc.shape, dtype, hf, sc.mag)
            sc2.uses += 1
            sc = sc2
        return bool(self.emit(f"torch.softmax({sc.name}, dim=-1) @ {v.name}", out, dtype, hf, v.mag,
                              kind="attention_causal" if causal else "attention"))

    def op_layout(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        x, sh = a.name, list(a.shape)
        kind = r.choice(["transpose", "permute", "merge", "split", "unsqueeze", "squeeze", "expand", "identity", "t",
                         "slice", "select"])
        done = None
        if kind == "t" and a.rank == 2:
            done = (r.choice((f"{x}.t()", f"{x}.T", f"torch.t({x})")), (sh[1], sh[0]))
        elif kind in ("transpose", "t") and a.rank >= 2:
            i, j = sorted(r.sample(range(a.rank), 2))
            sh[i], sh[j] = sh[j], sh[i]
            done = (r.choice((f"{x}.transpose({i}, {j})", f"torch.transpose({x}, {j - a.rank}, {i})")), tuple(sh))
        elif kind == "permute" and a.rank >= 3:
            perm = list(range(a.rank))
            while perm == list(range(a.rank)):
                r.shuffle(perm)
            done = (f"{x}.permute({', '.join(map(str, perm))})", tuple(sh[p] for p in perm))
        elif kind == "merge" and a.rank >= 2:
            i = r.randrange(a.rank - 1)
            new = sh[:i] + [sh[i] * sh[i + 1]] + sh[i + 2:]
            form = r.randrange(3)
            if form == 0:
                done = (f"{x}.reshape({', '.join(map(str, new))})", tuple(new))
            elif form == 1:
                done = (f"{x}.flatten({i}, {i + 1})", tuple(new))
            else:
                done = (f"{x}.contiguous().view({', '.join(map(str, new))})", tuple(new))
        elif kind == "split" and a.rank < self.config.max_rank:
            comp = [i for i, s in enumerate(sh) if any(s % f == 0 for f in (2, 3)) and s > 3]
            if comp:
                i = r.choice(comp)
                f = 2 if sh[i] % 2 == 0 else 3
                parts = (sh[i] // f, f) if r.random() < 0.5 else (f, sh[i] // f)
                new = sh[:i] + list(parts) + sh[i + 1:]
                done = (r.choice((f"{x}.reshape({', '.join(map(str, new))})",
                                  f"{x}.unflatten({i}, {parts})")), tuple(new))
        elif kind == "unsqueeze" and a.rank < self.config.max_rank:
            i = r.randrange(a.rank + 1)
            done = (r.choice((f"{x}.unsqueeze({i})", f"torch.unsqueeze({x}, {i})")), tuple(sh[:i] + [1] + sh[i:]))
        elif kind == "squeeze" and 1 in sh and a.rank >= 2:
            i = sh.index(1)
            done = (r.choice((f"{x}.squeeze({i})", f"torch.squeeze({x}, {i})")), tuple(sh[:i] + sh[i + 1:]))
        elif kind == "expand" and 1 in sh:
            i = sh.index(1)
            sh[i] = r.choice(self.dims)
            done = (f"{x}.expand({', '.join(map(str, sh))})", tuple(sh))
        elif kind == "slice" and any(s > 2 for s in sh):
            i = r.choice([i for i, s in enumerate(sh) if s > 2])
            lo = r.randrange(0, sh[i] - 1)
            hi = r.randrange(lo + 1, sh[i] + 1)
            index = [":"] * i + [f"{lo}:{hi}" if r.random() < 0.7 else f"{lo - sh[i]}:"]
            length = hi - lo if ":" in index[-1] and not index[-1].endswith(":") else sh[i] - lo
            new = sh[:i] + [length] + sh[i + 1:]
            done = (f"{x}[{', '.join(index)}]", tuple(new))
        elif kind == "select" and a.rank >= 2 and any(s > 1 for s in sh):
            i = r.choice([i for i, s in enumerate(sh) if s > 1])
            j = r.randrange(-sh[i], sh[i])
            done = (r.choice((f"{x}.select({i}, {j})", f"{x}[{', '.join([':'] * i + [str(j)])}]")),
                    tuple(sh[:i] + sh[i + 1:]))
        elif kind == "identity":
            done = (r.choice((f"{x}.contiguous()", f"{x}.clone()", f"{x}[:]" if a.rank >= 1 else f"{x}.clone()")),
                    tuple(sh))
        if done is None:
            return False
        self.use(a)
        v = self.emit(done[0], done[1], a.dtype, a.half, a.mag, a.lb, kind="layout_" + kind, leaf=a.leaf)
        v.copy = a.copy or a.name.startswith("x")
        return True

    def op_cast(self) -> bool:
        r = self.rng
        a = self.pick()
        if a is None:
            return False
        if a.dtype in HALF:
            to = r.choice((F32, F32, F16 if a.dtype == BF16 else BF16))
        else:
            to = r.choice(HALF)
        x = a.name
        forms = {F32: (f"{x}.float()", f"{x}.to(torch.float32)"), F16: (f"{x}.half()", f"{x}.to(torch.float16)"),
                 BF16: (f"{x}.bfloat16()", f"{x}.to(torch.bfloat16)")}
        self.use(a)
        self.emit(r.choice(forms[to]), a.shape, to, a.half or to in HALF, a.mag, a.lb, kind="cast", leaf=a.leaf)
        return True

    def mask(self, shape: tuple) -> tuple[str, tuple] | None:
        """A bool expression broadcasting to `shape` from exact values (inputs,
        their casts, their maxima) or indices."""
        r = self.rng
        leaf = self.pick(lambda v: v.leaf and _broadcast(v.shape, shape) == shape, fresh_bias=False)
        form = r.randrange(6)
        if form <= 2 and leaf is not None:
            self.use(leaf)
            c = r.choice((0.0, 0.25, -0.5, 1.0))
            op = r.choice((">", "<", ">=", "<="))
            text = f"({leaf.name} {op} {c})"
            if form == 1 and leaf.rank >= 1 and leaf.shape[-1] > 1:
                text = f"({leaf.name} == {leaf.name}.amax(dim=-1, keepdim=True))"
            elif form == 2:
                other = self.pick(lambda v: v.leaf and v is not leaf and _broadcast(v.shape, shape) == shape,
                                  fresh_bias=False)
                if other is not None:
                    self.use(other)
                    text = r.choice((f"({leaf.name} < {other.name})", f"({leaf.name} >= {other.name})",
                                     f"({leaf.name} > 0) & ({other.name} < 0.5)", f"({leaf.name} > 0) | ({other.name} > 0)",
                                     f"~({leaf.name} > {other.name})",
                                     f"torch.logical_and({leaf.name} > -0.5, {other.name} < 0.5)",
                                     f"({leaf.name} != {other.name})"))
            return text, leaf.shape
        if len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1:
            s, t = shape[-2], shape[-1]
            d = r.choice((0, 1, -1))
            return r.choice((f"torch.ones({s}, {t}, dtype=torch.bool).tril({d})",
                             f"torch.ones({s}, {t}, dtype=torch.bool).triu({d})",
                             f"(torch.arange({s})[:, None] >= torch.arange({t})[None, :])",
                             f"(torch.arange({s}).unsqueeze(1) < torch.arange({t}).unsqueeze(0) + {d})")), (s, t)
        if shape and shape[-1] > 1:
            t = shape[-1]
            return f"(torch.arange({t}) < {r.randrange(1, t)})", (t,)
        return None

    def op_where(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        got = self.mask(a.shape)
        if got is None:
            return False
        m, mshape = got
        shape = _broadcast(a.shape, mshape)
        if shape != a.shape:
            return False
        self.use(a)
        x = a.name
        kind = r.choice(["where", "where_scalar", "where_scalar_first", "masked_fill", "mul_mask", "tri", "arange_add"])
        if kind == "tri" and a.rank >= 2:
            d = r.choice((0, 1, -1))
            form = r.choice((f"torch.tril({x})", f"torch.triu({x}, diagonal={d})", f"{x}.tril({d})", f"{x}.triu()"))
            return bool(self.emit(form, a.shape, a.dtype, a.half, a.mag, kind="tril_triu"))
        if kind == "arange_add" and a.shape[-1] > 1:
            n = a.shape[-1]
            return bool(self.emit(f"{x} + torch.arange({n}, dtype={_DT[a.dtype]}) * 0.125", a.shape, a.dtype, a.half,
                                  a.mag + n * 0.125, kind="arange"))
        if kind == "where":
            b = self.other_operand(a)
            if _broadcast(a.shape, b.shape) != a.shape:
                return False
            self.use(b)
            return bool(self.emit(f"torch.where({m}, {x}, {b.name})", a.shape, _promote(a.dtype, b.dtype),
                                  a.half or b.half, max(a.mag, b.mag), kind="where"))
        if kind == "where_scalar":
            c = r.choice((0.0, -1.0, 0.5))
            return bool(self.emit(f"torch.where({m}, {x}, {c})", a.shape, a.dtype, a.half, max(a.mag, 1.0),
                                  kind="where_scalar"))
        if kind == "where_scalar_first":
            return bool(self.emit(f"torch.where({m}, 1.0, {x})", a.shape, a.dtype, a.half, max(a.mag, 1.0),
                                  kind="where_scalar"))
        if kind == "masked_fill":
            c = r.choice((0.0, -2.0, 1.0))
            return bool(self.emit(f"{x}.masked_fill({m}, {c})", a.shape, a.dtype, a.half, max(a.mag, 2.0),
                                  kind="masked_fill"))
        conv = r.choice((f"{m}.float()", f"{m}.to({_DT[a.dtype]})", m))
        dt = a.dtype if conv != f"{m}.float()" else _promote(a.dtype, F32)
        return bool(self.emit(f"{x} * {conv}", a.shape, dt, a.half, a.mag, kind="mask_mul"))

    def op_constant(self) -> bool:
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        self.use(a)
        x = a.name
        form = r.choice((f"{x} + torch.ones_like({x})", f"{x} * torch.full_like({x}, 0.5)",
                         f"{x} + torch.zeros_like({x})",
                         f"{x} - torch.full(({', '.join(map(str, a.shape))},), 0.25, dtype={_DT[a.dtype]})"))
        return bool(self.emit(form, a.shape, a.dtype, a.half, a.mag + 1, kind="full"))

    def op_maybe(self) -> bool:
        """Operators the table lacks that PyTorch may decompose into ones it has."""
        r = self.rng
        a = self.pick()
        if a is None:
            return False
        x = a.name
        kind = r.choice(["softplus", "elu", "hardswish", "hardsigmoid", "erf", "relu6", "mish", "selu", "sign"])
        if kind in ("mish", "softplus", "elu", "selu") and a.mag > 12:
            kind = "hardswish"
        self.use(a)
        sh, dt, hf, m = a.shape, a.dtype, a.half, a.mag
        texts = {"softplus": (f"F.softplus({x})", m + 1), "elu": (f"F.elu({x})", m), "hardswish": (f"F.hardswish({x})", m),
                 "hardsigmoid": (f"F.hardsigmoid({x})", 1.0), "erf": (f"torch.erf({x})", 1.0),
                 "relu6": (f"F.relu6({x})", 6.0), "mish": (f"F.mish({x})", m), "selu": (f"F.selu({x})", 1.8 * m),
                 "sign": (f"torch.sign({x})", 1.0)}
        text, mag = texts[kind]
        self.emit(text, sh, dt, hf, mag, kind="maybe_" + kind)
        return True

    def op_reject(self) -> bool:
        """One operator the IR cannot express; its value flows into an output."""
        r = self.rng
        a = self.pick(lambda v: v.rank >= 1 and v.shape[-1] > 2)
        if a is None:
            return False
        x, sh = a.name, a.shape
        n = sh[-1]
        choices = [
            (f"torch.cumsum({x}, dim=-1)", sh, ("cumsum",)),
            (f"torch.flip({x}, [-1])", sh, ("flip",)),
            (f"{x}.argmax(dim=-1).float()", sh[:-1], ("argmax",)),
            (f"torch.sort({x}, dim=-1).values", sh, ("sort",)),
            (f"{x}[..., ::2]", sh[:-1] + ((n + 1) // 2,), ("slice",)),
            (f"torch.div({x}, 2.0, rounding_mode='floor')", sh, ("div",)),
            (f"{x}.max(dim=-1).indices.float()", sh[:-1], ("max",)),
            (f"torch.roll({x}, 1, -1)", sh, ("roll",)),
            (f"torch.cat([{x}, {x}], dim=-1)", sh[:-1] + (2 * n,), ("cat",)),
            (f"torch.topk({x}, 2, dim=-1).values", sh[:-1] + (2,), ("topk",)),
            (f"torch.cummax({x}, dim=-1).values", sh, ("cummax",)),
        ]
        text, shape, names = r.choice(choices)
        if not shape:
            return False
        self.use(a)
        v = self.emit(text, shape, F32 if a.dtype == BOOL else a.dtype, a.half, a.mag * (n if "cumsum" in text else 1) + n,
                      kind="reject_" + names[0])
        self.reject = (len(self.body) - 1, names)
        self.must_output.append(v)
        return True

    FAMILIES = (("unary", 5), ("binary", 5), ("reduce", 3), ("softmax", 2), ("norm", 2), ("matmul", 3),
                ("attention", 1), ("layout", 3), ("cast", 2), ("where", 2), ("constant", 0.5), ("maybe", 0.6))

    def build(self) -> Program:
        r, cfg = self.rng, self.config
        # Leading inputs: a matrix-like value, sometimes batched, sometimes a second one.
        rank = r.randint(1, min(3, cfg.max_rank))
        self.new_input(self.rand_shape(rank) if rank > 1 else (r.choice(self.dims),))
        if r.random() < 0.5:
            self.new_input(self.rand_shape(r.randint(1, min(3, cfg.max_rank))))
        n_ops = r.randint(cfg.min_ops, cfg.max_ops)
        reject_at = r.randrange(n_ops) if r.random() < cfg.reject_rate else None
        names = [f for f, _ in self.FAMILIES]
        weights = [w for _, w in self.FAMILIES]
        done = 0
        tries = 0
        while done < n_ops and tries < 20 * n_ops:
            tries += 1
            if reject_at is not None and done == reject_at and self.reject is None:
                if self.op_reject():
                    done += 1
                    continue
            family = r.choices(names, weights)[0]
            if getattr(self, "op_" + family)():
                done += 1
        # Outputs: the last value, the one a rejected operator made, and a few values nothing uses.
        # (an output that is an input relaid out has no kernel either: not drawn)
        computed = [v for v in self.values if v.name.startswith("v") and v.dtype != BOOL and not v.copy]
        outs: list[Value] = []
        # (an output whose dims all have extent 1 has no kernel: extraction's known gap, not drawn)
        for v in self.must_output + [v for v in computed if v.numel > 1][-1:]:
            if v not in outs:
                outs.append(v)
        unused = [v for v in computed if v.uses == 0 and v not in outs and v.numel > 1]
        r.shuffle(unused)
        outs += unused[: max(0, cfg.max_outputs - len(outs))]
        if not outs:  # nothing computed: one op on an input
            a = max(self.values, key=lambda v: v.numel)
            outs.append(self.emit(f"{a.name} * 2.0", a.shape, a.dtype, a.half, a.mag * 2, kind="mul_scalar"))
        outs.sort(key=lambda v: self.values.index(v))
        return Program(self.seed, self.mode, list(self.body), list(self.inputs), [v.name for v in outs],
                       tuple(v.half for v in outs), self.reject, list(self.ops),
                       list(self.init) if self.init else None)


def make_inputs(specs, seed: int) -> tuple:
    """The arguments for `specs` (INPUTS rows) drawn from `seed`: never zero."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for name, shape, dtype, dist, a, b in specs:
        if dist == "uniform":
            v = torch.rand(shape, generator=g, dtype=torch.float64) * (b - a) + a
        else:
            v = torch.randn(shape, generator=g, dtype=torch.float64) * b + a
            v = torch.where(v.abs() < 1e-2, torch.full_like(v, 1e-2), v)  # never zero, also once rounded
        out.append(v.to(getattr(torch, dtype)))
    return tuple(out)


def _flat(result) -> list:
    import torch

    return list(result) if isinstance(result, (tuple, list)) else [result] if isinstance(result, torch.Tensor) \
        else list(torch.utils._pytree.tree_flatten(result)[0])


def _eager_ok(fn, specs, seeds) -> bool:
    import torch

    for s in seeds:
        try:
            with torch.no_grad():
                outs = _flat(fn(*make_inputs(specs, s)))
        except Exception:  # noqa: BLE001 -- the generator drew something eager refuses: draw again
            return False
        for o in outs:
            if not isinstance(o, torch.Tensor) or not o.is_floating_point() or not torch.isfinite(o).all():
                return False
            if o.dtype == torch.float16 and o.abs().max() > 6e4:
                return False
    return True


def generate(seed: int, config: Config | None = None, mode: str = "ci") -> Program:
    """The program of `seed`: drawn until eager PyTorch runs it with finite
    outputs on the example and trial inputs (a few attempts, from the seed)."""
    config = config or MODES[mode]["config"]
    last = None
    for attempt in range(40):
        prog = _Gen(seed, attempt, config, mode).build()
        last = prog
        with tempfile.TemporaryDirectory(prefix="eqiforge_fuzz_torch_") as tmp:
            path = os.path.join(tmp, f"gen{seed}.py")
            with open(path, "w") as f:
                f.write(prog.source())
            module = _load(path, f"eqiforge_fuzz_gen_{seed}_{attempt}")
            if _eager_ok(module.program, module.INPUTS, input_seeds(seed, config.trials)):
                return prog
    raise RuntimeError(f"no valid program for seed {seed} in 40 attempts; the last:\n{last.source()}")


def input_seeds(seed: int, trials: int) -> list[int]:
    """Seeds of the example inputs (first) and of each trial's fresh inputs."""
    return [seed * 16 + i for i in range(trials + 1)]


def _load(path: str, name: str):
    """Imports the file as module `name`, registered in sys.modules (TorchDynamo
    imports the module of the code it traces; the strict export is the one
    optimize uses for every program that allows it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---- checking one program -------------------------------------------------------------


@dataclass
class Result:
    seed: int
    status: str
    detail: str = ""
    stage: str = ""                 # capture, search, run, candidate, worker
    candidates: int = 0             # modules checked: the optimized program and the other candidates
    worst_error: float = 0.0
    seconds: float = 0.0
    noise: bool = False             # ok only within the noise floor
    partitioned: bool = False
    expected_reject: bool = False   # the program uses an operator the IR cannot express
    ops: list = field(default_factory=list)
    source: str = ""                # the program (kept for failures)

    def line(self) -> str:
        extra = f" [{self.stage}]" if self.stage and self.status != "ok" else ""
        detail = f": {_first_line(self.detail)}" if self.detail else ""
        return f"seed {self.seed}: {self.status}{extra} ({self.candidates} checked, {self.seconds:.1f} s){detail}"


def _first_line(text: str, width: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


class _Stop(Exception):
    def __init__(self, status: str, stage: str, detail: str):
        super().__init__(detail)
        self.status, self.stage, self.detail = status, stage, detail


@contextlib.contextmanager
def _recording_search():
    """Records every search optimize runs (program text, SearchResult), so that
    the candidates the tuner did not pick are checked too."""
    from .runtime import search

    calls: list = []
    original = search.find_candidates

    def recorded(ir_text, options, target, file="<program>", rules=None):
        found = original(ir_text, options, target, file=file, rules=rules)
        calls.append((ir_text, found))
        return found

    search.find_candidates = recorded
    try:
        yield calls
    finally:
        search.find_candidates = original


def optimize_options(config: Config, seed: int) -> dict:
    return dict(cache=False, top_k=config.top_k, node_limit=config.node_limit, search_time_s=config.search_time_s,
                extract_time_s=config.extract_time_s, baselines=False, seed=seed % (1 << 31))


def compare_outputs(got, want, half: tuple) -> tuple[dict, dict, str]:
    """Per output index: relative L2 error and tolerance; and a reason when
    the structure, a shape or a dtype differs (then the errors are inf)."""
    import torch

    got_flat, want_flat = _flat(got), _flat(want)
    errors, tols = {}, {}
    if len(got_flat) != len(want_flat):
        return {0: math.inf}, {0: check.TOLERANCE_FP32}, f"{len(got_flat)} outputs, eager has {len(want_flat)}"
    got_spec, want_spec = (torch.utils._pytree.tree_flatten(x)[1] for x in (got, want))
    if got_spec != want_spec:  # a tensor for a 1-tuple, a list for a tuple
        return {0: math.inf}, {0: check.TOLERANCE_FP32}, f"the outputs are {got_spec}, eager's {want_spec}"
    reason = ""
    for i, (g, w) in enumerate(zip(got_flat, want_flat)):
        tols[i] = check.TOLERANCE_HALF if (i < len(half) and half[i]) or w.dtype in (torch.float16, torch.bfloat16) \
            else check.TOLERANCE_FP32
        if not isinstance(g, torch.Tensor):
            errors[i], reason = math.inf, reason or f"output {i} is a {type(g).__name__}"
            continue
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            errors[i] = math.inf
            reason = reason or f"output {i} is {tuple(g.shape)} {g.dtype}, eager's {tuple(w.shape)} {w.dtype}"
            continue
        errors[i] = check.relative_error(g.detach().to(torch.float64).numpy(), w.detach().to(torch.float64).numpy())
    return errors, tols, reason


def _ir_floors(program, args, indices: list[int], half: set) -> dict:
    """Per failing output index: the larger of its noise floors (inputs moved
    by a unit roundoff; every rounded value moved by NOISE_ROUNDING unit
    roundoffs, for outputs held to 1e-5), evaluated with the reference
    interpreter on the front end's IR, and the rounding floor alone."""
    import numpy as np
    import torch

    from . import _core

    text = program.ir_text
    b = program.binding
    names = [o.name for o in b.outputs]
    floating = {i.name for i in b.inputs if i.dtype.is_floating_point}
    ins = {info.name: t.detach().to(torch.float64).numpy() for info, t in zip(b.inputs, b.module_inputs(args))}
    want = _core.evaluate(text, seed=0, blocks={}, inputs=ins)
    rng = np.random.default_rng(len(text))
    out = {}
    for i in indices:
        step = half_step(text) if i in half else NOISE_STEP
        floor = 0.0
        for _ in range(3):
            moved = {n: (v * (1 + step * rng.uniform(-1, 1, np.shape(v))) if n in floating else v)
                     for n, v in ins.items()}
            got = _core.evaluate(text, seed=0, blocks={}, inputs=moved)
            floor = max(floor, check.relative_error(np.asarray(got[names[i]]), np.asarray(want[names[i]])))
        rounding = 0.0
        if i not in half:
            for draw in range(NOISE_ROUNDING_DRAWS):
                got = _core.evaluate(text, seed=0, blocks={}, inputs=ins, rounding=NOISE_ROUNDING, rounding_seed=draw)
                rounding = max(rounding, check.relative_error(np.asarray(got[names[i]]), np.asarray(want[names[i]])))
            if not math.isfinite(rounding):
                rounding = 0.0
        out[i] = (floor, rounding)
    return out


def within_noise(errors: dict, tols: dict, floors: dict) -> bool:
    """eqiforge.fuzz's rule: each failing output within NOISE_FACTOR times the
    larger of its floors and under the cap, or numerically zero."""
    for i, e in errors.items():
        if e <= tols[i]:
            continue
        half = tols[i] == check.TOLERANCE_HALF
        cap = NOISE_CAP_HALF if half else NOISE_CAP
        floor, rounding = floors.get(i, (0.0, 0.0))
        if e <= min(cap, NOISE_FACTOR * max(floor, rounding)):
            continue
        if not half and rounding >= NOISE_ZERO and e <= NOISE_FACTOR * rounding:
            continue
        return False
    return True


def _describe(errors: dict, tols: dict) -> str:
    return ", ".join(f"output {i} {e:.3g} (tolerance {tols[i]:g})" for i, e in errors.items() if not e <= tols[i])


def exact_reference(fn, args):
    """Eager PyTorch in float64: every floating argument (and a module's
    parameters and buffers) promoted, so each operation rounds only where the
    program casts; None when the program does not run so (a matmul of a
    value the program casts to half with a float64 one)."""
    import copy

    import torch

    try:
        f = copy.deepcopy(fn).double() if isinstance(fn, torch.nn.Module) else fn
        wide = tuple(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*wide)
    except Exception:  # noqa: BLE001
        return None


def _closer_than_eager(got, want, exact, failing, tols) -> bool:
    """Every failing output within its tolerance of the float64 evaluation
    (rounded to the output's dtype): eager's own rounding (an fp16/bf16
    program rounds after every operation; the kernels compute in f32 and
    round where they store) is what differs, not the kernel."""
    import torch

    if exact is None:
        return False
    got_flat, want_flat, exact_flat = _flat(got), _flat(want), _flat(exact)
    if len(exact_flat) != len(want_flat):
        return False
    for i in failing:
        e = exact_flat[i]
        if not isinstance(e, torch.Tensor) or tuple(e.shape) != tuple(want_flat[i].shape) or \
                not torch.isfinite(e).all():
            return False
        ref = e.to(want_flat[i].dtype).to(torch.float64).numpy() if want_flat[i].is_floating_point() else \
            e.to(torch.float64).numpy()
        if not check.relative_error(got_flat[i].detach().to(torch.float64).numpy(), ref) <= tols[i]:
            return False
    return True


def _half_outputs_match_the_ir(got, want, program, args, failing, tols) -> bool:
    """Every failing output is a half-precision one, within its tolerance of
    the reference interpreter's float64 evaluation of the front end's IR
    (rounded to the output's dtype), and eager within NOISE_CAP_HALF of it:
    eager rounds every fp16/bf16 operation (a bf16 `sigmoid(v) + 0.1` under a
    log shifts the result by 1%, seed 10489), the kernels compute in f32 and
    round where they store, as the IR's semantics say."""
    import numpy as np
    import torch

    from . import _core

    if any(tols[i] != check.TOLERANCE_HALF for i in failing):
        return False
    b = program.binding
    ins = {info.name: t.detach().to(torch.float64).numpy() for info, t in zip(b.inputs, b.module_inputs(args))}
    values = _core.evaluate(program.ir_text, seed=0, blocks={}, inputs=ins)
    got_flat, want_flat = _flat(got), _flat(want)
    for i in failing:
        info = b.outputs[i]
        ref = np.asarray(values[info.name]).reshape(info.shape)
        ref = torch.from_numpy(np.ascontiguousarray(ref)).to(want_flat[i].dtype).to(torch.float64).numpy()
        if not check.relative_error(got_flat[i].detach().to(torch.float64).numpy(), ref) <= tols[i]:
            return False
        if not check.relative_error(want_flat[i].detach().to(torch.float64).numpy(), ref) <= NOISE_CAP_HALF:
            return False
    return True


def _check_values(what: str, got, want, half, program, args, result: Result, fn=None) -> None:
    errors, tols, reason = compare_outputs(got, want, half)
    result.worst_error = max([result.worst_error, *[e for e in errors.values() if math.isfinite(e)]])
    failing = [i for i, e in errors.items() if not e <= tols[i]]
    if not failing:
        return
    if reason:
        raise _Stop("wrong", "run", f"{what}: {reason}")
    if all(math.isfinite(errors[i]) for i in failing):
        floors = _ir_floors(program, args, failing, {i for i in failing if tols[i] == check.TOLERANCE_HALF})
        if within_noise(errors, tols, floors) or \
                (fn is not None and _closer_than_eager(got, want, exact_reference(fn, args), failing, tols)) or \
                _half_outputs_match_the_ir(got, want, program, args, failing, tols):
            result.noise = True
            return
    raise _Stop("wrong", "run", f"{what}: relative error {_describe(errors, tols)}")


def _candidate_runs(cand, module, opts, seed: int):
    """Launch parameters a candidate is run with: its estimate's block sizes
    (what the tuner starts from) or the module's defaults, then random
    power-of-two sizes within the legal space (what the GPU tuner may pick)."""
    from .runtime import tuner

    block_params = dict(getattr(module, "BLOCK_PARAMS", {}))
    first = {}
    if cand.blocks and all(a in cand.blocks for a in block_params):
        first = {kw: cand.blocks[a] for a, kw in block_params.items()}
    runs = [first]
    if block_params:
        space = tuner.make_space(cand.rank, block_params, tuner.program_dims(cand.program), opts, cand.blocks)
        rng = random.Random(seed * 1009 + cand.rank)
        blocks = {kw: 1 << rng.randint(0, max(0, space.caps[kw].bit_length() - 1)) for kw in space.keywords}
        runs.append(space.normalize(blocks))
    return runs


def _verification_failed(text: str) -> bool:
    """Whether a NoValidCandidate says that candidates computed wrong values."""
    return "do not match PyTorch eager" in text or bool(re.search(r"\b[1-9]\d* gave wrong values", text))


def _verification_noise(fn, example, opts: dict, half: tuple, error: float = math.inf) -> str:
    """Why optimize's verification (relative error 1e-2 on fresh inputs from
    its seed + 1) may fail for correct kernels: eager itself giving NaN on
    those inputs (rsqrt of a negative value: the program has no value to
    check there), an output that is numerically zero, or one whose noise
    floor reaches 1e-2. Empty otherwise."""
    from .frontend import to_ir
    from .options import TOLERANCE
    from .runtime.launch import Binding
    from .runtime.verify import fresh_args

    class _Program:
        pass

    args = fresh_args(example, opts["seed"] + 1)
    import torch

    with torch.no_grad():
        for i, w in enumerate(_flat(fn(*args))):
            if isinstance(w, torch.Tensor) and w.is_floating_point() and torch.isnan(w).any():
                return f"eager's output {i} has NaN on the verification inputs"
    exact = exact_reference(fn, args)
    if exact is not None:
        import torch

        with torch.no_grad():
            eager = _flat(fn(*args))
        for i, (w, e) in enumerate(zip(eager, _flat(exact))):
            if isinstance(e, torch.Tensor) and w.is_floating_point() and tuple(e.shape) == tuple(w.shape):
                off = check.relative_error(w.to(torch.float64).numpy(), e.to(w.dtype).to(torch.float64).numpy())
                if off > TOLERANCE:  # the verifier's reference is itself that far from the exact values
                    return f"eager's output {i} is {off:.2g} off its float64 evaluation"
    fe = to_ir(fn, *example)
    prog = _Program()
    prog.ir_text, prog.binding = fe.text, Binding(fe)
    outs = list(range(len(fe.outputs)))
    floors = _ir_floors(prog, args, outs, {i for i in outs if i < len(half) and half[i]})
    for i, (floor, rounding) in floors.items():
        if rounding >= NOISE_ZERO:
            return f"output {i} is numerically zero (rounding changes it by {rounding:.2g})"
        if NOISE_FACTOR * max(floor, rounding) >= max(TOLERANCE, error):  # the error verification reported
            return f"output {i} has a noise floor of {max(floor, rounding):.2g}"
    return ""


def _error_text(e: BaseException) -> str:
    """The exception on the first line, then where it was raised (the last frames)."""
    head = "".join(traceback.format_exception_only(type(e), e)).strip()
    frames = traceback.format_tb(e.__traceback__)[-4:]
    return head + "\n" + "".join(frames).rstrip()


def check_module(path: str, config: Config, result: Result) -> None:
    """Optimizes the program in the file at `path` and checks it (raises _Stop)."""
    import torch

    import eqiforge
    from ._core import IRError
    from .frontend import FrontendError
    from .options import make_options
    from .runtime.loader import load_module
    from .runtime.search import ensure_source
    from .runtime.tuner import NoValidCandidate, code_signature

    module = _load(path, f"eqiforge_fuzz_program_{result.seed}_{abs(hash(path)) % 10 ** 8}")
    fn, specs, half = module.program, module.INPUTS, tuple(module.HALF_OUTPUTS)
    reject = module.REJECT
    result.expected_reject = reject is not None
    seeds = input_seeds(result.seed, config.trials)
    example = make_inputs(specs, seeds[0])
    opts = optimize_options(config, result.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _recording_search() as searches:
            try:
                program = eqiforge.optimize(fn, *example, **opts)
            except FrontendError as e:
                location = getattr(e, "location", "")
                named = re.findall(r"\baten\.([A-Za-z0-9_]+)", str(e))
                where = os.path.basename(path) + ":"
                if not location.startswith(where) or not named:
                    raise _Stop("crash", "capture", f"refused without naming the operator and the program's line: "
                                f"{type(e).__name__}: {e}") from None
                if reject is not None:
                    line, ops = reject
                    if location != f"{where}{line}" or not any(op in named for op in ops):
                        raise _Stop("crash", "capture", f"refused, but the error names {location} and "
                                    f"{', '.join(named)}, not line {line} and {'/'.join(ops)}: {e}") from None
                raise _Stop("rejected", "capture", f"{type(e).__name__}: {e}") from None
            except NoValidCandidate as e:
                text = str(e)
                if not _verification_failed(text):
                    raise _Stop("no-candidate", "search", text) from None
                # Every candidate (or the composed subgraphs) gave other values
                # than eager on optimize's own verification inputs: wrong,
                # unless the program itself is that sensitive to rounding.
                found = re.search(r"relative L2 error ([0-9.]+(?:e[-+]?\d+)?)", text)
                noisy = _verification_noise(fn, example, opts, half, float(found.group(1)) if found else math.inf)
                if noisy:
                    raise _Stop("no-candidate", "verify", f"{_first_line(text)}; {noisy}") from None
                raise _Stop("wrong", "verify", text) from None
            except IRError as e:  # the core refused the front end's program: a translation bug
                raise _Stop("crash", "search", f"{type(e).__name__}: {e}") from None
            except Exception as e:  # noqa: BLE001 -- anything else out of optimize is a crash
                raise _Stop("crash", "optimize", _error_text(e)) from None
        result.partitioned = not hasattr(program, "module")
        whole = [found for text, found in searches if text == program.ir_text]
        chosen = getattr(program.report, "candidate_rank", None)
        trials = [make_inputs(specs, s) for s in seeds[1:]]
        wants = []
        for t, args in enumerate(trials):
            with torch.no_grad():
                want = fn(*args)
            wants.append(want)
            try:
                got = program(*args)
            except Exception as e:  # noqa: BLE001
                raise _Stop("crash", "run", f"the optimized program raised on trial {t}: "
                            + "".join(traceback.format_exception_only(type(e), e)).strip()) from None
            _check_values(f"optimized program (candidate {chosen}), trial {t}", got, want, half, program, args, result,
                          fn)
        result.candidates = 1
        if result.partitioned or not whole:
            return
        base = make_options(**opts)
        signatures = {code_signature(program.source)} if getattr(program, "source", None) else set()
        for cand in whole[0].candidates:
            if cand.rank == chosen and not result.partitioned:
                continue
            try:
                source = ensure_source(cand)
            except Exception as e:  # noqa: BLE001 -- extraction made it; emission must take it
                raise _Stop("crash", "candidate", f"candidate {cand.rank} did not emit: {_first_line(str(e), 400)}") \
                    from None
            sig = code_signature(source)
            if sig in signatures:
                continue
            signatures.add(sig)
            try:
                mod = load_module(source, interpret=True)
            except Exception as e:  # noqa: BLE001
                raise _Stop("crash", "candidate", f"candidate {cand.rank} did not import: {_first_line(str(e), 400)}") \
                    from None
            for t, args in enumerate(trials):
                params = _candidate_runs(cand, mod, base, result.seed + t)
                for p in params if t == 0 else params[-1:]:
                    inputs = program.binding.module_inputs(args)
                    try:
                        with torch.no_grad(), warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            outs = mod.forward(*inputs, **p)
                    except Exception as e:  # noqa: BLE001
                        raise _Stop("crash", "candidate", f"candidate {cand.rank} ({p}) raised: "
                                    + _first_line("".join(traceback.format_exception_only(type(e), e)), 400)) from None
                    got = program.binding.user_outputs(outs)
                    blocks = ", ".join(f"{k}={v}" for k, v in p.items()) or "default blocks"
                    _check_values(f"candidate {cand.rank} ({blocks}), trial {t}", got, wants[t], half, program, args,
                                  result, fn)
            result.candidates += 1


def check_program(prog: Program, config: Config, directory: str | None = None) -> Result:
    """Writes the program to a file and checks it; never raises."""
    import torch

    start = time.monotonic()
    result = Result(prog.seed, "ok", ops=list(prog.ops), source=prog.source())
    tmp = directory or tempfile.mkdtemp(prefix="eqiforge_fuzz_torch_")
    path = os.path.join(tmp, f"seed{prog.seed}.py")
    try:
        with open(path, "w") as f:
            f.write(result.source)
        check_module(path, config, result)
        result.detail = f"largest relative error {result.worst_error:.3g}" + (
            " (past the tolerance within the noise floor)" if result.noise else "")
    except _Stop as s:
        result.status, result.stage, result.detail = s.status, s.stage, s.detail
    except Exception as e:  # noqa: BLE001 -- a bug of the fuzzer itself: this program's crash
        result.status, result.stage = "crash", "worker"
        result.detail = _error_text(e)
    finally:
        if directory is None:
            shutil.rmtree(tmp, ignore_errors=True)
        torch._dynamo.reset()
    result.seconds = time.monotonic() - start
    return result


def fuzz_one(seed: int, config: Config, mode: str = "ci") -> Result:
    try:
        prog = generate(seed, config, mode)
    except Exception as e:  # noqa: BLE001
        return Result(seed, "crash", f"generator: {e}", "generate")
    return check_program(prog, config)


def check_file(path: str) -> int:
    """Checks a saved program (its SEED and MODE say how); prints the result.
    Exit status 0 ok / rejected / no candidate, 1 wrong or crash."""
    os.environ["TRITON_INTERPRET"] = "1"
    module = _load(path, "eqiforge_fuzz_saved")
    config = MODES[getattr(module, "MODE", "ci")]["config"]
    result = Result(int(getattr(module, "SEED", 0)), "ok")
    start = time.monotonic()
    try:
        check_module(os.path.abspath(path), config, result)
        result.detail = f"largest relative error {result.worst_error:.3g}"
    except _Stop as s:
        result.status, result.stage, result.detail = s.status, s.stage, s.detail
    result.seconds = time.monotonic() - start
    print(result.line())
    if result.detail.count("\n"):
        print(result.detail)
    return 1 if result.status in FAILURES else 0


# ---- workers --------------------------------------------------------------------------


def _init_worker() -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    torch.set_num_threads(1)


def _check_job(seed: int, config: Config, mode: str) -> dict:
    return asdict(fuzz_one(seed, config, mode))


def _result(outcome: worker_pool.Outcome) -> Result:
    seed = outcome.job
    if outcome.kind == "done":
        r = Result(**outcome.value)
    elif outcome.kind == "timeout":
        r = Result(seed, "timeout", f"program {outcome.detail}", "run")
    else:  # raised out of fuzz_one, or the worker died
        r = Result(seed, "crash", outcome.detail, "worker")
    r.seconds = r.seconds or outcome.seconds
    return r


def run(seeds, config: Config, jobs: int = 1, mode: str = "ci"):
    """Checks the program of every seed in worker processes (a worker that
    dies or overruns config.program_timeout_s is replaced); yields each Result."""
    for outcome in worker_pool.run(seeds, _check_job, (config, mode), workers=jobs,
                                   timeout_s=config.program_timeout_s, init=_init_worker):
        yield _result(outcome)


# ---- the command ------------------------------------------------------------------------


@dataclass
class Summary:
    counts: dict = field(default_factory=lambda: {s: 0 for s in STATUSES})
    reasons: dict = field(default_factory=dict)    # rejected / no-candidate reason -> count
    failures: list = field(default_factory=list)
    timeouts: list = field(default_factory=list)
    noise: list = field(default_factory=list)
    candidates: int = 0
    expected_rejects: int = 0
    accepted_rejects: int = 0     # programs with a "reject" operator that PyTorch decomposed
    ops: dict = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, r: Result) -> None:
        self.counts[r.status] += 1
        self.candidates += r.candidates
        for op in r.ops:
            self.ops[op] = self.ops.get(op, 0) + 1
        if r.expected_reject:
            self.expected_rejects += 1
            if r.status in ("ok", "no-candidate", "wrong"):
                self.accepted_rejects += 1
        if r.status == "ok" and r.noise:
            self.noise.append(r.seed)
        if r.status in ("rejected", "no-candidate"):
            key = r.status + ": " + _reason_key(r.detail)
            self.reasons[key] = self.reasons.get(key, 0) + 1
        elif r.status in FAILURES:
            self.failures.append(r)
        elif r.status == "timeout":
            self.timeouts.append(r)

    @property
    def programs(self) -> int:
        return sum(self.counts.values())


def _reason_key(detail: str) -> str:
    line = _first_line(detail, 400)
    line = re.sub(r"\(seed\d+\.py:\d+:.*\)$", "", line)  # the program's line: the same reason for every program
    line = re.sub(r"\d+", "N", line)
    return line[:140]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqiforge.fuzz_torch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="ci",
                        help="ci: small programs, 200 by default; long: larger ones, 2000 by default")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--count", type=int, help="number of programs (default: the mode's)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--save", metavar="DIR", help="write each failing program to DIR/seed<N>.py (a script "
                        "that checks it again)")
    parser.add_argument("--json", metavar="FILE", help="write every result to FILE (one JSON object a line)")
    parser.add_argument("--quiet", action="store_true", help="print only failures, a line every 25 programs and "
                        "the summary")
    parser.add_argument("--print", dest="print_seed", type=int, metavar="SEED",
                        help="print the program of SEED and exit")
    args = parser.parse_args(argv)
    mode = MODES[args.mode]
    config: Config = mode["config"]
    if args.print_seed is not None:
        print(generate(args.print_seed, config, args.mode).source(), end="")
        return 0
    count = mode["count"] if args.count is None else args.count
    seeds = range(args.seed, args.seed + count)
    try:
        check._emitter()
    except check.CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"fuzz_torch ({args.mode}): seeds {seeds.start}..{seeds.stop - 1}, top_k {config.top_k}, "
          f"{config.trials} trials, {args.jobs} jobs", flush=True)
    summary = Summary()
    start = time.monotonic()
    log = open(args.json, "w") if args.json else None
    try:
        for r in run(seeds, config, args.jobs, args.mode):
            summary.add(r)
            n = summary.programs
            if r.status in FAILURES or r.status == "timeout":
                print(f"[{n}/{count}] {r.line()}", flush=True)
                for line in r.detail.strip().splitlines()[1:12]:
                    print(f"      {line}")
                if args.save and r.source:
                    os.makedirs(args.save, exist_ok=True)
                    with open(os.path.join(args.save, f"seed{r.seed}.py"), "w") as f:
                        f.write(f"# fuzz_torch seed {r.seed}: {r.status} [{r.stage}]: {_first_line(r.detail, 300)}\n")
                        f.write(r.source)
            elif not args.quiet:
                print(f"[{n}/{count}] {r.line()}", flush=True)
            elif n % 25 == 0:
                c = summary.counts
                print(f"[{n}/{count}] " + ", ".join(f"{s} {c[s]}" for s in STATUSES)
                      + f" ({time.monotonic() - start:.0f} s)", flush=True)
            if log:
                row = asdict(r)
                if r.status not in FAILURES:
                    row.pop("source")
                log.write(json.dumps(row) + "\n")
                log.flush()
    finally:
        if log:
            log.close()
    summary.seconds = time.monotonic() - start
    print_summary(summary, args.mode)
    return 1 if summary.failures else 0


def print_summary(summary: Summary, mode: str = "ci") -> None:
    c = summary.counts
    print(f"\n{summary.programs} programs in {summary.seconds:.0f} s: "
          + ", ".join(f"{s} {c[s]}" for s in STATUSES)
          + f"; {summary.candidates} modules checked (optimized programs and other candidates)")
    print(f"programs with an operator the IR cannot express: {summary.expected_rejects} "
          f"({summary.accepted_rejects} of them accepted: PyTorch decomposed the operator)")
    if summary.noise:
        print(f"ok within the noise floor only: seeds {' '.join(map(str, sorted(summary.noise)))}")
    if summary.reasons:
        print("rejected / no candidate:")
        for reason, n in sorted(summary.reasons.items(), key=lambda kv: -kv[1]):
            print(f"  {n:5d}  {reason}")
    for r in sorted(summary.timeouts, key=lambda r: r.seed):
        print(f"timeout: seed {r.seed} [{r.stage}] {_first_line(r.detail)}")
    for r in sorted(summary.failures, key=lambda r: r.seed):
        print(f"\nFAIL {r.line()}")
        print(f"  python -m eqiforge.fuzz_torch --mode {mode} --seed {r.seed} --count 1   "
              f"# or python seed{r.seed}.py (--save)")


if __name__ == "__main__":
    sys.exit(main())
