"""XSpaces built to break the readers (issue 25): events of negative duration, varints
past 64 bits, truncated messages. Both decoders (the protobuf runtime and the wire
decoder) read what they can and say what they skipped, or refuse the file with a
`ProfileReadError`. The profiles are written here (`tests/fuzz/xspace_build.py`), in the
layout of the real TPU one in ../shared/gpu.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.errors import ProfileReadError
from hloscope.timing.attribution import attribute
from hloscope.timing.xplane import read_trace
from tests.fuzz.mutators import VARINT, Field, encode_message, parse_message
from tests.fuzz.xspace_build import tpu_xspace


def _events(tree: list[Field]) -> list[Field]:
    return [
        e
        for plane in tree
        if plane.number == 1
        for line in plane.value
        if line.number == 3
        for e in line.value
        if e.number == 4
    ]


@pytest.mark.parametrize("xla_only", [True, False], ids=["protobuf", "wire"])
def test_events_of_negative_duration_are_skipped_and_counted(
    tmp_path: Path, xla_only: bool
) -> None:
    tree = parse_message(tpu_xspace(4, executions=3, ops=2), max_depth=6)
    assert tree is not None
    events = _events(tree)
    for e in events[:5]:
        e.value[:] = [f for f in e.value if f.number != 3] + [Field(3, VARINT, -(10**12))]
    path = tmp_path / "neg.xplane.pb"
    path.write_bytes(encode_message(tree))
    trace = read_trace(path, xla_only=xla_only)
    assert "5 events of negative duration skipped" in trace.problems
    timings = attribute(trace)
    for m in timings.modules.values():
        assert m.total_us >= 0 and m.kernel_us >= 0
        assert all(x >= 0 for x in m.execution_us)


def test_a_varint_past_64_bits_keeps_its_low_bits_as_protobuf_does(tmp_path: Path) -> None:
    data = tpu_xspace(1, executions=2, ops=1)
    path = tmp_path / "a.xplane.pb"
    path.write_bytes(data)
    plain = read_trace(path)
    # The first event's offset, re-encoded in ten bytes whose top bits overflow 2^64.
    tree = parse_message(data, max_depth=6)
    assert tree is not None
    first = _events(tree)[0]
    offset = next(f for f in first.value if f.number == 2)
    value = offset.value
    raw = bytearray()
    for _ in range(9):
        raw.append((value & 0x7F) | 0x80)
        value >>= 7
    raw.append(0x7E)  # bits 64-69: dropped, as protobuf drops them
    offset.raw = bytes([0x10]) + bytes(raw)
    path.write_bytes(encode_message(tree))
    assert read_trace(path).events[0].start_ps == plain.events[0].start_ps


@pytest.mark.parametrize("xla_only", [True, False], ids=["protobuf", "wire"])
def test_a_truncated_xspace_is_refused(tmp_path: Path, xla_only: bool) -> None:
    data = tpu_xspace(3)
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ProfileReadError, match="not an XSpace profile"):
        read_trace(path, xla_only=xla_only)
