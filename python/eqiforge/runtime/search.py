"""The runtime's one door into the C++ core: search + extraction, and emission.

    find_candidates(ir_text, options) -> SearchResult   # ranked tiled programs
    emit_module(program_text, source) -> str            # Triton module source

Both run the ``eqiforge-opt`` command (``extract FILE --json --programs`` /
``emit FILE -o OUT``): the one named by $EQIFORGE_OPT, else the one installed
with this Python, else the one on PATH. When the extension module gains the
same functions, this file is the one place to switch to them. Where a verb is
missing, they raise ``MissingPieceError`` naming the piece, so a build without
it fails with that sentence rather than somewhere downstream.

What the runtime reads from extraction (``eqiforge-opt extract FILE --json
--programs`` prints it; a binding returns the same object):

    {"states_expanded": N, "complete_built": N, "distinct": N, "seconds": S, ...,
     "candidates": [                           # best static estimate first
        {"program": "(program ...)",           # the tiled program, IR text
         "estimated_us": 12.5,                 # optimistic latency (cost model)
         "block_sizes": {"t.0": 64},           # block sizes of that estimate
         "num_stages": 3,                      # and its pipeline stages
         "forms": {"gemv_dot": {"estimated_us": 13.0, "block_sizes": {...}, "num_stages": 4}},
                                               # optional: a launch form's own estimate
         "kernels": [{"name": "o_kernel", "grid": ["s.0"], "loops": ["t.0"],
                      "ops": ["matmul", ...]}]},   # "ops" optional
        ...]}

Every other number at the top level is kept as search statistics.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from ..options import Options


class MissingPieceError(RuntimeError):
    """A stage of the pipeline that this build of eqiforge does not have yet."""

    def __init__(self, piece: str, detail: str):
        self.piece = piece
        super().__init__(f"{piece} is not available in this build of eqiforge: {detail}")


@dataclass
class KernelInfo:
    """One kernel of a candidate, for reports: which IR ops it computes."""

    name: str
    ops: list[str] = field(default_factory=list)
    grid: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"name": self.name, "ops": list(self.ops), "grid": list(self.grid), "loops": list(self.loops)}

    @staticmethod
    def from_json(d: dict) -> "KernelInfo":
        return KernelInfo(str(d["name"]), [str(o) for o in d.get("ops", [])], [str(a) for a in d.get("grid", [])],
                          [str(a) for a in d.get("loops", [])])


@dataclass
class Candidate:
    """A tiled program from extraction; rank 1 has the best static estimate."""

    rank: int
    program: str
    estimate_s: float | None = None
    blocks: dict[str, int] = field(default_factory=dict)
    kernels: list[KernelInfo] | None = None
    # The pipeline stages of that estimate (num_stages), when it has one.
    stages: int | None = None
    # Launch forms with an estimate of their own (extraction's "forms"):
    # name -> (block sizes, stages), where the tuner starts that form.
    form_starts: dict[str, tuple[dict[str, int], int | None]] = field(default_factory=dict)
    # Filled by emit_module on demand (emission can fail for one candidate).
    source: str | None = None
    # What the cost model sees of it (kernels, their grids, loops, programs,
    # bytes and flops, the blocks of its estimate): candidates that share it
    # differ only in how a kernel orders its operations.
    shape_key: tuple = ()


@dataclass
class SearchResult:
    candidates: list[Candidate]
    stats: dict[str, Any] = field(default_factory=dict)


# ---- finding the core's entry points ------------------------------------------------


def _cli_path() -> str | None:
    env = os.environ.get("EQIFORGE_OPT")
    if env:
        return env
    here = Path(sysconfig.get_path("scripts")) / "eqiforge-opt"
    if here.exists():
        return str(here)
    return shutil.which("eqiforge-opt")


@functools.lru_cache(maxsize=None)
def _cli_verbs() -> tuple[str | None, frozenset[str]]:
    """(path of eqiforge-opt, the verbs it lists in --help)."""
    path = _cli_path()
    if path is None:
        return None, frozenset()
    try:
        r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return path, frozenset()
    verbs = set()
    for line in r.stdout.splitlines():
        if line.startswith("  ") and line.strip():
            verbs.add(line.split()[0])
    return path, frozenset(verbs)


@functools.lru_cache(maxsize=None)
def _cli_options(verb: str) -> frozenset[str]:
    path, _ = _cli_verbs()
    r = subprocess.run([path, verb, "--help"], capture_output=True, text=True, timeout=60)
    return frozenset(w.rstrip(",") for w in r.stdout.split() if w.startswith("--"))


def has_extraction() -> bool:
    return "extract" in _cli_verbs()[1]


def has_emission() -> bool:
    return "emit" in _cli_verbs()[1]


@contextlib.contextmanager
def program_files(*texts: str):
    """Each program text in a temporary .eqf file (the CLI's verbs read
    files); yields their paths and removes them afterwards."""
    paths = []
    try:
        for text in texts:
            with tempfile.NamedTemporaryFile("w", suffix=".eqf", delete=False) as f:
                f.write(text)
            paths.append(f.name)
        yield paths
    finally:
        for path in paths:
            os.unlink(path)


def _run_cli(args: list[str], what: str, cwd: str | None = None) -> str:
    r = subprocess.run(args, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        message = r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}"
        if r.returncode == 2:  # bad input: an eqf::Error with its position
            raise _core.IRError(message)
        raise RuntimeError(f"{what} failed: {message}")
    return r.stdout


# ---- search + extraction ------------------------------------------------------------

# Search limits the user can set, with the CLI option that carries each.
_LIMITS = {"node_limit": "--node-limit", "search_time_s": "--sat-time-limit", "extract_time_s": "--time-limit",
           "memory_limit_mb": "--memory-limit"}


def find_candidates(ir_text: str, options: Options, target: str, file: str = "<program>",
                    rules: str | None = None) -> SearchResult:
    """Saturates, extracts and ranks: the top `options.top_k` tiled programs for
    `target`, best static estimate first. `rules`: a registered rule set to
    saturate with instead of the library's schedule (`structural` for a
    program that is already tiled: cut_fusion's composed pieces)."""
    path, verbs = _cli_verbs()
    if "extract" not in verbs:
        raise MissingPieceError("extraction", f"{path or 'eqiforge-opt'} has no `extract` verb"
                                if path else "the eqiforge-opt command was not found")
    accepted = _cli_options("extract")
    # Every candidate extraction built comes back (up to _FETCH), so that the
    # tuner's top_k can be diverse.
    fetch = max(options.top_k, _FETCH)
    args = [path, "extract", "-", "--mode", options.extract_mode, "--top", str(fetch), "--json", "--programs"]
    if "--target" in accepted:
        args += ["--target", target]
    if rules is not None:
        args += ["--rules", rules]
    defaults = Options()
    for name, flag in _LIMITS.items():
        if flag in accepted:
            args += [flag, str(getattr(options, name))]
        elif getattr(options, name) != getattr(defaults, name):
            from ..options import OptionError

            raise OptionError(f"option {name}: this build's `eqiforge-opt extract` has no {flag}")
    with program_files(ir_text) as (file_path,):
        args[2] = file_path
        out = _run_cli(args, "eqiforge-opt extract")
    found = parse_search_result(json.loads(out))
    found.candidates = diverse_top(found.candidates, options.top_k)
    return found


