"""Profiler output -> trace events: the first stage of the timing pipeline.

Reads the XSpace protobuf the TensorFlow and JAX profilers write (`*.xplane.pb`): with
the protobuf runtime where it is installed (`xspace_proto.py`), else with a small decoder
of the wire format (`xspace_wire.py`), so that reading a profile never imports
TensorFlow or JAX; and JAX's Chrome trace (`*.trace.json.gz`). Both become a
`Trace`: a flat, framework-neutral list of `TraceEvent`s that `attribution` turns into
per-module and per-kernel timings.

The message and field numbers are those of `xla/tsl/profiler/protobuf/xplane.proto`
(package `tensorflow.profiler`); big payloads (the `Hlo Proto` bytes of every compiled
module, `XEventMetadata.metadata`) are kept as zero-copy views and never decoded.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hloscope.errors import ProfileReadError
from hloscope.files import MAX_EXPANSION, Walk, expansion_limit, read_regular, walk
from hloscope.hlo.parser import paused_gc
from hloscope.status import reading
from hloscope.timing import xspace_proto
from hloscope.timing.trace import (  # re-exported: the trace is this stage's output
    DEVICE_PLANE_PREFIX,
    METADATA_PLANE,
    TASK_ENV_PLANE,
    TRACE_JSON_SUFFIX,
    XPLANE_SUFFIX,
    Trace,
    TraceEvent,
    TraceParts,
    keeps_event_named,
    keeps_line,
)
from hloscope.timing.xspace_wire import (  # the messages, re-exported
    XEvent,
    XEventMetadata,
    XLine,
    XPlane,
    XSpace,
    XStat,
    XStatMetadata,
    decode_xspace,
)

__all__ = [
    "ProfileReadError",
    "Trace",
    "TraceEvent",
    "TraceParts",
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
    "decode_xspace",
    "find_profile",
    "find_profiles",
    "is_profile_name",
    "read_trace",
    "read_xspace",
    "trace_from_json",
    "trace_from_xspace",
]


def read_xspace(path: Path | str) -> XSpace:
    """Read and decode an `*.xplane.pb` file (see `decode_xspace`)."""
    p = Path(path)
    return decode_xspace(_read_bytes(p), path=str(p))


# Profiles of long GPU runs reach hundreds of MB; past this, reading fails clearly.
MAX_PROFILE_BYTES = 2 << 30


def _read_bytes(p: Path) -> bytes:
    try:
        return read_regular(p, MAX_PROFILE_BYTES)  # no FIFO, no /dev/zero, bounded
    except OSError as e:
        raise ProfileReadError(f"cannot read: {e.strerror or e}", path=str(p)) from None


# JAX's trace.json holds at most 1,000,000 events, a few hundred MB of JSON; its text,
# once decompressed, is held to this, and to `files.MAX_EXPANSION` times the .gz file (a
# small .gz can expand without bound).
MAX_TRACE_JSON_BYTES = 1 << 30
# Python's JSON objects take up to ~16 times their text when objects and lists are at
# least this many bytes apart; JAX's traces have one every ~100 bytes. Text denser in
# them (a bomb of `{}`) would take more: it is refused before it is parsed.
_MIN_BYTES_PER_CONTAINER = 16


def _json_text(p: Path) -> bytes:
    """A Chrome trace's JSON text, decompressed where it is gzipped, never past
    `MAX_TRACE_JSON_BYTES` nor `files.MAX_EXPANSION` times the file."""
    if not p.name.endswith(".gz"):
        text = read_regular(p, MAX_TRACE_JSON_BYTES)
    else:
        data = read_regular(p, MAX_PROFILE_BYTES)
        limit = expansion_limit(len(data), MAX_TRACE_JSON_BYTES)
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            text = f.read(limit + 1)  # decompresses no more than this
        if len(text) > limit:
            raise ProfileReadError(
                f"decompresses to more than the {limit:,} bytes allowed "
                f"({MAX_EXPANSION} times the file, at most {MAX_TRACE_JSON_BYTES:,})",
                path=str(p),
            )
    containers = text.count(b"{") + text.count(b"[")
    if containers > len(text) // _MIN_BYTES_PER_CONTAINER + 1000:
        raise ProfileReadError(
            f"{containers:,} JSON objects and lists in {len(text):,} bytes: not a trace a "
            "profiler writes (too dense to read in bounded memory)",
            path=str(p),
        )
    return text


def trace_from_xspace(space: XSpace, *, path: str | None = None, xla_only: bool = False) -> Trace:
    """Flatten an XSpace into a `Trace`.

    Every event of every plane except `/host:metadata` becomes a `TraceEvent` (with
    `xla_only`, only those `read_trace` says); events with `num_occurrences`
    (aggregated, no timestamp) are skipped and counted.
    """
    parts = TraceParts()
    events = parts.events
    for plane in space.planes:
        if plane.name == METADATA_PLANE:
            parts.add_programs(m.name for m in plane.event_metadata.values())
            continue
        plane_stats = plane.stats_dict(plane.stats) if plane.stats else {}
        if plane.name == TASK_ENV_PLANE:
            parts.add_session(plane_stats)
            continue
        meta_stats: dict[int, dict[str, Any]] = {}
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        parts.add_device(plane.name, plane_stats)
        for line in plane.lines:
            base_ps = line.timestamp_ns * 1000
            line_name = line.display_name or line.name
            keep_line = not xla_only or keeps_line(line_name)
            for ev in line.events:
                if ev.num_occurrences:
                    parts.aggregated += 1
                    continue
                meta = plane.event_metadata.get(ev.metadata_id)
                if not keep_line and not _xla_event(plane, meta, ev, names):
                    continue
                display = ""
                if meta is None:
                    name = ""
                    stats: dict[str, Any] = {}
                else:
                    name = meta.name
                    display = meta.display_name
                    inherited = meta_stats.get(ev.metadata_id)
                    if inherited is None:
                        inherited = plane.stats_dict(meta.stats) if meta.stats else {}
                        meta_stats[ev.metadata_id] = inherited
                    stats = dict(inherited)
                for st in ev.stats:
                    value = st.value
                    if st.kind == "ref":
                        value = names.get(value, "")
                    stats[names.get(st.metadata_id, "")] = value
                events.append(
                    TraceEvent(
                        name,
                        plane.name,
                        line_name,
                        line.id,
                        base_ps + ev.offset_ps,
                        ev.duration_ps,
                        stats,
                        display,
                    )
                )
    return parts.trace(path, space.errors, space.hostnames)


def _xla_event(
    plane: XPlane, meta: XEventMetadata | None, ev: XEvent, names: Mapping[int, str]
) -> bool:
    """Whether an `xla_only` read keeps the event (see `xspace_proto._KEY_STATS`)."""
    if meta is not None and keeps_event_named(meta.name):
        return True
    wanted = ("hlo_op",) if plane.name.startswith(DEVICE_PLANE_PREFIX) else _KEY_STATS
    stats = [*(meta.stats if meta is not None else ()), *ev.stats]
    return any(names.get(s.metadata_id) in wanted for s in stats)


_KEY_STATS = ("hlo_op", "correlation_id")


def _number(text: Any) -> Any:
    """Chrome-trace args are strings; give numbers back as numbers, as XPlane has them."""
    if isinstance(text, str) and text.lstrip("-").isdigit() and len(text) < 20:
        return int(text)
    return text


def _key(value: Any) -> int | str | None:
    """A pid or tid: an integer or a string; None for anything else (a list, an object)."""
    if isinstance(value, int | str) and not isinstance(value, bool):
        return value
    return None


def _micros(value: Any) -> int | None:
    """A `ts` or `dur` in microseconds as picoseconds; None unless a finite, non-negative
    number (`Infinity`, `NaN`, a string, a negative duration are not times)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    ps = value * 1e6
    return round(ps) if math.isfinite(ps) and ps >= 0 else None


