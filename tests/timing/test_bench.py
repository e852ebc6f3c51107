"""Eager vs XLA statistics with a fake clock; the real frameworks on the small samples."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from hloscope.capture.inprocess import framework_of_call
from hloscope.errors import UsageError
from hloscope.render.timing import bench_table
from hloscope.render.timing_json import bench_doc
from hloscope.timing.bench import (
    Measurement,
    Mode,
    bench,
    load_target,
    measure,
    percentile,
    run_modes,
)
from tests.timing.helpers import needs

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


class FakeClock:
    """A clock that only moves when a fake workload says so (binary fractions add exactly)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, durations: list[float]):  # type: ignore[no-untyped-def]
        """A callable that advances the clock by the next duration (the last one repeats)."""
        calls = iter(range(10**9))

        def call() -> None:
            i = next(calls)
            self.now += durations[min(i, len(durations) - 1)]

        return call


def test_fixed_repeats() -> None:
    clock = FakeClock()
    # first call 5 s (compile), 1 warm-up, then 1, 2, 3, 4 ms
    m = measure(clock.work([5.0, 0.5, 0.001, 0.002, 0.003, 0.004]), clock=clock, repeats=4)
    assert m.first_s == 5.0 and m.warmup == 1
    assert m.times_s == pytest.approx((0.001, 0.002, 0.003, 0.004))
    assert m.median_s == pytest.approx(0.0025)
    assert m.p10_s == pytest.approx(0.0013)
    assert m.p90_s == pytest.approx(0.0037)


def test_adaptive_stops_after_min_time_and_min_repeats() -> None:
    clock = FakeClock()
    m = measure(clock.work([1.0, 1.0, 0.125]), clock=clock, min_time=1.0, min_repeats=5)
    assert m.repeats == 8  # 8 x 0.125 s reaches 1 s
    clock = FakeClock()
    m = measure(clock.work([1.0, 1.0, 0.5]), clock=clock, min_time=1.0, min_repeats=5)
    assert m.repeats == 5  # 1 s after 2 calls, but at least 5


def test_adaptive_caps() -> None:
    clock = FakeClock()
    m = measure(clock.work([0.0, 0.0, 1e-6]), clock=clock, min_time=1.0, max_repeats=50)
    assert m.repeats == 50
    clock = FakeClock()
    m = measure(clock.work([0.0, 0.0, 30.0]), clock=clock, min_time=1.0, min_repeats=5)
    assert m.repeats == 3  # slow calls: stop at max_time (20 x min_time) once 3 are timed


def test_warmup_calls_are_not_timed() -> None:
    clock = FakeClock()
    m = measure(clock.work([1.0, 9.0, 9.0, 0.5]), clock=clock, repeats=2, warmup=2)
    assert m.times_s == pytest.approx((0.5, 0.5))
    with pytest.raises(UsageError):
        measure(clock.work([1.0]), clock=clock, repeats=0)


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 10) == pytest.approx(1.3)
    assert percentile([7.0], 90) == 7.0
    assert math.isnan(percentile([], 50))
    assert math.isnan(Measurement(1.0, ()).median_s)


def test_run_modes_speedups_and_failures() -> None:
    clock = FakeClock()

    def broken() -> None:
        raise RuntimeError("XLA compilation failed: dynamic shape\nmore lines")

    modes = [
        Mode(
            "eager",
            "eager",
            clock.work([0.1, 0.1, 0.010]),
            peak_memory=lambda: (None, "unavailable"),
        ),
        Mode("tf.function", "graph", clock.work([2.0, 0.1, 0.005])),
        Mode("xla", "xla", broken),
        Mode("jit", "jit", clock.work([3.0, 0.1, 0.002]), peak_memory=lambda: (2048, "peak")),
    ]
    results = run_modes(modes, clock=clock, repeats=5)
    eager, graph, xla, jit = results
    assert eager.speedup == 1.0 and eager.memory_note == "unavailable"
    assert graph.speedup == pytest.approx(2.0)
    assert graph.first_call_s == pytest.approx(2.0)
    assert xla.error == "RuntimeError: XLA compilation failed: dynamic shape"
    assert xla.median_s is None and xla.speedup is None
    assert jit.speedup == pytest.approx(5.0) and jit.peak_memory_bytes == 2048


def test_rounds_interleave_the_modes() -> None:
    clock = FakeClock()
    log: list[str] = []

    def mode(name: str, seconds: float) -> Mode:
        def call() -> None:
            log.append(name)
            clock.now += seconds

        return Mode(name, name, call)

    results = run_modes(
        [mode("a", 0.25), mode("b", 0.125)], clock=clock, repeats=5, warmup=0, rounds=2
    )
    # cold calls first, then round 1 (3 + 3 calls), round 2 (2 + 2)
    assert "".join(log) == "ab" + "aaabbb" + "aabb"
    assert [r.repeats for r in results] == [5, 5]
    assert results[1].speedup == 2.0
    log.clear()
    results = run_modes([mode("a", 0.25)], clock=clock, min_time=1.0, min_repeats=2, rounds=4)
    # adaptive: each round collects a quarter of min_time (one 0.25 s call)
    assert results[0].repeats == 4