# The tuner measures top_k candidates. A saturated e-graph often holds many
# programs that the cost model cannot tell apart -- the same kernels, grids
# and loops, differing in the order of a kernel's pointwise operations --
# and the best-ranked top_k can be copies of one structure (16 of 16 for
# RMSNorm + SwiGLU at batch 16), which leaves the tuner nothing to choose
# between when the model is wrong about that structure (192 of the first 400
# there). So at most _PER_SHAPE candidates of one shape_key go in, in rank
# order, before the rest fill what is left.
_FETCH = 1024
_PER_SHAPE = 2


def diverse_top(candidates: list[Candidate], k: int) -> list[Candidate]:
    """The k best candidates, at most _PER_SHAPE of each shape while others
    remain, in rank order."""
    taken: list[Candidate] = []
    left: list[Candidate] = []
    per_shape: dict[tuple, int] = {}
    for c in candidates:
        n = per_shape.get(c.shape_key, 0)
        if len(taken) < k and (not c.shape_key or n < _PER_SHAPE):
            taken.append(c)
            per_shape[c.shape_key] = n + 1
        else:
            left.append(c)
    taken += left[:max(0, k - len(taken))]
    return sorted(taken, key=lambda c: c.rank)


def _shape_key(c: dict) -> tuple:
    kernels = c.get("kernels")
    if not isinstance(kernels, list):
        return ()
    # Not the bytes and flops: tied candidates of one kernel structure differ
    # in them by the order of pointwise operations (where a norm's factor is
    # applied), which the GPU hardly sees. Counted apart, twelve of
    # rmsnorm + SwiGLU FFN b1's sixteen were one structure (two kernels, the
    # model's 65 us, all above 121 us on an H100), and the form that ran at
    # 68 us (whole-k tiles, estimated 174) lost its place to four more ties.
    fields = ("grid", "loops", "programs")
    shape = tuple(tuple(str(k.get(f)) for f in fields) for k in kernels if isinstance(k, dict))
    blocks = tuple(sorted((str(a), str(b)) for a, b in (c.get("block_sizes") or {}).items()))
    return shape + (blocks,)


