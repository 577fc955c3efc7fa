"""Errors of the front end.

Both are ``eqiforge.IRError`` (a ``ValueError``) so callers catch one type for
everything that is wrong with a program, whether it came as IR text or as a
PyTorch function. Messages name the problem and the user's source line, e.g.
``aten.cumsum is not supported (model.py:12: y = torch.cumsum(x, 0))``.
"""

from __future__ import annotations

from .._core import IRError


class FrontendError(IRError):
    """A PyTorch program the front end cannot capture or translate.

    ``location`` is ``"file.py:LINE"`` of the user's code that produced the
    offending operation (empty when unknown); ``source`` is that line's text.
    """

    def __init__(self, message: str, location: str = "", source: str = ""):
        self.problem = message
        self.location = location
        self.source = source
        where = location + (": " + source if source else "") if location else ""
        super().__init__(f"{message} ({where})" if where else message)


class UnsupportedOpError(FrontendError):
    """An operation (``op``, e.g. ``"aten.cumsum"``) with no translation to the IR,
    or used in a way the IR cannot express (``op`` then still names it)."""

    def __init__(self, op: str, message: str | None = None, location: str = "", source: str = ""):
        self.op = op
        super().__init__(message or f"{op} is not supported", location, source)
