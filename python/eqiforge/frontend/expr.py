"""IR terms as the translator builds them, and their text (docs/ir.md).

Dim attributes are dim *variables* (see dims.py), wrapped in ``Dim`` so they
cannot be confused with integer attributes; they are printed with the names
the solver gives their classes once the whole graph is translated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Union


@dataclass(frozen=True)
class Dim:
    """A dim attribute: a variable of the DimSolver."""

    var: int


@dataclass(frozen=True)
class Ref:
    """A name bound by `input` or `let`."""

    name: str


@dataclass(frozen=True)
class Lit:
    """A literal constant: a dtype-polymorphic scalar."""

    value: float


@dataclass(frozen=True)
class Term:
    """(op attrs... args...)."""

    op: str
    attrs: tuple
    args: tuple


Expr = Union[Ref, Lit, Term]

# Ops whose operands are all literal give a literal (docs/ir.md, pointwise).
POINTWISE = frozenset(
    "add sub mul div max2 min2 neg exp log sqrt rsqrt sigmoid silu gelu tanh pow cast lt le eq where".split()
)


def term(op: str, *args, attrs: tuple = ()) -> Term:
    return Term(op, tuple(attrs), tuple(args))


def is_literal(e: Expr) -> bool:
    """True for expressions the IR types as literal scalars (no dims, no dtype)."""
    if isinstance(e, Lit):
        return True
    if isinstance(e, Term) and e.op in POINTWISE and e.op != "cast":
        return all(is_literal(a) for a in e.args)
    return False


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "max2": max, "min2": min, "neg": lambda a: -a, "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
    "rsqrt": lambda a: 1.0 / math.sqrt(a), "sigmoid": _sigmoid, "silu": lambda a: a * _sigmoid(a), "gelu": _gelu,
    "tanh": math.tanh, "lt": lambda a, b: float(a < b), "le": lambda a, b: float(a <= b),
    "eq": lambda a, b: float(a == b), "where": lambda c, a, b: a if c else b,
}


def literal_value(e: Expr) -> float | None:
    """The value of a literal expression (a Lit, or pointwise ops of Lits, as
    PyTorch's decompositions write them: `weight < 0.5` of a Python number),
    or None when it cannot be folded here."""
    if isinstance(e, Lit):
        return e.value
    if not (isinstance(e, Term) and is_literal(e)):
        return None
    args = [literal_value(a) for a in e.args]
    if any(a is None for a in args):
        return None
    try:
        if e.op == "pow":
            return float(args[0] ** e.attrs[0])
        fn = _FOLD.get(e.op)
        return None if fn is None else float(fn(*args))
    except (ArithmeticError, ValueError, TypeError, IndexError):
        return None


def number_text(v: float) -> str:
    v = float(v)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if math.isnan(v):
        raise ValueError("NaN has no literal in the IR")
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)  # shortest text that reads back as the same double


def dims_in(e: Expr, out: set[int]) -> None:
    """Collects the dim variables used as attributes anywhere in e."""
    if isinstance(e, Term):
        for a in e.attrs:
            if isinstance(a, Dim):
                out.add(a.var)
        for c in e.args:
            dims_in(c, out)


def render(e: Expr, dim_name: Callable[[int], str]) -> str:
    if isinstance(e, Ref):
        return e.name
    if isinstance(e, Lit):
        return number_text(e.value)
    parts = [e.op]
    for a in e.attrs:
        if isinstance(a, Dim):
            parts.append(dim_name(a.var))
        elif isinstance(a, float):
            parts.append(number_text(a))
        else:
            parts.append(str(a))
    parts.extend(render(c, dim_name) for c in e.args)
    return "(" + " ".join(parts) + ")"
