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
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import ProfileReadError
from hloscope.timing.xspace_wire import (  # the messages, re-exported
    XEvent,
    XEventMetadata,
    XLine,
    XPlane,
    XSpace,
    XStat,
    XStatMetadata,
    _fields,
    _Malformed,
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

METADATA_PLANE = "/host:metadata"
TASK_ENV_PLANE = "Task Environment"
HOST_PLANE = "/host:CPU"
DEVICE_PLANE_PREFIX = "/device:"

XPLANE_SUFFIX = ".xplane.pb"
TRACE_JSON_SUFFIX = ".trace.json.gz"

# The events timing reads besides those of XLA ops (`keeps_event_named`, `keeps_line`).
# The host-side event around one execution of a compiled XLA executable (TensorFlow's
# CPU and GPU runtimes); op events on the same thread nest inside it.
EXECUTE_EVENT_SUFFIXES = ("ExecuteAsyncOnStream", "ExecuteAsyncOnStreamImpl")
# XLA GPU's host TraceMe around launching one module: `<module>:XLA GPU module`.
GPU_MODULE_SUFFIX = ":XLA GPU module"
# Lines the profiler derives per device: module executions, and (on a TPU) the ops.
XLA_MODULES_LINE = "XLA Modules"
XLA_OPS_LINE = "XLA Ops"


def read_xspace(path: Path | str) -> XSpace:
    """Read and decode an `*.xplane.pb` file (see `decode_xspace`)."""
    p = Path(path)
    return decode_xspace(_read_bytes(p), path=str(p))


def _read_bytes(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as e:
        raise ProfileReadError(f"cannot read: {e.strerror}", path=str(p)) from None


# --------------------------------------------------------------------------------------
# The framework-neutral trace.


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One timed event of a profile.

    Attributes:
        name: The event's name (its metadata name in XPlane, `name` in a Chrome trace).
        plane: The plane (`/host:CPU`, `/device:GPU:0`) or Chrome-trace process name.
        line: The line (thread or stream) name.
        line_id: The line id (Chrome trace: the tid).
        start_ps: Start time in picoseconds, on one clock per profile.
        duration_ps: Duration in picoseconds.
        stats: The event's stats by name, its metadata's stats included (the event's
            own win); `ref` values resolved to strings, numbers as numbers.
        display_name: The metadata's display name, where it has one (on a TPU's
            `XLA Ops` line the HLO op name, `fusion.3`, while `name` is its HLO text).
    """

    name: str
    plane: str
    line: str
    line_id: int
    start_ps: int
    duration_ps: int
    stats: Mapping[str, Any]
    display_name: str = ""

    @property
    def end_ps(self) -> int:
        """End time in picoseconds."""
        return self.start_ps + self.duration_ps


@dataclass(frozen=True)
class Trace:
    """Every timed event of one profile, plus what the metadata plane says.

    Attributes:
        path: The file read, if any.
        format: `xplane` or `trace.json`.
        events: The events, plane by plane, line by line, in file order.
        programs: Compiled modules by program id, from the `/host:metadata` plane
            (`jit_mlp(30)` -> `{30: "jit_mlp"}`); empty for Chrome traces.
        hostnames: Hosts the profile came from.
        start_ns: Profile start (Task Environment plane), or None.
        stop_ns: Profile stop, or None.
        problems: What was skipped while reading, one line each.
        devices: Device model by plane, where the plane records it
            (`device_type_string`: `/device:TPU:0` -> `TPU v6 Lite`).
        platforms: Target by device plane: `sm_70` from a GPU plane's compute
            capability stats, `TPU` for TPU planes.
    """

    path: str | None
    format: str
    events: tuple[TraceEvent, ...]
    programs: Mapping[int, str] = field(default_factory=dict)
    hostnames: tuple[str, ...] = ()
    start_ns: int | None = None
    stop_ns: int | None = None
    problems: tuple[str, ...] = ()
    devices: Mapping[str, str] = field(default_factory=dict)
    platforms: Mapping[str, str] = field(default_factory=dict)


def _program_name(name: str) -> tuple[str, int] | None:
    """`jit_mlp(30)` -> (`jit_mlp`, 30)."""
    if not name.endswith(")"):
        return None
    head, sep, tail = name[:-1].rpartition("(")
    if not sep or not tail.lstrip("-").isdigit():
        return None
    return head, int(tail)


class TraceParts:
    """What a decoder collects plane by plane, to become a `Trace` (both XSpace decoders
    fill one, so that they agree on everything but speed)."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self.programs: dict[int, str] = {}
        self.start_ns: int | None = None
        self.stop_ns: int | None = None
        self.aggregated = 0
        self.devices: dict[str, str] = {}
        self.platforms: dict[str, str] = {}

    def add_programs(self, names: Iterable[str]) -> None:
        """The `/host:metadata` plane's event names: `jit_mlp(30)` -> program 30."""
        for name in names:
            parsed = _program_name(name)
            if parsed is not None:
                self.programs[parsed[1]] = parsed[0]

    def add_session(self, stats: Mapping[str, Any]) -> None:
        """The `Task Environment` plane's stats: when profiling started and stopped."""
        self.start_ns = _as_int(stats.get("profile_start_time"))
        self.stop_ns = _as_int(stats.get("profile_stop_time"))

    def add_device(self, plane: str, stats: Mapping[str, Any]) -> None:
        """A plane's stats: the device model and target, where it is a device plane."""
        model, platform = _plane_device_stats(plane, stats)
        if model:
            self.devices[plane] = model
        if platform:
            self.platforms[plane] = platform

    def trace(self, path: str | None, errors: Iterable[str], hostnames: Iterable[str]) -> Trace:
        """The trace, with the profiler's errors and the skipped events as problems."""
        problems = [f"profiler error: {e}" for e in errors]
        if self.aggregated:
            problems.append(f"{self.aggregated} aggregated events (no timestamps) skipped")
        return Trace(
            path,
            "xplane",
            tuple(self.events),
            self.programs,
            tuple(hostnames),
            self.start_ns,
            self.stop_ns,
            tuple(problems),
            self.devices,
            self.platforms,
        )


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


# Plane stats that name the device model (TPU planes: `device_type_string`).
_DEVICE_STATS = ("device_type_string", "device_name")


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


def _plane_device_stats(name: str, stats: Mapping[str, Any]) -> tuple[str, str]:
    """`_plane_device` from a plane's name and stats."""
    if not name.startswith(DEVICE_PLANE_PREFIX):
        return "", ""
    model = next((v for k in _DEVICE_STATS if isinstance(v := stats.get(k), str) and v), "")
    platform = ""
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    if isinstance(major, int) and isinstance(minor, int):
        platform = f"sm_{major}{minor}"
    elif name.startswith(DEVICE_PLANE_PREFIX + "TPU"):
        platform = "TPU"
    return model, platform


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


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


def keeps_event_named(name: str) -> bool:
    """Whether an event of this name marks an execution (kept by `xla_only` reads)."""
    return name.endswith(EXECUTE_EVENT_SUFFIXES) or name.endswith(GPU_MODULE_SUFFIX)


def keeps_line(line: str) -> bool:
    """Whether every event of this line is kept by `xla_only` reads."""
    return line.startswith(XLA_MODULES_LINE) or line == XLA_OPS_LINE


def outer_fields(data: bytes, path: str | None = None) -> Iterator[tuple[int, memoryview]]:
    """The top-level fields of a serialized XSpace, without decoding them: planes (1)
    and the error (2), warning (3) and hostname (4) strings, each as a view.

    Raises:
        ProfileReadError: The bytes are not a well-formed protobuf message.
    """
    view = memoryview(data)
    try:
        for number, wire, a, b in _fields(data, 0, len(data)):
            if number in (1, 2, 3, 4) and wire == 2:
                yield number, view[a:b]
    except _Malformed as e:
        raise ProfileReadError(f"not an XSpace profile: {e}", path=path, offset=e.offset) from None
    except IndexError:
        raise ProfileReadError(
            "not an XSpace profile: truncated protobuf (was the profiler stopped?)", path=path
        ) from None


def read_trace(path: Path | str, *, xla_only: bool = False) -> Trace:
    """Read one profile file: `*.xplane.pb` or `*.trace.json.gz` (or `*.trace.json`).

    Args:
        path: The file.
        xla_only: Keep only the events timing reads: those of XLA ops and the ones that
            mark executions and launches. An XSpace is then decoded by the protobuf
            runtime where it is installed (`xspace_proto`), many times faster.

    Raises:
        ProfileReadError: The file cannot be read or is not a profile.
    """
    p = Path(path)
    name = p.name
    if name.endswith(XPLANE_SUFFIX):
        if xla_only:
            from hloscope.timing import xspace_proto

            if xspace_proto.available():
                return xspace_proto.trace_from_bytes(_read_bytes(p), path=str(p))
        return trace_from_xspace(read_xspace(p), path=str(p), xla_only=xla_only)
    if name.endswith((".json.gz", ".json")):
        try:
            if name.endswith(".gz"):
                with gzip.open(p, "rt", encoding="utf-8") as f:
                    doc = json.load(f)
            else:
                doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, EOFError, ValueError) as e:
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
    if not root.is_dir():
        raise ProfileReadError("no such file or folder", path=str(root))
    for suffix in (XPLANE_SUFFIX, TRACE_JSON_SUFFIX):
        found = sorted(root.rglob(f"*{suffix}"), key=lambda p: (p.parent.name, str(p)))
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
        if len(p.parents) > 3 and p.parents[1].name == "profile" and p.parents[2].name == "plugins"
    }
    if len(logdirs) <= 1:
        return [first]
    return [find_profile(d) for d in sorted(logdirs)]
