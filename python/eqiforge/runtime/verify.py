"""Checking a candidate against PyTorch eager before it may be timed (DESIGN §7).

A candidate runs on *fresh* random inputs (not the user's examples, which a
wrong kernel could match by accident) and its outputs are compared with the
eager program's on the same inputs: the relative L2 error of every output,
computed in float64 from the outputs in the workload's dtype, must be at most
``TOLERANCE`` (1e-2), and a NaN in an output never passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..options import TOLERANCE


def fresh_like(example: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random tensor with the example's shape, dtype and device whose values
    follow the example's: normal with its mean and standard deviation, kept
    inside its range; uniform over its range when the example is never
    negative (so a variance fed to sqrt stays positive). Matching the scale
    matters: the check is relative, and inputs much larger than the real ones
    would make a wrong constant term look small."""
    if example.dtype == torch.bool:
        values = torch.rand(example.shape, generator=generator) < 0.5
        return values.to(example.device)
    if not (example.is_floating_point() or example.is_complex()):
        lo = int(example.min()) if example.numel() else 0
        hi = int(example.max()) if example.numel() else 0
        values = torch.randint(lo, hi + 1, example.shape, generator=generator, dtype=torch.int64)
        return values.to(device=example.device, dtype=example.dtype)
    e = example.detach().to(torch.float64)
    lo, hi = (float(e.min()), float(e.max())) if e.numel() else (-1.0, 1.0)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        # A constant or non-finite example says little: the usual range, on
        # the example's side of zero.
        lo, hi = (0.0, 1.0) if lo >= 0 else (-1.0, 1.0)
    if lo >= 0:
        values = torch.rand(example.shape, generator=generator, dtype=torch.float64) * (hi - lo) + lo
    else:
        finite = e[torch.isfinite(e)]
        mean = float(finite.mean()) if finite.numel() else 0.0
        std = float(finite.std()) if finite.numel() > 1 else 0.0
        if not std > 0:
            std = (hi - lo) / 4
        values = (torch.randn(example.shape, generator=generator, dtype=torch.float64) * std + mean).clamp(lo, hi)
    return values.to(device=example.device, dtype=example.dtype)


def fresh_args(examples: tuple, seed: int) -> tuple:
    """Fresh random values for every tensor argument; other arguments as given."""
    g = torch.Generator().manual_seed(seed)
    return tuple(fresh_like(a, g) if isinstance(a, torch.Tensor) else a for a in examples)


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf when out has a NaN or an
    infinity where ref does not, or the shapes differ."""
    if tuple(out.shape) != tuple(ref.shape):
        return math.inf
    o = out.detach().to(torch.float64).reshape(-1).cpu()
    r = ref.detach().to(torch.float64).reshape(-1).cpu()
    if torch.isnan(o).any():
        return math.inf
    finite = torch.isfinite(r)
    if not torch.equal(torch.isfinite(o), finite) or not torch.equal(o[~finite], r[~finite]):
        return math.inf
    o, r = o[finite], r[finite]
    diff = torch.linalg.vector_norm(o - r).item()
    norm = torch.linalg.vector_norm(r).item()
    if norm == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / norm


@dataclass
class Verdict:
    ok: bool
    error: float           # the largest relative L2 error over the outputs
    reason: str = ""       # why not ok


def compare(outputs, references, names: list[str] | None = None) -> Verdict:
    """Every output against its reference (same order)."""
    outputs, references = list(outputs), list(references)
    if len(outputs) != len(references):
        return Verdict(False, math.inf, f"{len(outputs)} outputs, the eager program has {len(references)}")
    worst = 0.0
    reason = ""
    for i, (o, r) in enumerate(zip(outputs, references)):
        name = names[i] if names and i < len(names) else f"output {i}"
        if not isinstance(o, torch.Tensor):
            return Verdict(False, math.inf, f"{name} is a {type(o).__name__}, not a tensor")
        if torch.isnan(r.detach()).any():
            return Verdict(False, math.inf, f"the eager program's {name} has NaN on random inputs")
        e = rel_l2(o, r)
        if e > worst:
            worst = e
            if e > TOLERANCE:
                if tuple(o.shape) != tuple(r.shape):
                    reason = f"{name} has shape {tuple(o.shape)}, expected {tuple(r.shape)}"
                elif torch.isnan(o.detach()).any():
                    reason = f"{name} has NaN"
                else:
                    reason = f"{name} differs from eager: relative L2 error {e:.3g} > {TOLERANCE:g}"
    return Verdict(worst <= TOLERANCE, worst, reason)