def parse_search_result(raw: dict) -> SearchResult:
    """The runtime's view of extraction's JSON object (see the module docstring)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("candidates"), list):
        raise RuntimeError("extraction returned no 'candidates' list")
    candidates = []
    for rank, c in enumerate(raw["candidates"]):
        if not isinstance(c, dict) or not isinstance(c.get("program"), str):
            raise RuntimeError(f"extraction's candidate {rank} has no 'program' text")
        kernels = None
        if isinstance(c.get("kernels"), list) and all(isinstance(k, dict) and "name" in k for k in c["kernels"]):
            kernels = [KernelInfo.from_json(k) for k in c["kernels"]]
        estimate = c.get("estimated_us")
        stages = c.get("num_stages")
        form_starts = {}
        for name, f in (c.get("forms") or {}).items():
            if isinstance(f, dict) and isinstance(f.get("block_sizes"), dict):
                s = f.get("num_stages")
                form_starts[str(name)] = ({str(k): int(v) for k, v in f["block_sizes"].items()},
                                          s if isinstance(s, int) and s >= 1 else None)
        candidates.append(
            Candidate(
                rank=rank + 1,
                program=c["program"],
                estimate_s=float(estimate) * 1e-6 if isinstance(estimate, (int, float)) else None,
                blocks={str(k): int(v) for k, v in (c.get("block_sizes") or {}).items()},
                kernels=kernels,
                stages=stages if isinstance(stages, int) and stages >= 1 else None,
                form_starts=form_starts,
                shape_key=_shape_key(c),
            )
        )
    stats = {k: v for k, v in raw.items() if k != "candidates" and isinstance(v, (int, float, str))}
    egraph = raw.get("egraph")
    if isinstance(egraph, dict) and isinstance(egraph.get("stop"), str):
        # Why saturation ended (a node, time or memory limit, or saturated):
        # extraction ran on the e-graph as it was then.
        stats["saturation_stop"] = egraph["stop"]
    return SearchResult(candidates, stats)


# What saturation's and extraction's stop reasons name, as options.
_SATURATION_LIMITS = {"node-limit": "node_limit", "time-limit": "search_time_s", "memory-limit": "memory_limit_mb",
                      "iteration-limit": None}
_EXTRACTION_LIMITS = {"memory": "memory_limit_mb", "time": "extract_time_s"}


def no_candidate_reason(stats: dict) -> str:
    """Why a search found no candidate, from its stats: how far extraction
    got, and the limits that stopped saturation or extraction (with the
    option that raises each)."""
    parts = [f"{stats.get('states_expanded', '?')} partial programs expanded"]
    if stats.get("states_expanded") == 0 and not stats.get("limit_hit"):
        parts[0] += ": an output has no tiled form in the e-graph"
    stop = stats.get("saturation_stop")
    if stop in _SATURATION_LIMITS:
        option = _SATURATION_LIMITS[stop]
        parts.append(f"saturation stopped at its {stop}" + (f" (option {option})" if option else ""))
    if stats.get("limit_hit"):
        limit = stats.get("limit")
        option = _EXTRACTION_LIMITS.get(limit)
        parts.append(f"extraction stopped at its {limit} limit (option {option})" if option else
                     "a search limit was hit (options node_limit, search_time_s, extract_time_s, memory_limit_mb)")
    return "; ".join(parts)


# ---- emission -----------------------------------------------------------------------


def emit_module(program_text: str, source: str = "", file: str = "<candidate>") -> str:
    """The Triton module (kernels + `forward`) of a tiled program."""
    path, verbs = _cli_verbs()
    if "emit" not in verbs:
        raise MissingPieceError("Triton code generation", f"{path} has no `emit` verb"
                                if path else "the eqiforge-opt command was not found")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / (Path(file).stem.strip("<>") or "candidate")
        src = src.with_suffix(".eqf")
        src.write_text(program_text)
        out = Path(tmp) / "kernels.py"
        # Run in the temporary folder with a relative path: the module's
        # docstring names the file it was emitted from, and a temporary
        # folder's name would make the same candidate emit different text on
        # every run (a new module file, a new import, no reproducible output).
        exe = os.path.abspath(path) if os.sep in path else path  # a relative $EQIFORGE_OPT, from here
        _run_cli([exe, "emit", src.name, "-o", out.name], "eqiforge-opt emit", cwd=tmp)
        return out.read_text()


def ensure_source(candidate: Candidate, source: str = "") -> str:
    if candidate.source is None:
        candidate.source = emit_module(candidate.program, source, file=f"<candidate {candidate.rank}>")
    return candidate.source


# ---- which ops each kernel computes -------------------------------------------------

# Ops that place or move data rather than compute it: left out of "which ops a
# kernel fuses".
_PLACEMENT = frozenset(
    "partition replicate combine collect proj tuple rename split merge input const iota cast".split()
)


def ops_of_term(term: str) -> list[str]:
    """The computing ops of an IR term's text, each once, innermost first (the
    order values are computed in)."""
    heads: list[tuple[int, int, str]] = []  # (-depth, position, op)
    depth = 0
    i = 0
    while i < len(term):
        ch = term[i]
        if ch == "(":
            j = i + 1
            while j < len(term) and not term[j].isspace() and term[j] not in "()":
                j += 1
            heads.append((-depth, i, term[i + 1 : j]))
            depth += 1
            i = j
            continue
        if ch == ")":
            depth -= 1
        i += 1
    out: list[str] = []
    for _, _, head in sorted(heads):
        # Kebab-case heads are reduction repairs (exp-sum), not ops.
        if head and "-" not in head and head not in _PLACEMENT and head not in out:
            out.append(head)
    return out


_GRID = re.compile(r"grid(?: over|:)\s*(.*?)(?:[;,]\s*loops? over\s*(.*?))?(?:\.(?:\s|$)|$)", re.IGNORECASE)


def kernels_from_module(source: str) -> list[KernelInfo]:
    """Kernel structure read from an emitted module's text: each `@triton.jit`
    function, the IR terms in its comments (one `name = term` per line), and
    its grid and loop axes from the comment that names them.

    Used only when neither extraction nor the module's KERNELS table says
    which ops each kernel computes. The fused kernels that launch several
    of them together (the module's FUSED table) are not kernels of their own.
    """
    lines = source.splitlines()
    table = re.search(r"^FUSED = (.*)$", source, re.M)
    fused = set(re.findall(r'"(\w+)": \(', table.group(1))) if table else set()
    kernels = []
    for i, line in enumerate(lines):
        if line.strip() != "@triton.jit" or i + 1 >= len(lines) or not lines[i + 1].startswith("def "):
            continue
        name = lines[i + 1][4:].split("(", 1)[0].strip()
        if name in fused:
            continue
        comments: list[str] = []
        j = i - 1
        while j >= 0 and lines[j].lstrip().startswith("#"):
            comments.insert(0, lines[j].strip()[1:].strip())
            j -= 1
        j = i + 1
        while j < len(lines) and not lines[j].rstrip().endswith(":"):
            j += 1
        j += 1
        while j < len(lines) and lines[j].lstrip().startswith("#"):
            comments.append(lines[j].strip()[1:].strip())
            j += 1
        # Continuation lines (wrapped terms) start with spaces after '#'.
        terms: list[str] = []
        grid: list[str] = []
        loops: list[str] = []
        for c in comments:
            m = _GRID.search(c)
            if m and not grid and not c.startswith("("):
                grid = [a.strip() for a in m.group(1).split(",") if a.strip() and a.strip() != "one program"]
                loops = [a.strip() for a in (m.group(2) or "").split(",") if a.strip()]
            if "(" in c:
                if terms and not re.match(r"^[A-Za-z_][\w.]*\s*=", c) and terms[-1].count("(") > terms[-1].count(")"):
                    terms[-1] += " " + c
                else:
                    terms.append(c)
        ops: list[str] = []
        for t in terms:
            for op in ops_of_term(t):
                if op not in ops:
                    ops.append(op)
        kernels.append(KernelInfo(name, ops, grid, loops))
    return kernels


def kernels_of_module(module, source: str) -> list[KernelInfo]:
    """The kernels of a loaded module: its KERNELS table when the emitter wrote
    one ({name: {"ops": [...], "grid": [...], "loops": [...]}}), else read from
    the source text."""
    table = getattr(module, "KERNELS", None)
    if isinstance(table, dict):
        return [KernelInfo.from_json({"name": n, **d}) for n, d in table.items()]
    return kernels_from_module(source)


def merge_kernel_info(from_extraction: list[KernelInfo] | None, from_module: list[KernelInfo]) -> list[KernelInfo]:
    """Extraction's kernels (grid and loop axes as the search saw them) with
    the ops read from the module where extraction gave none; the module's
    kernels alone when extraction said nothing."""
    if not from_extraction:
        return from_module
    by_name = {k.name: k for k in from_module}
    merged = []
    for i, k in enumerate(from_extraction):
        twin = by_name.get(k.name) or (from_module[i] if i < len(from_module) else None)
        ops = k.ops or (twin.ops if twin else [])
        merged.append(KernelInfo(twin.name if twin else k.name, ops, k.grid or (twin.grid if twin else []),
                                 k.loops or (twin.loops if twin else [])))
    return merged