def test_framework_of_call_from_argument_types() -> None:
    def fake(module: str) -> object:
        return type("Array", (), {"__module__": module})()

    assert framework_of_call(lambda x: x, [fake("jaxlib._jax")]) == "jax"
    assert framework_of_call(lambda x: x, [[(fake("tensorflow.python.framework.ops"),)]]) == (
        "tensorflow"
    )
    assert framework_of_call(lambda x, y: x, [fake("jax"), fake("tensorflow")]) is None


def test_bench_needs_a_known_framework() -> None:
    with pytest.raises(UsageError, match="unknown framework"):
        bench(lambda: None, framework="mxnet")
    if "tensorflow" not in sys.modules and "jax" not in sys.modules:
        with pytest.raises(UsageError, match="cannot tell"):
            bench(lambda x: x, 1)


def test_load_target(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text(
        "import helper\n"
        "def bench():\n    return helper.f, (2, 3)\n"
        "def wrong():\n    return 1\n"
        "if __name__ == '__main__':\n    raise SystemExit('must not run')\n"
    )
    (tmp_path / "helper.py").write_text("def f(a, b):\n    return a * b\n")
    fn, args = load_target(f"{script}:bench")
    assert fn(*args) == 6
    with pytest.raises(UsageError, match="must return"):
        load_target(f"{script}:wrong")
    with pytest.raises(UsageError, match=r"no function 'nope'.*bench"):
        load_target(f"{script}:nope")
    with pytest.raises(UsageError, match="no such script"):
        load_target(f"{tmp_path / 'missing.py'}:bench")
    with pytest.raises(UsageError, match=r"SCRIPT\.py:FUNCTION"):
        load_target(str(script))


@pytest.mark.tf
def test_tensorflow_modes_on_dense_relu() -> None:
    needs("tensorflow")
    fn, args = load_target(f"{SAMPLES / 'dense_relu.py'}:bench")
    r = bench(fn, *args, repeats=3)
    assert r.framework == "tensorflow" and r.baseline == "eager"
    assert [m.name for m in r.modes] == ["eager", "tf.function", "xla"]
    for m in r.modes:
        assert m.error is None and m.repeats == 3
        assert m.first_call_s is not None and m.median_s is not None and m.median_s > 0
    if r.device.startswith("CPU"):
        assert all(m.peak_memory_bytes is None and m.memory_note for m in r.modes)
    doc = bench_doc(r)
    assert doc["modes"][0]["speedup"] == 1.0
    bench_table(r)


@pytest.mark.jax
def test_jax_modes_on_mlp() -> None:
    needs("jax")
    fn, args = load_target(f"{SAMPLES / 'jax_mlp.py'}:bench")
    r = bench(fn, *args, repeats=3)
    assert r.framework == "jax"
    assert [m.name for m in r.modes] == ["op-by-op", "jit"]
    assert all(m.error is None for m in r.modes)
    jit = r.mode("jit")
    assert jit.speedup is not None and jit.speedup > 0
    if r.device.startswith("CPU"):  # XLA's planned peak: at least the arguments it holds
        import jax

        arg_bytes = sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(args))
        assert jit.peak_memory_bytes is not None and jit.peak_memory_bytes >= arg_bytes
        assert "planned by XLA" in (jit.memory_note or "")
        assert r.mode("op-by-op").peak_memory_bytes is None
    # the first call's compile, as JAX's own events time it, and not more than the call
    assert jit.compile_s is not None and jit.first_call_s is not None
    assert 0 < jit.compile_s < jit.first_call_s
    assert r.mode("op-by-op").compile_s is None
    assert bench_doc(r)["modes"][1]["compile_s"] == pytest.approx(jit.compile_s)


@pytest.mark.jax
def test_jax_bench_compile_time_is_jaxs_own() -> None:
    """The jit mode's compile time is what JAX's listeners hear for its first call."""
    needs("jax")
    import jax

    heard: list[float] = []

    def listen(event: str, duration: float, **kwargs: object) -> None:
        if event.startswith("/jax/core/compile/") and "attend" in str(kwargs.get("fun_name")):
            heard.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        fn, args = load_target(f"{SAMPLES / 'jax_recompile.py'}:bench")
        r = bench(fn, *args, repeats=2, rounds=1)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert r.mode("jit").compile_s == pytest.approx(sum(heard))
