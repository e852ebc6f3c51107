"""The child process of `hloscope dump`: its process group, the signals that stop it,
and the pumps that copy its output to the logs and the display.

Whatever ends a run (the script, Ctrl-C, SIGTERM, SIGHUP, an error of hloscope's own),
the child does not outlive it, and its pipes are drained to the end so it never blocks
on a full one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = [
    "Sink",
    "StopSignals",
    "Stopped",
    "own_process_group",
    "start_pump",
    "std_sink",
    "stop_child",
    "wait_child",
]

Sink = Callable[[bytes], None]
"""Receives the child's output as it comes."""

_INTERRUPT_GRACE_S = 10.0
_TERMINATE_GRACE_S = 5.0


def own_process_group() -> dict[str, Any]:
    """Popen arguments that put the child in its own process group.

    The terminal's Ctrl-C then reaches hloscope only, which forwards one SIGINT and
    waits for the child to finish writing its dumps.
    """
    if os.name != "posix":
        return {}
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover


def signal_child(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "posix":
            os.killpg(proc.pid, sig)
        else:  # pragma: no cover
            proc.send_signal(sig)


def stop_child(proc: subprocess.Popen[bytes]) -> int:
    """SIGINT, then SIGTERM, then SIGKILL, each after a grace period; a second Ctrl-C
    skips the wait."""
    for sig, grace in (
        (signal.SIGINT, _INTERRUPT_GRACE_S),
        (signal.SIGTERM, _TERMINATE_GRACE_S),
    ):
        signal_child(proc, sig)
        try:
            return proc.wait(timeout=grace)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            continue
    signal_child(proc, signal.SIGKILL)
    while True:  # SIGKILL cannot be refused: the wait is short, and no signal cuts it
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


class Stopped(KeyboardInterrupt):
    """A signal that stops the child the way Ctrl-C does; `args[0]` is its name."""


class StopSignals:
    """While the child runs, SIGINT, SIGTERM and SIGHUP (a closed terminal or SSH
    session) stop it the way Ctrl-C does, dumps kept; the first one is recorded.

    After `settle()` (the child is gone) signals are ignored until run.json is
    written. Outside the main thread, or off POSIX, only Ctrl-C is seen (as
    Python's KeyboardInterrupt).
    """

    _SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.stopped_by: str | None = None
        self._raising = True
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread() and os.name == "posix":
            for name in self._SIGNALS:
                sig = getattr(signal, name)
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    def _handle(self, signum: int, frame: object) -> None:
        if not self._raising:  # the child is gone; run.json is being written
            return
        name = signal.Signals(signum).name
        if self.stopped_by is None:
            self.stopped_by = name
        raise Stopped(name)

    def interrupted(self, e: KeyboardInterrupt) -> None:
        """Record a Ctrl-C that came as Python's own KeyboardInterrupt."""
        if self.stopped_by is None:
            self.stopped_by = e.args[0] if isinstance(e, Stopped) else "SIGINT"

    def settle(self) -> None:
        """The child is gone: from now on, signals wait for run.json to be written."""
        self._raising = False


def wait_child(
    proc: subprocess.Popen[bytes],
    signals: StopSignals,
    on_interrupt: Callable[[], None] | None,
) -> int:
    """The child's return code; whatever ends the wait (a signal, an error of
    hloscope's own), the child does not outlive it."""
    try:
        return proc.wait()
    except KeyboardInterrupt as e:
        signals.interrupted(e)
        if on_interrupt is not None:
            with contextlib.suppress(Exception):
                on_interrupt()
        return stop_child(proc)
    finally:
        if proc.poll() is None:
            stop_child(proc)
        signals.settle()


def std_sink(stream: Any) -> Sink:
    """A sink that writes bytes to a text stream's buffer (or decoded, when it has none)."""
    broken = False

    def write(data: bytes) -> None:
        nonlocal broken
        if broken:
            return
        try:
            buffer = getattr(stream, "buffer", None)
            if buffer is not None:
                buffer.write(data)
                buffer.flush()
            else:
                stream.write(data.decode("utf-8", "replace"))
                stream.flush()
        except (OSError, ValueError):  # closed pipe (`| head`): keep logging only
            broken = True

    return write


def start_pump(pipe: IO[bytes], log: IO[bytes], sink: Sink, errors: list[str]) -> threading.Thread:
    """Copy a pipe to its log and sink until EOF.

    The pipe is drained to the end whatever fails: a child blocked on a full pipe
    would never exit. A log that cannot be written (disk full) is given up and the
    failure added to `errors`; a sink that raises is given up.
    """

    def pump() -> None:
        fd = pipe.fileno()
        logging, sinking = True, True
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            if logging:
                try:
                    log.write(data)
                except (OSError, ValueError) as e:
                    logging = False
                    name = Path(str(log.name)).name
                    errors.append(f"{name}: cannot write ({getattr(e, 'strerror', None) or e})")
            if sinking:
                try:
                    sink(data)
                except Exception:  # a display that fails must not stop the draining
                    sinking = False
        pipe.close()

    thread = threading.Thread(target=pump, name="hloscope-pump", daemon=True)
    thread.start()
    return thread
