"""Real XSpace files from other projects (../shared/gpu): a TPU inference profile, whose
`XLA Ops` lines are the only record of the ops, and a TensorFlow BERT GPU profile without
XLA. Timings are checked against a decode of the same file done here, from the raw
planes, lines and events (`read_xspace`), not through `attribute`."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hloscope.timing.attribution import NO_XLA_OPS, attribute
from hloscope.timing.results import ProfileTimings
from hloscope.timing.xplane import XEvent, XPlane, XSpace, read_trace, read_xspace
from tests.conftest import GPU

TPU = GPU / "xprof_tpu_inference_2.xplane.pb"
BERT = GPU / "tfprofiler_bert_gpu_multi_worker.xplane.pb"


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path.name} not found in {GPU} (see ../shared/gpu/README.md)")


@pytest.fixture(scope="module")
def tpu() -> tuple[XSpace, ProfileTimings]:
    _need(TPU)
    return read_xspace(TPU), attribute(read_trace(TPU))


def _expected(space: XSpace, skip_first: int = 1) -> dict[str, dict[str, Any]]:
    """Per module name: executions, summed module time, op time and per-op calls/time,
    from the TPU planes' `XLA Modules` events (first one per plane and module left out)
    and the `XLA Ops` events that start inside them (ops on that line are calls of their
    own, whatever their length), each timed by its `device_duration_ps` stat: the TPU's
    own clock, not the event's length on the timeline."""
    out: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "executions": 0,
            "total_ps": 0,
            "op_ps": 0,
            "ops": defaultdict(lambda: [0, 0]),
            "planes": defaultdict(lambda: [0, 0, 0]),  # executions, total_ps, op_ps
        }
    )
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU"):
            continue
        lines = {line.name: line for line in plane.lines}
        runs: dict[str, list[tuple[int, int]]] = defaultdict(list)
        base = lines["XLA Modules"].timestamp_ns * 1000
        for ev in lines["XLA Modules"].events:
            name = plane.event_metadata[ev.metadata_id].name.rsplit("(", 1)[0]
            runs[name].append((base + ev.offset_ps, base + ev.offset_ps + ev.duration_ps))
        base = lines["XLA Ops"].timestamp_ns * 1000
        ops = [
            (
                base + ev.offset_ps,
                _device_ps(plane, ev),
                plane.event_metadata[ev.metadata_id].display_name,
            )
            for ev in lines["XLA Ops"].events
        ]
        for name, spans in runs.items():
            for start, end in sorted(spans)[skip_first:]:
                m = out[name]
                m["executions"] += 1
                m["total_ps"] += end - start
                own = m["planes"][plane.name]
                own[0] += 1
                own[1] += end - start
                for t, duration, op in ops:
                    # An op at the boundary of two executions starts the later one.
                    if start <= t < end:
                        m["op_ps"] += duration
                        own[2] += duration
                        m["ops"][op][0] += 1
                        m["ops"][op][1] += duration
    return out


def _device_ps(plane: XPlane, ev: XEvent) -> int:
    (duration,) = [
        plane.stat_value(s) for s in ev.stats if plane.stat_name(s) == "device_duration_ps"
    ]
    assert isinstance(duration, int) and duration >= 0
    return duration


def test_tpu_ops_are_timed_on_the_device_clock(tpu: tuple[XSpace, ProfileTimings]) -> None:
    """The timeline aligns the TPU's events to the host clock, stretching and shrinking
    them where it re-synchronises: hundreds of events differ from the device's own
    duration, some shrunk to 0. Op times are the device's."""
    space, p = tpu
    events = [
        (ev.duration_ps, _device_ps(plane, ev))
        for plane in space.planes
        if plane.name.startswith("/device:TPU")
        for line in plane.lines
        if line.name == "XLA Ops"
        for ev in line.events
    ]
    differ = [(t, d) for t, d in events if t != d]
    assert len(differ) > 500 and sum(t == 0 < d for t, d in differ) > 100
    assert all(m.clock == "device" for m in p.modules.values() if m.kernels)
    fusion = p.modules["jit_f"].kernel("broadcast_add_fusion.1")
    assert fusion is not None and 8_000 < fusion.min_us <= fusion.max_us < 8_300


