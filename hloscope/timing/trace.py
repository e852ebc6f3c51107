"""The framework-neutral trace: what every profile reader produces and `attribution`
reads. `TraceEvent`s of a `Trace`, the plane and line names XLA's profilers use, and
`TraceParts`, which the XSpace decoders (`xspace_wire`, `xspace_proto`) fill plane by
plane. Imports nothing else of hloscope, so every reader can share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEVICE_PLANE_PREFIX",
    "EXECUTE_EVENT_SUFFIXES",
    "GPU_MODULE_SUFFIX",
    "METADATA_PLANE",
    "TASK_ENV_PLANE",
    "XLA_MODULES_LINE",
    "XLA_OPS_LINE",
    "Trace",
    "TraceEvent",
    "TraceParts",
    "keeps_event_named",
    "keeps_line",
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

    Example:
        >>> from pathlib import Path
        >>> path = next(Path('tests/data/jax_mlp_profile').rglob('*.xplane.pb'))
        >>> trace = hloscope.read_trace(path)
        >>> event = trace.events[0]
        >>> isinstance(event, hloscope.TraceEvent), event.duration_ps >= 0
        (True, True)
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

    Example:
        >>> from pathlib import Path
        >>> path = next(Path('tests/data/jax_mlp_profile').rglob('*.xplane.pb'))
        >>> trace = hloscope.read_trace(path)
        >>> isinstance(trace, hloscope.Trace), trace.format
        (True, 'xplane')
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


# Plane stats that name the device model (TPU planes: `device_type_string`).
_DEVICE_STATS = ("device_type_string", "device_name")


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


def keeps_event_named(name: str) -> bool:
    """Whether an event of this name marks an execution (kept by `xla_only` reads)."""
    return name.endswith(EXECUTE_EVENT_SUFFIXES) or name.endswith(GPU_MODULE_SUFFIX)


def keeps_line(line: str) -> bool:
    """Whether every event of this line is kept by `xla_only` reads."""
    return line.startswith(XLA_MODULES_LINE) or line == XLA_OPS_LINE
