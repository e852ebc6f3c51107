"""A command's steps on one line of the terminal while it works.

Reading, analysing and drawing a 100 MB module take 10-25 s, and a terminal that shows
nothing for that long looks hung. When stderr is a terminal, `showing` puts each step the
library says (`hloscope.status.step`) on one line of it, each replacing the last: a long
one (a big file read) at once, the others once the command has run half a second. The
line is cleared before anything else is written (the command's output, a warning, an
error), after which no more steps are shown, and when the command ends. Piped or
redirected, nothing is shown and nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from hloscope import status

# Quicker commands show nothing: the line would only flicker.
DELAY_S = 0.5
_CLEAR = "\r\x1b[K"  # back to the line's start, and erase it


class _Line:
    """The status line on `stream` (a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.shown = False
        self.done = False

    def show(self, text: str, long: bool) -> None:
        if self.done or not (long or time.monotonic() - self.started >= DELAY_S):
            return
        from rich.cells import cell_len, set_cell_size

        from hloscope.render.format import printable

        line = printable(f"hloscope: {text}...")
        width = _columns(self.stream)
        if cell_len(line) >= width:  # a line as wide as the terminal wraps, and stays
            if width < 20:
                return
            line = set_cell_size(line, width - 4).rstrip() + "..."
        self.stream.write(_CLEAR + line)
        self.stream.flush()
        self.shown = True

    def end(self) -> None:
        """Clear the line, and show no more steps."""
        self.done = True
        if self.shown:
            self.shown = False
            self.stream.write(_CLEAR)
            self.stream.flush()


class _Clearing:
    """A text stream that ends the status line before anything is written to it."""

    def __init__(self, stream: TextIO, line: _Line) -> None:
        self._stream = stream
        self._line = line

    def write(self, text: str) -> int:
        self._line.end()
        return self._stream.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        self._line.end()
        self._stream.writelines(lines)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush, encoding, buffer...
        return getattr(self._stream, name)


_active: _Line | None = None


@contextlib.contextmanager
def showing() -> Iterator[None]:
    """Show the steps of the work inside on a status line, when stderr is a terminal."""
    global _active
    if not _is_terminal(sys.stderr) or _active is not None:
        yield
        return
    line = _active = _Line(sys.stderr)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Clearing(out, line), _Clearing(err, line)
    status.listen(line.show)
    try:
        yield
    finally:
        status.listen(None)
        sys.stdout, sys.stderr = out, err
        _active = None
        line.end()


def _forget() -> None:
    """In a forked worker: the status line is its parent's to show and clear."""
    if _active is not None:
        _active.done, _active.shown = True, False


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere no process is forked
    os.register_at_fork(after_in_child=_forget)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80  # a terminal that gives no size (a bare pty) says 0
