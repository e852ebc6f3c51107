"""XSpace bytes -> XPlane messages in pure Python: the reader `xplane.py` falls back on.

A small decoder of the protobuf wire format, so that reading a profile needs neither
TensorFlow, JAX nor protobuf. The message and field numbers are those of
`xla/tsl/profiler/protobuf/xplane.proto` (package `tensorflow.profiler`); big payloads
(the `Hlo Proto` bytes of every compiled module, `XEventMetadata.metadata`) are kept as
zero-copy views and never decoded. `xspace_proto.py` is the fast path where protobuf is
installed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import ProfileReadError

__all__ = [
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
    "decode_xspace",
    "outer_fields",
]


# --------------------------------------------------------------------------------------
# The XPlane messages, as decoded.


@dataclass(frozen=True, slots=True)
class XStat:
    """A named value: `XStat` (fields 1-7).

    Attributes:
        metadata_id: Key into the plane's `stat_metadata` (the stat's name).
        kind: Which `value` oneof field was set: `double`, `uint64`, `int64`, `str`,
            `bytes` or `ref` (a string stored as the name of another stat metadata).
        value: The value; for `bytes` a read-only memoryview into the file's buffer.
    """

    metadata_id: int
    kind: str
    value: Any


@dataclass(frozen=True, slots=True)
class XStatMetadata:
    """`XStatMetadata`: id (1), name (2), description (3)."""

    id: int
    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class XEventMetadata:
    """`XEventMetadata`: id (1), name (2), metadata (3), display_name (4), stats (5), child_id (6).

    Attributes:
        metadata: The serialized extra metadata, as a view (never decoded).
    """

    id: int
    name: str
    display_name: str = ""
    metadata: memoryview | None = None
    stats: tuple[XStat, ...] = ()
    child_id: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class XEvent:
    """`XEvent`: metadata_id (1), offset_ps (2), duration_ps (3), stats (4), num_occurrences (5)."""

    metadata_id: int
    offset_ps: int = 0
    duration_ps: int = 0
    stats: tuple[XStat, ...] = ()
    num_occurrences: int = 0


@dataclass(frozen=True, slots=True)
class XLine:
    """`XLine`: id (1), name (2), timestamp_ns (3), events (4), duration_ps (9),
    display_id (10), display_name (11). Event offsets are relative to `timestamp_ns`."""

    id: int
    name: str = ""
    timestamp_ns: int = 0
    events: tuple[XEvent, ...] = ()
    duration_ps: int = 0
    display_id: int = 0
    display_name: str = ""


@dataclass(frozen=True)
class XPlane:
    """`XPlane`: id (1), name (2), lines (3), event_metadata (4, map), stat_metadata (5,
    map), stats (6)."""

    id: int
    name: str
    lines: tuple[XLine, ...] = ()
    event_metadata: Mapping[int, XEventMetadata] = field(default_factory=dict)
    stat_metadata: Mapping[int, XStatMetadata] = field(default_factory=dict)
    stats: tuple[XStat, ...] = ()

    def stat_name(self, stat: XStat) -> str:
        """The name of a stat of this plane ('' when its metadata is missing)."""
        meta = self.stat_metadata.get(stat.metadata_id)
        return meta.name if meta is not None else ""

    def stat_value(self, stat: XStat) -> Any:
        """The stat's value, with `ref` values resolved to the string they stand for."""
        if stat.kind == "ref":
            meta = self.stat_metadata.get(stat.value)
            return meta.name if meta is not None else ""
        return stat.value

    def stats_dict(self, stats: tuple[XStat, ...]) -> dict[str, Any]:
        """Stats as `{name: value}` (refs resolved, bytes left as views)."""
        return {self.stat_name(s): self.stat_value(s) for s in stats}


