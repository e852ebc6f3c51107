"""hloscope against XProf, Google's profiler (`pip install xprof`, the `xprof` extra that
`make test` installs): its own converters (`xspace_to_tool_data`: `hlo_stats`,
`op_profile`, `trace_viewer`) read the same XSpace files, and every figure both show
must agree.

- The real TPU XSpace (../shared/gpu): per op, calls exactly and total time within 0.1%
  (XProf's `hlo_stats`, which sums each op's time on the TPU's clock); per module,
  executions and wall time (the `XLA Modules` events of XProf's trace viewer); per op,
  FLOPs (`op_profile`) and bytes where both count the same memory: XProf's are the
  TPU's HBM traffic alone, so bytes are compared for ops whose every buffer is in the
  default memory space (a host-offload copy's other end is host memory).
- A CPU XSpace the suite makes (a small JAX program profiled): per op calls and time,
  per module executions and wall time, from XProf's trace viewer (its `hlo_stats` and
  `op_profile` hold no HLO op of a CPU-only profile; any row they gain is compared too).

XProf writes caches beside the file it reads, so it is always handed a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hloscope.inspection import Inspection, inspect_run
from hloscope.timing.attribution import attribute
from hloscope.timing.results import ProfileTimings
from hloscope.timing.xplane import read_trace
from tests.conftest import GPU

raw_to_tool_data = pytest.importorskip(
    "xprof.convert.raw_to_tool_data",
    reason="xprof is not installed: pip install 'hloscope[xprof]' (make test installs it)",
)

TPU = GPU / "xprof_tpu_inference_2.xplane.pb"
TOLERANCE = 1e-3  # 0.1%


def xprof(path: Path, tool: str, folder: Path) -> Any:
    """What XProf's converter makes of a copy of the profile, as JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / path.name
    shutil.copyfile(path, copy)
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
    return json.loads(data)


def _rows(table: Any) -> Iterator[dict[str, Any]]:
    """The rows of a Google Charts data table, as {column id: value}."""
    ids = [c["id"] for c in table["cols"]]
    for row in table["rows"]:
        yield dict(zip(ids, (c.get("v") for c in row["c"]), strict=False))


def _module_walls(trace: Any) -> dict[str, tuple[int, float]]:
    """Per `XLA Modules` event name (`jit_f(12)`): how many, and their summed µs."""
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and threads.get((e["pid"], e["tid"])) == "XLA Modules":
            out[e["name"]][0] += 1
            out[e["name"]][1] += e["dur"]
    return {k: (int(n), us) for k, (n, us) in out.items()}


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TOLERANCE * abs(theirs) + 1e-9


# --------------------------------------------------------------------------------------
# The real TPU XSpace


