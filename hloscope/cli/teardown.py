"""The end of a command-line process: a big command's objects are left for the OS.

A command on a 100 MB module holds millions of objects (its parsed modules, their
analyses); freeing them one by one when the process ends took 2.6 s of the 16 s `graph`
of a 153 MB module (issue 27), for memory the OS takes back at once anyway. `keep`
holds them where neither reference counting nor the collector ever reaches them: only in
a process started by the console entry point (`hloscope.cli.app.main`, which calls
`one_command`), never in a library caller's or a test's, where they would leak.
"""

from __future__ import annotations

import gc

_one_command = False


def one_command() -> None:
    """Say that this process ends after the command it runs (the console entry point)."""
    global _one_command
    _one_command = True


def keep(*objects: object) -> None:
    """Never free `objects` when this is a one-command process; otherwise do nothing.

    They go into a list that holds itself (only the collector frees such a cycle), and
    every object is then frozen (`gc.freeze`: the collector never looks at them again,
    the last collection at exit included). They stay usable: call it as soon as they
    are made, or once the command is done with them.
    """
    if not _one_command:
        return
    holder: list[object] = [*objects]
    holder.append(holder)
    gc.freeze()
