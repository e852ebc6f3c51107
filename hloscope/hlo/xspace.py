"""A profile's XSpace -> the HLO modules it carries: the compiled programs of a profile.

The profilers of JAX, TensorFlow and PyTorch/XLA record, beside the events, each compiled
module's optimized `HloProto` in the `/host:metadata` plane: one event metadata per
program, named `<module>(<program id>)`, with the serialized proto in its `Hlo Proto`
stat. `xspace_hlo` finds them without decoding anything else of the profile (planes of
events are skipped by their length), so that a profile file alone is a run: its modules
are then read as binary dumps are (`hloscope.hlo.proto`, with the `protobuf` package).

Field numbers are those of `xla/tsl/profiler/protobuf/xplane.proto` (XSpace: planes 1;
XPlane: name 2, event_metadata 4, stat_metadata 5, stats 6; XEventMetadata: name 2,
stats 5; XStat: metadata_id 1, int64 4, bytes 6; XStatMetadata: name 2). The timing
stage reads the same files' events (`hloscope.timing.xplane`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import ProfileReadError
from hloscope.files import read_regular

__all__ = [
    "METADATA_PLANE",
    "XPLANE_SUFFIX",
    "EmbeddedModule",
    "XSpaceHlo",
    "read_xspace_hlo",
    "xspace_hlo",
]

XPLANE_SUFFIX = ".xplane.pb"
METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
# A long GPU profile reaches hundreds of MB; past this, reading fails clearly.
MAX_XSPACE_BYTES = 2 << 30


@dataclass(frozen=True)
class EmbeddedModule:
    """One compiled module a profile carries.

    Attributes:
        name: The HloModule name (`jit_f`).
        program_id: XLA's program id (the dump's module number on the CPU and GPU, a
            fingerprint on a TPU), or None when the metadata's name has none.
        proto: The serialized `HloProto`.
    """

    name: str
    program_id: int | None
    proto: bytes


@dataclass(frozen=True)
class XSpaceHlo:
    """What a profile says about the programs it ran.

    Attributes:
        modules: The modules whose HLO it carries, in file order.
        platform: What they ran on, from the device planes: `tpu`, `sm_90` (a GPU plane's
            compute capability), `gpu`, or `cpu` when the profile has no device plane.
        device: The device model the first device plane records (`TPU v6 Lite`), or None.
    """

    modules: tuple[EmbeddedModule, ...]
    platform: str
    device: str | None = None


class _Malformed(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """`(field, wire type, a, b)` for each field of the message in buf[pos:end]: a varint's
    value in `a`; a length-delimited payload as buf[a:b]; fixed ones skipped."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield number, 0, value, 0
        elif wire == 2:
            n, pos = _varint(buf, pos, end)
            if pos + n > end:
                raise _Malformed(f"field {number} runs past the end of its message")
            yield number, 2, pos, pos + n
            pos += n
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise _Malformed(f"unsupported wire type {wire} (field {number})")
    if pos != end:
        raise _Malformed("message runs past its length")


def _text(buf: bytes, a: int, b: int) -> str:
    return buf[a:b].decode("utf-8", "replace")


def _names(buf: bytes, plane: tuple[int, int]) -> dict[int, str]:
    """The plane's stat names by stat metadata id (field 5: map<int64, XStatMetadata>)."""
    out: dict[int, str] = {}
    for number, wire, a, b in _fields(buf, *plane):
        if number != 5 or wire != 2:
            continue
        key, name = 0, ""
        for n2, w2, a2, b2 in _fields(buf, a, b):
            if n2 == 1 and w2 == 0:
                key = a2
            elif n2 == 2 and w2 == 2:
                name = next(
                    (_text(buf, x, y) for f, w, x, y in _fields(buf, a2, b2) if f == 2 and w == 2),
                    "",
                )
        out[key] = name
    return out


