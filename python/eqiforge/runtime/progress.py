"""Visible progress of long work: the stage, how much is left, the best so far.

Quiet by default in library use (``verbose=0``); the CLI turns it on. On a
terminal the status line is rewritten in place; elsewhere (logs, CI) a line is
printed only when the stage changes or at most once a second, so logs stay
short.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import TextIO


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


class Progress:
    def __init__(self, verbose: int = 0, stream: TextIO | None = None, clock=time.monotonic):
        self.verbose = verbose
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self._start = clock()
        self._stage = ""
        self._last_print = -1e9
        self._inline = False
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    @property
    def enabled(self) -> bool:
        return self.verbose > 0

    def _write_line(self, text: str, transient: bool) -> None:
        if self._tty and transient:
            self.stream.write("\r\033[K" + text)
            self._inline = True
        else:
            if self._inline:
                self.stream.write("\n")
                self._inline = False
            self.stream.write(text + "\n")
        self.stream.flush()

    def _prefix(self) -> str:
        return f"[eqiforge {self.clock() - self._start:6.1f}s]"

    def info(self, message: str, level: int = 1) -> None:
        """A line that stays (a stage's result, a note)."""
        if self.verbose >= level:
            self._write_line(f"{self._prefix()} {message}", transient=False)

    @contextmanager
    def stage(self, name: str):
        """A named stage; prints its start and how long it took."""
        self._stage = name
        begin = self.clock()
        self.info(f"{name} ...")
        try:
            yield self
        finally:
            self._stage = ""
            self.info(f"{name}: done in {_fmt_time(self.clock() - begin)}")

    def update(self, what: str, left: int | None = None, best: tuple[str, float | None] | None = None) -> None:
        """A status line: what is being done, how many are left, best so far."""
        if not self.enabled:
            return
        now = self.clock()
        parts = [what]
        if left is not None:
            parts.append(f"{left} left")
        if best is not None:
            parts.append(f"best {_fmt_time(best[1])}: {best[0]}")
        text = f"{self._prefix()} " + "; ".join(parts)
        if self.verbose >= 2:
            self._write_line(text, transient=False)
        elif self._tty or now - self._last_print >= 1.0:
            self._write_line(text, transient=True)
            self._last_print = now

    def done(self) -> None:
        if self._inline:
            self.stream.write("\n")
            self.stream.flush()
            self._inline = False


format_time = _fmt_time