@dataclass(frozen=True)
class XSpace:
    """`XSpace`: planes (1), errors (2), warnings (3), hostnames (4)."""

    planes: tuple[XPlane, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    hostnames: tuple[str, ...] = ()

    def plane(self, name: str) -> XPlane | None:
        """The first plane with this name, or None."""
        for p in self.planes:
            if p.name == name:
                return p
        return None


# --------------------------------------------------------------------------------------
# Wire-format decoding.


class _Malformed(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


_U64 = 1 << 64
_U64_MASK = _U64 - 1
_I64_MAX = (1 << 63) - 1
_DOUBLE = struct.Struct("<d")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _U64_MASK, pos  # protobuf keeps the low 64 bits of ten bytes
        shift += 7
        if shift > 63:
            raise _Malformed("varint longer than 10 bytes", pos)


def _signed(v: int) -> int:
    return v - _U64 if v > _I64_MAX else v


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Yield `(field, wire_type, a, b)` for each field of the message in buf[pos:end].

    For varints `a` is the value; for length-delimited fields `a:b` is the payload; for
    fixed64/fixed32 `a` is the payload's offset.
    """
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, 0, value, 0
        elif wire == 2:
            n, pos = _varint(buf, pos)
            stop = pos + n
            if stop > end:
                raise _Malformed(f"field {number} runs past the end of its message", pos)
            yield number, 2, pos, stop
            pos = stop
        elif wire == 1:
            yield number, 1, pos, 0
            pos += 8
        elif wire == 5:
            yield number, 5, pos, 0
            pos += 4
        else:
            raise _Malformed(f"unsupported wire type {wire} (field {number})", pos)
    if pos != end:
        raise _Malformed("message runs past its length", pos)


def _text(buf: bytes, a: int, b: int) -> str:
    return buf[a:b].decode("utf-8", "replace")


# `_stat` and `_event` decode most of a profile's bytes, so they read their fields
# inline (one-byte keys and varints fast) instead of through the `_fields` generator.


def _stat(buf: bytes, view: memoryview, pos: int, end: int) -> XStat:
    metadata_id = 0
    kind = ""
    value: Any = None
    while pos < end:
        key = buf[pos]
        pos += 1
        if key >= 0x80:
            key, pos = _varint(buf, pos - 1)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v = buf[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = _varint(buf, pos)
            if number == 1:
                metadata_id = v - _U64 if v > _I64_MAX else v
            elif number == 3:
                kind, value = "uint64", v
            elif number == 4:
                kind, value = "int64", v - _U64 if v > _I64_MAX else v
            elif number == 7:
                kind, value = "ref", v
        elif wire == 2:
            n = buf[pos]
            if n < 0x80:
                pos += 1
            else:
                n, pos = _varint(buf, pos)
            stop = pos + n
            if stop > end:
                raise _Malformed(f"field {number} runs past the end of its message", pos)
            if number == 5:
                kind, value = "str", buf[pos:stop].decode("utf-8", "replace")
            elif number == 6:
                kind, value = "bytes", view[pos:stop]  # e.g. the `Hlo Proto`: kept, not decoded
            pos = stop
        elif wire == 1:
            if number == 2:
                kind, value = "double", _DOUBLE.unpack_from(buf, pos)[0]
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _Malformed(f"unsupported wire type {wire} (field {number})", pos)
    if pos != end:
        raise _Malformed("message runs past its length", pos)
    return XStat(metadata_id, kind, value)


def _event(buf: bytes, view: memoryview, pos: int, end: int) -> XEvent:
    metadata_id = offset_ps = duration_ps = occurrences = 0
    stats: list[XStat] = []
    while pos < end:
        key = buf[pos]
        pos += 1
        if key >= 0x80:
            key, pos = _varint(buf, pos - 1)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v = buf[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = _varint(buf, pos)
            if v > _I64_MAX:
                v -= _U64
            if number == 1:
                metadata_id = v
            elif number == 2:
                offset_ps = v
            elif number == 3:
                duration_ps = v
            elif number == 5:
                occurrences = v
        elif wire == 2:
            n = buf[pos]
            if n < 0x80:
                pos += 1
            else:
                n, pos = _varint(buf, pos)
            stop = pos + n
            if stop > end:
                raise _Malformed(f"field {number} runs past the end of its message", pos)
            if number == 4:
                stats.append(_stat(buf, view, pos, stop))
            pos = stop
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _Malformed(f"unsupported wire type {wire} (field {number})", pos)
    if pos != end:
        raise _Malformed("message runs past its length", pos)
    return XEvent(metadata_id, offset_ps, duration_ps, tuple(stats), occurrences)


def _line(buf: bytes, view: memoryview, pos: int, end: int) -> XLine:
    line_id = timestamp_ns = duration_ps = display_id = 0
    name = display_name = ""
    events: list[XEvent] = []
    for number, wire, a, b in _fields(buf, pos, end):
        if number == 4 and wire == 2:
            events.append(_event(buf, view, a, b))
        elif number == 1 and wire == 0:
            line_id = _signed(a)
        elif number == 2 and wire == 2:
            name = _text(buf, a, b)
        elif number == 3 and wire == 0:
            timestamp_ns = _signed(a)
        elif number == 9 and wire == 0:
            duration_ps = _signed(a)
        elif number == 10 and wire == 0:
            display_id = _signed(a)
        elif number == 11 and wire == 2:
            display_name = _text(buf, a, b)
    return XLine(line_id, name, timestamp_ns, tuple(events), duration_ps, display_id, display_name)


def _event_metadata(buf: bytes, view: memoryview, pos: int, end: int) -> XEventMetadata:
    meta_id = 0
    name = display_name = ""
    payload: memoryview | None = None
    stats: list[XStat] = []
    children: list[int] = []
    for number, wire, a, b in _fields(buf, pos, end):
        if number == 1 and wire == 0:
            meta_id = _signed(a)
        elif number == 2 and wire == 2:
            name = _text(buf, a, b)
        elif number == 3 and wire == 2:
            payload = view[a:b]
        elif number == 4 and wire == 2:
            display_name = _text(buf, a, b)
        elif number == 5 and wire == 2:
            stats.append(_stat(buf, view, a, b))
        elif number == 6 and wire == 0:
            children.append(_signed(a))
        elif number == 6 and wire == 2:  # packed, the proto3 default
            p = a
            while p < b:
                v, p = _varint(buf, p)
                children.append(_signed(v))
    return XEventMetadata(meta_id, name, display_name, payload, tuple(stats), tuple(children))


def _stat_metadata(buf: bytes, pos: int, end: int) -> XStatMetadata:
    meta_id = 0
    name = description = ""
    for number, wire, a, b in _fields(buf, pos, end):
        if number == 1 and wire == 0:
            meta_id = _signed(a)
        elif number == 2 and wire == 2:
            name = _text(buf, a, b)
        elif number == 3 and wire == 2:
            description = _text(buf, a, b)
    return XStatMetadata(meta_id, name, description)


def _map_entry(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """A map<int64, Message> entry: (key, value start, value end)."""
    key = 0
    start = stop = -1
    for number, wire, a, b in _fields(buf, pos, end):
        if number == 1 and wire == 0:
            key = _signed(a)
        elif number == 2 and wire == 2:
            start, stop = a, b
    return key, start, stop


def _plane(buf: bytes, view: memoryview, pos: int, end: int) -> XPlane:
    plane_id = 0
    name = ""
    lines: list[XLine] = []
    event_metadata: dict[int, XEventMetadata] = {}
    stat_metadata: dict[int, XStatMetadata] = {}
    stats: list[XStat] = []
    for number, wire, a, b in _fields(buf, pos, end):
        if number == 3 and wire == 2:
            lines.append(_line(buf, view, a, b))
        elif number == 4 and wire == 2:
            key, s, e = _map_entry(buf, a, b)
            event_metadata[key] = (
                _event_metadata(buf, view, s, e) if s >= 0 else XEventMetadata(key, "")
            )
        elif number == 5 and wire == 2:
            key, s, e = _map_entry(buf, a, b)
            stat_metadata[key] = _stat_metadata(buf, s, e) if s >= 0 else XStatMetadata(key, "")
        elif number == 1 and wire == 0:
            plane_id = _signed(a)
        elif number == 2 and wire == 2:
            name = _text(buf, a, b)
        elif number == 6 and wire == 2:
            stats.append(_stat(buf, view, a, b))
    return XPlane(plane_id, name, tuple(lines), event_metadata, stat_metadata, tuple(stats))


def decode_xspace(data: bytes, *, path: str | None = None) -> XSpace:
    """Decode a serialized `tensorflow.profiler.XSpace`.

    Args:
        data: The file's bytes.
        path: Shown in errors.

    Returns:
        The decoded space. Unknown fields are skipped.

    Raises:
        ProfileReadError: The bytes are not a well-formed protobuf message.
    """
    buf = bytes(data)
    view = memoryview(buf).toreadonly()
    planes: list[XPlane] = []
    lists: dict[int, list[str]] = {2: [], 3: [], 4: []}
    try:
        for number, wire, a, b in _fields(buf, 0, len(buf)):
            if number == 1 and wire == 2:
                planes.append(_plane(buf, view, a, b))
            elif number in lists and wire == 2:
                lists[number].append(_text(buf, a, b))
    except _Malformed as e:
        raise ProfileReadError(f"not an XSpace profile: {e}", path=path, offset=e.offset) from None
    except (IndexError, struct.error):
        raise ProfileReadError(
            "not an XSpace profile: truncated protobuf (was the profiler stopped?)", path=path
        ) from None
    return XSpace(tuple(planes), tuple(lists[2]), tuple(lists[3]), tuple(lists[4]))


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
