"""What a long piece of work is doing now, for whoever shows it.

Reading, analysing and drawing a 100 MB module take seconds each. The code that does them
says each step as it starts (`step("reading model.txt (107 MB)")`); nothing is done with
it unless a caller listens (`listen`): the `hloscope` commands do when their stderr is a
terminal, and show the latest step on one line there. A forked worker process never
passes its steps on: only the process the user started writes to the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["listen", "reading", "step"]

_listener: Callable[[str, bool], object] | None = None


def step(text: str, *, long: bool = False) -> None:
    """Say what this process starts doing now: a few words, no full stop; `long` when it
    will take half a second or more (a listener may skip the steps of quick work)."""
    if _listener is not None:
        _listener(text, long)


def reading(path: Path, what: str = "") -> None:
    """Say that the file `path` is read now (`what` it is, before its name), with its
    size: a long step for a big file."""
    if _listener is None:  # no one to tell: not even a stat
        return
    try:
        size = path.stat().st_size
    except OSError:
        return
    megabytes = f"{size / 1e6:.0f}" if size >= 1e6 else f"{size / 1e6:.1f}"
    step(f"reading {what}{path.name} ({megabytes} MB)", long=size >= LONG_READ_BYTES)


# A file that takes half a second or more to read (HLO text: about 50 MB a second here)
LONG_READ_BYTES = 25_000_000


def listen(listener: Callable[[str, bool], object] | None) -> None:
    """Pass each step (its text, and whether it is long) from now on to `listener`
    (None: to no one)."""
    global _listener
    _listener = listener


def _forget() -> None:  # in a forked child: its parent shows the steps
    listen(None)


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere no process is forked
    os.register_at_fork(after_in_child=_forget)
