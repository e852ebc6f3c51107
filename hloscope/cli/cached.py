"""Command output kept in the run folder: a later `report --json` of an unchanged run is
read back instead of parsed, analysed, timed and serialised again.

`cached_output` keeps what a command printed (stdout, and the warnings it gave on
stderr) in the run folder's `.hloscope-report.json` store (`hloscope.store`), keyed by
everything the output depends on: the command and its options, the path as given, the
name, type and content (SHA-256) of every file in the run folder (the dump, the
profile, run.json, bench.json, ...), hloscope's version and its source files (an
editable install changes without a new version), and,
for the device roofs a CPU run's roofline uses, this machine and the state of its probe
cache. Any change computes the output again; an entry this user's hloscope did not write
is never found (`store.entry_key`). This module imports nothing of the pipeline: on a
hit, no HLO is parsed and no profile read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.cli.output_cache import outputs_dir
from hloscope.errors import DocumentError
from hloscope.manifest import MANIFEST
from hloscope.store import (
    MAX_HASHED_BYTES,
    REPORT_CACHE,
    code_stamps,
    entry_key,
    keep,
    lookup,
    probe_stamp,
    stat_stamps,
    tree_stats,
)
from hloscope.user_cache import RACY_NS, tree_digests

__all__ = ["Output", "cached_output", "keeps_output"]

_VERSION = 1  # the shape of a kept entry
_MAX_ENTRIES = 4
# DenseNet121's report is 4 MB; a module-heavy GPU run's a few tens.
_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Output:
    """What a command printed.

    Attributes:
        stdout: Its standard output, exactly.
        warnings: The lines it wrote to stderr, in order.
    """

    stdout: str
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The cache entry: `{stdout, warnings}`."""
        return {"stdout": self.stdout, "warnings": list(self.warnings)}

    @classmethod
    def from_json(cls, doc: Any) -> Output:
        """Read a cache entry (`to_json`'s).

        Raises:
            DocumentError: The entry is of another shape (another hloscope wrote it).
        """
        stdout = doc.get("stdout") if isinstance(doc, dict) else None
        warnings = doc.get("warnings") if isinstance(doc, dict) else None
        if not isinstance(stdout, str) or not isinstance(warnings, list):
            raise DocumentError("not a kept output", where=REPORT_CACHE)
        if not all(isinstance(w, str) for w in warnings):
            raise DocumentError("warnings should be strings", where=REPORT_CACHE)
        return cls(stdout, tuple(warnings))


def cached_output(
    run: Path, command: str, options: Mapping[str, Any], compute: Callable[[], Output]
) -> Output:
    """A command's output on a run, from the run folder's cache or computed and kept.

    Only a run folder (a folder holding run.json) keeps output; a bare dump folder, a
    single file, or a folder that cannot be listed or written compute it each time.

    Args:
        run: The path the command was given.
        command: The command (`report --json`).
        options: Its other options (JSON values).
        compute: Produces the output (called on a miss); its errors propagate, and
            nothing is kept.

    Returns:
        The output; equal to `compute()`'s.
    """
    if not keeps_output(run):
        return compute()
    started = time.time_ns()
    try:
        found = tree_stats(run)  # as found now: a file changed from here on changes it
        code = code_stamps()
    except OSError:
        return compute()
    contents = tree_digests(run, found, outputs_dir(), budget=MAX_HASHED_BYTES)
    if contents is None:
        return compute()
    what = {"command": command, "options": dict(options), "run": str(run)}
    path = run / REPORT_CACHE
    key = _key(what, contents, code)
    if key is None:
        return compute()
    output = _output_of(lookup(path, key, _MAX_BYTES))
    if output is not None:
        return output
    output = compute()
    try:
        unchanged = stat_stamps(tree_stats(run)) == stat_stamps(found)
    except OSError:
        unchanged = False
    # Not kept when a file changed while computing (the output may be of either state),
    # or so recently that a change now could leave its size and time as they are (file
    # times are coarse: git calls such entries racy).
    racy = any(st.st_mtime_ns >= started - RACY_NS for _, st in found)
    if unchanged and not racy:
        # keyed as computed: a first CPU roofline has probed and kept this machine's roofs
        key = _key(what, contents, code)
        if key is not None:
            keep(path, key, output.to_json(), limit=_MAX_BYTES, max_entries=_MAX_ENTRIES)
    return output


def keeps_output(run: Path) -> bool:
    """Whether `cached_output` keeps what a command prints on `run`: only a run folder
    does."""
    return run.is_dir() and (run / MANIFEST).is_file()


def _key(what: Mapping[str, Any], files: Any, code: Any) -> str | None:
    from hloscope import __version__

    return entry_key(
        {
            "version": _VERSION,
            "hloscope": __version__,
            "code": code,
            **what,
            "files": files,
            "peaks": probe_stamp(),
        }
    )


def _output_of(found: Any) -> Output | None:
    """An entry as `Output`; None when there is none, or one of another shape (it is
    computed again)."""
    if found is None:
        return None
    try:
        return Output.from_json(found)
    except DocumentError:
        return None
