"""Large programs: subgraph partitioning, per-subgraph search and composition
(DESIGN §5, "large programs").

A program with more operators than ``Options.partition_ops`` (or one whose
whole-program search finds no candidate, or hits a limit and none of its
candidates verifies, or hits a limit and the cut's subgraphs have a lower
estimate by the cost model: ``static_estimate``) is cut by
``eqiforge-opt partition`` into subgraphs of bounded size, each a program
whose inputs are the original inputs or boundary tensors that earlier
subgraphs output. Each subgraph then goes through the same search and tuning
as a whole program (``search.find_candidates``, then ``Tuner``: every
configuration verified before it is timed), and the tuned subgraph modules
are chained into one callable with the original signature.

- **Reuse**: subgraphs with the same structural hash (same structure, dtypes,
  extents and layouts up to names: the layers of a decoder stack) are
  searched and tuned once; the others run the same module.
- **Verification**: a subgraph's reference is its own program evaluated in
  PyTorch (``evaluate_ir``: the same ops eager runs, in float32), on inputs
  drawn like the real boundary values (the example inputs pushed through the
  earlier subgraphs); the composed callable is then checked against the eager
  function itself on fresh inputs.
- **Refinement**: a subgraph whose search finds no candidate is partitioned
  again with half the bound, down to single operators.
- Boundaries are materialized tensors in global memory, except where
  fusion across cuts (``cut_fusion``, option ``fuse_cuts``) joins
  consecutive tuned subgraphs whose consumer takes the producer's tiles
  directly: one kernel where the cut was.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from ..options import Options
from . import search
from .search import MissingPieceError

# ---- the plan from the core -----------------------------------------------------------


@dataclass
class BoundaryInfo:
    index: int
    name: str
    dtype: str
    dims: list[str]
    shape: tuple[int, ...]
    bytes: int
    producer: int
    consumers: list[int]


@dataclass
class SubgraphInfo:
    index: int
    name: str
    hash: str
    ops: int
    op_names: list[str]
    program: str
    # Per program input: ("input", original input index) or ("boundary", index).
    inputs: list[tuple[str, int]]
    # Per program output: (original output index or None, boundary index or None).
    outputs: list[tuple[int | None, int | None]]
    flops: float = 0.0
    bytes: int = 0


@dataclass
class Plan:
    program: str
    max_ops: int
    ops: int
    order: str
    boundary_bytes: int
    subgraphs: list[SubgraphInfo]
    boundaries: list[BoundaryInfo]
    # Per original output: (subgraph, output index); subgraph -1 means an input passed through.
    outputs: list[tuple[int, int]]
    # Operators of the block the cuts repeat with (0: none), and how many times.
    period: int = 0
    units: int = 0

    def distinct(self) -> int:
        return len({s.hash for s in self.subgraphs})

    def to_json(self) -> dict:
        return {
            "max_ops": self.max_ops, "ops": self.ops, "order": self.order, "boundary_bytes": self.boundary_bytes,
            "period": self.period, "units": self.units,
            "subgraphs": [{"index": s.index, "hash": s.hash, "ops": s.ops, "op_names": s.op_names,
                           "flops": s.flops, "bytes": s.bytes} for s in self.subgraphs],
            "boundaries": [{"name": b.name, "dtype": b.dtype, "shape": list(b.shape), "bytes": b.bytes,
                            "producer": b.producer, "consumers": b.consumers} for b in self.boundaries],
        }


def parse_plan(raw: dict) -> Plan:
    subgraphs = []
    for s in raw["subgraphs"]:
        inputs = [("boundary", int(i["boundary"])) if "boundary" in i else ("input", int(i["input"]))
                  for i in s["inputs"]]
        outputs = [(int(o["output"]) if "output" in o else None, int(o["boundary"]) if "boundary" in o else None)
                   for o in s["outputs"]]
        subgraphs.append(SubgraphInfo(int(s["index"]), str(s["name"]), str(s["hash"]), int(s["ops"]),
                                      [str(n) for n in s["op_names"]], str(s["program"]), inputs, outputs,
                                      float(s.get("flops", 0)), int(s.get("bytes", 0))))
    boundaries = [BoundaryInfo(int(b["index"]), str(b["name"]), str(b["dtype"]), [str(d) for d in b["dims"]],
                               tuple(int(x) for x in b["shape"]), int(b["bytes"]), int(b["producer"]),
                               [int(c) for c in b["consumers"]]) for b in raw["boundaries"]]
    outputs = [(int(o["subgraph"]), int(o["index"])) for o in raw["outputs"]]
    return Plan(str(raw["program"]), int(raw["max_ops"]), int(raw["ops"]), str(raw["order"]),
                int(raw["boundary_bytes"]), subgraphs, boundaries, outputs,
                int(raw.get("period", 0)), int(raw.get("units", 0)))


def has_partitioning() -> bool:
    return "partition" in search._cli_verbs()[1]


def partition_program(ir_text: str, max_ops: int) -> Plan:
    """``eqiforge-opt partition --json``: the subgraphs of at most `max_ops` operators."""
    path, verbs = search._cli_verbs()
    if "partition" not in verbs:
        raise MissingPieceError("subgraph partitioning", f"{path} has no `partition` verb"
                                if path else "the eqiforge-opt command was not found")
    with search.program_files(ir_text) as (file,):
        out = search._run_cli([path, "partition", file, "--max-ops", str(max_ops), "--json"],
                              "eqiforge-opt partition")
    return parse_plan(json.loads(out))


# ---- the IR evaluated in PyTorch (each subgraph's reference) ------------------------------


class IRSyntaxError(ValueError):
    pass


def _tokens(text: str) -> list[str]:
    text = re.sub(r";[^\n]*", " ", text)
    return re.findall(r"\(|\)|\[|\]|[^\s()\[\]]+", text)


def _parse_sexpr(tokens: list[str]) -> list:
    """Nested lists; brackets become ["[", ...] lists."""
    stack: list[list] = [[]]
    for t in tokens:
        if t in ("(", "["):
            stack.append(["["] if t == "[" else [])
        elif t in (")", "]"):
            if len(stack) < 2:
                raise IRSyntaxError("unbalanced parentheses")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(t)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise IRSyntaxError("expected one program")
    return stack[0][0]


_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
           "i32": torch.int32, "bool": torch.bool}


@dataclass
class _Val:
    t: Any                 # torch tensor (dims in `dims` order), or a Python float for a literal
    dims: list[str]
    dtype: str | None      # None for literals


def _number(atom: str) -> float | None:
    try:
        return float(atom)
    except ValueError:
        return None


class IRProgram:
    """A high-level IR program read from its text, evaluated with PyTorch ops
    (float32, or float64 where an input is): what eager computes for the
    same ops. Tile-level operators are not evaluated (partitioning comes
    before the search)."""

    def __init__(self, text: str):
        prog = _parse_sexpr(_tokens(text))
        if not prog or prog[0] != "program":
            raise IRSyntaxError("expected (program ...)")
        self.name = prog[1]
        self.dims: dict[str, int] = {}
        self.inputs: list[tuple[str, str, list[str]]] = []
        self.items: list[tuple[str, str, Any, list[str] | None]] = []   # (kind, name, expr, layout)
        for item in prog[2:]:
            head = item[0]
            if head == "dims":
                for d in item[1:]:  # (k_out k): the extent of k
                    self.dims[d[0]] = int(d[1]) if d[1].isdigit() else self.dims[d[1]]
            elif head == "input":
                self.inputs.append((item[1], item[2], list(item[3][1:])))
            elif head == "let":
                self.items.append(("let", item[1], item[2], None))
            elif head == "output":
                layout = list(item[2][1:]) if isinstance(item[2], list) and item[2][:1] == ["["] else None
                self.items.append(("output", item[1], item[-1], layout))
        self.outputs = [(name, layout) for kind, name, _, layout in self.items if kind == "output"]
        self.output_dtypes: list[str] | None = None

    def input_shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.dims[d] for d in self.inputs[i][2])

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        compute = torch.float64 if any(a.dtype == torch.float64 for a in args) else torch.float32
        env: dict[str, _Val] = {}
        for (name, dtype, layout), a in zip(self.inputs, args):
            t = a.reshape(tuple(self.dims[d] for d in layout))
            env[name] = _Val(t.to(compute) if dtype != "bool" else t, list(layout), dtype)
        device = args[0].device if args else torch.device("cpu")
        outs = []
        dtypes = []
        for kind, name, expr, layout in self.items:
            v = self._eval(expr, env, compute, device)
            if kind == "let":
                env[name] = v
                continue
            layout = layout or [d for d in self.dims if d in v.dims]
            t = v.t.permute([v.dims.index(d) for d in layout]) if v.dims else v.t
            dt = _DTYPES[v.dtype or "f32"]
            outs.append(t.to(dt).contiguous())
            dtypes.append(v.dtype or "f32")
        self.output_dtypes = dtypes
        return tuple(outs)

    # -- expressions --

    def _eval(self, e, env, compute, device) -> _Val:
        if isinstance(e, str):
            if e in env:
                return env[e]
            n = _number(e)
            if n is None:
                raise IRSyntaxError(f"unknown name {e}")
            return _Val(n, [], None)
        op, rest = e[0], e[1:]
        if op == "input":
            return env[rest[0]]
        if op == "const":
            return _Val(float(rest[0]), [], None)
        if op == "iota":
            return _Val(torch.arange(self.dims[rest[0]], device=device, dtype=compute), [rest[0]], "i32")
        if op in ("sum", "max"):
            x = self._eval(rest[1], env, compute, device)
            ax = x.dims.index(rest[0])
            t = x.t.sum(ax) if op == "sum" else x.t.amax(ax)
            return _Val(t, [d for d in x.dims if d != rest[0]], x.dtype)
        if op == "reduce":
            if rest[1] not in ("+", "max"):
                raise NotImplementedError(f"reduce with {rest[1]}: only + and max are evaluated in PyTorch")
            return self._eval(["sum" if rest[1] == "+" else "max", rest[0], rest[2]], env, compute, device)
        if op == "matmul":
            k = rest[0]
            a = self._eval(rest[1], env, compute, device)
            b = self._eval(rest[2], env, compute, device)
            letters = {}
            for d in a.dims + b.dims:
                letters.setdefault(d, chr(ord("a") + len(letters)))
            out = [d for d in a.dims if d != k] + [d for d in b.dims if d != k and d not in a.dims]
            spec = "".join(letters[d] for d in a.dims) + "," + "".join(letters[d] for d in b.dims) + "->" + \
                "".join(letters[d] for d in out)
            return _Val(torch.einsum(spec, a.t, b.t), out, a.dtype)
        if op == "split":
            d, d1, d2 = rest[0], rest[1], rest[2]
            x = self._eval(rest[3], env, compute, device)
            i = x.dims.index(d)
            shape = list(x.t.shape)
            t = x.t.reshape(shape[:i] + [self.dims[d1], self.dims[d2]] + shape[i + 1:])
            return _Val(t, x.dims[:i] + [d1, d2] + x.dims[i + 1:], x.dtype)
        if op == "merge":
            d1, d2, d = rest[0], rest[1], rest[2]
            x = self._eval(rest[3], env, compute, device)
            others = [n for n in x.dims if n not in (d1, d2)]
            i = min(x.dims.index(d1), x.dims.index(d2))
            order = others[:i] + [d1, d2] + others[i:]
            t = x.t.permute([x.dims.index(n) for n in order])
            shape = list(t.shape)
            t = t.reshape(shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:])
            return _Val(t, others[:i] + [d] + others[i:], x.dtype)
        if op == "rename":
            x = self._eval(rest[2], env, compute, device)
            return _Val(x.t, [rest[1] if n == rest[0] else n for n in x.dims], x.dtype)
        if op == "pow":
            x = self._eval(rest[1], env, compute, device)
            return self._pointwise(lambda t: t ** float(rest[0]), [x], x.dtype)
        if op == "cast":
            x = self._eval(rest[1], env, compute, device)
            dt = _DTYPES[rest[0]]

            def cast(t):
                if not isinstance(t, torch.Tensor):
                    t = torch.tensor(t, dtype=compute, device=device)
                r = t.to(dt)
                return r if dt == torch.bool else r.to(compute)
            return self._pointwise(cast, [x], rest[0])
        args = [self._eval(a, env, compute, device) for a in rest]
        dtype = next((a.dtype for a in args if a.dtype is not None), None)
        if op in ("lt", "le", "eq"):
            dtype = "bool"
        if op == "where":
            dtype = next((a.dtype for a in args[1:] if a.dtype is not None), None)
        fn = _POINTWISE.get(op)
        if fn is None:
            raise NotImplementedError(f"{op} is not evaluated in PyTorch (a tile-level operator?)")
        return self._pointwise(fn, args, dtype)

    def _pointwise(self, fn: Callable, args: list[_Val], dtype: str | None) -> _Val:
        dims: list[str] = []
        for a in sorted(args, key=lambda a: -len(a.dims)):   # the widest operand's order first
            for d in a.dims:
                if d not in dims:
                    dims.append(d)
        tensors = []
        for a in args:
            if not a.dims:
                tensors.append(a.t)
                continue
            t = a.t.permute([a.dims.index(d) for d in dims if d in a.dims])
            shape = [self.dims[d] if d in a.dims else 1 for d in dims]
            tensors.append(t.reshape(shape))
        return _Val(fn(*tensors), dims, dtype)


def _t(x, like):
    return x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=torch.float32)


def _where(c, a, b):
    if not isinstance(c, torch.Tensor):
        return a if c else b
    ref = next((x for x in (a, b) if isinstance(x, torch.Tensor)), None)
    if not isinstance(a, torch.Tensor):
        a = torch.tensor(a, dtype=ref.dtype, device=ref.device) if ref is not None else torch.tensor(a)
    if not isinstance(b, torch.Tensor):
        b = torch.tensor(b, dtype=a.dtype, device=a.device)
    return torch.where(c.bool(), a, b)


def _gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2.0)))


def _lift(f):
    def g(*xs):
        if all(not isinstance(x, torch.Tensor) for x in xs):
            return float(f(*[torch.tensor(float(x), dtype=torch.float64) for x in xs]))
        return f(*xs)
    return g


_POINTWISE: dict[str, Callable] = {
    "add": _lift(lambda a, b: a + b), "sub": _lift(lambda a, b: a - b), "mul": _lift(lambda a, b: a * b),
    "div": _lift(lambda a, b: a / b),
    "max2": _lift(lambda a, b: torch.maximum(torch.as_tensor(a), torch.as_tensor(b))),
    "min2": _lift(lambda a, b: torch.minimum(torch.as_tensor(a), torch.as_tensor(b))),
    "neg": _lift(lambda a: -a), "exp": _lift(torch.exp), "log": _lift(torch.log), "sqrt": _lift(torch.sqrt),
    "rsqrt": _lift(torch.rsqrt), "sigmoid": _lift(torch.sigmoid), "silu": _lift(lambda x: x * torch.sigmoid(x)),
    "gelu": _lift(_gelu), "tanh": _lift(torch.tanh),
    "lt": _lift(lambda a, b: a < b), "le": _lift(lambda a, b: a <= b), "eq": _lift(lambda a, b: a == b),
    "where": _where,
}


# ---- a subgraph as a program of its own -------------------------------------------------


@dataclass(frozen=True)
class _In:
    name: str
    kind: str
    source: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    layout: tuple[str, ...]
    ir_shape: tuple[int, ...]


@dataclass(frozen=True)
class _Out:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    layout: tuple[str, ...]


@dataclass
class SubgraphFrontend:
    """What Binding and the tuner read from a front-end result, for a
    subgraph: its inputs are positional arguments in the IR layout."""

    text: str
    name: str
    inputs: list
    outputs: list
    out_spec: Any = None
    constant_args: dict = field(default_factory=dict)
    graph: Any = None


def subgraph_frontend(ir: IRProgram, text: str, example_outputs: tuple[torch.Tensor, ...]) -> SubgraphFrontend:
    inputs = []
    for i, (name, dtype, layout) in enumerate(ir.inputs):
        shape = ir.input_shape(i)
        inputs.append(_In(name, "arg", i, shape, _DTYPES[dtype], tuple(layout), shape))
    outputs = []
    for (name, layout), t in zip(ir.outputs, example_outputs):
        outputs.append(_Out(name, tuple(t.shape), t.dtype, tuple(layout or ())))
    return SubgraphFrontend(text, ir.name, inputs, outputs)


# ---- searching, tuning and composing -------------------------------------------------------


@dataclass
class Piece:
    """One tuned subgraph: the module, its launch parameters and the runner
    (positional inputs in the subgraph's IR layout -> tuple of outputs), or a
    nested composition when the subgraph had to be cut further."""

    hash: str
    runner: Callable
    module: Any = None
    source: str | None = None
    params: dict = field(default_factory=dict)
    program: str | None = None
    nested: "Composed | None" = None
    estimate_s: float | None = None
    candidates: int = 0
    search_s: float = 0.0
    tune_s: float = 0.0
    error: float | None = None
    kernels: list = field(default_factory=list)   # KernelInfo
    tuning: dict = field(default_factory=dict)    # the tuner's TuneStats.to_json()
    search: dict = field(default_factory=dict)    # extraction's statistics
    time_s: float | None = None                   # the tuner's measurement of the chosen configuration (GPU)
    # The high-level program the piece was tuned for (its names are those of
    # `program`'s inputs and outputs; a reused piece serves others positionally).
    subgraph_program: str | None = None
    # The search's other candidates (tiled programs, best first): fusion
    # across cuts also tries the first few where the chosen one does not fuse.
    alternatives: list = field(default_factory=list)


@dataclass
class Step:
    subgraph: SubgraphInfo
    piece: Piece


class Composed:
    """The subgraphs chained: boundaries are materialized tensors, each
    written by its producer and read by its consumers.

    While a CUDA graph is captured, subgraphs that read nothing another one
    writes before them run on side streams (streams.plan_streams over the
    steps' boundaries), as the lean path does with one module's kernels:
    QK-norm projections' two subgraphs share only their input. The streams
    are made on the first eager call on a GPU (captures are preceded by
    warm-up calls), since making one during a capture is not allowed."""

    def __init__(self, plan: Plan, steps: list[Step]):
        from .streams import side_stream_plan

        self.plan, self.steps = plan, steps
        accesses = []
        for step in steps:
            reads = frozenset(("input" if kind == "input" else "boundary", i) for kind, i in step.subgraph.inputs)
            writes = frozenset([("boundary", b) for _, b in step.subgraph.outputs if b is not None]
                               + [("output", o) for o, _ in step.subgraph.outputs if o is not None])
            accesses.append((reads, writes))
        self.stream_plan = side_stream_plan(accesses)
        self._side: dict[Any, list] = {}   # device -> side streams

    def _side_streams(self, inputs) -> list | None:
        """The side streams to run the steps on: only while a CUDA graph is
        captured, and only once an eager call has made them."""
        from . import launch
        from .streams import new_side_streams

        device = inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else None
        if self.stream_plan is None or not launch.SIDE_STREAMS or device is None or device.type != "cuda":
            return None
        if not torch.cuda.is_current_stream_capturing():
            if device not in self._side:
                self._side[device] = new_side_streams(self.stream_plan, device)
            return None
        return self._side.get(device)

    @staticmethod
    def _arguments(step: Step, inputs, boundary: list) -> list:
        return [inputs[i] if kind == "input" else boundary[i] for kind, i in step.subgraph.inputs]

    def _run_step(self, step: Step, inputs, boundary: list, outputs: list) -> None:
        outs = step.piece.runner(*self._arguments(step, inputs, boundary))
        for (orig, b), t in zip(step.subgraph.outputs, outs):
            if b is not None:
                boundary[b] = t
            if orig is not None:
                outputs[orig] = t

    def step_arguments(self, *inputs: torch.Tensor) -> list[list[torch.Tensor]]:
        """Each step's arguments, from one call that runs the steps in turn
        (what a per-kernel report of the steps' modules runs on)."""
        boundary: list[torch.Tensor | None] = [None] * len(self.plan.boundaries)
        outputs: list[torch.Tensor | None] = [None] * len(self.plan.outputs)
        out = []
        for step in self.steps:
            out.append(self._arguments(step, inputs, boundary))
            self._run_step(step, inputs, boundary, outputs)
        return out

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from .streams import run_plan

        boundary: list[torch.Tensor | None] = [None] * len(self.plan.boundaries)
        outputs: list[torch.Tensor | None] = [None] * len(self.plan.outputs)
        side = self._side_streams(inputs)
        if side is None:
            for step in self.steps:
                self._run_step(step, inputs, boundary, outputs)
        else:
            def run(i: int, stream) -> None:
                with torch.cuda.stream(stream):
                    self._run_step(self.steps[i], inputs, boundary, outputs)

            run_plan(self.stream_plan, side, run, inputs[0].device)
        return tuple(outputs)


@dataclass
class PartitionStats:
    subgraphs: int = 0
    distinct: int = 0
    searched: int = 0           # searches run (distinct subgraphs, nested ones included)
    reused: int = 0             # subgraphs that took another's result
    refined: int = 0            # subgraphs cut again because their search found nothing
    search_s: float = 0.0
    tune_s: float = 0.0
    reason: str = ""
    per_subgraph: list[dict] = field(default_factory=list)
    # Groups of consecutive subgraphs fusion across cuts tried (cut_fusion).
    fused: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(vars(self))


def summed(dicts: list[dict]) -> dict:
    """Numeric fields added up over the subgraphs' statistics (the tuner's
    or extraction's), with `rounds` concatenated."""
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if isinstance(v, bool):
                out[k] = out.get(k, False) or v
            elif isinstance(v, (int, float)):
                out[k] = out.get(k, 0) + v
            elif k == "rounds" and isinstance(v, list):
                out.setdefault(k, []).extend(v)
    return out


class PartitionedSearch:
    """Searches, tunes and composes the subgraphs of one plan (and, for a
    subgraph whose search finds nothing, of its own plan, recursively)."""

    def __init__(self, opts: Options, target: str, interpret: bool, progress=None, module_dir=None,
                 tuner_factory: Callable | None = None):
        self.opts, self.target, self.interpret = opts, target, interpret
        self.progress, self.module_dir = progress, module_dir
        self.tuner_factory = tuner_factory
        self.pieces: dict[str, Piece] = {}      # structural hash -> tuned piece
        # Searches already run (static_estimate): structural hash -> found.
        self.found: dict[str, Any] = {}
        self.stats = PartitionStats()

    def _info(self, line: str) -> None:
        if self.progress is not None:
            self.progress.info(line)

    def compose(self, plan: Plan, example_inputs: list[torch.Tensor], depth: int = 0) -> Composed:
        """`example_inputs`: the plan's program inputs in the IR layout."""
        if depth == 0:
            self.stats.subgraphs = len(plan.subgraphs)
            self.stats.distinct = plan.distinct()
        boundary: list[torch.Tensor | None] = [None] * len(plan.boundaries)
        steps = []
        for sg in plan.subgraphs:
            ir = IRProgram(sg.program)
            args = [example_inputs[i] if kind == "input" else boundary[i] for kind, i in sg.inputs]
            with torch.no_grad():
                outs = ir(*args)
            for (_, b), t in zip(sg.outputs, outs):
                if b is not None:
                    boundary[b] = t
            piece = self.pieces.get(sg.hash)
            reused = piece is not None
            if reused:
                self.stats.reused += 1
                self._info(f"subgraph {sg.name}: same structure as an earlier one (hash {sg.hash}), reused")
            else:
                piece = self._tune(sg, ir, args, outs, depth)
                self.pieces[sg.hash] = piece
            if depth == 0:
                self.stats.per_subgraph.append({"index": sg.index, "hash": sg.hash, "ops": sg.ops,
                                                "reused": reused,
                                                "search_s": round(piece.search_s, 3),
                                                "tune_s": round(piece.tune_s, 3),
                                                "candidates": piece.candidates,
                                                "nested": piece.nested is not None})
            steps.append(Step(sg, piece))
        if depth == 0 and self.opts.fuse_cuts and len(steps) > 1:
            from .cut_fusion import CutFusion

            args_of = {("input", i): t for i, t in enumerate(example_inputs)}
            args_of.update({("boundary", b): t for b, t in enumerate(boundary)})
            fusion = CutFusion(self)
            steps = fusion.run(plan, steps, args_of)
            self.stats.fused = fusion.log
            # The groups' pieces count in the report's search and tuning totals.
            self.pieces.update({p.hash: p for p in fusion.tuned.values() if p is not None})
        return Composed(plan, steps)

    def _tune(self, sg: SubgraphInfo, ir: IRProgram, args: list[torch.Tensor], outs, depth: int) -> Piece:
        from .launch import Binding, make_runner
        from .tuner import NoValidCandidate, Tuner

        start = time.monotonic()
        self.stats.searched += 1
        found = self.found.pop(sg.hash, None) or search.find_candidates(sg.program, self.opts, self.target,
                                                                        file=f"<{sg.name}>")
        search_s = time.monotonic() - start
        self.stats.search_s += search_s
        self._info(f"subgraph {sg.name} ({sg.ops} ops): {len(found.candidates)} candidates in {search_s:.1f} s")
        if not found.candidates and sg.ops > 1:
            return self._refine(sg, args, depth, search_s,
                                f"its search found no candidate ({search.no_candidate_reason(found.stats)})")
        if not found.candidates:
            raise NoValidCandidate(f"extraction found no candidate for the single operator of {sg.name} "
                                   f"({search.no_candidate_reason(found.stats)})")
        fe = subgraph_frontend(ir, sg.program, outs)
        binding = Binding(fe)
        start = time.monotonic()
        make = self.tuner_factory or Tuner
        try:
            tuner = make(binding, ir, tuple(args), found.candidates, self.opts, interpret=self.interpret,
                         progress=self.progress, module_dir=self.module_dir)
            result = tuner.run()
        except NoValidCandidate as e:
            if sg.ops > 1:
                return self._refine(sg, args, depth, search_s, f"no candidate verified ({str(e).splitlines()[0]})")
            raise
        tune_s = time.monotonic() - start
        self.stats.tune_s += tune_s
        best = result.best
        params = best.config.params()
        runner, _ = make_runner(best.module, params, list(args), lean=not self.interpret, cuda_graphs=False,
                                bound=[False] * len(args))
        from .search import kernels_of_module, merge_kernel_info

        kernels = merge_kernel_info(best.candidate.kernels, kernels_of_module(best.module, best.candidate.source))
        return Piece(sg.hash, runner, best.module, best.candidate.source, params, best.candidate.program,
                     estimate_s=best.candidate.estimate_s, candidates=len(found.candidates), search_s=search_s,
                     tune_s=tune_s, error=best.error, kernels=kernels, tuning=result.stats.to_json(),
                     search=dict(found.stats), time_s=best.time_s, subgraph_program=sg.program,
                     alternatives=[c.program for c in found.candidates if c.program != best.candidate.program])

    def _refine(self, sg: SubgraphInfo, args, depth: int, search_s: float, why: str) -> Piece:
        bound = max(1, sg.ops // 2)
        self.stats.refined += 1
        self._info(f"subgraph {sg.name}: {why}; cutting it into subgraphs of at most {bound} ops")
        plan = partition_program(sg.program, bound)
        if len(plan.subgraphs) <= 1:
            # No cut is allowed inside it (values without a dim of extent > 1,
            # copies): the same program again would recurse without end.
            from .tuner import NoValidCandidate

            raise NoValidCandidate(f"subgraph {sg.name} ({sg.ops} ops): {why}, and it cannot be cut further")
        nested = self.compose(plan, list(args), depth + 1)
        return Piece(sg.hash, nested, nested=nested, search_s=search_s,
                     candidates=sum(s.piece.candidates for s in nested.steps))


def static_estimate(searcher: PartitionedSearch, plan: Plan) -> float | None:
    """The plan's time by the cost model: each subgraph's best candidate,
    summed over the subgraphs (a repeated subgraph is searched once). None when
    a subgraph has no candidate. The searches are kept in `searcher`, so that
    composing the plan does not run them again."""
    total = 0.0
    for sg in plan.subgraphs:
        found = searcher.found.get(sg.hash)
        if found is None:
            found = search.find_candidates(sg.program, searcher.opts, searcher.target, file=f"<{sg.name}>")
            searcher.found[sg.hash] = found
        if not found.candidates or found.candidates[0].estimate_s is None:
            return None
        total += found.candidates[0].estimate_s
    return total


def first_bound(ops: int, opts: Options) -> int:
    """The smallest bound of the cut after the whole-program search failed:
    half the program, and no more than the option's bound when it has one
    (subgraphs whose own search fails are halved again)."""
    half = max(1, math.ceil(ops / 2))
    return min(half, opts.partition_ops) if opts.partition_ops > 0 else half


# A cut's boundary traffic may be this many times the least any bound gives,
# plus a floor that is nothing next to a kernel launch (256 KiB written and
# read is ~0.1 us at 4 TB/s), before a larger bound is preferred to it.
_TRAFFIC_SLACK = 2.0
_TRAFFIC_FLOOR = 256 * 1024


def fallback_plan(ir_text: str, ops: int, opts: Options) -> Plan | None:
    """The cut of a program whose whole search failed or hit a limit. Bounds
    from first_bound up to one operator less than the program (and no more
    than partition_ops) are tried; the smallest whose boundary traffic is
    within _TRAFFIC_SLACK times (plus _TRAFFIC_FLOOR) the least of them wins.
    Half the program can be a poor cut: sliding-window attention's 15
    operators halved put the softmax's max and its exponent in different
    subgraphs (2 MiB through the boundary, no online softmax), where 9 cuts
    only at the two projections (32 KiB). None when no bound cuts the
    program."""
    lo = first_bound(ops, opts)
    hi = max(lo, min(ops - 1, opts.partition_ops) if opts.partition_ops > 0 else ops - 1)
    plans = []
    for bound in range(lo, hi + 1):
        plan = partition_program(ir_text, bound)
        if len(plan.subgraphs) > 1:
            plans.append(plan)
    if not plans:
        return None
    least = min(p.boundary_bytes for p in plans)
    return next(p for p in plans if p.boundary_bytes <= _TRAFFIC_SLACK * least + _TRAFFIC_FLOOR)


def verify_composed(composed: Composed, binding, fn: Callable, example_inputs: tuple, opts: Options):
    """The composed program against the eager function on fresh inputs."""
    from .verify import compare, fresh_args

    args = fresh_args(example_inputs, opts.seed + 1)
    with torch.no_grad():
        refs = binding.flat_outputs(fn(*args))
        outs = composed(*binding.module_inputs(args))
    flat = []
    for info, t in zip(binding.outputs, outs):
        flat.append(t.reshape(info.shape) if tuple(t.shape) != tuple(info.shape) else t)
    return compare(flat, refs, [o.name for o in binding.outputs])


class ComposedProgram:
    """The optimized program of a partitioned search: call it like the
    original. `report` as for a whole program; `plan` the partition;
    `stats` what was searched and reused."""

    def __init__(self, binding, composed: Composed, ir_text: str, report, interpret: bool, stats: PartitionStats):
        self.binding, self.composed, self.ir_text = binding, composed, ir_text
        self.report, self.interpret, self.stats = report, interpret, stats
        self.plan = composed.plan
        # A whole program's single module, launch parameters and candidate
        # have no counterpart here: each subgraph has its own (composed.steps).
        self.module, self.params, self.candidate_program = None, {}, None

    def __call__(self, *args, **kwargs):
        from .launch import BindingError

        if kwargs:
            raise BindingError(f"{self.binding.name}: keyword arguments are not supported; pass them positionally")
        self.binding.check_args(args)
        return self.binding.user_outputs(self.composed(*self.binding.module_inputs(args)))

    def save(self, path: str | Path) -> Path:
        """Writes `path` (a runner with `run(*inputs)`, as for a whole
        program) and, beside it, one Triton module per distinct subgraph
        (`<stem>_<hash>.py`)."""
        path = Path(path)
        names = {}
        for h, source in distinct_sources(self.composed).items():
            module = path.with_name(f"{path.stem}_{h}.py")
            module.write_text(source)
            names[h] = module.name
        path.write_text(composed_source(self.composed, names))
        return path

    def __repr__(self) -> str:
        return (f"<eqiforge.ComposedProgram {self.binding.name}: {len(self.plan.subgraphs)} subgraphs "
                f"({self.plan.distinct()} distinct), {'interpreter' if self.interpret else self.report.device}>")


def distinct_sources(composed: Composed) -> dict[str, str]:
    out: dict[str, str] = {}
    for step in composed.steps:
        if step.piece.nested is not None:
            out.update(distinct_sources(step.piece.nested))
        else:
            out.setdefault(step.piece.hash, step.piece.source or "")
    return out


def composed_source(composed: Composed, module_files: dict[str, str]) -> str:
    """The runner file: `run(*inputs)` chains the subgraph modules (files
    beside it, `module_files`: hash -> file name) with the tuned launch
    parameters."""
    tuned: dict[str, dict] = {}
    lines = ['"""eqiforge: a partitioned program. run(*inputs) chains the Triton modules of its subgraphs',
             '(files beside this one); boundaries between subgraphs are materialized tensors."""',
             "import importlib.util", "from pathlib import Path", "", "MODULES = " + repr(module_files), ""]

    def walk(c: Composed, prefix: str) -> list[str]:
        body = [f"def {prefix}(*inputs):", f"    boundary = [None] * {len(c.plan.boundaries)}",
                f"    outputs = [None] * {len(c.plan.outputs)}"]
        nested_defs: list[str] = []
        for step in c.steps:
            args = ", ".join(f"inputs[{i}]" if kind == "input" else f"boundary[{i}]"
                             for kind, i in step.subgraph.inputs)
            if step.piece.nested is not None:
                name = f"{prefix}_{step.subgraph.index}"
                nested_defs += walk(step.piece.nested, name)
                call = f"{name}({args})"
            else:
                tuned.setdefault(step.piece.hash, step.piece.params)
                call = f"_module({step.piece.hash!r}).forward({args}, **TUNED[{step.piece.hash!r}])"
            body.append(f"    outs = {call}  # {step.subgraph.name}: {' '.join(step.subgraph.op_names)}")
            for k, (orig, b) in enumerate(step.subgraph.outputs):
                if b is not None:
                    body.append(f"    boundary[{b}] = outs[{k}]")
                if orig is not None:
                    body.append(f"    outputs[{orig}] = outs[{k}]")
        body.append("    return tuple(outputs)")
        return nested_defs + ["", ""] + body

    functions = walk(composed, "run")
    lines += ["TUNED = " + repr(tuned), "", "_LOADED = {}", "", "",
              "def _module(h):",
              "    if h not in _LOADED:",
              "        spec = importlib.util.spec_from_file_location('eqiforge_subgraph_' + h,",
              "                                                      Path(__file__).with_name(MODULES[h]))",
              "        module = importlib.util.module_from_spec(spec)",
              "        spec.loader.exec_module(module)",
              "        _LOADED[h] = module",
              "    return _LOADED[h]"]
    return "\n".join(lines + functions) + "\n"


__all__ = ["Composed", "IRProgram", "PartitionStats", "ComposedProgram", "PartitionedSearch", "Plan",
           "has_partitioning", "partition_program", "verify_composed"]
