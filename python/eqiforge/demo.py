"""Checks every bundled example: each tiled form equals its naive form.

    python -m eqiforge.demo [--seed N] [--trials N] [--examples DIR]

An example is a folder ``examples/<name>/`` holding ``naive.eqf`` (the
high-level program) and one ``<variant>.eqf`` per tiled form of it. For each
example the naive program is type-checked and evaluated; each variant is
type-checked and compared with it on random inputs and random block sizes
(``eqiforge.equiv``). A short table shows the results; the exit status is 0
iff every variant matches its naive form within ``eqiforge.TOLERANCE``.

The examples ship inside the package (``eqiforge/examples``); ``--examples``
points at another folder, e.g. the repository's ``examples/``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import eqiforge

if TYPE_CHECKING:  # importlib.resources.abc only from Python 3.11
    from importlib.resources.abc import Traversable


@dataclass
class Row:
    example: str
    variant: str
    axes: str = ""
    outputs: str = ""
    error: str = ""
    result: str = ""


@dataclass
class Example:
    name: str
    naive: Traversable
    variants: list[Traversable]


def bundled_examples() -> Traversable:
    return resources.files("eqiforge") / "examples"


def find_examples(root: Traversable) -> list[Example]:
    """Folders of `root` that hold a naive.eqf, with their other .eqf files."""
    examples = []
    if not root.is_dir():
        return examples
    for folder in sorted(root.iterdir(), key=lambda t: t.name):
        if not folder.is_dir() or not (folder / "naive.eqf").is_file():
            continue
        variants = sorted(
            (f for f in folder.iterdir() if f.is_file() and f.name.endswith(".eqf") and f.name != "naive.eqf"),
            key=lambda t: t.name,
        )
        examples.append(Example(folder.name, folder / "naive.eqf", variants))
    return examples


def _stem(f: Traversable) -> str:
    return f.name[: -len(".eqf")]


def _label(example: str, f: Traversable) -> str:
    return f"examples/{example}/{f.name}"


def run_example(ex: Example, seed: int, trials: int, problems: list[str]) -> list[Row]:
    rows = []
    naive_text = ex.naive.read_text()
    naive = Row(ex.name, "naive", error="-", result="reference")
    try:
        naive.outputs = ", ".join(f"{name}: {ty}" for name, ty in eqiforge.typecheck(naive_text, _label(ex.name, ex.naive)))
        naive.axes = ", ".join(eqiforge.axes(naive_text, _label(ex.name, ex.naive))) or "-"
        values = eqiforge.evaluate(naive_text, seed=seed, file=_label(ex.name, ex.naive))
        if not all(v.size and math.isfinite(float(abs(v).max())) for v in values.values()):
            naive.result = "FAIL"
            problems.append(f"{_label(ex.name, ex.naive)}: an output is empty or not finite")
    except eqiforge.IRError as e:
        naive.result = "ERROR"
        problems.append(str(e))
    rows.append(naive)
    if not ex.variants:
        problems.append(f"examples/{ex.name}: no tiled variant next to naive.eqf")
    for f in ex.variants:
        row = Row(ex.name, _stem(f))
        text = f.read_text()
        try:
            row.outputs = ", ".join(f"{name}: {ty}" for name, ty in eqiforge.typecheck(text, _label(ex.name, f)))
            row.axes = ", ".join(eqiforge.axes(text, _label(ex.name, f))) or "-"
            if naive.result == "ERROR":
                raise eqiforge.IRError("naive.eqf failed; nothing to compare with")
            err = eqiforge.equiv(
                naive_text, text, seed=seed, trials=trials, file_a=_label(ex.name, ex.naive), file_b=_label(ex.name, f)
            )
            row.error = f"{err:.3g}"
            row.result = "ok" if err <= eqiforge.TOLERANCE else "FAIL"
            if row.result == "FAIL":
                problems.append(
                    f"{_label(ex.name, f)}: max relative error {err:.3g} against naive.eqf "
                    f"exceeds {eqiforge.TOLERANCE:g}"
                )
        except eqiforge.IRError as e:
            row.result = "ERROR"
            problems.append(str(e))
        rows.append(row)
    return rows


def print_table(rows: list[Row]) -> None:
    header = Row("example", "variant", "axes", "outputs", "max rel error", "result")
    cols = ["example", "variant", "axes", "outputs", "error", "result"]
    widths = {c: max(len(getattr(r, c)) for r in [header, *rows]) for c in cols}
    for r in [header, *rows]:
        print("  ".join(getattr(r, c).ljust(widths[c]) for c in cols).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqiforge.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of inputs and block sizes (default 0)")
    parser.add_argument("--trials", type=int, default=8, help="random trials per variant (default 8)")
    parser.add_argument("--examples", type=Path, help="folder of examples (default: the bundled ones)")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("--trials must be at least 1")

    root = args.examples if args.examples is not None else bundled_examples()
    examples = find_examples(root)
    if not examples:
        print(f"eqiforge demo: no examples (folders with naive.eqf) found in {root}", file=sys.stderr)
        return 1

    print(
        f"eqiforge {eqiforge.__version__}: each tiled form against its naive form "
        f"(float64 reference interpreter, {args.trials} trials of random inputs and block sizes, seed {args.seed})\n"
    )
    problems: list[str] = []
    rows = [row for ex in examples for row in run_example(ex, args.seed, args.trials, problems)]
    print_table(rows)

    variants = sum(len(ex.variants) for ex in examples)
    print()
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"FAILED: {len(problems)} problem(s) in {len(examples)} examples", file=sys.stderr)
        return 1
    print(f"all {variants} tiled forms of {len(examples)} examples equal their naive forms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
