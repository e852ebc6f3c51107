"""XSpace bytes -> `Trace` through the protobuf runtime's compiled decoder: the fast
path of the first stage of the timing pipeline.

`xplane.py` decodes the wire format in pure Python, which needs nothing installed but
takes about a second per 1.5 MB of profile. Where the `protobuf` package is installed
(its C `upb` runtime), this module builds a descriptor of XLA's `xplane.proto` at run
time (field numbers of `xla/tsl/profiler/protobuf/xplane.proto`; no generated module, no
TensorFlow import), decodes one plane at a time, and keeps only the events timing
needs (`XLA_EVENT` below): the millions of Python-call and runtime events a profile may
hold are never turned into Python objects. Strings are declared as bytes, so that a
stray non-UTF-8 byte in a profile is replaced, not fatal.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from hloscope.errors import ProfileReadError
from hloscope.timing.trace import (
    DEVICE_PLANE_PREFIX,
    METADATA_PLANE,
    TASK_ENV_PLANE,
    Trace,
    TraceEvent,
    TraceParts,
    keeps_event_named,
    keeps_line,
)
from hloscope.timing.xspace_wire import outer_fields

__all__ = ["available", "trace_from_bytes"]

# (message, [(field name, number, type, repeated, message type or None, in the oneof)])
_INT64, _UINT64, _DOUBLE, _BYTES, _MESSAGE = 3, 4, 1, 12, 11
_SCHEMA: tuple[tuple[str, tuple[tuple[str, int, int, bool, str | None, bool], ...]], ...] = (
    (
        "XStat",
        (
            ("metadata_id", 1, _INT64, False, None, False),
            ("double_value", 2, _DOUBLE, False, None, True),
            ("uint64_value", 3, _UINT64, False, None, True),
            ("int64_value", 4, _INT64, False, None, True),
            ("str_value", 5, _BYTES, False, None, True),
            ("bytes_value", 6, _BYTES, False, None, True),
            ("ref_value", 7, _UINT64, False, None, True),
        ),
    ),
    (
        "XEvent",
        (
            ("metadata_id", 1, _INT64, False, None, False),
            ("offset_ps", 2, _INT64, False, None, False),
            ("num_occurrences", 5, _INT64, False, None, False),
            ("duration_ps", 3, _INT64, False, None, False),
            ("stats", 4, _MESSAGE, True, "XStat", False),
        ),
    ),
    (
        "XLine",
        (
            ("id", 1, _INT64, False, None, False),
            ("name", 2, _BYTES, False, None, False),
            ("display_name", 11, _BYTES, False, None, False),
            ("timestamp_ns", 3, _INT64, False, None, False),
            ("events", 4, _MESSAGE, True, "XEvent", False),
        ),
    ),
    (
        "XEventMetadata",
        (
            ("id", 1, _INT64, False, None, False),
            ("name", 2, _BYTES, False, None, False),
            ("display_name", 4, _BYTES, False, None, False),
            ("stats", 5, _MESSAGE, True, "XStat", False),
        ),
    ),
    (
        "XStatMetadata",
        (
            ("id", 1, _INT64, False, None, False),
            ("name", 2, _BYTES, False, None, False),
        ),
    ),
    # map<int64, M> is on the wire a repeated message of key (1) and value (2).
    ("EventMetadataEntry", (("key", 1, _INT64, False, None, False),)),
    ("StatMetadataEntry", (("key", 1, _INT64, False, None, False),)),
    (
        "XPlane",
        (
            ("id", 1, _INT64, False, None, False),
            ("name", 2, _BYTES, False, None, False),
            ("lines", 3, _MESSAGE, True, "XLine", False),
            ("event_metadata", 4, _MESSAGE, True, "EventMetadataEntry", False),
            ("stat_metadata", 5, _MESSAGE, True, "StatMetadataEntry", False),
            ("stats", 6, _MESSAGE, True, "XStat", False),
        ),
    ),
)
_ENTRY_VALUES = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}
_PACKAGE = "hloscope.xplane"


@functools.cache
def _classes() -> dict[str, Any]:
    """The message classes, built once from `_SCHEMA` in a pool of their own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name="hloscope_xplane.proto", package=_PACKAGE, syntax="proto3"
    )
    for message, fields in _SCHEMA:
        m = proto.message_type.add(name=message)
        if any(oneof for *_, oneof in fields):
            m.oneof_decl.add(name="value")
        specs = list(fields)
        if message in _ENTRY_VALUES:
            specs.append(("value", 2, _MESSAGE, False, _ENTRY_VALUES[message], False))
        for name, number, kind, repeated, type_name, oneof in specs:
            f = m.field.add(name=name, number=number, type=kind, label=3 if repeated else 1)
            if type_name:
                f.type_name = f".{_PACKAGE}.{type_name}"
            if oneof:
                f.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name, _ in _SCHEMA
    }