@pytest.fixture(scope="module")
def tpu(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not TPU.is_file():
        pytest.skip(f"{TPU.name} not found in {GPU} (see ../shared/gpu/README.md)")
    folder = tmp_path_factory.mktemp("xprof-tpu")
    return {
        tool: xprof(TPU, tool, folder / tool)
        for tool in ("hlo_stats", "op_profile", "trace_viewer")
    }


@pytest.fixture(scope="module")
def tpu_timings() -> ProfileTimings:
    return attribute(read_trace(TPU, xla_only=True), skip_first=0)


def _by_program(p: ProfileTimings) -> dict[tuple[str, int | None], Any]:
    return {(m.name, m.program_id): m for m in p.modules.values()}


def test_tpu_ops_agree_with_xprof_hlo_stats(
    tpu: dict[str, Any], tpu_timings: ProfileTimings
) -> None:
    programs = {m.program_id: m for m in tpu_timings.modules.values()}
    rows = list(_rows(tpu["hlo_stats"]))
    seen = set()
    for row in rows:
        m = programs[int(row["program_id"])]
        k = m.kernel(row["hlo_op_name"])
        assert k is not None, row["hlo_op_name"]
        # XProf sums every TPU core; hloscope's figures are per core (the mean)
        d = m.device_count
        assert k.calls * d == row["occurrences"], k.name
        assert _close(k.total_us * d, row["total_time"]), (k.name, k.total_us, row["total_time"])
        seen.add((m.name, k.name))
    ours = {(m.name, k.name) for m in tpu_timings.modules.values() for k in m.kernels}
    assert seen == ours and len(rows) == 17


def test_tpu_modules_agree_with_xprof_trace_viewer(
    tpu: dict[str, Any], tpu_timings: ProfileTimings
) -> None:
    walls = _module_walls(tpu["trace_viewer"])
    ours = _by_program(tpu_timings)
    assert len(walls) == len(ours) == 4  # jit_convert_element_type ran no op, and is here
    for event, (count, us) in walls.items():
        name, _, pid = event[:-1].rpartition("(")
        m = ours[(name, int(pid))]
        assert m.executions * m.device_count == count, name  # per core, XProf's in all
        assert _close(m.total_us * m.device_count, us), (name, m.total_us, us)


def _op_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The HLO ops of XProf's op profile: the nodes naming an op of a program."""
    xla = node.get("xla") or {}
    grouped = node["name"].endswith("duplicate(s)")  # `fusion.1 and its duplicate(s)`
    if xla.get("programId", "0") != "0" and node["metrics"].get("occurrences") and not grouped:
        yield node
    for child in node.get("children", []):
        yield from _op_nodes(child)


@pytest.fixture(scope="module")
def tpu_inspection() -> Inspection:
    return inspect_run(TPU)


def test_tpu_flops_and_bytes_agree_with_xprof_op_profile(
    tpu: dict[str, Any], tpu_inspection: Inspection
) -> None:
    programs = {int(m.module_id or -1): m for m in tpu_inspection.modules}
    flops_checked = bytes_checked = 0
    for node in _op_nodes(tpu["op_profile"]["byProgram"]):
        m = programs[int(node["xla"]["programId"])]
        cost = tpu_inspection.cost(m.key)
        assert cost is not None and m.after_module is not None
        k = cost.kernel(node["name"])
        assert k is not None, node["name"]
        calls = node["metrics"]["occurrences"]
        assert _close(k.cost.flops, node["metrics"].get("rawFlops", 0) / calls), k.name
        flops_checked += 1
        if _in_default_memory(m.after_module, k.name):
            hbm = node["metrics"]["rawBytesAccessedArray"][0] / calls
            assert _close(k.cost.bytes, hbm), (k.name, k.cost.bytes, hbm)
            bytes_checked += 1
    # all 17 ops' FLOPs; the bytes of the 3 fusions and the all-reduce, whose buffers are
    # all in HBM (the copies' other end and the broadcast's scalar are not)
    assert (flops_checked, bytes_checked) == (17, 4)


def _in_default_memory(module: Any, name: str) -> bool:
    """Whether every array an instruction reads or writes is in memory space 0."""
    for comp in module.computations:
        inst = comp.by_name.get(name)
        if inst is None or comp.name in module.fused_computations:
            continue
        shapes = [inst.shape, *(comp.by_name[o].shape for o in inst.operands)]
        return all(
            leaf.layout is None or not leaf.layout.memory_space
            for s in shapes
            for leaf in s.leaves()
        )
    return False


# --------------------------------------------------------------------------------------
# A CPU XSpace made here

PROGRAM = """
import sys
import jax
import jax.numpy as jnp

@jax.jit
def f(x, w):
    return jnp.tanh(x @ w).sum(axis=0) + 1.0

x, w = jnp.ones((256, 128)), jnp.ones((128, 64))
f(x, w).block_until_ready()
jax.profiler.start_trace(sys.argv[1])
for _ in range(5):
    f(x, w).block_until_ready()
jax.profiler.stop_trace()
"""


@pytest.fixture(scope="module")
def cpu_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("jax")
    folder = tmp_path_factory.mktemp("jax-cpu-profile")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run(
        [sys.executable, "-c", PROGRAM, str(folder / "trace")],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    (path,) = (folder / "trace").rglob("*.xplane.pb")
    return path


@pytest.mark.jax
@pytest.mark.slow
def test_cpu_ops_and_modules_agree_with_xprof(cpu_profile: Path, tmp_path: Path) -> None:
    trace = xprof(cpu_profile, "trace_viewer", tmp_path / "trace_viewer")
    ops: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    runs: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for e in trace["traceEvents"]:
        args = e.get("args") or {}
        if e.get("ph") != "X" or "hlo_op" not in args:
            continue
        ops[(args["hlo_module"], args["hlo_op"])][0] += 1
        ops[(args["hlo_module"], args["hlo_op"])][1] += e["dur"]
        span = runs[args["hlo_module"]].setdefault(args["run_id"], [e["ts"], e["ts"] + e["dur"]])
        span[0], span[1] = min(span[0], e["ts"]), max(span[1], e["ts"] + e["dur"])
    ours = attribute(read_trace(cpu_profile, xla_only=True), skip_first=0)
    assert ops and {(m.name, k.name) for m in ours.modules.values() for k in m.kernels} == set(ops)
    for (module, op), (calls, us) in ops.items():
        k = ours.module(module).kernel(op)
        assert k is not None and k.calls == calls, op
        assert _close(k.total_us, us), (op, k.total_us, us)
    for module, spans in runs.items():
        m = ours.module(module)
        assert m.executions == len(spans) and m.clock == "timeline"
        assert _close(m.total_us, sum(b - a for a, b in spans.values())), module
    programs = {str(m.program_id): m for m in ours.modules.values()}
    for row in _rows(xprof(cpu_profile, "hlo_stats", tmp_path / "hlo_stats")):  # none in 2.24
        k = programs[row["program_id"]].kernel(row["hlo_op_name"])
        assert k is not None and k.calls == row["occurrences"]
        assert _close(k.total_us, row["total_time"])
