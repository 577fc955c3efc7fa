"""Running what the IR cannot express in PyTorch, and optimizing the rest.

With ``unsupported="fallback"`` (the torch.compile backend's default), a
program with operations the front end cannot translate is split: its ATen
graph (as the front end captures it) is cut into maximal regions of
translatable operations (torch.fx's capability-based partitioner), each region
with real computation is optimized on its own like a whole program, and
everything else, including regions that fail to translate or to verify, runs
in PyTorch between them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

# Ops that only view or copy data: a region made of these alone stays in PyTorch.
_LAYOUT_OPS = frozenset(
    "view _unsafe_view reshape permute transpose t numpy_T unsqueeze squeeze expand expand_as contiguous clone "
    "alias detach detach_ lift_fresh_copy slice select _to_copy to type_as _assert_tensor_metadata".split()
)


def _op_name(target) -> str:
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", str(target))


class _Translatable(OperatorSupportBase):
    """Ops the front end has a translation for, minus those that failed to
    translate in this graph (by op name, e.g. "aten.slice")."""

    def __init__(self, excluded: set[str]):
        from ..frontend.ops import IGNORED, TABLE
        from ..frontend.translate import op_name

        self.known = set(TABLE) | set(IGNORED)
        self.excluded = excluded
        self.op_name = op_name

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            return True
        return node.target in self.known and self.op_name(node.target) not in self.excluded


class _Region(torch.nn.Module):
    """A fused region replaced by its optimized program."""

    def __init__(self, program):
        super().__init__()
        self.program = program

    def forward(self, *args):
        return self.program(*args)


@dataclass
class Part:
    name: str
    nodes: list[str]                 # the ATen ops of the region
    program: Any = None              # OptimizedProgram, or None when it runs in PyTorch
    reason: str = ""                 # why it runs in PyTorch


class PartsReport:
    def __init__(self, parts: list[Part], eager_ops: list[str]):
        self.parts, self.eager_ops = parts, eager_ops

    def text(self) -> str:
        lines = [f"eqiforge: {sum(p.program is not None for p in self.parts)} of {len(self.parts)} regions "
                 "optimized; the rest runs in PyTorch"]
        if self.eager_ops:
            lines.append("operations without an IR form (PyTorch): " + ", ".join(sorted(set(self.eager_ops))))
        for p in self.parts:
            if p.program is None:
                lines.append(f"region {p.name} ({', '.join(p.nodes)}): PyTorch ({p.reason})")
        out = "\n".join(lines) + "\n"
        for p in self.parts:
            if p.program is not None:
                out += f"\nregion {p.name}:\n" + p.program.report.text()
        return out

    def svg(self) -> str:
        done = [p for p in self.parts if p.program is not None]
        if not done:
            return ""
        return max(done, key=lambda p: len(p.nodes)).program.report.svg()


class PartitionedProgram:
    """A program whose translatable regions run as tuned kernels and whose
    other operations run in PyTorch."""

    def __init__(self, graph_module: torch.fx.GraphModule, parts: list[Part], eager_ops: list[str]):
        self.graph_module = graph_module
        self.parts = parts
        self.report = PartsReport(parts, eager_ops)

    def __call__(self, *args):
        return self.graph_module(*args)

    def save(self, path: str | Path) -> list[Path]:
        """Writes each optimized region's module as PATH with the region's name
        before the suffix (kernels.fused_0.py)."""
        path = Path(path)
        out = []
        for p in self.parts:
            if p.program is not None:
                out.append(p.program.save(path.with_name(f"{path.stem}.{p.name}{path.suffix or '.py'}")))
        return out


class _ArgRecorder(torch.fx.Interpreter):
    def __init__(self, gm, names: set[str]):
        super().__init__(gm)
        self.names, self.args_of = names, {}

    def call_module(self, target, args, kwargs):
        if target in self.names:
            self.args_of[target] = tuple(args)
        return super().call_module(target, args, kwargs)


# Re-partitioning rounds: each round takes out the ops that failed to translate.
_MAX_ROUNDS = 8


def _partition(gm: torch.fx.GraphModule, excluded: set[str], example_inputs: tuple):
    """Fuses the translatable regions of gm (in place); returns the fused
    module, its region names in order, and each region's example arguments."""
    support = _Translatable(excluded)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = [
        p for p in partitioner.propose_partitions()
        if any(n.target is not operator.getitem and _op_name(n.target) not in _LAYOUT_OPS for n in p.nodes)
    ]
    fused = partitioner.fuse_partitions(partitions, prefix="eqf_region_")
    names = sorted((str(n.target) for n in fused.graph.nodes
                    if n.op == "call_module" and str(n.target).startswith("eqf_region_")),
                   key=lambda s: int(s.rsplit("_", 1)[-1]))
    recorder = _ArgRecorder(fused, set(names))
    with torch.no_grad():
        recorder.run(*example_inputs)
    return fused, names, recorder.args_of


def optimize_parts(fn, example_inputs: tuple, opts, progress, strict: bool = True) -> PartitionedProgram:
    from ..api import compile_captured
    from ..frontend import FrontendError, UnsupportedOpError, capture, translate
    from .tuner import NoValidCandidate

    graph = capture(fn, *example_inputs, strict=strict)
    flat_inputs = tuple(torch.utils._pytree.tree_flatten(example_inputs)[0])
    excluded: set[str] = set()
    for _ in range(_MAX_ROUNDS):
        fused, names, args_of = _partition(graph.program.module(), excluded, flat_inputs)
        translated: dict[str, object] = {}
        reasons: dict[str, str] = {}
        failed_ops: set[str] = set()
        for name in names:
            args = args_of.get(name)
            if args is None:
                reasons[name] = "not reached with the example inputs"
                continue
            try:
                translated[name] = translate(capture(getattr(fused, name), *args, strict=False), name)
            except UnsupportedOpError as e:
                failed_ops.add(e.op)
                reasons[name] = str(e).splitlines()[0]
            except FrontendError as e:
                reasons[name] = str(e).splitlines()[0]
        if not failed_ops - excluded:
            break
        excluded |= failed_ops
    support = _Translatable(excluded)
    eager_ops = sorted({_op_name(n.target) for n in graph.program.graph.nodes
                        if n.op == "call_function" and not support.is_node_supported({}, n)})
    region_opts = opts.updated(unsupported="error")
    parts = []
    for name in names:
        sub = getattr(fused, name)
        part = Part(name, [_op_name(n.target) for n in sub.graph.nodes if n.op == "call_function"])
        part.reason = reasons.get(name, "")
        fe = translated.get(name)
        if fe is not None:
            try:
                with progress.stage(f"region {name} ({len(part.nodes)} ops)"):
                    part.program = compile_captured(fe, sub, args_of[name], region_opts, progress)
                fused._modules[name] = _Region(part.program)
            except (FrontendError, NoValidCandidate) as e:
                part.reason = str(e).splitlines()[0]
        parts.append(part)
    return PartitionedProgram(fused, parts, eager_ops)