def available() -> bool:
    """Whether the protobuf runtime is installed (else `xplane.py` decodes alone)."""
    try:
        _classes()
    except ImportError:
        return False
    return True


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _stat_value(stat: Any, names: Mapping[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(stat, kind)
    if kind == "str_value":
        return _text(value)
    if kind == "ref_value":
        return names.get(value, "")
    return value


def _stats(stats: Any, names: Mapping[int, str]) -> dict[str, Any]:
    return {names.get(s.metadata_id, ""): _stat_value(s, names) for s in stats}


class _Plane:
    """One decoded plane, with the lookups its events need."""

    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.name = _text(plane.name)
        self.stat_names = {e.key: _text(e.value.name) for e in plane.stat_metadata}
        self.metadata = {e.key: e.value for e in plane.event_metadata}
        self._inherited: dict[int, tuple[str, str, dict[str, Any], bool]] = {}
        self.key_stats = {k for k, v in self.stat_names.items() if v in _KEY_STATS}
        if self.name.startswith(DEVICE_PLANE_PREFIX):
            self.key_stats = {k for k in self.key_stats if self.stat_names[k] == "hlo_op"}

    def metadata_of(self, metadata_id: int) -> tuple[str, str, dict[str, Any], bool]:
        """(name, display name, stats, whether its events are all kept) of a metadata."""
        found = self._inherited.get(metadata_id)
        if found is None:
            meta = self.metadata.get(metadata_id)
            if meta is None:
                found = ("", "", {}, False)
            else:
                name = _text(meta.name)
                stats = _stats(meta.stats, self.stat_names) if len(meta.stats) else {}
                keep = keeps_event_named(name) or any(
                    s.metadata_id in self.key_stats for s in meta.stats
                )
                found = (name, _text(meta.display_name), stats, keep)
            self._inherited[metadata_id] = found
        return found


# Stats that make an event one timing needs: the op it executed, and on the host the
# launch it made (CUPTI's correlation id ties a device kernel to its launch).
_KEY_STATS = frozenset({"hlo_op", "correlation_id"})


def _plane_events(p: _Plane, events: list[TraceEvent], xla_only: bool) -> int:
    """Append the plane's events to `events`; return how many aggregated ones were
    skipped."""
    aggregated = 0
    key_stats = p.key_stats
    for line in p.plane.lines:
        line_name = _text(line.display_name or line.name)
        keep_line = not xla_only or keeps_line(line_name)
        base_ps = line.timestamp_ns * 1000
        for ev in line.events:
            if ev.num_occurrences:
                aggregated += 1
                continue
            name, display, inherited, keep = p.metadata_of(ev.metadata_id)
            own = ev.stats
            if not (keep or keep_line or any(s.metadata_id in key_stats for s in own)):
                continue
            stats = dict(inherited)
            if len(own):
                stats.update(_stats(own, p.stat_names))
            events.append(
                TraceEvent(
                    name,
                    p.name,
                    line_name,
                    line.id,
                    base_ps + ev.offset_ps,
                    ev.duration_ps,
                    stats,
                    display,
                )
            )
    return aggregated


def trace_from_bytes(data: bytes, *, path: str | None = None, xla_only: bool = True) -> Trace:
    """Decode a serialized XSpace into a `Trace`, as `xplane.trace_from_xspace` does.

    Args:
        data: The file's bytes.
        path: Shown in errors and kept in the trace.
        xla_only: Keep only the events timing reads (XLA ops, executions, launches).

    Raises:
        ProfileReadError: Not an XSpace.
        ImportError: The protobuf runtime is not installed.
    """
    from google.protobuf.message import DecodeError

    classes = _classes()
    parts = TraceParts()
    lists: dict[int, list[str]] = {2: [], 3: [], 4: []}
    try:
        for number, chunk in outer_fields(data, path):
            if number in lists:
                lists[number].append(_text(bytes(chunk)))
                continue
            p = _Plane(classes["XPlane"].FromString(chunk))
            if p.name == METADATA_PLANE:
                parts.add_programs(_text(m.name) for m in p.metadata.values())
                continue
            plane_stats = _stats(p.plane.stats, p.stat_names)
            if p.name == TASK_ENV_PLANE:
                parts.add_session(plane_stats)
                continue
            parts.add_device(p.name, plane_stats)
            parts.aggregated += _plane_events(p, parts.events, xla_only)
    except DecodeError as e:
        reason = " ".join(str(e).split())  # one line
        raise ProfileReadError(f"not an XSpace profile: {reason}", path=path) from None
    return parts.trace(path, lists[2], lists[4])