def _stat(buf: bytes, a: int, b: int, names: dict[int, str]) -> tuple[str, int, int, int]:
    """The XStat in buf[a:b] as (name, wire type, integer value or payload start, end):
    integers (uint64 3, int64 4), strings (5) and bytes (6); other values read as
    (name, -1, 0, 0)."""
    metadata_id, value = 0, (-1, 0, 0)
    for number, wire, x, y in _fields(buf, a, b):
        if number == 1 and wire == 0:
            metadata_id = x
        elif number in (3, 4) and wire == 0:
            value = (0, x, 0)
        elif number in (5, 6) and wire == 2:  # a string, bytes
            value = (2, x, y)
    return (names.get(metadata_id, ""), *value)


_PROGRAM = re.compile(r"(.+)\((\d{1,20})\)")


def _modules(buf: bytes, plane: tuple[int, int]) -> list[EmbeddedModule]:
    names = _names(buf, plane)
    out = []
    for number, wire, a, b in _fields(buf, *plane):
        if number != 4 or wire != 2:
            continue
        for n2, w2, a2, b2 in _fields(buf, a, b):
            if n2 != 2 or w2 != 2:
                continue
            name, proto = "", None
            for n3, w3, a3, b3 in _fields(buf, a2, b2):
                if n3 == 2 and w3 == 2:
                    name = _text(buf, a3, b3)
                elif n3 == 5 and w3 == 2:
                    stat, kind, x, y = _stat(buf, a3, b3, names)
                    if stat == HLO_PROTO_STAT and kind == 2:
                        proto = buf[x:y]
            if proto is None or not name:
                continue
            m = _PROGRAM.fullmatch(name)
            program_id = int(m[2]) if m and int(m[2]) < 1 << 64 else None
            out.append(EmbeddedModule(m[1] if m else name, program_id, proto))
    return out


def _device(buf: bytes, name: str, plane: tuple[int, int]) -> tuple[str, str | None]:
    """(platform, device model) of a device plane: `tpu`, `sm_XY` (a GPU plane's compute
    capability stats) or `gpu`; the model from `device_type_string` or `device_name`."""
    names = _names(buf, plane)
    cap: dict[str, int] = {}
    model = None
    for number, wire, a, b in _fields(buf, *plane):
        if number == 6 and wire == 2:
            stat, kind, x, y = _stat(buf, a, b, names)
            if stat in ("compute_cap_major", "compute_cap_minor") and kind == 0 and x < 100:
                cap[stat] = x
            elif stat in ("device_type_string", "device_name") and kind == 2 and y - x < 256:
                model = model or _text(buf, x, y) or None
    if name.startswith("/device:TPU"):
        return "tpu", model
    if len(cap) == 2:
        return f"sm_{cap['compute_cap_major']}{cap['compute_cap_minor']}", model
    return "gpu", model


def xspace_hlo(data: bytes, *, path: str | None = None) -> XSpaceHlo:
    """The HLO modules a serialized XSpace carries, and the platform they ran on.

    Args:
        data: The profile's bytes.
        path: Shown in errors.

    Raises:
        ProfileReadError: The bytes are not a well-formed XSpace.
    """
    buf = bytes(data)
    modules: list[EmbeddedModule] = []
    platform, device = "", None
    try:
        for number, wire, a, b in _fields(buf, 0, len(buf)):
            if number != 1 or wire != 2:
                continue
            name = next(
                (_text(buf, x, y) for f, w, x, y in _fields(buf, a, b) if f == 2 and w == 2), ""
            )
            if name == METADATA_PLANE:
                modules += _modules(buf, (a, b))
            elif name.startswith("/device:") and not platform:
                platform, device = _device(buf, name, (a, b))
    except _Malformed as e:
        raise ProfileReadError(f"not an XSpace profile: {e}", path=path) from None
    return XSpaceHlo(tuple(modules), platform or "cpu", device)


def read_xspace_hlo(path: str | Path) -> XSpaceHlo:
    """`xspace_hlo` of an `*.xplane.pb` file.

    Raises:
        ProfileReadError: The file cannot be read or is not an XSpace.
    """
    try:
        data = read_regular(path, MAX_XSPACE_BYTES)
    except OSError as e:
        raise ProfileReadError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    return xspace_hlo(data, path=str(path))
