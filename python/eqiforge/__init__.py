"""eqiforge: a superoptimizer for GPU tensor programs.

The C++ core lives in the extension module ``eqiforge._core``; this package
re-exports its functions. Programs are IR text (see docs/ir.md in the
repository); tensors are float64 numpy arrays in the declared layouts.

    >>> import eqiforge
    >>> eqiforge.check(text)                    # [(output name, type text), ...]
    >>> eqiforge.evaluate(text, seed=0, blocks={"t.0": 16})
    >>> eqiforge.equiv(naive_text, tiled_text) <= eqiforge.TOLERANCE

Every error in a program (syntax, types, bad block sizes) raises
``eqiforge.IRError``, a ``ValueError`` whose message starts with
``file:line:col``.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from ._core import (
    IRError,
    TOLERANCE,
    axes,
    check,
    equiv,
    evaluate,
    print_program,
    random_inputs,
)

IRError.__module__ = __name__  # shown as eqiforge.IRError in tracebacks

try:
    __version__ = _version("eqiforge")
except PackageNotFoundError:  # imported from a build tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "IRError",
    "TOLERANCE",
    "axes",
    "check",
    "equiv",
    "evaluate",
    "print_program",
    "random_inputs",
]
