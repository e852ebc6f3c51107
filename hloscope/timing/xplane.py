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
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hloscope.errors import ProfileReadError
from hloscope.files import inside, read_regular
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
# once decompressed, is held to this (a small .gz can expand without bound).
MAX_TRACE_JSON_BYTES = 1 << 30


def _json_text(p: Path) -> bytes:
    """A Chrome trace's JSON text, decompressed where it is gzipped, never past
    `MAX_TRACE_JSON_BYTES`."""
    if not p.name.endswith(".gz"):
        return read_regular(p, MAX_TRACE_JSON_BYTES)
    with gzip.GzipFile(fileobj=io.BytesIO(read_regular(p, MAX_PROFILE_BYTES))) as f:
        text = f.read(MAX_TRACE_JSON_BYTES + 1)  # decompresses no more than this
    if len(text) > MAX_TRACE_JSON_BYTES:
        raise ProfileReadError(
            f"decompresses to more than the {MAX_TRACE_JSON_BYTES:,} bytes allowed",
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
    if isinstance(text, str) and text.lstrip("-").isdigit():
        return int(text)
    return text


def trace_from_json(doc: Mapping[str, Any], *, path: str | None = None) -> Trace:
    """A `Trace` from a Chrome-trace document (`{"traceEvents": [...]}`).

    Complete events (`ph: "X"`) are kept; process and thread names come from the `M`
    metadata events; `ts`/`dur` are microseconds.
    """
    raw = doc.get("traceEvents") if isinstance(doc, Mapping) else None
    if not isinstance(raw, list):
        raise ProfileReadError("not a Chrome trace: no traceEvents list", path=path)
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in raw:
        if isinstance(e, dict) and e.get("ph") == "M":
            args = e.get("args") or {}
            if e.get("name") == "process_name":
                processes[e.get("pid")] = str(args.get("name", ""))
            elif e.get("name") == "thread_name":
                threads[(e.get("pid"), e.get("tid"))] = str(args.get("name", ""))
    events: list[TraceEvent] = []
    skipped = 0
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            start_ps = round(float(e["ts"]) * 1e6)
            duration_ps = round(float(e.get("dur", 0.0)) * 1e6)
        except (KeyError, TypeError, ValueError):
            skipped += 1
            continue
        pid, tid = e.get("pid"), e.get("tid")
        args = e.get("args") or {}
        stats = {str(k): _number(v) for k, v in args.items()} if isinstance(args, dict) else {}
        events.append(
            TraceEvent(
                str(e.get("name", "")),
                processes.get(pid, str(pid)),
                threads.get((pid, tid), str(tid)),
                tid if isinstance(tid, int) else 0,
                start_ps,
                duration_ps,
                stats,
            )
        )
    problems = (f"{skipped} complete events without a valid ts/dur skipped",) if skipped else ()
    return Trace(path, "trace.json", tuple(events), problems=problems)


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
    if name.endswith(XPLANE_SUFFIX):
        if xla_only and xspace_proto.available():
            return xspace_proto.trace_from_bytes(_read_bytes(p), path=str(p))
        return trace_from_xspace(read_xspace(p), path=str(p), xla_only=xla_only)
    if name.endswith((".json.gz", ".json")):
        try:
            doc = json.loads(_json_text(p))
        except (OSError, EOFError, ValueError, zlib.error) as e:
            raise ProfileReadError(f"not a Chrome trace: {e}", path=str(p)) from None
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
    for suffix in (XPLANE_SUFFIX, TRACE_JSON_SUFFIX):
        inner = (p for p in root.rglob(f"*{suffix}") if inside(p, root))  # no links out
        found = sorted(inner, key=lambda p: (p.parent.name, str(p)))
        if found:
            return found[-1]
    raise ProfileReadError(
        f"no *{XPLANE_SUFFIX} or *{TRACE_JSON_SUFFIX} below this folder; record one with "
        "`hloscope dump --profile SCRIPT.py`",
        path=str(root),
    )


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
        for suffix in (XPLANE_SUFFIX, TRACE_JSON_SUFFIX)
        for p in root.rglob(f"*{suffix}")
        if len(p.parents) > 3
        and p.parents[1].name == "profile"
        and p.parents[2].name == "plugins"
        and inside(p, root)
    }
    if len(logdirs) <= 1:
        return [first]
    return [find_profile(d) for d in sorted(logdirs)]