def _scalar_stats(args: Any) -> dict[str, Any]:
    """An event's args as stats: scalars only (nested values are no stat any reader
    uses, and would be carried along for nothing)."""
    if not isinstance(args, dict):
        return {}
    return {str(k): _number(v) for k, v in args.items() if isinstance(v, str | int | float | bool)}


def trace_from_json(doc: Mapping[str, Any], *, path: str | None = None) -> Trace:
    """A `Trace` from a Chrome-trace document (`{"traceEvents": [...]}`).

    Complete events (`ph: "X"`) are kept; process and thread names come from the `M`
    metadata events; `ts`/`dur` are microseconds. Events whose times are not finite,
    non-negative numbers, or whose ids or name are of another type, are skipped and
    counted in `problems`.
    """
    raw = doc.get("traceEvents") if isinstance(doc, Mapping) else None
    if not isinstance(raw, list):
        raise ProfileReadError("not a Chrome trace: no traceEvents list", path=path)
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in raw:
        if isinstance(e, dict) and e.get("ph") == "M":
            args = e.get("args")
            name = args.get("name") if isinstance(args, dict) else None
            if not isinstance(name, str):
                continue
            pid, tid = _key(e.get("pid")), _key(e.get("tid"))
            if e.get("name") == "process_name":
                processes[pid] = name
            elif e.get("name") == "thread_name":
                threads[(pid, tid)] = name
    events: list[TraceEvent] = []
    skipped = malformed = 0
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        start_ps, duration_ps = _micros(e.get("ts")), _micros(e.get("dur", 0))
        if start_ps is None or duration_ps is None:
            skipped += 1
            continue
        pid, tid = _key(e.get("pid")), _key(e.get("tid"))
        name = e.get("name", "")
        if (
            not isinstance(name, str)
            or (pid is None and "pid" in e)
            or (tid is None and "tid" in e)
        ):
            malformed += 1
            continue
        events.append(
            TraceEvent(
                name,
                processes.get(pid, str(pid)),
                threads.get((pid, tid), str(tid)),
                tid if isinstance(tid, int) else 0,
                start_ps,
                duration_ps,
                _scalar_stats(e.get("args")),
            )
        )
    problems = []
    if skipped:
        problems.append(
            f"{skipped} complete events without a finite, non-negative ts and dur skipped"
        )
    if malformed:
        problems.append(
            f"{malformed} complete events with a name, pid or tid of another type skipped"
        )
    return Trace(path, "trace.json", tuple(events), problems=tuple(problems))


