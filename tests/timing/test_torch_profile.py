"""A torch_xla profile (`hloscope dump --profile` of a PyTorch/XLA script): kernel times
against the raw XSpace decoded by TensorFlow's own protobuf module, executions against
torch_xla's own log of them."""

from __future__ import annotations

import math
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.torch_graphs import torch_xla_run
from hloscope.inspection import inspect_run
from hloscope.runs import load_run
from hloscope.timing.sources import load_profile
from tests.conftest import DATA
from tests.timing.helpers import xplane_pb2

RUN = DATA / "torch_mlp"
XPLANE = next(RUN.rglob("*.xplane.pb"))


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A copy: reading a profile keeps its timings in the run folder."""
    return Path(shutil.copytree(RUN, tmp_path / "torch_mlp"))


def _raw_op_times() -> dict[tuple[int, str], list[int]]:
    """(program_id, hlo_op) -> each event's duration in ps, from TensorFlow's XPlane
    protobuf (an independent decoder of the same file)."""
    pb2 = xplane_pb2()
    space = pb2.XSpace()
    space.ParseFromString(XPLANE.read_bytes())
    out: dict[tuple[int, str], list[int]] = defaultdict(list)
    for plane in space.planes:
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                stats = {names[s.metadata_id]: s for s in event.stats}
                if "hlo_op" not in stats or "program_id" not in stats:
                    continue
                op = stats["hlo_op"]
                name = op.str_value or plane.stat_metadata[op.ref_value].name
                program = stats["program_id"]
                pid = program.int64_value or program.uint64_value
                out[(pid, name)].append(event.duration_ps)
    return out


@pytest.mark.tf
@pytest.mark.torch
def test_kernel_times_equal_the_raw_xspace(run_dir: Path) -> None:
    raw = _raw_op_times()
    run = load_run(run_dir)
    p = load_profile(run_dir, skip_first=0)
    assert len(p.modules) == 2
    for timing in p.modules.values():
        assert timing.program_id is not None
        kernels = {k.name: k for k in timing.kernels}
        ours = {name for (pid, name) in raw if pid == timing.program_id}
        assert set(kernels) == ours
        for name, k in kernels.items():
            durations = raw[(timing.program_id, name)]
            assert k.calls == len(durations) == timing.executions
            assert math.isclose(k.total_us, sum(durations) / 1e6, rel_tol=1e-12, abs_tol=1e-9)
        (dumped,) = [m for m in run.modules if m.module_id == f"{timing.program_id:04d}"]
        after = dumped.load_after()
        assert after is not None
        assert timing.launches_per_execution == analyze_module(after).launches
        assert timing.launch_mismatch is False


def test_executions_are_the_steps_torch_xla_logged(run_dir: Path) -> None:
    """Each graph ran as many times in the profile as torch_xla's log says its graph
    hash was executed (3 steps at batch 32, 1 at 48)."""
    run = load_run(run_dir)
    view = torch_xla_run(run)
    assert view is not None
    p = load_profile(run_dir, skip_first=0)
    by_program = {t.program_id: t for t in p.modules.values()}
    for graph in view.graphs.graphs:
        (key,) = graph.modules
        timing = by_program[int(key.split(".", 1)[0])]
        assert timing.executions == graph.executions
        assert len(set(timing.launches_by_execution)) == 1


def test_report_reads_the_profile_with_the_runs_warm_up(run_dir: Path) -> None:
    inspection = inspect_run(run_dir)
    assert inspection.timing_error == ""
    timed = {k: t.executions for k, t in inspection.module_timings.items()}
    # run.json's --skip-first 1: the graph of 3 steps keeps 2; the one of 1 step keeps
    # its only (cold) run
    assert sorted(timed.values()) == [1, 2]
