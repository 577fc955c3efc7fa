"""The options of ``eqiforge.optimize`` and of the ``torch.compile`` backend.

Every option has one meaning, one type and one default, listed in ``Options``.
``make_options(**given)`` checks what the user passed and says exactly what is
wrong: an unknown name (with the nearest known one), a value of the wrong type,
or a value out of range, each naming the option and what it accepts.

Options that change which program is chosen (the target, the search limits,
the tuning space) are part of the cache key; options that only change how the
work is shown or where it is stored (verbosity, cache directory) are not.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

# Hardware profiles of the cost model (DESIGN §6), by the name the search
# takes; the auto-detected GPU name maps onto one of them.
TARGETS = ("h200", "h100", "a100", "rtx5090")
UNSUPPORTED = ("error", "fallback")
EXTRACT_MODES = ("early", "after", "none")

# Relative L2 error a candidate may have against PyTorch eager, in the
# workload's dtype (DESIGN §7). Not an option: a looser check would let wrong
# kernels win.
TOLERANCE = 1e-2

# The largest e-graph memory cap, in MiB (1 TiB): past it the cap means nothing.
MAX_MEMORY_LIMIT_MB = 1 << 20


class OptionError(ValueError):
    """An option of ``eqiforge.optimize`` (or of the backend) that is unknown,
    of the wrong type or out of range. The message names the option and what
    it accepts."""


@dataclass(frozen=True)
class Options:
    # Seconds of measurement on the GPU (compiling, verifying and timing
    # candidates). The search before it has its own limits below.
    budget_s: float = 60.0
    # Cost-model profile: one of TARGETS, or None to take it from the GPU the
    # inputs are on (a machine without a GPU ranks for the H200).
    target: str | None = None
    # Where tuned programs are kept; None: $EQIFORGE_CACHE_DIR, else
    # $XDG_CACHE_HOME/eqiforge, else ~/.cache/eqiforge.
    cache_dir: str | os.PathLike | None = None
    # Read and write the on-disk cache.
    cache: bool = True
    # Search limits: e-graph nodes, seconds of saturation, seconds of
    # extraction, and how many ranked candidates extraction hands to tuning.
    node_limit: int = 200_000
    search_time_s: float = 30.0
    extract_time_s: float = 60.0
    top_k: int = 8
    extract_mode: str = "early"
    # Cap on the e-graph's memory during saturation, in MiB: saturation stops
    # before the e-graph would hold more, and extraction goes on with what it
    # has (the report's search line then says "saturation stop memory-limit").
    # Extraction's partial programs get the same cap: past it, extraction
    # stops with the candidates it has (stats: limit "memory").
    memory_limit_mb: int = 4096
    # Programs with more operators than this are cut into subgraphs of at
    # most this many, each searched on its own (identical ones once) and
    # composed through materialized boundary tensors; a program whose
    # whole-program search finds no candidate (or hits a limit and none of
    # its candidates verifies) is cut too.
    # 0: only in that case.
    partition_ops: int = 16
    # A whole program of at least this many operators is also searched cut
    # up (fallback_plan's cut), as one whose search hits a limit always is,
    # and the lower estimate wins: the search is best-first and stops after
    # enough candidates, and on layer-sized programs it can miss forms that
    # its subgraphs' searches find (attention with a sink, 16 operators: the
    # whole search's best 109.6 us, the cut's 101.5 us on the H100 model).
    # Below it the extra searches are skipped (the general programs' cuts
    # estimate 5-30 % slower than their whole searches). 0: only after a
    # limit.
    cut_compare_ops: int = 14
    # After a partitioned program's subgraphs are tuned, join consecutive
    # ones whose boundary the consumer can take tile by tile from the
    # producer (runtime/cut_fusion.py): one kernel where the cut was, kept
    # only if it verifies and measures faster than the subgraphs apart.
    fuse_cuts: bool = True
    # Progress on stderr: 0/False quiet, 1/True stages and best-so-far,
    # 2 also every candidate and configuration.
    verbose: int = 0
    # An operation the IR cannot express: "error" raises naming the op and the
    # source line; "fallback" runs that part of the graph in PyTorch.
    unsupported: str = "error"
    # Tuning space: block sizes (powers of two), warps and pipeline stages.
    block_sizes: tuple[int, ...] = (16, 32, 64, 128, 256)
    num_warps: tuple[int, ...] = (2, 4, 8)
    num_stages: tuple[int, ...] = (1, 2, 3, 4, 5)
    # Replay the whole program as one CUDA graph (static shapes only). The
    # returned tensors are then reused by the next call, as with
    # torch.compile(mode="reduce-overhead").
    cuda_graphs: bool = False
    # Measure eager PyTorch and torch.compile on the same inputs for the report.
    baselines: bool = True
    # Seed of the fresh random inputs used for verification and of the
    # sampling of tuning configurations.
    seed: int = 0

    def resolved_cache_dir(self) -> Path:
        if self.cache_dir is not None:
            return Path(self.cache_dir).expanduser()
        env = os.environ.get("EQIFORGE_CACHE_DIR")
        if env:
            return Path(env).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
        return base / "eqiforge"

    def key_fields(self) -> dict[str, Any]:
        """The options that can change which program is chosen (cache key)."""
        return {
            "target": self.target,
            "node_limit": self.node_limit,
            "search_time_s": self.search_time_s,
            "extract_time_s": self.extract_time_s,
            "top_k": self.top_k,
            "extract_mode": self.extract_mode,
            "memory_limit_mb": self.memory_limit_mb,
            "partition_ops": self.partition_ops,
            "cut_compare_ops": self.cut_compare_ops,
            "fuse_cuts": self.fuse_cuts,
            "block_sizes": list(self.block_sizes),
            "num_warps": list(self.num_warps),
            "num_stages": list(self.num_stages),
            "cuda_graphs": self.cuda_graphs,
        }

    def updated(self, **changes) -> "Options":
        """A copy with some options changed, checked like make_options."""
        return make_options(base=self, **changes)


NAMES = tuple(f.name for f in fields(Options))


def _fail(name: str, expected: str, value: Any) -> OptionError:
    return OptionError(f"option {name}={value!r}: expected {expected}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and v == v  # not NaN


def _positive_number(name: str, v: Any) -> float:
    if not _is_number(v) or v <= 0 or v == float("inf"):
        raise _fail(name, "a positive, finite number of seconds", v)
    return float(v)


def _positive_int(name: str, v: Any, what: str) -> int:
    if not _is_int(v) or v <= 0:
        raise _fail(name, f"a positive integer ({what})", v)
    return int(v)


def _choice(name: str, v: Any, choices: tuple[str, ...], none_ok: bool = False) -> str | None:
    if v is None and none_ok:
        return None
    if isinstance(v, str) and v.lower() in choices:
        return v.lower()
    listed = ", ".join(repr(c) for c in choices) + (" or None (auto-detect)" if none_ok else "")
    raise _fail(name, f"one of {listed}", v)


def _int_tuple(name: str, v: Any, check, what: str) -> tuple[int, ...]:
    items = (v,) if _is_int(v) else v
    if not isinstance(items, (list, tuple)) or not items or not all(_is_int(x) and check(x) for x in items):
        raise _fail(name, f"a non-empty list of {what}", v)
    return tuple(sorted(set(int(x) for x in items)))


def _power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _check(name: str, v: Any) -> Any:
    if name in ("budget_s", "search_time_s", "extract_time_s"):
        return _positive_number(name, v)
    if name == "target":
        return _choice(name, v, TARGETS, none_ok=True)
    if name == "cache_dir":
        if v is not None and not isinstance(v, (str, os.PathLike)):
            raise _fail(name, "a path (str or os.PathLike) or None", v)
        return v
    if name in ("cache", "cuda_graphs", "baselines", "fuse_cuts"):
        if not isinstance(v, bool):
            raise _fail(name, "True or False", v)
        return v
    if name == "node_limit":
        return _positive_int(name, v, "e-graph nodes")
    if name == "memory_limit_mb":
        if not _is_int(v) or not 1 <= v <= MAX_MEMORY_LIMIT_MB:
            raise _fail(name, f"an integer number of MiB from 1 to {MAX_MEMORY_LIMIT_MB} (the e-graph's memory cap)", v)
        return v
    if name == "partition_ops":
        if not _is_int(v) or v < 0:
            raise _fail(name, "a non-negative integer (operators per subgraph; 0: cut only when the search fails)", v)
        return v
    if name == "cut_compare_ops":
        if not _is_int(v) or v < 0:
            raise _fail(name, "a non-negative integer (operators from which the cut is searched too; 0: only after a limit)", v)
        return v
    if name == "top_k":
        return _positive_int(name, v, "candidates to tune")
    if name == "extract_mode":
        return _choice(name, v, EXTRACT_MODES)
    if name == "verbose":
        if isinstance(v, bool):
            return int(v)
        if not _is_int(v) or v not in (0, 1, 2):
            raise _fail(name, "True, False, 0, 1 or 2", v)
        return v
    if name == "unsupported":
        return _choice(name, v, UNSUPPORTED)
    if name == "block_sizes":
        return _int_tuple(name, v, _power_of_two, "powers of two (e.g. [16, 32, 64])")
    if name == "num_warps":
        return _int_tuple(name, v, lambda x: _power_of_two(x) and x <= 32, "powers of two from 1 to 32")
    if name == "num_stages":
        return _int_tuple(name, v, lambda x: 1 <= x <= 8, "integers from 1 to 8")
    if name == "seed":
        if not _is_int(v) or v < 0:
            raise _fail(name, "a non-negative integer", v)
        return v
    raise AssertionError(f"option {name} has no check")  # every field of Options has one


def make_options(base: Options | None = None, **given: Any) -> Options:
    """Checks the given options and returns them with the defaults filled in.

    Raises OptionError naming the first problem: an unknown option (with the
    nearest known name), a wrong type, or a value out of range.
    """
    for name in given:
        if name not in NAMES:
            near = difflib.get_close_matches(name, NAMES, n=1, cutoff=0.5)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise OptionError(f"unknown option {name!r}{hint}; the options are: {', '.join(NAMES)}")
    checked = {name: _check(name, value) for name, value in given.items()}
    return replace(base or Options(), **checked)


def describe() -> str:
    """One line per option with its default, for help texts."""
    return "\n".join(f"  {f.name} = {f.default!r}" for f in fields(Options))


__all__ = ["EXTRACT_MODES", "NAMES", "OptionError", "Options", "TARGETS", "TOLERANCE", "UNSUPPORTED", "make_options"]