@paused_gc()  # millions of acyclic events: see hlo.parser.paused_gc
def read_trace(path: Path | str, *, xla_only: bool = False) -> Trace:
    """Read one profile file: `*.xplane.pb` or `*.trace.json.gz` (or `*.trace.json`).

    Args:
        path: The file.
        xla_only: Keep only the events timing reads: those of XLA ops and the ones that
            mark executions and launches. An XSpace is then decoded by the protobuf
            runtime where it is installed (`xspace_proto`), many times faster.

    Raises:
        ProfileReadError: The file cannot be read or is not a profile.

    Example:
        >>> from pathlib import Path
        >>> path = next(Path('tests/data/jax_mlp_profile').rglob('*.xplane.pb'))
        >>> trace = hloscope.read_trace(path)
        >>> len(trace.events) > 0
        True
    """
    p = Path(path)
    name = p.name
    reading(p, "the profile ")
    if name.endswith(XPLANE_SUFFIX):
        if xla_only and xspace_proto.available():
            return xspace_proto.trace_from_bytes(_read_bytes(p), path=str(p))
        return trace_from_xspace(read_xspace(p), path=str(p), xla_only=xla_only)
    if name.endswith((".json.gz", ".json")):
        try:
            doc = json.loads(_json_text(p))
        except RecursionError:
            raise ProfileReadError("not a Chrome trace: nested too deep", path=str(p)) from None
        except (OSError, EOFError, ValueError, zlib.error) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else e
            raise ProfileReadError(f"not a Chrome trace: {reason}", path=str(p)) from None
        return trace_from_json(doc, path=str(p))
    raise ProfileReadError(
        f"unknown profile format; expected a *{XPLANE_SUFFIX} or *{TRACE_JSON_SUFFIX} file",
        path=str(p),
    )


def find_profile(folder: Path | str) -> Path:
    """The profile file under a folder (searched recursively): `*.xplane.pb` preferred.

    A run folder holds it under `profile/plugins/profile/<timestamp>/<host>.xplane.pb`.
    When several were written (several profiling sessions), the newest is taken.

    Raises:
        ProfileReadError: The folder holds no profile.
    """
    root = Path(folder)
    if root.is_file():
        return root
    if not root.exists():
        raise ProfileReadError("no such file or folder", path=str(root))
    if not root.is_dir():
        raise ProfileReadError(
            "not a regular file or a folder (a device or a pipe?); pass a run folder, a "
            f"profiler log dir or a *{XPLANE_SUFFIX} / *{TRACE_JSON_SUFFIX} file",
            path=str(root),
        )
    found = _search(root)
    files = found.files
    for suffix in (XPLANE_SUFFIX, TRACE_JSON_SUFFIX):
        named = sorted((p for p in files if p.name.endswith(suffix)), key=lambda p: (p.parent.name, str(p)))  # fmt: skip
        if named:
            return named[-1]
    left = [f"{p.relative_to(root)} is not a regular file" for p in found.special if _is_profile(p)]
    left += [f"{p.relative_to(root)} is a link out of the folder" for p in found.links_out if _is_profile(p)]  # fmt: skip
    raise ProfileReadError(
        f"no *{XPLANE_SUFFIX} or *{TRACE_JSON_SUFFIX} below this folder"
        + (f" (left alone: {'; '.join(left[:3])})" if left else "")
        + "; record one with `hloscope dump --profile SCRIPT.py`",
        path=str(root),
    )


def is_profile_name(name: str) -> bool:
    """Whether a file name is a profile's (`*.xplane.pb` or `*.trace.json.gz`)."""
    return name.endswith((XPLANE_SUFFIX, TRACE_JSON_SUFFIX))


def _is_profile(p: Path) -> bool:
    return is_profile_name(p.name)


def _search(root: Path) -> Walk:
    """What is below a folder: its profiles (regular files), never through a link out of
    it, no deeper than `files.MAX_DEPTH` (`files.walk`)."""
    try:
        return walk(root, select=is_profile_name)
    except OSError as e:
        raise ProfileReadError(f"cannot search the folder: {e}", path=str(root)) from None


def find_profiles(folder: Path | str) -> list[Path]:
    """Every profile a run folder holds: one per profiler log dir (`find_profile` in each).

    `hloscope dump --profile` gives each framework it profiled a log dir of its own
    (`profile/jax/`, `profile/tensorflow/`); older runs and other tools have one.

    Raises:
        ProfileReadError: The folder holds no profile.
    """
    root = Path(folder)
    first = find_profile(root)
    if root.is_file():
        return [first]
    logdirs = {
        p.parents[3]
        for p in _search(root).files
        if len(p.parents) > 3 and p.parents[1].name == "profile" and p.parents[2].name == "plugins"
    }
    if len(logdirs) <= 1:
        return [first]
    return [find_profile(d) for d in sorted(logdirs)]
