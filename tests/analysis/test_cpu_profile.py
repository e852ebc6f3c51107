"""Launches against what XLA's CPU runtime ran: a real JAX profile of a lax.scan and of
jax.random.split (tests/data/jax_scan_profile, see its HOW.md)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from hloscope.analysis import kernels as K
from hloscope.analysis.fusion import analyze_module
from hloscope.hlo.parser import parse_file
from hloscope.timing.xplane import Trace, TraceEvent, read_trace
from tests.conftest import DATA

FOLDER = DATA / "jax_scan_profile"
IDS = DATA / "jax_partition_id_profile"  # a shard_map over 2 CPU devices: a partition-id
MODULES = sorted(FOLDER.glob("*.cpu_after_optimizations.txt"))
ID_MODULES = sorted(IDS.glob("*.cpu_after_optimizations.txt"))


def _measured(trace: Trace) -> dict[str, Counter[str]]:
    """Leaf thunk events per execution on one device, per module and hlo_op (enclosing
    `while`/`call` thunks, whose events hold their body's, are not leaves); an execution
    is a (run_id, device_ordinal) pair."""
    lines: dict[tuple[str, str], list[TraceEvent]] = defaultdict(list)
    for e in trace.events:
        if e.stats.get("hlo_module") and e.stats.get("hlo_op"):
            lines[(e.stats["hlo_module"], e.line)].append(e)
    leaves: dict[str, Counter[str]] = defaultdict(Counter)
    runs: dict[str, set[object]] = defaultdict(set)
    for (module, _), events in lines.items():
        events.sort(key=lambda e: (e.start_ps, -e.duration_ps))
        for e, after in zip(events, [*events[1:], None], strict=True):
            runs[module].add((e.stats.get("run_id"), e.stats.get("device_ordinal")))
            if after is None or after.start_ps >= e.end_ps:
                leaves[module][e.stats["hlo_op"]] += 1
    return {
        m: Counter({op: n // len(runs[m]) for op, n in ops.items()}) for m, ops in leaves.items()
    }


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, Counter[str]]]:
    """Per profile folder (both hold a `jit__lambda`), per module, per hlo_op."""
    return {f.name: _measured(read_trace(f / "vm.xplane.pb")) for f in (FOLDER, IDS)}


def test_every_module_ran(measured: dict[str, dict[str, Counter[str]]]) -> None:
    for path in MODULES + ID_MODULES:
        assert path.name.split(".")[1] in measured[path.parent.name]


@pytest.mark.parametrize("path", MODULES + ID_MODULES, ids=lambda p: p.name.split(".")[1])
def test_launches_equal_measured(path: Path, measured: dict[str, dict[str, Counter[str]]]) -> None:
    """Total launches and launches per hlo_op equal the leaf thunks the runtime ran."""
    module = parse_file(path)
    a = analyze_module(module)
    assert a.platform == K.CPU and a.launches_exact
    ran = measured[path.parent.name][module.name]
    assert a.launches == sum(ran.values())
    ours = Counter({op: k.launches_of(op) for k in a.kernels for op in k.hlo_ops})
    assert ours == ran


def test_scan_condition_never_launches() -> None:
    a = analyze_module(parse_file(next(p for p in MODULES if "jit_layers" in p.name)))
    assert a.loops[0].trip_count == 6
    assert "wrapped_compare" not in {k.name for k in a.kernels}
    assert a.launches == 6 * 6 + 4


def test_small_call_is_one_kernel() -> None:
    a = analyze_module(parse_file(next(p for p in MODULES if "threefry_split" in p.name)))
    call = next(k for k in a.kernels if k.name == "call")
    assert call.launches == 1 and call.kind == "cpu-call"
    assert len(call.ops) > 50  # the whole called computation, its while loop included


def test_cpu_partition_id_is_a_launch(measured: dict[str, dict[str, Counter[str]]]) -> None:
    a = analyze_module(parse_file(next(p for p in ID_MODULES if "jit__lambda" in p.name)))
    (pid,) = [k for k in a.kernels if k.opcode == "partition-id"]
    assert pid.launches == measured[IDS.name]["jit__lambda"][pid.name] == 1
