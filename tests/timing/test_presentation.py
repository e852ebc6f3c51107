"""How timings are shown: busy time beside summed kernel time where kernels overlap,
launch counts that vary per execution as min/median/max, cold first runs marked, and no
more digits than a count has. The timings come from small traces whose figures are
worked out by hand here."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any, cast

from rich.console import Console

from hloscope.render.timing import module_detail
from hloscope.render.timing_json import timings_doc
from hloscope.timing.attribution import attribute
from hloscope.timing.results import ModuleTiming
from hloscope.timing.xplane import Trace, TraceEvent

US = 1_000_000  # picoseconds


def _op(op: str, start: float, dur: float, run: int, line: str = "t") -> TraceEvent:
    stats = {"hlo_op": op, "hlo_module": "m", "program_id": 1, "run_id": run}
    return TraceEvent(op, "/host:CPU", line, len(line), round(start * US), round(dur * US), stats)


def _text(m: ModuleTiming) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(module_detail("m", m))
    return " ".join(cast(io.StringIO, console.file).getvalue().split())


def test_overlapping_kernels_show_busy_time_beside_their_sum() -> None:
    events = []
    for run in range(2):
        t = 100.0 * run
        events += [_op("a", t, 10, run, "t1"), _op("b", t + 5, 10, run, "t2")]
    m = attribute(Trace(None, "xplane", tuple(events)), skip_first=0).modules["m"]
    # per execution: a 0-10 and b 5-15 on two threads: busy 15, summed 20, wall 15
    assert (m.total_us, m.kernel_us, m.busy_us, m.unattributed_us) == (30.0, 40.0, 30.0, 0.0)
    text = _text(m)
    # per execution: the kernels' summed time, and the wall they kept busy
    assert "kernel time per execution 20.0 µs (summed over threads) · busy 15.0 µs (100%)" in text
    assert "not in any kernel 0.0 µs per execution" in text
    assert "calls and total over 2 executions" in text
    doc = timings_doc(m)
    assert doc["busy_us"] + doc["unattributed_us"] == doc["total_us"] == 30.0


def test_launches_that_vary_per_execution_are_a_distribution() -> None:
    # a data-dependent conditional: executions alternate between 2 and 12 kernels
    events = []
    counts = [2, 12, 2, 12, 2, 2, 12]
    for run, n in enumerate(counts):
        events += [_op(f"k{i}", 1000.0 * run + 2 * i, 1, run) for i in range(n)]
    static = SimpleNamespace(
        launches=12,
        kernels=[SimpleNamespace(name=f"k{i}") for i in range(12)],
        kernel_of={f"k{i}": f"k{i}" for i in range(12)},
        loops=[],
        branches=[],
    )
    trace = Trace(None, "xplane", tuple(events))
    m = attribute(trace, skip_first=0, static=cast(Any, {"m": static})).modules["m"]
    assert m.launches_by_execution == tuple(counts)
    assert timings_doc(m)["launches_by_execution"] == {"min": 2, "median": 2, "max": 12}
    text = _text(m)
    assert "launches per execution 2 to 12 (median 2) ≤ HLO 12 (branches vary)" in text
    assert "6.28571" not in text and "6.3" not in text.split("launches per execution")[1][:20]


def test_steady_launches_print_as_whole_numbers() -> None:
    events = [_op(f"k{i}", 100.0 * run + 2 * i, 1, run) for run in range(3) for i in range(3)]
    m = attribute(Trace(None, "xplane", tuple(events))).modules["m"]
    assert timings_doc(m)["launches_by_execution"] is None
    assert "launches per execution 3" in _text(m)
    assert "3.0" not in _text(m).split("launches per execution")[1][:5]


def test_a_module_that_ran_once_is_shown_as_a_cold_first_run() -> None:
    m = attribute(Trace(None, "xplane", (_op("a", 0, 4, 0), _op("b", 5, 1, 0)))).modules["m"]
    text = _text(m)
    assert "1 execution, a cold first run" in text and "--skip-first 0" in text
    assert "a" in [k.name for k in m.kernels] and m.total_us == 6.0
