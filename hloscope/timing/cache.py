"""Timings computed once per profile and kept in the run folder: the saved session of the
timing pipeline.

Reading a profile and attributing its events takes seconds on a big model; every
command that shows timings needs the same result. `cached_timings` computes
`ProfileTimings` once, writes them to `<run>/.hloscope-timings.json` and hands them back
to later commands in milliseconds. An entry is keyed by what the result depends on: each
profile file's path, size and modification time, the settings (`skip_first`,
`max_executions`) and a fingerprint of the HLO it was compared with, so a new profile,
other settings or another dump recompute it. Folders outside a run, or that cannot be
written, are read without caching. The file is one of the run folder's stores
(`hloscope.store`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hloscope.manifest import MANIFEST
from hloscope.store import TIMINGS_CACHE, digest, file_stamps, keep, lookup
from hloscope.timing.attribution import attribute
from hloscope.timing.compiles import read_compiles, with_compile_times
from hloscope.timing.results import (
    DeviceTiming,
    KernelTiming,
    ModuleTiming,
    ProfileTimings,
    merge_timings,
)
from hloscope.timing.xplane import find_profiles, read_trace

__all__ = [
    "CACHE_VERSION",
    "cached_timings",
    "dump_fingerprint",
    "profile_timings",
    "run_folder_of",
    "static_fingerprint",
    "timings_from_doc",
    "timings_to_doc",
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
    """A short digest of the HLO dump files in a run's `dump/` folder (names, sizes and
    modification times): what timings compared with the HLO depend on, without parsing
    it. '' when there is no run or no dump folder."""
    if folder is None:
        return ""
    dump = folder / "dump"
    try:
        entries = file_stamps(dump, sorted(p for p in dump.iterdir() if p.name.endswith(".txt")))
    except OSError:
        return ""
    return digest(entries)[:16] if entries else ""


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
            "files": file_stamps(run, files),
            "settings": dict(settings),
        }
    except OSError:
        return compute()
    key = digest(key_doc)
    path = run / TIMINGS_CACHE
    found = lookup(path, key, _MAX_BYTES)
    if isinstance(found, dict):
        try:
            return timings_from_doc(found)
        except (KeyError, TypeError, ValueError):
            pass  # an entry of another shape: recompute it
    timings = compute()
    keep(path, key, timings_to_doc(timings), limit=_MAX_BYTES, max_entries=_MAX_ENTRIES)
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


# --------------------------------------------------------------------------------------
# ProfileTimings <-> JSON, losslessly (floats round-trip through JSON exactly).


def timings_to_doc(timings: ProfileTimings) -> dict[str, Any]:
    """`ProfileTimings` as JSON values (`timings_from_doc` reads it back equal)."""
    return dataclasses.asdict(timings)


def _tupled(cls: type, doc: Mapping[str, Any]) -> dict[str, Any]:
    """A dataclass's fields from JSON: lists back to tuples (of tuples where nested)."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in doc:
            continue
        value = doc[f.name]
        if isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        out[f.name] = value
    return out


def _module_from_doc(doc: Mapping[str, Any]) -> ModuleTiming:
    fields = _tupled(ModuleTiming, doc)
    for name in ("kernels", "control"):
        fields[name] = tuple(KernelTiming(**_tupled(KernelTiming, k)) for k in doc.get(name, ()))
    fields["per_device"] = tuple(
        DeviceTiming(**_tupled(DeviceTiming, d)) for d in doc.get("per_device", ())
    )
    return ModuleTiming(**fields)


def timings_from_doc(doc: Mapping[str, Any]) -> ProfileTimings:
    """`ProfileTimings` from `timings_to_doc`'s output.

    Raises:
        KeyError, TypeError, ValueError: The document is of another shape.
    """
    fields = _tupled(ProfileTimings, doc)
    fields["modules"] = {k: _module_from_doc(m) for k, m in doc["modules"].items()}
    return ProfileTimings(**fields)
