"""Each module's analysis kept in the user's cache folder, by the content of its files:
a later command on an unchanged module (`report`, `ops`, `check`, `diff`, the HTML page)
reads its report back instead of parsing and analysing it again.

`analyses` is what `analyze_run` calls when asked to keep (the CLI does, unless
`--no-cache`): for each module it looks up its key, reads back the report kept under it,
and analyses the others (`pool.analyze_dumps`, in parallel when it pays), keeping each
as a worker process sends it (`pool.pack_reports`: small, each parsed module as its
file, parsed again only if something asks for its instructions, as a diagram does). A
report kept with more than a command asks for serves it too (`serves`: one with its
source ops joined serves `check`, which joins none).

A module's key (`store.entry_key`, an HMAC with this user's secret) is of the SHA-256 of
each file its report reads (its before and after files and XLA's fusion log beside
them), its name, id, platform and paths, the analysis's options, hloscope's version and
source files, and Python's version. Entries live in `$HLOSCOPE_CACHE_DIR/analyses`
(default `~/.cache/hloscope/analyses`), one file each, evicted least recently used first
beyond `$HLOSCOPE_CACHE_MB` (default 1024 MB; 0 keeps nothing). An entry is a pickle, so
it is read as untrusted input and unpickled only once its signature with this user's
secret checks out (`user_cache.read_entry`); one that fails, or does not unpickle to a
report of its module, is analysed again and replaced. A module whose files changed while
it was analysed, or changed less than a second before (their times could stay as they
are through another change), is not kept.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hloscope.analysis.pool import Report, analyze_dumps, file_loaders, pack_reports, unpack_reports
from hloscope.hlo.fusion_log import find_log
from hloscope.hlo.parser import paused_gc
from hloscope.runs import ModuleDump
from hloscope.store import code_stamps, digest, entry_key
from hloscope.user_cache import (
    RACY_NS,
    DigestIndex,
    cache_folder,
    cache_limit,
    read_entry,
    write_entry,
)

__all__ = ["analyses", "analyses_dir"]

R = TypeVar("R", bound=Report)

_VERSION = 1  # the shape of an entry
# One module's report as kept: the 25 MB generated pair's is 37 MB.
_MAX_ENTRY_BYTES = 512 << 20
# Files hashed for one module's key, at most (its two sides and a fusion log).
_MAX_HASHED_BYTES = 4 << 30


def analyses_dir() -> Path:
    """Where kept analyses live: `analyses/` in the user's cache folder
    (`$HLOSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hloscope` or `~/.cache/hloscope`)."""
    return cache_folder("analyses")


def analyses(
    dumps: Sequence[ModuleDump],
    analyze: Callable[[ModuleDump], R],
    options: Mapping[str, Any],
    serves: Sequence[Mapping[str, Any]] = (),
) -> list[R]:
    """`analyze(dump)` of every module, read back where it was kept, else computed and
    kept.

    Args:
        dumps: The modules.
        analyze: `hloscope.analysis.report.analyze_dump` with its options bound.
        options: Those options, as JSON values: part of each module's key.
        serves: Other options whose reports serve as well, read back when there is
            none kept for `options` (a report with its source ops joined serves what
            needs none).

    Returns:
        One report per module, in the order given, equal to what `analyze` gives.
    """
    limit = cache_limit()
    if limit <= 0 or not dumps:
        return analyze_dumps(dumps, analyze)
    keys = _Keys([options, *serves]).of(dumps)
    folder = analyses_dir()
    found: list[R | None] = []
    for dump, key in zip(dumps, keys, strict=True):
        report = None
        for name in key.names if key is not None else ():
            report = _read(folder, name, dump)
            if report is not None:
                break
        found.append(report)
    todo = [i for i, report in enumerate(found) if report is None]
    for i, report in zip(todo, analyze_dumps([dumps[i] for i in todo], analyze), strict=True):
        found[i] = report
        key = keys[i]
        if key is not None and key.unchanged():
            with paused_gc():  # pickling makes no garbage worth a walk of the analysis
                data = pack_reports([report])
            write_entry(folder / key.name, key.name, data, min(limit, _MAX_ENTRY_BYTES))
    return [r for r in found if r is not None]


def _read(folder: Path, name: str, dump: ModuleDump) -> Any | None:
    """The report kept as `name` for `dump`; None when there is none to trust."""
    data = read_entry(folder / name, name, _MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:  # signed by this user's hloscope for this key: its own pickle
        with paused_gc():  # millions of objects made, none of them garbage
            (report,) = unpack_reports(data, file_loaders([dump]))
    except Exception:  # a damaged entry is analysed again
        return None
    return report if getattr(report, "key", None) == dump.key else None


class _Key:
    """A module's keys (the names its entry is kept under: for the options asked, then
    for each that serves them) and the stamps of its files when they were hashed: what
    it was computed from must still have them after."""

    def __init__(self, names: list[str], files: list[Path], stamps: list[tuple[int, ...]]) -> None:
        self.names = names
        self.files = files
        self.stamps = stamps

    @property
    def name(self) -> str:
        """The name of its entry for the options asked (where it is kept)."""
        return self.names[0]

    def unchanged(self) -> bool:
        """Whether its files are as they were hashed, and were not changed less than a
        second before (a later change could leave their times as they are)."""
        try:
            now = [_stamp(os.stat(p)) for p in self.files]
        except OSError:
            return False
        settled = time.time_ns() - RACY_NS
        return now == self.stamps and all(s[-1] < settled for s in now)


class _Keys:
    """The keys of modules analysed with each of `options` (its files hashed once)."""

    def __init__(self, options: Sequence[Mapping[str, Any]]) -> None:
        from hloscope import __version__

        self.bases: list[str] = []  # none: nothing is kept
        try:
            code = code_stamps()
        except OSError:
            return
        # what every module's key holds, hashed once per options
        common = {
            "what": "analysis",
            "version": _VERSION,
            "hloscope": __version__,
            "python": sys.version,
            "pickle": pickle.HIGHEST_PROTOCOL,
            "code": code,
        }
        self.bases = [digest({**common, "options": dict(o)}) for o in options]

    def of(self, dumps: Sequence[ModuleDump]) -> list[_Key | None]:
        """Each module's keys; None for one whose files cannot all be hashed (or without
        this user's secret to key with)."""
        if not self.bases:
            return [None] * len(dumps)
        indexes: dict[Path, DigestIndex] = {}
        keys = [self._key(d, indexes) for d in dumps]
        for index in indexes.values():
            index.save()
        return keys

    def _key(self, dump: ModuleDump, indexes: dict[Path, DigestIndex]) -> _Key | None:
        files = [p for p in (dump.before, dump.after, find_log(dump.after)) if p is not None]
        digests, stamps = [], []
        budget = _MAX_HASHED_BYTES
        try:
            for path in files:
                st = os.stat(path)
                budget -= st.st_size
                if budget < 0:
                    return None
                index = indexes.get(path.parent)
                if index is None:
                    index = indexes[path.parent] = DigestIndex(path.parent, analyses_dir())
                digests.append([str(path), index.digest(path.name, st, st.st_size)])
                stamps.append(_stamp(st))
        except OSError:
            return None
        what = [dump.key, dump.name, dump.module_id, dump.platform, dump.stamp]
        names = []
        for base in self.bases:
            name = entry_key({"base": base, "module": what, "files": digests})
            if name is None:
                return None
            names.append(f"{name}.pickle")
        return _Key(names, files, stamps)


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    """A file's identity, size and times (the last: the later of its modification and
    change times)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, max(st.st_mtime_ns, st.st_ctime_ns))
