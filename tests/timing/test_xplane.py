"""The XPlane / Chrome-trace reader, on the real captured CPU profiles."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.timing.xplane import (
    ProfileReadError,
    decode_xspace,
    find_profile,
    read_trace,
    read_xspace,
    trace_from_xspace,
)
from tests.fuzz.mutators import encode_varint
from tests.timing.helpers import (
    GPU_DERIVED,
    GPU_RAW,
    JAX_PROFILE,
    JAX_TRACE_JSON,
    JAX_XPLANE,
    TF_PROFILE,
    TF_XPLANE,
    xplane_pb2,
)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return encode_varint(number << 3) + encode_varint(payload)
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def test_jax_profile_planes_and_metadata() -> None:
    space = read_xspace(JAX_XPLANE)
    names = [p.name for p in space.planes]
    assert names == ["/host:metadata", "/host:CPU", "Task Environment"]
    assert space.hostnames == ("vm",)
    meta = space.plane("/host:metadata")
    assert meta is not None
    by_name = {m.name: m for m in meta.event_metadata.values()}
    assert "jit_mlp(30)" in by_name
    hlo = {meta.stat_name(s): s for s in by_name["jit_mlp(30)"].stats}["Hlo Proto"]
    # Kept as a view into the file, not decoded.
    assert hlo.kind == "bytes" and isinstance(hlo.value, memoryview) and len(hlo.value) > 1000
    cpu = space.plane("/host:CPU")
    assert cpu is not None
    lines = {ln.name.split("/")[0] for ln in cpu.lines}
    assert {"python", "tf_XLAPjRtCpuClient"} <= lines


def test_jax_trace_events() -> None:
    trace = read_trace(JAX_XPLANE)
    assert trace.format == "xplane"
    assert trace.programs[30] == "jit_mlp"
    assert len(trace.programs) == 16
    ops = [e for e in trace.events if "hlo_op" in e.stats]
    assert len(ops) == 33  # 11 thunks x 3 calls
    first = ops[0]
    assert first.name == first.stats["hlo_op"] == "ynn_fusion.3"
    assert first.stats["hlo_module"] == "jit_mlp"
    assert first.stats["program_id"] == 30
    assert isinstance(first.stats["run_id"], int)
    assert first.plane == "/host:CPU" and first.line.startswith("tf_XLAPjRtCpuClient/")
    assert len({e.stats["run_id"] for e in ops}) == 3
    assert trace.start_ns is not None and trace.stop_ns is not None
    assert trace.stop_ns > trace.start_ns


def test_tf_trace_events() -> None:
    trace = read_trace(TF_XPLANE)
    ops = [e for e in trace.events if "hlo_op" in e.stats]
    assert [e.name for e in ops] == ["MatMul.2", "broadcast_maximum_fusion"] * 3
    assert {e.stats["run_id"] for e in ops} == {-1}
    assert trace.programs == {0: ops[0].stats["hlo_module"]}
    assert ops[0].stats["hlo_module"].startswith("a_inference_dense_relu_12__XlaMustCompile")
    execute = [e for e in trace.events if e.name == "CpuExecutable::ExecuteAsyncOnStream"]
    assert len(execute) == 3
    for ex, op in zip(execute, ops[::2], strict=True):
        assert ex.start_ps <= op.start_ps and op.end_ps <= ex.end_ps
    # "end: <op>" flow markers carry no hlo_op
    assert any(e.name == "end: MatMul.2" and "hlo_op" not in e.stats for e in trace.events)


def test_trace_json_matches_xplane() -> None:
    from_pb = read_trace(JAX_XPLANE)
    from_json = read_trace(JAX_TRACE_JSON)
    assert from_json.format == "trace.json"

    def ops(trace):  # type: ignore[no-untyped-def]
        return [
            (e.name, e.stats["run_id"], e.start_ps, e.duration_ps)
            for e in sorted(trace.events, key=lambda e: e.start_ps)
            if "hlo_op" in e.stats
        ]

    a, b = ops(from_pb), ops(from_json)
    assert [x[:2] for x in a] == [x[:2] for x in b]
    # The Chrome trace shifts times to the first event and rounds to nanoseconds.
    shift = a[0][2] - b[0][2]
    for x, y in zip(a, b, strict=True):
        assert abs(x[2] - y[2] - shift) <= 1000 and abs(x[3] - y[3]) <= 1000


def test_find_profile_prefers_xplane(tmp_path: Path) -> None:
    assert find_profile(JAX_PROFILE) == JAX_XPLANE
    assert find_profile(TF_PROFILE) == TF_XPLANE
    assert find_profile(JAX_XPLANE) == JAX_XPLANE
    only_json = tmp_path / "plugins" / "profile" / "x"
    only_json.mkdir(parents=True)
    (only_json / "h.trace.json.gz").write_bytes(JAX_TRACE_JSON.read_bytes())
    assert find_profile(tmp_path).name == "h.trace.json.gz"


def test_find_profile_errors(tmp_path: Path) -> None:
    with pytest.raises(ProfileReadError, match="hloscope dump --profile"):
        find_profile(tmp_path)
    with pytest.raises(ProfileReadError, match="no such file"):
        find_profile(tmp_path / "missing")
    pipes = [Path(os.devnull)]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.xplane.pb")
        pipes.append(tmp_path / "fifo.xplane.pb")
    for path in pipes:  # there, but neither a file nor a folder
        with pytest.raises(ProfileReadError, match="not a regular file or a folder"):
            find_profile(path)
    with pytest.raises(ProfileReadError, match="unknown profile format"):
        bad = tmp_path / "x.txt"
        bad.write_text("hi")
        read_trace(bad)


def test_truncated_and_garbage_files(tmp_path: Path) -> None:
    data = JAX_XPLANE.read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ProfileReadError, match="XSpace"):
        read_trace(cut)
    with pytest.raises(ProfileReadError, match="wire type"):
        decode_xspace(b"\x0f\x00")
    with pytest.raises(ProfileReadError, match="Chrome trace"):
        bad = tmp_path / "bad.trace.json.gz"
        bad.write_bytes(gzip.compress(b"{not json"))
        read_trace(bad)
    with pytest.raises(ProfileReadError, match="traceEvents"):
        bad = tmp_path / "bad2.trace.json.gz"
        bad.write_bytes(gzip.compress(json.dumps({"x": 1}).encode()))
        read_trace(bad)


def test_a_gzip_bomb_is_refused_without_being_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 MB on disk that expand to 2 GiB of zeros (128 gzip members of 16 MiB each): the
    size cap on the file let it through; the cap on its decompressed text does not, and
    reading it holds no more than that cap (lowered here to 1 MiB) in memory."""
    import tracemalloc

    from hloscope.cli import app
    from hloscope.timing import xplane

    bomb = tmp_path / "plugins" / "profile" / "1" / "vm.trace.json.gz"
    bomb.parent.mkdir(parents=True)
    bomb.write_bytes(gzip.compress(bytes(16 << 20)) * 128)
    assert bomb.stat().st_size < 3 << 20
    monkeypatch.setattr(xplane, "MAX_TRACE_JSON_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ProfileReadError, match="decompresses to more than the 1,048,576 bytes"):
            read_trace(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # the file (2 MB) and the 1 MiB cap, not 2 GiB
    result = CliRunner().invoke(app, ["profile", str(tmp_path)])
    assert result.exit_code == 2
    assert "1,048,576 bytes allowed" in result.output and result.output.count("\n") == 1


def test_a_corrupt_gzip_stream_is_a_read_error(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(JAX_TRACE_JSON.read_bytes()))
    data[12] = (data[12] + 0x5A) % 256  # zlib's "invalid distance too far back"
    bad = tmp_path / "bad.trace.json.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(ProfileReadError, match="not a Chrome trace"):
        read_trace(bad)


def test_unknown_fields_are_skipped() -> None:
    stat_md = _field(1, 5) + _field(2, b"hlo_op")
    stat = _field(1, 5) + _field(5, b"fusion.1")
    event = _field(1, 1) + _field(2, 2_000) + _field(3, 500) + _field(4, stat) + _field(99, 7)
    line = _field(1, 3) + _field(2, b"main") + _field(3, 10) + _field(4, event) + _field(50, b"?")
    ev_md = _field(1, 1) + _field(2, b"fusion.1") + _field(6, encode_varint(4) + encode_varint(5))
    plane = (
        _field(1, 1)
        + _field(2, b"/host:CPU")
        + _field(3, line)
        + _field(4, _field(1, 1) + _field(2, ev_md))
        + _field(5, _field(1, 5) + _field(2, stat_md))
        + _field(77, b"future field")
    )
    space = decode_xspace(_field(1, plane) + _field(4, b"h") + _field(3, b"careful"))
    assert space.hostnames == ("h",) and space.warnings == ("careful",)
    (p,) = space.planes
    assert p.event_metadata[1].child_id == (4, 5)
    trace = trace_from_xspace(space)
    (e,) = trace.events
    assert (e.name, e.start_ps, e.duration_ps, e.stats) == (
        "fusion.1",
        10_000 + 2_000,
        500,
        {"hlo_op": "fusion.1"},
    )


def test_negative_int64_values() -> None:
    stat = _field(1, 1) + _field(4, -334855067)
    plane = _field(2, b"p") + _field(3, _field(4, _field(1, 1) + _field(4, stat)) + _field(1, -42))
    (p,) = decode_xspace(_field(1, plane)).planes
    assert p.lines[0].id == -42
    assert p.lines[0].events[0].stats[0].value == -334855067


def test_reading_never_imports_a_framework() -> None:
    code = (
        "import sys\n"
        "from hloscope.timing.sources import load_profile\n"
        f"load_profile({str(JAX_PROFILE)!r}); load_profile({str(TF_PROFILE)!r})\n"
        f"load_profile({str(JAX_TRACE_JSON)!r})\n"
        # the protobuf runtime may decode (issue 13); no framework may come with it
        "bad = [m for m in ('tensorflow', 'jax', 'jaxlib', 'keras') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --------------------------------------------------------------------------------------
# Cross-check with TensorFlow's generated protobuf code (skipped without TensorFlow).


def _pb_stat(plane, stat):  # type: ignore[no-untyped-def]
    kind = stat.WhichOneof("value")
    value = getattr(stat, kind) if kind else None
    return stat.metadata_id, kind, value


_KIND = {
    "double": "double_value",
    "uint64": "uint64_value",
    "int64": "int64_value",
    "str": "str_value",
    "bytes": "bytes_value",
    "ref": "ref_value",
    "": None,
}


def _ours_stat(stat):  # type: ignore[no-untyped-def]
    value = bytes(stat.value) if stat.kind == "bytes" else stat.value
    return stat.metadata_id, _KIND[stat.kind], value


@pytest.mark.tf
@pytest.mark.parametrize("path", [JAX_XPLANE, TF_XPLANE, GPU_RAW, GPU_DERIVED], ids=str)
def test_decoder_matches_xplane_pb2(path: Path) -> None:
    pb2 = xplane_pb2()
    ref = pb2.XSpace()
    ref.ParseFromString(path.read_bytes())
    ours = read_xspace(path)
    assert list(ref.hostnames) == list(ours.hostnames)
    assert list(ref.errors) == list(ours.errors)
    assert len(ref.planes) == len(ours.planes)
    for rp, op in zip(ref.planes, ours.planes, strict=True):
        assert (rp.id, rp.name) == (op.id, op.name)
        assert [_pb_stat(rp, s) for s in rp.stats] == [_ours_stat(s) for s in op.stats]
        assert {k: (v.id, v.name, v.description) for k, v in rp.stat_metadata.items()} == {
            k: (v.id, v.name, v.description) for k, v in op.stat_metadata.items()
        }
        assert set(rp.event_metadata) == set(op.event_metadata)
        for k, rm in rp.event_metadata.items():
            om = op.event_metadata[k]
            assert (rm.id, rm.name, rm.display_name) == (om.id, om.name, om.display_name)
            assert rm.metadata == (bytes(om.metadata) if om.metadata is not None else b"")
            assert list(rm.child_id) == list(om.child_id)
            assert [_pb_stat(rp, s) for s in rm.stats] == [_ours_stat(s) for s in om.stats]
        assert len(rp.lines) == len(op.lines)
        for rl, ol in zip(rp.lines, op.lines, strict=True):
            assert (rl.id, rl.display_id, rl.name, rl.display_name) == (
                ol.id,
                ol.display_id,
                ol.name,
                ol.display_name,
            )
            assert (rl.timestamp_ns, rl.duration_ps) == (ol.timestamp_ns, ol.duration_ps)
            assert len(rl.events) == len(ol.events)
            for re_, oe in zip(rl.events, ol.events, strict=True):
                assert (re_.metadata_id, re_.offset_ps, re_.duration_ps) == (
                    oe.metadata_id,
                    oe.offset_ps,
                    oe.duration_ps,
                )
                assert re_.num_occurrences == oe.num_occurrences
                assert [_pb_stat(rp, s) for s in re_.stats] == [_ours_stat(s) for s in oe.stats]
