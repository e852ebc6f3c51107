"""Op events -> module and kernel timings, on the captured CPU profiles, the synthetic GPU
profile and small hand-made traces."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.errors import UsageError
from hloscope.hlo.parser import parse_file
from hloscope.inspection import inspect_run
from hloscope.render.timing_json import profile_doc, timings_doc
from hloscope.timing.attribution import attribute, op_events
from hloscope.timing.executions import (
    SPLIT_EXECUTE_EVENT,
    SPLIT_LAUNCH,
    SPLIT_MODULE_EVENT,
    SPLIT_OCCURRENCE,
    SPLIT_REPEAT,
    SPLIT_RUN_ID,
    WALL_EXECUTE,
    WALL_MODULE,
    WALL_OPS,
)
from hloscope.timing.results import ModuleTiming
from hloscope.timing.sources import load_profile, static_analyses
from hloscope.timing.xplane import Trace, TraceEvent, read_trace
from tests.timing.helpers import (
    GPU_DERIVED,
    GPU_PROFILE,
    GPU_RAW,
    JAX_PROFILE,
    JAX_TRACE_JSON,
    JAX_XPLANE,
    TF_PROFILE,
)

US = 1_000_000


def _after(folder: Path, pattern: str):  # type: ignore[no-untyped-def]
    (path,) = sorted(folder.rglob(pattern))
    return analyze_module(parse_file(path))


def _check_against_hlo(m: ModuleTiming, analysis) -> None:  # type: ignore[no-untyped-def]
    """Every kernel of the module found, each once per execution, totals consistent."""
    assert {k.name for k in m.kernels} == {k.name for k in analysis.kernels}
    for k in m.kernels:
        assert k.calls == m.executions
        assert k.min_us <= k.median_us <= k.max_us
        assert k.min_us <= k.mean_us <= k.max_us
        assert math.isclose(k.mean_us * k.calls, k.total_us)
    assert m.kernel_us <= m.total_us
    assert math.isclose(sum(k.total_us for k in m.kernels), m.kernel_us)
    assert math.isclose(sum(k.share for k in m.kernels), 1.0)
    assert m.unattributed_us >= 0
    assert math.isclose(m.kernel_us + m.unattributed_us, m.total_us, rel_tol=1e-9)
    assert m.launches_per_execution == analysis.launches
    assert m.static_launches == analysis.launches and m.launch_mismatch is False
    assert m.missing_kernels == () and m.unknown_ops == ()


@pytest.mark.parametrize("skip_first", [0, 1, 2])
def test_jax_cpu_profile(skip_first: int) -> None:
    p = load_profile(JAX_PROFILE, skip_first=skip_first)
    assert list(p.modules) == ["jit_mlp"]
    m = p.modules["jit_mlp"]
    assert (m.executions, m.skipped) == (3 - skip_first, skip_first)
    assert m.program_id == 30
    assert m.split_by == SPLIT_RUN_ID and m.wall_from == WALL_OPS
    assert m.devices == ("/host:CPU",)
    assert len(m.execution_us) == m.executions
    _check_against_hlo(m, _after(JAX_PROFILE, "module_0030.jit_mlp.*after_optimizations.txt"))


def test_jax_cpu_profile_figures() -> None:
    m = load_profile(JAX_PROFILE).modules["jit_mlp"]
    # From the captured events (second and third call): ynn_fusion.3 ran 37.306 and 37.656 µs.
    k = m.kernel("ynn_fusion.3")
    assert k is not None
    assert (k.calls, k.min_us, k.max_us) == (2, 37.306, 37.656)
    assert math.isclose(k.median_us, (37.306 + 37.656) / 2)
    # Second call: ynn_fusion.3 starts at 835.269 µs, broadcast_multiply_fusion ends at
    # 1087.053 µs (offsets in the line).
    assert math.isclose(m.execution_us[0], 1087.053 - 835.269, abs_tol=1e-6)


def test_jax_trace_json_gives_the_same_timings() -> None:
    a = load_profile(JAX_PROFILE).modules["jit_mlp"]
    b = load_profile(JAX_TRACE_JSON).modules["jit_mlp"]
    assert (a.executions, a.launches_per_execution) == (b.executions, b.launches_per_execution)
    assert math.isclose(a.total_us, b.total_us, abs_tol=1e-2)
    assert [k.name for k in a.kernels] == [k.name for k in b.kernels]
    assert b.static_launches == 11  # the dump is found from the file's log dir too


@pytest.mark.parametrize("skip_first", [0, 1])
def test_tf_cpu_profile(skip_first: int) -> None:
    p = load_profile(TF_PROFILE, skip_first=skip_first)
    (key,) = p.modules
    m = p.modules[key]
    assert key.startswith("a_inference_dense_relu_12__XlaMustCompile_true")
    assert m.executions == 3 - skip_first
    # run_id is -1 in TensorFlow: executions come from CpuExecutable::ExecuteAsyncOnStream.
    assert m.split_by == SPLIT_EXECUTE_EVENT and m.wall_from == WALL_EXECUTE
    assert [k.name for k in m.kernels] == ["MatMul.2", "broadcast_maximum_fusion"]
    _check_against_hlo(m, _after(TF_PROFILE, "*after_optimizations.txt"))
    # The execute event encloses the ops: host overhead shows as unattributed time.
    assert m.unattributed_us > 0


def test_tf_execution_walls_are_the_execute_events() -> None:
    trace = read_trace(next(TF_PROFILE.rglob("*.xplane.pb")))
    walls = [e.duration_ps / US for e in trace.events if e.name.endswith("ExecuteAsyncOnStream")]
    m = next(iter(attribute(trace, skip_first=0).modules.values()))
    assert list(m.execution_us) == walls


@pytest.mark.parametrize(
    ("path", "split_by", "wall_from"),
    [(GPU_RAW, SPLIT_LAUNCH, WALL_OPS), (GPU_DERIVED, SPLIT_MODULE_EVENT, WALL_MODULE)],
    ids=["raw", "derived"],
)
def test_synthetic_gpu_profile(path: Path, split_by: str, wall_from: str) -> None:
    trace = read_trace(path)
    ops = op_events(trace)
    assert {o.device for o in ops} == {"/device:GPU:0"}
    assert len(ops) == 4 * 5  # 4 executions x 5 kernels; the D2H copy is not an op
    static = static_analyses(GPU_PROFILE, [("jit_gpu_mlp", 7)])
    assert list(static) == ["jit_gpu_mlp"]
    p = attribute(trace, static=static)
    m = p.modules["jit_gpu_mlp"]
    assert (m.executions, m.skipped) == (3, 1)
    assert (m.split_by, m.wall_from) == (split_by, wall_from)
    # 4 HLO kernels per execution as analyze_module counts them, 5 device kernels:
    # the cuBLAS custom call runs a GEMM and a split-K reduction.
    assert m.launches_per_execution == 4 and m.kernel_launches_per_execution == 5
    assert m.static_launches == 4 and m.launch_mismatch is False
    gemm = m.kernel("custom-call.1")
    assert gemm is not None
    assert gemm.kernels_per_op == 2 and gemm.calls == 3
    # Device ops in all: every device kernel event of the op (3 calls x 2 kernels).
    gemm_kernels = [o for o in ops if o.op == "custom-call.1"]
    assert gemm.device_ops == len(gemm_kernels) * m.executions // (m.executions + m.skipped)
    assert gemm.hlo_ops == ("custom-call.1",) and m.source == p.source == "xplane"
    assert sum(m.launches_by_execution) == 4 * m.executions
    assert m.busy_us is not None and math.isclose(m.busy_us, m.kernel_us)  # one stream
    assert len(gemm.device_kernels) == 2
    assert any(k.startswith("void splitKreduce_kernel") for k in gemm.device_kernels)
    assert [gemm.min_us, gemm.median_us, gemm.max_us] == [34.5, 35.0, 35.5]
    triton = m.kernel("gemm_fusion")
    assert triton is not None and triton.kernels_per_op == 1 and triton.device_kernels == ()
    reduce = m.kernel("input_reduce_fusion.1")
    assert reduce is not None and reduce.device_kernels == ("input_reduce_fusion_1",)
    # Built with 2 µs between kernels: 4 gaps per execution.
    assert math.isclose(m.unattributed_us, 3 * 4 * 2.0)
    assert math.isclose(m.total_us, 103.0 + 104.0 + 102.5)
    _check_against_hlo(m, static["jit_gpu_mlp"])


# --------------------------------------------------------------------------------------
# Hand-made traces


def _ev(name: str, start_us: float, dur_us: float, line: str = "t", **stats: object) -> TraceEvent:
    return TraceEvent(
        name,
        "/host:CPU",
        line,
        sum(map(ord, line)),
        round(start_us * US),
        round(dur_us * US),
        stats,
    )


def _op(
    op: str,
    start: float,
    dur: float,
    run_id: int = -1,
    module: str = "m",
    line: str = "t",
    pid: int = 1,
) -> TraceEvent:
    return _ev(op, start, dur, line, hlo_op=op, hlo_module=module, program_id=pid, run_id=run_id)


def _trace(*events: TraceEvent) -> Trace:
    return Trace(None, "xplane", tuple(events))


def test_control_flow_thunks_are_not_kernels() -> None:
    events = []
    for run in range(3):
        t = run * 100.0
        events += [
            _op("fusion", t, 5, run),
            _op("while.3", t + 6, 30, run),  # encloses its body on the same thread
            _op("body_fusion", t + 7, 10, run),
            _op("body_fusion", t + 18, 10, run),
            _op("cond_thunk.1", t + 37, 1, run),  # encloses nothing: a kernel
        ]
    m = attribute(_trace(*events)).modules["m"]
    assert {k.name for k in m.kernels} == {"fusion", "body_fusion", "cond_thunk.1"}
    body = m.kernel("body_fusion")
    assert body is not None and body.calls == 4 and body.calls_per_execution == 2
    assert m.launches_per_execution == 4
    assert m.execution_us == (38.0, 38.0)
    assert math.isclose(m.kernel_us, 2 * 26.0)
    # the loop's own time: 30 µs long, its body ran 2 x 10 µs inside it
    (loop,) = m.control
    assert (loop.name, loop.calls, loop.total_us) == ("while.3", 2, 2 * (30.0 - 20.0))
    # busy = fusion 5 + the loop 30 + cond 1 per execution; the 1 µs gaps stay outside
    assert math.isclose(m.busy_us or 0, 2 * 36.0)
    assert math.isclose(m.unattributed_us, 2 * (38.0 - 36.0))


def test_loop_self_time_subtracts_body_ops_on_other_threads() -> None:
    events = [
        _op("while.1", 0, 20, 1),
        _op("fusion.1", 2, 6, 1, line="worker"),  # the body continues on another thread
        _op("fusion.2", 5, 6, 1, line="worker2"),  # overlaps fusion.1: counted once
    ]
    m = attribute(_trace(*events), skip_first=0).modules["m"]
    (loop,) = m.control
    assert loop.total_us == 20.0 - (11.0 - 2.0)
    assert m.busy_us == 20.0 and m.kernel_us == 12.0


def test_while_named_ops_without_nesting_are_control() -> None:
    events = [
        _op("while", 0, 10, 1),
        _op("f", 11, 2, 1),
        _op("while", 20, 10, 2),
        _op("f", 31, 2, 2),
    ]
    m = attribute(_trace(*events), skip_first=0).modules["m"]
    assert [k.name for k in m.kernels] == ["f"]


def test_run_id_groups_executions_across_threads() -> None:
    events = [
        _op("a", 0, 4, 7, line="x"),
        _op("b", 5, 4, 7, line="y"),
        _op("a", 20, 3, 8, line="y"),
        _op("b", 24, 3, 8, line="x"),
        _op("a", 40, 2, 9, line="x"),
        _op("b", 43, 2, 9, line="x"),
    ]
    m = attribute(_trace(*events)).modules["m"]
    assert m.split_by == SPLIT_RUN_ID
    assert m.execution_us == (7.0, 5.0)
    assert m.kernel("a").calls == 2  # type: ignore[union-attr]


def test_first_op_repeats_when_nothing_else_tells_executions_apart() -> None:
    events = [_op(n, t, 1) for t, n in enumerate(["a", "b", "a", "b", "a", "b", "b"])]
    m = attribute(_trace(*events), skip_first=0).modules["m"]
    assert m.split_by == SPLIT_REPEAT
    assert m.executions == 3
    assert m.launches_per_execution == pytest.approx(7 / 3)


def test_each_ops_nth_run_when_threads_start_ops_before_the_first() -> None:
    """PyTorch/XLA's CPU thunks of one execution run on two threads (no run id, no
    execute event around them): `b` of a later execution can start before its `a`.
    Every op ran three times, so the k-th run of each is in the k-th execution."""
    events = [
        _op("a", 0, 2, line="x"),
        _op("b", 1, 2, line="y"),
        _op("c", 3, 1, line="x"),
        _op("b", 10, 2, line="y"),  # before this execution's `a`
        _op("a", 11, 2, line="x"),
        _op("c", 13, 1, line="x"),
        _op("a", 20, 2, line="x"),
        _op("b", 20.5, 2, line="y"),
        _op("c", 23, 1, line="x"),
    ]
    m = attribute(_trace(*events), skip_first=0).modules["m"]
    assert m.split_by == SPLIT_OCCURRENCE
    assert m.executions == 3 and m.launches_by_execution == (3, 3, 3)
    assert m.execution_us == (4.0, 4.0, 4.0)
    # where the first op's repeats split consistently, they still do
    same = [_op(n, t, 1) for t, n in enumerate(["a", "b", "a", "b"])]
    assert attribute(_trace(*same), skip_first=0).modules["m"].split_by == SPLIT_REPEAT


def test_modules_sharing_a_name_are_keyed_by_program_id() -> None:
    events = [
        _op("a", t, 1, run_id=t, module="jit_f", pid=pid) for t, pid in enumerate([3, 3, 5, 5, 5])
    ]
    p = attribute(_trace(*events))
    assert set(p.modules) == {"jit_f(3)", "jit_f(5)"}
    assert p.modules["jit_f(5)"].executions == 2
    assert p.module("jit_f(3)").program_id == 3
    with pytest.raises(UsageError, match="several modules"):
        p.module("jit_f")
    with pytest.raises(UsageError, match="no profiled module"):
        p.module("nope")


def test_module_known_only_by_program_id() -> None:
    e = _ev("fusion", 0, 1, hlo_op="fusion", program_id=12, run_id=4)
    trace = Trace(None, "xplane", (e,), programs={12: "jit_g"})
    p = attribute(trace, skip_first=0)
    assert list(p.modules) == ["jit_g"]


def test_modules_that_ran_only_once_are_shown_cold() -> None:
    p = attribute(_trace(_op("a", 0, 1, 1), _op("a", 5, 1, 1), _op("b", 20, 3, 2, module="n")))
    m = p.modules["m"]
    assert (m.executions, m.skipped, m.cold) == (1, 0, True)
    assert m.total_us == 6.0 and m.kernel_us == 2.0
    (a,) = m.kernels
    assert (a.name, a.calls) == ("a", 2)
    assert p.modules["n"].cold and p.modules["n"].total_us == 3.0
    assert any("cold first run" in line and "--skip-first 0" in line for line in p.problems)
    doc = timings_doc(m)
    assert doc["executions"] == 1 and doc["cold"] is True
    # a module with a steady state is not cold, and the first run stays out of it
    twice = attribute(_trace(_op("a", 0, 1, 1), _op("a", 5, 2, 2))).modules["m"]
    assert (twice.executions, twice.skipped, twice.cold, twice.kernel_us) == (1, 1, False, 2.0)
    with pytest.raises(UsageError):
        attribute(_trace(), skip_first=-1)


def test_timings_doc_schema() -> None:
    p = load_profile(JAX_PROFILE)
    doc = profile_doc(p)
    assert doc["schema_version"] == 1 and doc["format"] == "xplane"
    m = doc["modules"]["jit_mlp"]
    for key in (
        "executions",
        "total_us",
        "kernel_us",
        "unattributed_us",
        "launches_per_execution",
        "static_launches",
        "launch_mismatch",
        "kernels",
    ):
        assert key in m
    assert (m["executions"], m["static_launches"], m["launch_mismatch"]) == (2, 11, False)
    k = m["kernels"][0]
    for key in ("name", "calls", "total_us", "mean_us", "median_us", "min_us", "max_us", "share"):
        assert key in k
    assert m["kernels"][0]["total_us"] >= m["kernels"][-1]["total_us"]


def test_profile_without_dump_has_no_static_figures(tmp_path: Path) -> None:
    copy = tmp_path / "plugins" / "profile" / "s"
    copy.mkdir(parents=True)
    (copy / "vm.xplane.pb").write_bytes(JAX_XPLANE.read_bytes())
    m = load_profile(tmp_path).modules["jit_mlp"]
    assert (m.static_launches, m.launch_mismatch) == (None, None)
    m2 = load_profile(JAX_PROFILE, with_hlo=False).modules["jit_mlp"]
    assert m2.static_launches is None


def test_launch_mismatch_is_flagged() -> None:
    static = static_analyses(JAX_PROFILE, [("jit_mlp", 30)])
    trace = read_trace(JAX_XPLANE)
    dropped = Trace(
        trace.path,
        trace.format,
        tuple(e for e in trace.events if e.stats.get("hlo_op") != "ynn_fusion"),
        trace.programs,
    )
    m = attribute(dropped, static=static).modules["jit_mlp"]
    assert m.launch_mismatch is True and m.launches_per_execution == 10
    assert m.missing_kernels == ("ynn_fusion",)


def test_kernel_times_divide_by_steady_state_executions() -> None:
    inspection = inspect_run(JAX_PROFILE)
    mlp = inspection.timing("0030.jit_mlp")
    assert mlp is not None and mlp.executions >= 1
    times = inspection.kernel_times("0030.jit_mlp")
    assert times is not None and inspection.all_kernel_times()["jit_mlp"] == times
    assert set(times) == {k.name for k in mlp.kernels}
    for k in mlp.kernels:
        assert math.isclose(times[k.name], k.total_us / mlp.executions)


def _tpu(name: str, line: str, start_us: float, dur_us: float, **stats: object) -> TraceEvent:
    """An event of a TPU plane: `XLA Modules` events named `module(program id)`, `XLA
    Ops` events named by their HLO text, the op in the display name."""
    display = "" if line == "XLA Modules" else name
    text = name if line == "XLA Modules" else f"%{name} = f32[8]{{0}} negate(f32[8]{{0}} %p)"
    return TraceEvent(
        text, "/device:TPU:0", line, 3, round(start_us * US), round(dur_us * US), stats, display
    )


def test_tpu_ops_take_the_device_clock_and_idle_modules_are_listed() -> None:
    events = []
    for run in range(2):
        t = run * 100.0
        events += [
            _tpu("m(7)", "XLA Modules", t, 50.0),
            # on the timeline: stretched to 30 µs and shrunk to 0; on the device: 10 and 5
            _tpu("a", "XLA Ops", t + 1, 30.0, program_id=7, device_duration_ps=10 * US),
            _tpu("b", "XLA Ops", t + 31, 0.0, program_id=7, device_duration_ps=5 * US),
            _tpu("idle(9)", "XLA Modules", t + 60, 2.0),
        ]
    trace = Trace(None, "xplane", tuple(events), programs={7: "m", 9: "idle"})
    p = attribute(trace, skip_first=0)
    m = p.modules["m"]
    assert (m.clock, m.executions, m.split_by) == ("device", 2, SPLIT_MODULE_EVENT)
    assert {k.name: (k.calls, k.total_us, k.min_us) for k in m.kernels} == {
        "a": (2, 20.0, 10.0),
        "b": (2, 10.0, 5.0),
    }
    assert (m.total_us, m.kernel_us, m.busy_us, m.unattributed_us) == (100.0, 30.0, 30.0, 70.0)
    idle = p.modules["idle"]
    assert (idle.executions, idle.total_us, idle.kernels, idle.clock) == (2, 4.0, (), "timeline")
    assert (idle.split_by, idle.wall_from, idle.launches_per_execution) == (
        SPLIT_MODULE_EVENT,
        WALL_MODULE,
        0.0,
    )
    assert attribute(trace, skip_first=1).modules["idle"].executions == 1


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "10", True, 2**70])
def test_a_device_duration_that_is_no_duration_falls_back_to_the_timeline(bad: object) -> None:
    events = (
        _tpu("m(7)", "XLA Modules", 0.0, 50.0),
        _tpu("a", "XLA Ops", 1.0, 30.0, program_id=7, device_duration_ps=bad),
        _tpu("b", "XLA Ops", 31.0, 4.0, program_id=7, device_duration_ps=5 * US),
    )
    m = attribute(Trace(None, "xplane", events, programs={7: "m"}), skip_first=0).modules["m"]
    assert m.clock == "device+timeline"
    assert {k.name: k.total_us for k in m.kernels} == {"a": 30.0, "b": 5.0}
    assert all(math.isfinite(x) and x >= 0 for x in (m.kernel_us, m.busy_us or 0.0))
