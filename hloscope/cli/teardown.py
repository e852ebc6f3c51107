"""The memory of a command-line process: big blocks go back to the OS as they are freed,
and a big command's objects are left for the OS at its end.

Freed memory first. glibc's malloc maps a block of 128 KiB or more on its own and unmaps
it when it is freed, but it raises that threshold to the size of each mapped block freed
(up to 32 MiB): once a big module's walk frees its dict tables of tens of megabytes,
every later table and list under that size comes from the heap, which gives the OS back
only what is free at its top. The page of a 107/153 MB pair held 120 MB more that way,
at its peak (issue 27). `one_command` keeps the threshold where it starts.

The end of the process next.

A command on a 100 MB module holds millions of objects (its parsed modules, their
analyses); freeing them one by one when the process ends took 2.6 s of the 16 s `graph`
of a 153 MB module (issue 27), for memory the OS takes back at once anyway. `keep`
holds them where neither reference counting nor the collector ever reaches them: only in
a process started by the console entry point (`hloscope.cli.app.main`, which calls
`one_command`), never in a library caller's or a test's, where they would leak. What
such a command made besides (memos of modules parsed again, a page's diagrams: 4 s at
the end of `report --html` of that module) is left too: a process that kept its objects
ends with `leave`, which runs the exit handlers and flushes the output, as the end of
the interpreter would, and frees nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

# glibc's `M_MMAP_THRESHOLD` (malloc.h) and its default: blocks this big or bigger are
# mapped on their own, and unmapped when freed
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 128 * 1024

_one_command = False
_kept = False


def one_command() -> None:
    """Say that this process ends after the command it runs (the console entry point),
    and give big blocks back to the OS as soon as they are freed (`_return_big_blocks`):
    the process is hloscope's alone."""
    global _one_command
    _one_command = True
    _return_big_blocks()


def _return_big_blocks() -> None:
    """Fix glibc's mmap threshold at its default, which also stops it from growing (see
    `mallopt(3)`). Elsewhere there is no `mallopt` to call (macOS), or one that does
    nothing (musl)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # here only: a Linux command-line process

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def keep(*objects: object) -> None:
    """Never free `objects` when this is a one-command process; otherwise do nothing.

    They go into a list that holds itself (only the collector frees such a cycle), and
    every object is then frozen (`freeze_kept`: the collector never looks at them again,
    the last collection at exit included). They stay usable: call it as soon as they
    are made, or once the command is done with them.
    """
    global _kept
    if not _one_command:
        return
    from hloscope.hlo.parser import freeze_kept  # what the command read: imported already

    _kept = True
    holder: list[object] = [*objects]
    holder.append(holder)
    freeze_kept()


def leave(code: int) -> None:
    """End this process with `code` now if it kept its objects (`keep`): run the exit
    handlers (`atexit`), flush stdout and stderr, and exit without freeing anything.
    Otherwise return, and the interpreter ends as usual."""
    if not _kept:
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(code)
