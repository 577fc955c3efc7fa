"""eqiforge: a superoptimizer for GPU tensor programs.

The C++ core lives in the extension module ``eqiforge._core``; this package
re-exports its functions. Programs are IR text (see docs/ir.md in the
repository); tensors are float64 numpy arrays in the declared layouts.

    >>> import eqiforge
    >>> eqiforge.typecheck(text)                # [(output name, type text), ...]
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
    equiv,
    evaluate,
    print_program,
    random_inputs,
)

from ._core import check as typecheck  # `eqiforge.check` is the kernel checker module

IRError.__module__ = __name__  # shown as eqiforge.IRError in tracebacks


def __getattr__(name):
    # The PyTorch-facing API imports torch: load it on first use, so that
    # `import eqiforge` stays light for IR-only use.
    if name in ("optimize", "OptimizedProgram"):
        from . import api

        return getattr(api, name)
    if name == "OptionError":
        from .options import OptionError

        return OptionError
    if name == "to_ir":
        from .frontend import to_ir

        return to_ir
    raise AttributeError(f"module 'eqiforge' has no attribute {name!r}")


try:
    __version__ = _version("eqiforge")
except PackageNotFoundError:  # imported from a build tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "IRError",
    "TOLERANCE",
    "OptionError",
    "axes",
    "optimize",
    "to_ir",
    "typecheck",
    "equiv",
    "evaluate",
    "print_program",
    "random_inputs",
]
