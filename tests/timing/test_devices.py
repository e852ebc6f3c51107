"""Per-device timing of a module that ran on four CPU devices, checked against the raw
profile: tests/data/jax_four_devices_profile (see its HOW.md) holds a JAX profile of
samples/jax_four_devices.py, whose SPMD, `shard_map` and `pmap` modules each ran once per
step on every device. The raw XSpace is decoded here, plane by line by event
(`read_xspace`), and grouped by the thunks' own `device_ordinal` and `run_id` stats,
not through `attribute`."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.hlo.parser import parse_file
from hloscope.inspection import inspect_run
from hloscope.timing.attribution import attribute
from hloscope.timing.devices import DeviceTally
from hloscope.timing.results import ProfileTimings, device_spread
from hloscope.timing.roofline import Peaks, roofline
from hloscope.timing.xplane import find_profile, read_trace, read_xspace
from tests.conftest import DATA

FOLDER = DATA / "jax_four_devices_profile"
SHARDED = ("jit_dense", "jit_row_parallel_partial", "jit__fun", "jit_gather")


def _raw(
    path: Path, skip_first: int = 1, *, programs: bool = False
) -> dict[str, dict[int, dict[str, Any]]]:
    """Per module (`name(program_id)` with `programs`), per `device_ordinal`: steady
    executions (each device's `run_id`s in order, the first `skip_first` left out),
    their summed span, and each `hlo_op`'s calls and summed duration, from the raw
    planes and events."""
    space = read_xspace(path)
    events: dict[tuple[str, int], dict[int, list[tuple[str, int, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for plane in space.planes:
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            for ev in line.events:
                meta = plane.event_metadata.get(ev.metadata_id)
                stats = {
                    names.get(s.metadata_id): names.get(s.value) if s.kind == "ref" else s.value
                    for s in [*(meta.stats if meta is not None else ()), *ev.stats]
                }
                if "hlo_op" not in stats or "hlo_module" not in stats:
                    continue
                start = base + ev.offset_ps
                module = str(stats["hlo_module"])
                if programs:
                    module += f"({stats['program_id']})"
                key = (module, int(stats["device_ordinal"]))
                events[key][int(stats["run_id"])].append(
                    (str(stats["hlo_op"]), start, start + ev.duration_ps)
                )
    out: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for (module, ordinal), runs in events.items():
        ordered = sorted(runs.values(), key=lambda ops: min(s for _, s, _ in ops))[skip_first:]
        ops: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for run in ordered:
            for op, start, end in run:
                ops[op][0] += 1
                ops[op][1] += end - start
        out[module][ordinal] = {
            "executions": len(ordered),
            "wall_ps": sum(max(e for *_, e in r) - min(s for _, s, _ in r) for r in ordered),
            "ops": dict(ops),
        }
    return out


@pytest.fixture(scope="module")
def profile() -> tuple[dict[str, dict[int, dict[str, Any]]], ProfileTimings]:
    path = find_profile(FOLDER)
    static = {
        f.name.split(".")[1]: analyze_module(parse_file(f))
        for f in FOLDER.glob("dump/*.cpu_after_optimizations.txt")
        if f.name.split(".")[1] in SHARDED
    }
    return _raw(path), attribute(read_trace(path), skip_first=1, static=static)


@pytest.mark.parametrize("name", SHARDED)
def test_times_and_calls_are_per_device_as_the_raw_profile_has_them(
    name: str, profile: tuple[dict[str, dict[int, dict[str, Any]]], ProfileTimings]
) -> None:
    raw, timings = profile
    devices = raw[name]
    m = timings.modules[name]
    assert sorted(devices) == [0, 1, 2, 3]
    assert m.device_count == 4 and m.devices == ("/host:CPU",)
    # each device's own executions, wall and kernel time
    assert {d.device: (d.executions, d.total_us, d.kernel_us) for d in m.per_device} == {
        f"/device:CPU:{i}": (
            r["executions"],
            pytest.approx(r["wall_ps"] / 1e6, rel=1e-12),
            pytest.approx(sum(t for _, t in r["ops"].values()) / 1e6, rel=1e-12),
        )
        for i, r in devices.items()
    }
    # the module's figures: the mean over the devices
    n = statistics.mean(r["executions"] for r in devices.values())
    assert m.executions == n
    assert m.total_us == pytest.approx(
        statistics.mean(r["wall_ps"] for r in devices.values()) / 1e6, rel=1e-12
    )
    # each kernel: calls and time per device; its slowest device against the median
    ops = {op for r in devices.values() for op in r["ops"]}
    assert {k.name for k in m.kernels} == ops
    for k in m.kernels:
        per = {i: r["ops"].get(k.name, (0, 0)) for i, r in devices.items()}
        assert k.calls == statistics.mean(c for c, _ in per.values())
        assert k.total_us == pytest.approx(statistics.mean(t for _, t in per.values()) / 1e6)
        assert k.device_count == 4
        ps = {i: t for i, (_, t) in per.items()}
        worst = max(ps, key=lambda i: ps[i])
        assert k.slowest_device == f"/device:CPU:{worst}"
        assert k.spread == pytest.approx(ps[worst] / statistics.median(ps.values()), rel=1e-12)
    # launches per execution on one device: what the HLO says, no false mismatch
    assert m.launch_mismatch is False
    assert m.launches_per_execution == m.static_launches
    assert m.launches_per_execution == sum(c for c, _ in devices[0]["ops"].values()) / n


def test_a_module_on_one_device_is_not_divided(
    profile: tuple[dict[str, dict[int, dict[str, Any]]], ProfileTimings],
) -> None:
    raw, timings = profile
    (only,) = raw["jit__multi_slice"].values()
    m = timings.modules["jit__multi_slice"]
    assert (m.device_count, m.per_device, m.spread) == (1, (), None)
    assert m.executions == only["executions"]
    assert m.kernel_us == pytest.approx(sum(t for _, t in only["ops"].values()) / 1e6)


def test_the_roofline_uses_one_device_time_per_execution(
    profile: tuple[dict[str, dict[int, dict[str, Any]]], ProfileTimings],
) -> None:
    """The roofline divides one device's bytes (the partitioned HLO is one device's
    program) by one device's time of one execution."""
    raw, _ = profile
    inspection = inspect_run(FOLDER)
    (dense,) = [m for m in inspection.modules if m.name == "jit_dense"]
    cost = inspection.cost(dense.key)
    times = inspection.kernel_times(dense.key)
    assert cost is not None and times is not None
    devices = raw["jit_dense"]
    per_execution = statistics.mean(
        r["ops"]["ynn_fusion"][1] / r["executions"] for r in devices.values()
    )
    assert times["ynn_fusion"] == pytest.approx(per_execution / 1e6, rel=1e-12)
    peaks = Peaks("test", bandwidth=1e10, flops=1e12)
    (roof,) = [r for r in roofline(cost, times, peaks) if r.name == "ynn_fusion"]
    assert roof.time_us == pytest.approx(per_execution / 1e6, rel=1e-12)
    bytes_one_device = next(k.cost.bytes for k in cost.kernels if k.name == "ynn_fusion")
    assert roof.bandwidth == pytest.approx(bytes_one_device / (per_execution / 1e12))


def test_a_device_tally_gives_the_mean_and_the_straggler() -> None:
    tally = DeviceTally(per_us=1.0)
    for device, wall in (("a", 10), ("b", 10), ("c", 30)):
        tally.execution(device, wall, wall)
        tally.call("k", device, wall)
    assert tally.count == 3 and tally.mean(50) == pytest.approx(50 / 3)
    assert tally.kernel_fields("k") == {"device_count": 3, "spread": 3.0, "slowest_device": "c"}
    # a kernel that ran on one device of three: the others count as zero time
    tally.call("only", "a", 4)
    assert tally.kernel_fields("only") == {
        "device_count": 1,
        "spread": None,
        "slowest_device": None,
    }
    assert device_spread({"x": 1.0}) == (None, None)
    assert [d.device for d in tally.per_device()] == ["a", "b", "c"]
