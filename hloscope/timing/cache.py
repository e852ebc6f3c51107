"""Timings computed once per profile and kept in the run folder: the saved session of the
timing pipeline.

Reading a profile and attributing its events takes seconds on a big model; every
command that shows timings needs the same result. `cached_timings` computes
`ProfileTimings` once, writes them to `<run>/.hloscope-timings.json` and hands them back
to later commands in milliseconds. An entry is keyed by what the result depends on: each
profile file's path and content (SHA-256), the settings (`skip_first`,
`max_executions`) and a fingerprint of the HLO it was compared with, so a new profile,
other settings or another dump recompute it, and only this user's hloscope finds the
entries it wrote (`store.entry_key`). Folders outside a run, or that cannot be
written, are read without caching. The file is one of the run folder's stores
(`hloscope.store`); an entry is checked as it is read back (`ProfileTimings.from_json`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hloscope.errors import DocumentError
from hloscope.manifest import MANIFEST
from hloscope.store import (
    MAX_HASHED_BYTES,
    TIMINGS_CACHE,
    content_digest,
    digest,
    entry_key,
    keep,
    lookup,
)
from hloscope.timing.attribution import attribute
from hloscope.timing.compiles import read_compiles, with_compile_times
from hloscope.timing.results import ProfileTimings, merge_timings
from hloscope.timing.xplane import find_profiles, read_trace

__all__ = [
    "CACHE_VERSION",
    "cached_timings",
    "dump_fingerprint",
    "profile_timings",
    "run_folder_of",
    "static_fingerprint",
]

CACHE_VERSION = 5  # 3: ops on the device clock, modules without op events listed; 4: per
# device; 5: executions split by each op's n-th run where the first-op split is inconsistent
"""The shape of a kept `ProfileTimings` document (part of every key)."""
_MAX_ENTRIES = 4
# A big GPU run's timings are tens of MB; past this the file is not read.
_MAX_BYTES = 256 * 1024 * 1024


def run_folder_of(path: Path) -> Path | None:
    """The run folder a path is in (the nearest folder holding a run.json), or None."""
    folder = path if path.is_dir() else path.parent
    for candidate in [folder, *list(folder.parents)[:6]]:
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def static_fingerprint(static: Mapping[str, Any] | None) -> str:
    """A short digest of the after-optimization analyses timings were compared with:
    per module key, the static launch count, kernel names and the runtime names each is
    booked under, loops and conditionals."""
    parts = []
    for key in sorted(static or {}):
        a = (static or {})[key]
        parts.append(
            [
                key,
                a.launches,
                [k.name for k in a.kernels],
                sorted(a.kernel_of.items()),
                [loop.name for loop in a.loops],
                [b.conditional for b in a.branches],
            ]
        )
    return digest(parts)[:16]


def dump_fingerprint(folder: Path | None) -> str:
    """A short digest of the HLO dump files in a run's `dump/` folder (names and
    content): what timings compared with the HLO depend on, without parsing it. '' when
    there is no run or no dump folder."""
    if folder is None:
        return ""
    dump = folder / "dump"
    try:
        files = sorted(p for p in dump.iterdir() if p.name.endswith((".txt", ".pb", ".xz")))
        entries = [[p.name, content_digest(p, MAX_HASHED_BYTES)] for p in files]
    except OSError:
        return ""
    return digest(entries)[:16] if entries else ""


def _content(root: Path, files: Sequence[Path]) -> list[list[str]]:
    """`[name, SHA-256]` of each file, named relative to `root` where inside it.

    Raises:
        OSError: A file cannot be read.
    """
    out = []
    for f in files:
        try:
            name = f.relative_to(root).as_posix()
        except ValueError:
            name = str(f)
        out.append([name, content_digest(f, MAX_HASHED_BYTES)])
    return out


def cached_timings(
    files: Sequence[Path],
    settings: Mapping[str, Any],
    compute: Callable[[], ProfileTimings],
    *,
    run: Path | None = None,
) -> ProfileTimings:
    """The timings of these profile files, from the run's cache or computed and kept.

    Args:
        files: The profile files the timings come from.
        settings: Everything else they depend on (JSON values): `skip_first`,
            `max_executions`, a `static_fingerprint`, ...
        compute: Reads and attributes the files (called on a cache miss).
        run: The run folder holding the cache (default: the one `files[0]` is in).

    Returns:
        The timings; equal to `compute()`'s.
    """
    from hloscope import __version__

    run = run or (run_folder_of(files[0]) if files else None)
    if run is None:
        return compute()
    try:
        key_doc = {
            "version": CACHE_VERSION,
            "hloscope": __version__,
            "files": _content(run, files),
            "settings": dict(settings),
        }
    except OSError:
        return compute()
    key = entry_key(key_doc)
    if key is None:
        return compute()
    path = run / TIMINGS_CACHE
    found = lookup(path, key, _MAX_BYTES)
    if found is not None:
        try:
            return ProfileTimings.from_json(found, where=TIMINGS_CACHE)
        except DocumentError:
            pass  # an entry of another shape: recompute it
    timings = compute()
    keep(path, key, timings.to_json(), limit=_MAX_BYTES, max_entries=_MAX_ENTRIES)
    return timings


def profile_timings(
    folder: Path | str,
    *,
    skip_first: int = 1,
    max_executions: int | None = None,
    static: Mapping[str, Any] | None = None,
) -> ProfileTimings:
    """The timings of every profile a run (or profiler log dir) holds, cached in the run.

    Each profile (one per profiler: `profile/jax/`, `profile/tensorflow/`) is read with
    only the events timing needs and attributed; several are merged.

    Args:
        folder: A run folder, a profiler log dir, or one profile file.
        skip_first: Executions of each module left out as warm-up.
        max_executions: Steady-state executions kept per module (all when None).
        static: After-optimization analyses to compare with (see `attribute`).

    Raises:
        ProfileReadError: No profile, or one that cannot be read.
    """
    files = find_profiles(folder)
    settings = {
        "skip_first": skip_first,
        "max_executions": max_executions,
        "static": static_fingerprint(static),
    }

    def compute() -> ProfileTimings:
        return merge_timings(
            [
                attribute(
                    read_trace(f, xla_only=True),
                    skip_first=skip_first,
                    static=static or None,
                    max_executions=max_executions,
                )
                for f in files
            ]
        )

    timings = cached_timings(files, settings, compute)
    return with_compile_times(timings, read_compiles(files))
