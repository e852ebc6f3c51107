"""JAX compile times recorded beside a profile, matched to the profiled modules."""

from __future__ import annotations

import json
from pathlib import Path

from hloscope.timing.attribution import attribute
from hloscope.timing.compiles import read_compiles, with_compile_times
from hloscope.timing.xplane import Trace, TraceEvent

US = 1_000_000


def _op(module: str, pid: int, run: int, start: float) -> TraceEvent:
    stats = {"hlo_op": "f", "hlo_module": module, "program_id": pid, "run_id": run}
    return TraceEvent("f", "/host:CPU", "t", 1, round(start * US), US, stats)


def test_compiles_go_to_modules_by_name_and_program_order() -> None:
    trace = Trace(
        None,
        "xplane",
        (
            _op("jit__lambda", 3, 0, 0),
            _op("jit_broadcast_in_dim", 7, 1, 10),
            _op("jit_broadcast_in_dim", 2, 2, 20),
            _op("jit_other", 9, 3, 30),
        ),
    )
    timings = attribute(trace)
    compiles = [
        ("jit(broadcast_in_dim)", 0.5),  # program 2 compiled first
        ("jit(<lambda>)", 0.25),
        ("jit(broadcast_in_dim)", 0.75),
        ("jit(other)", 1.0),
        ("jit(other)", 2.0),  # compiled twice, ran once: no telling which
    ]
    found = with_compile_times(timings, compiles).modules
    assert found["jit__lambda"].compile_us == 0.25e6
    assert found["jit_broadcast_in_dim(2)"].compile_us == 0.5e6
    assert found["jit_broadcast_in_dim(7)"].compile_us == 0.75e6
    assert found["jit_other"].compile_us is None
    assert with_compile_times(timings, []) is timings


def test_compiles_are_read_from_each_profilers_log_dir(tmp_path: Path) -> None:
    xplane = tmp_path / "jax" / "plugins" / "profile" / "2026_01_01" / "h.xplane.pb"
    xplane.parent.mkdir(parents=True)
    xplane.write_bytes(b"")
    doc = {"event": "x", "compiles": [["jit(f)", 0.125]]}
    (tmp_path / "jax" / "compiles.json").write_text(json.dumps(doc))
    assert read_compiles([xplane]) == [("jit(f)", 0.125)]
    (tmp_path / "jax" / "compiles.json").write_text("{broken")
    assert read_compiles([xplane]) == []
