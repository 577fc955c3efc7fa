"""Fusion across a partition's cuts (DESIGN §5, "large programs": composition
without materialized boundaries).

A partitioned program runs its subgraphs one after another, each boundary a
tensor in global memory and every subgraph at least one kernel of its own.
Where a consumer reads a boundary tile by tile over the same axes its
producer wrote it with, the two tuned programs can be one: ``eqiforge-opt
compose`` joins the producer's and the consumer's tiled programs (the
tuned candidates, and a few of each search's next ones where those do not
fuse) and feeds the consumer the producer's tiles directly
((partition a d (combine a d X)) is X), and extraction over that composed
program with the structural rules alone (a small e-graph: both pieces are
tiled already) forms the kernels, one where the cut was.

``fuse_cuts`` walks the subgraphs in execution order and grows a group
while the next subgraph reads a boundary of the group and the composition
feeds at least one boundary tile by tile, or reads none of the group (the
two run side by side: their independent kernels share launches, the
emitter's fused kernels), and the composed program's best static estimate
is below the sum of the group's and the subgraph's. Each
group of two or more subgraphs is then tuned like a subgraph (every
configuration verified against its reference, the group's high-level
programs composed and evaluated in PyTorch) and replaces its members only
if it verifies and, on a GPU, measures faster than they did together.
Groups of the same member subgraphs wired the same way (the two
connections of an mHC layer) are searched and tuned once.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from . import search


def compose_programs(producer: str, consumer: str, keep: list[str], name: str) -> tuple[str, list[str]]:
    """``eqiforge-opt compose``: one program from two that meet at boundary
    tensors; returns it and the boundaries the consumer takes tile by tile."""
    path, verbs = search._cli_verbs()
    if "compose" not in verbs:
        raise search.MissingPieceError("composition across cuts", f"{path} has no `compose` verb"
                                       if path else "the eqiforge-opt command was not found")
    with search.program_files(producer, consumer) as files:
        args = [path, "compose", *files, "--json", "--name", name]
        for k in keep:
            args += ["--keep", k]
        out = json.loads(search._run_cli(args, "eqiforge-opt compose"))
    return str(out["program"]), [str(b) for b in out["fused"]]


@dataclass
class _Group:
    """Consecutive steps joined so far: their composed high-level program
    (the reference), the composed tiled program (extraction's best for it)
    and its estimate."""

    steps: list          # partition.Step
    program: str         # high-level
    tiled: str
    estimate_s: float
    kernels: int
    fused: list[str] = field(default_factory=list)
    found: Any = None    # the last extraction (None for a single step)
    wiring: list = field(default_factory=list)
    searched: str = ""   # the program `found` extracted from (its names may be another group's)
    prefix: "_Group | None" = None   # the group before its last step joined

    @property
    def key(self) -> str:
        """The group's structure: its members' hashes and wiring (groups of
        one key are searched and tuned once)."""
        return json.dumps([[st.subgraph.hash for st in self.steps], self.wiring])


def _names(text: str) -> tuple[list[str], list[str]]:
    from .partition import IRProgram

    ir = IRProgram(text)
    return [n for n, _, _ in ir.inputs], [n for n, _ in ir.outputs]


_TOKEN = re.compile(r"[()\[\]]|[^\s()\[\]]+")
_NAME = re.compile(r"[A-Za-z_]\w*")
_DTYPES = {"f16", "bf16", "f32", "f64", "i32", "bool"}  # the IR's (ir/dtype.cc)


_AXIS = re.compile(r"(c_)?([A-Za-z_]\w*)\.(\d+)")
_DIMS = re.compile(r"\(dims((?:\s*\(\s*[A-Za-z_]\w*\s+\d+\s*\))*)\s*\)")
_DIM = re.compile(r"\(\s*([A-Za-z_]\w*)\s+(\d+)\s*\)")


def _rename_map(old: str, new: str) -> dict[str, str] | None:
    """The renaming that turns program text `old` into `new` (inputs,
    outputs, dims, lets), when the two are the same program up to names, as
    subgraphs of one structural hash are: None otherwise. The dims clause
    may list the dims in another order (a subgraph lists them as its source
    first names them); each dim must map to one of the same extent."""
    dims_a, dims_b = _DIMS.search(old), _DIMS.search(new)
    if (dims_a is None) != (dims_b is None):
        return None
    extent_a = {n: int(e) for n, e in _DIM.findall(dims_a.group(1))} if dims_a else {}
    extent_b = {n: int(e) for n, e in _DIM.findall(dims_b.group(1))} if dims_b else {}
    if dims_a:
        old, new = old[:dims_a.start()] + old[dims_a.end():], new[:dims_b.start()] + new[dims_b.end():]
    forward = _token_map(old, new)
    if forward is None or len(extent_a) != len(extent_b):
        return None
    mapped = {name: forward.get(name, name) for name in extent_a}
    if len(set(mapped.values())) != len(mapped) or any(extent_b.get(mapped[n]) != e for n, e in extent_a.items()):
        return None
    return {x: y for x, y in forward.items() if x != y}


def _token_map(old: str, new: str) -> dict[str, str] | None:
    """Name -> name along two token streams of the same structure (no dims
    clause), one to one; None where the structure differs."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) != len(b):
        return None
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for i, (x, y) in enumerate(zip(a, b)):
        # Op and keyword heads, dtypes, literals and brackets are structure,
        # not names: they must be equal.
        head = i > 0 and a[i - 1] == "("
        ax, ay = _AXIS.fullmatch(x), _AXIS.fullmatch(y)
        if not head and ax and ay:
            # An axis (`k1.0`) or a collected axis's dim (`c_k1.0`): its dim is a name.
            if ax.group(1) != ay.group(1) or ax.group(3) != ay.group(3):
                return None
            x, y = ax.group(2), ay.group(2)
        elif head or x in _DTYPES or y in _DTYPES or not (_NAME.fullmatch(x) and _NAME.fullmatch(y)):
            if x != y:
                return None
            continue
        if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
            return None
    return forward


def _renamed(text: str, mapping: dict[str, str]) -> str | None:
    """`text` with the names of `mapping` replaced, also as the dim of an
    axis (`e.0`) and of a collected axis (`c_e.0`). None when a new name is
    already used in `text` for something else (a tiled program's own lets
    and kernel-private dims)."""
    if not mapping:
        return text
    used = set(_NAME.findall(text))
    if (set(mapping.values()) - set(mapping)) & used:
        return None
    names = "|".join(map(re.escape, sorted(mapping, key=len, reverse=True)))
    # A collected dim is named after its axis (`c_k.0`, the IR's
    # Axis::collected_dim): it follows its dim's new name.
    pattern = re.compile(r"(?<![\w%])(c_(?=(?:" + names + r")\.\d))?(" + names + r")(?!\w)")
    return pattern.sub(lambda m: (m.group(1) or "") + mapping[m.group(2)], text)


# A group's first subgraph is composed as its chosen program and this many
# of its search's next candidates (Piece.alternatives), each against the
# joining subgraph's chosen program and this many of its next ones: each
# composition costs a few milliseconds, and an extraction (small: both sides
# are tiled) where it feeds a boundary tile by tile.
_PRODUCER_ALTERNATIVES = 2
_CONSUMER_ALTERNATIVES = 8
# A group kept apart (it did not verify, or measured no faster than its
# members) may still pay without its last members: this many of its
# prefixes, longest first, are tuned in its place. Each costs a tuning.
_PREFIX_TRIES = 2


def _kernel_count(piece) -> int:
    return len(piece.kernels) if piece.kernels else 1


class CutFusion:
    """Runs fuse_cuts for one PartitionedSearch (its options, target and
    progress), keeping the groups it tuned by their key."""

    def __init__(self, searcher):
        self.searcher = searcher
        self.tuned: dict[str, Any] = {}       # group key -> Piece, or None when it did not pay
        self.apart: dict[str, str] = {}       # group key -> why it was kept apart
        # Group key -> _best_composition's answer for the group's last join.
        self.found: dict[str, Any] = {}
        self.log: list[dict] = []

    # -- grouping (static) --

    @staticmethod
    def _needed_elsewhere(plan, members: set[int], out_names: dict) -> list[str]:
        """The group's outputs that someone outside it reads (a later
        subgraph, or the program's caller): they stay outputs."""
        return [name for name, (orig, b) in out_names.items()
                if orig is not None or (b is not None and any(c not in members for c in plan.boundaries[b].consumers))]

    def _extend(self, plan, group: _Group, step, out_names: dict) -> _Group | None:
        """The group with `step` joined, or None when joining does not pay."""
        sg, piece = step.subgraph, step.piece
        members = {s.subgraph.index for s in group.steps} | {sg.index}
        ins, _ = _names(sg.program)
        produced = {n for n, (_, b) in out_names.items() if b is not None}
        # A subgraph that reads nothing of the group joins it side by side:
        # the composition is both programs in one, whose independent kernels
        # share launches (the emitter's fused kernels).
        beside = not any(n in produced for n in ins)
        keep = self._needed_elsewhere(plan, members, out_names)
        wiring = group.wiring + [(sg.hash, sorted(ins.index(n) for n in ins if n in produced),
                                  sorted(k for k, n in enumerate(out_names) if n in keep))]
        joined = _Group(group.steps + [step], "", "", 0.0, 0, wiring=wiring)
        producers = [group.tiled] if len(group.steps) > 1 else \
            self._programs(group.steps[0], _PRODUCER_ALTERNATIVES)
        consumers = self._programs(step, _CONSUMER_ALTERNATIVES)
        # A later group of the same key takes this search's best program
        # under its own names (the same pair composed again, then renamed).
        fresh = joined.key not in self.found
        if fresh:
            self.found[joined.key] = self._best_composition(producers, consumers, keep,
                                                            group.estimate_s + piece.estimate_s, sg.name, beside)
        hit = self.found[joined.key]
        if hit is None:
            return None
        best, found, searched, fused, (i, j) = hit
        tiled = best.program
        if not fresh:
            if i >= len(producers) or j >= len(consumers):
                return None
            try:
                composed, fused = compose_programs(producers[i], consumers[j], keep, "group")
            except ValueError:
                return None
            mapping = _rename_map(searched, composed)
            tiled = None if mapping is None else _renamed(best.program, mapping)
            if tiled is None:
                return None
        joined.program, _ = compose_programs(group.program, sg.program, keep, "group")
        joined.tiled, joined.estimate_s = tiled, best.estimate_s
        joined.kernels = len(best.kernels) if best.kernels else 1
        joined.fused, joined.found, joined.searched = group.fused + fused, found, searched
        joined.prefix = group
        return joined

    @staticmethod
    def _programs(step, alternatives: int) -> list[str]:
        """The step's tiled programs under its own subgraph's names (a piece
        reused from an identical subgraph has that one's): the chosen one,
        then up to `alternatives` of the search's next candidates, which may
        read or write the boundary over the tiles a neighbour needs."""
        sg, piece = step.subgraph, step.piece
        mapping = _rename_map(piece.subgraph_program or sg.program, sg.program)
        if mapping is None:
            return []
        chosen = _renamed(piece.program, mapping)
        if chosen is None:
            return []
        out = [chosen]
        for text in piece.alternatives[:alternatives]:
            renamed = _renamed(text, mapping)
            if renamed is not None and renamed not in out:
                out.append(renamed)
        return out

    def _best_composition(self, producers: list[str], consumers: list[str], keep: list[str], before_s: float,
                          name: str, beside: bool = False):
        """The best extraction over the compositions of a producer and a
        consumer program that feed a boundary tile by tile (or, `beside`,
        share none: side by side): (best candidate, the search, the program
        searched, the boundaries fed tile by tile, (producer, consumer)
        indices), or None when no estimate is below `before_s`."""
        s = self.searcher
        best = None
        refused = None
        for i, producer in enumerate(producers):
            for j, consumer in enumerate(consumers):
                try:
                    tiled, fused = compose_programs(producer, consumer, keep, "group")
                except ValueError as e:  # the core's IRError: the two do not compose (names, types)
                    refused = refused or str(e).splitlines()[0]
                    continue
                if not fused and not beside:
                    continue
                found = search.find_candidates(tiled, s.opts, s.target, file="<fused cut>", rules="structural")
                if not found.candidates or found.candidates[0].estimate_s is None:
                    continue
                top = found.candidates[0]
                if top.estimate_s < before_s and (best is None or top.estimate_s < best[0].estimate_s):
                    best = (top, found, tiled, fused, (i, j))
        if refused is not None:
            s._info(f"fusing across cuts: {name} not composed with the subgraphs before it: {refused}")
        return best

    def groups(self, plan, steps: list) -> list[_Group]:
        out: list[_Group] = []
        group: _Group | None = None
        out_names: dict = {}
        for step in steps:
            piece = step.piece
            joinable = piece.nested is None and piece.program is not None and piece.estimate_s is not None
            if group is not None and joinable:
                joined = self._extend(plan, group, step, out_names)
                if joined is not None:
                    group = joined
                    _, outs = _names(step.subgraph.program)
                    out_names.update(zip(outs, step.subgraph.outputs))
                    continue
            if group is not None:
                out.append(group)
            own = self._programs(step, 0) if joinable else []
            if not own:  # runs on its own (a nested composition, or a piece that cannot be renamed)
                out.append(_Group([step], step.subgraph.program, "", 0.0, 0))
                group, out_names = None, {}
                continue
            _, outs = _names(step.subgraph.program)
            out_names = dict(zip(outs, step.subgraph.outputs))
            group = _Group([step], step.subgraph.program, own[0], piece.estimate_s, _kernel_count(piece))
        if group is not None:
            out.append(group)
        return out

    # -- tuning a group --

    def _step_of(self, group: _Group, args_of: dict):
        """The group as one Step (or None when it does not verify or pay)."""
        from .partition import IRProgram, Step, SubgraphInfo

        first = group.steps[0].subgraph
        in_of, out_of = {}, {}
        for st in group.steps:
            ins, outs = _names(st.subgraph.program)
            in_of.update(zip(ins, st.subgraph.inputs))
            out_of.update(zip(outs, st.subgraph.outputs))
        ins, outs = _names(group.program)
        if (ins, outs) != _names(group.tiled):
            self.apart[group.key] = "its tiled program has other inputs or outputs than the group"
            return None
        info = SubgraphInfo(first.index, "+".join(st.subgraph.name for st in group.steps),
                            # "g": never a subgraph's structural hash (hex digits)
                            "g" + hashlib.sha1(group.key.encode()).hexdigest()[:15],
                            sum(st.subgraph.ops for st in group.steps),
                            [n for st in group.steps for n in st.subgraph.op_names], group.program,
                            [in_of[n] for n in ins], [out_of[n] for n in outs])
        piece = self.tuned.get(group.key, False)
        if piece is False:
            if _names(group.searched) != (ins, outs):
                # The search came from a group like this one under other
                # names: the candidates are searched again under these.
                s = self.searcher
                group.found = search.find_candidates(group.tiled, s.opts, s.target, file="<fused cut>",
                                                     rules="structural")
            args = [args_of[src] for src in info.inputs]
            piece = self._tune(info, IRProgram(group.program), args, group)
            self.tuned[group.key] = piece
        return None if piece is None else Step(info, piece)

    def _tune(self, info, ir, args, group: _Group):
        from .launch import Binding, make_runner
        from .partition import Piece, subgraph_frontend
        from .search import kernels_of_module, merge_kernel_info
        from .tuner import NoValidCandidate, Tuner

        s = self.searcher
        with torch.no_grad():
            outs = ir(*args)
        fe = subgraph_frontend(ir, info.program, outs)
        start = time.monotonic()
        make = s.tuner_factory or Tuner
        try:
            result = make(Binding(fe), ir, tuple(args), group.found.candidates, s.opts, interpret=s.interpret,
                          progress=s.progress, module_dir=s.module_dir).run()
        except NoValidCandidate as e:
            self.apart[group.key] = f"no candidate verified ({str(e).splitlines()[0]})"
            s._info(f"fusing {info.name}: {self.apart[group.key]}; kept apart")
            return None
        tune_s = time.monotonic() - start
        s.stats.tune_s += tune_s
        best = result.best
        before = [st.piece.time_s for st in group.steps]
        if best.time_s is not None and all(t is not None for t in before) and best.time_s >= sum(before):
            self.apart[group.key] = (f"measured {best.time_s * 1e6:.1f} µs, not below the subgraphs' "
                                     f"{sum(before) * 1e6:.1f} µs")
            s._info(f"fusing {info.name}: {self.apart[group.key]}; kept apart")
            return None
        params = best.config.params()
        runner, _ = make_runner(best.module, params, list(args), lean=not s.interpret, cuda_graphs=False,
                                bound=[False] * len(args))
        kernels = merge_kernel_info(best.candidate.kernels, kernels_of_module(best.module, best.candidate.source))
        return Piece(info.hash, runner, best.module, best.candidate.source, params, best.candidate.program,
                     estimate_s=best.candidate.estimate_s, candidates=len(group.found.candidates), tune_s=tune_s,
                     error=best.error, kernels=kernels, tuning=result.stats.to_json(), search=dict(group.found.stats),
                     time_s=best.time_s, subgraph_program=info.program)

    def run(self, plan, steps: list, args_of: dict) -> list:
        """The steps with fused groups in place of their members. `args_of`:
        ("input", i) / ("boundary", b) -> an example tensor."""
        out = []
        for group in self.groups(plan, steps):
            if len(group.steps) == 1:
                out.append(group.steps[0])
                continue
            tried, step = group, self._try(group, args_of)
            for _ in range(_PREFIX_TRIES):
                if step is not None or tried.prefix is None or len(tried.prefix.steps) < 2:
                    break
                tried = tried.prefix
                step = self._try(tried, args_of)
            if step is None:
                out.extend(group.steps)
            else:
                out.append(step)
                out.extend(group.steps[len(tried.steps):])
        return out

    def _try(self, group: _Group, args_of: dict):
        """The group tuned as one Step (None when kept apart), logged."""
        names = " + ".join(st.subgraph.name for st in group.steps)
        kernels_before = sum(_kernel_count(st.piece) for st in group.steps)
        estimate_before = sum(st.piece.estimate_s or 0.0 for st in group.steps)
        self.searcher._info(
            f"fusing across cuts: {names}: {kernels_before} kernels -> {group.kernels}, estimate "
            f"{estimate_before * 1e6:.1f} -> {group.estimate_s * 1e6:.1f} µs (boundaries fed tile by tile: "
            f"{', '.join(group.fused) or 'none, side by side'})")
        step = self._step_of(group, args_of)
        before = [st.piece.time_s for st in group.steps]
        self.log.append({"subgraphs": [st.subgraph.index for st in group.steps], "fused": group.fused,
                         "kernels": [kernels_before, group.kernels],
                         "estimate_s": [estimate_before, group.estimate_s],
                         "time_s": [sum(before) if all(t is not None for t in before) else None,
                                    step.piece.time_s if step else None],
                         "kept": step is not None,
                         "apart": "" if step is not None else self.apart.get(group.key, "")})
        return step