def test_tpu_xla_ops_are_the_op_events(tpu: tuple[XSpace, ProfileTimings]) -> None:
    space, p = tpu
    op_lines = [
        line
        for plane in space.planes
        if plane.name.startswith("/device:TPU")
        for line in plane.lines
        if line.name == "XLA Ops"
    ]
    assert p.op_events == sum(len(line.events) for line in op_lines) > 6000
    models = {
        plane.stats_dict(plane.stats).get("device_type_string")
        for plane in space.planes
        if plane.name.startswith("/device:TPU")
    }
    assert (p.platform, {p.device}) == ("TPU", models)
    assert NO_XLA_OPS not in p.problems


def test_tpu_modules_executions_and_op_times(tpu: tuple[XSpace, ProfileTimings]) -> None:
    space, p = tpu
    expected = {k: v for k, v in _expected(space).items() if v["executions"]}
    measured = {k: m for k, m in p.modules.items() if not m.cold}
    assert set(measured) == set(expected) == {"jit_f", "jit__psum"}
    for name, want in expected.items():
        m = measured[name]
        d = len(want["planes"])
        assert m.source == "xplane"
        # every figure is per device: the sum over the TPU planes, divided by them
        assert m.device_count == d == 4, name
        assert m.executions * d == want["executions"], name
        assert m.total_us == pytest.approx(want["total_ps"] / 1e6 / d, rel=1e-12), name
        assert m.kernel_us == pytest.approx(want["op_ps"] / 1e6 / d, rel=1e-12), name
        got = {k.name: (k.calls, k.total_us) for k in m.kernels}
        assert set(got) == set(want["ops"]), name
        for op, (calls, ps) in want["ops"].items():
            assert got[op][0] * d == calls, (name, op)
            assert got[op][1] == pytest.approx(ps / 1e6 / d, rel=1e-12), (name, op)
        # each plane's own sums, and the slowest plane against the median one
        planes = want["planes"]
        assert {x.device: (x.executions, x.total_us, x.kernel_us) for x in m.per_device} == {
            plane: (n, pytest.approx(total / 1e6, rel=1e-12), pytest.approx(ops / 1e6, rel=1e-12))
            for plane, (n, total, ops) in planes.items()
        }
        totals = sorted(total for _, total, _ in planes.values())
        assert m.spread == pytest.approx(totals[-1] / ((totals[1] + totals[2]) / 2), rel=1e-12)
    # 100 executions of jit_f on each of 4 TPU cores, the first on each left out.
    assert measured["jit_f"].executions == 99
    # Modules that ran only as warm-up are shown from those cold runs, not left out;
    # so is jit_convert_element_type, whose one run had no op event.
    cold = {k: m for k, m in p.modules.items() if m.cold}
    first_runs = _expected(space, skip_first=0)
    assert cold and set(cold).isdisjoint(expected)
    assert p.modules["jit_convert_element_type"].kernels == ()
    assert set(cold) == {"jit_broadcast_in_dim", "jit_convert_element_type"}
    for name, m in cold.items():
        d = len(first_runs[name]["planes"])
        assert (m.executions * d, m.skipped) == (first_runs[name]["executions"], 0), name
        assert m.total_us * d == pytest.approx(first_runs[name]["total_ps"] / 1e6, rel=1e-12)


def test_bert_gpu_profile_says_it_holds_no_xla_ops() -> None:
    _need(BERT)
    space = read_xspace(BERT)
    stat_names = {m.name for plane in space.planes for m in plane.stat_metadata.values()}
    kernels = sum(
        len(line.events)
        for plane in space.planes
        if plane.name.startswith("/device:GPU")
        for line in plane.lines
        if line.name.startswith("Stream #")
    )
    assert "hlo_op" not in stat_names and kernels > 1000  # a real GPU run, without XLA
    p = attribute(read_trace(BERT))
    assert (p.op_events, dict(p.modules)) == (0, {})
    assert NO_XLA_OPS in p.problems
    assert p.platform == "sm_70"
