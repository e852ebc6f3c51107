"""A profile file alone is a run: the HLO modules an XSpace carries (its `/host:metadata`
plane's `Hlo Proto`s) give `report`, `ops`, `graph` and `--html` their kernels, FLOPs and
bytes, and the profile's own events their times.

Checked against what the real TPU XSpace in ../shared/gpu records independently of
hloscope's model: the `XLA Ops` events of each `XLA Modules` execution (what the TPU ran),
and the per-op `flops` and `bytes_accessed` stats the TPU compiler's cost analysis wrote
into it; and, on the CPU, against the same run read from its text dump.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope.analysis import kernels as K
from hloscope.cli import app
from hloscope.errors import ProfileReadError, UsageError
from hloscope.hlo.xspace import xspace_hlo
from hloscope.inspection import Inspection, inspect_run
from hloscope.runs import XSPACE_SOURCE, load_run
from hloscope.timing.xplane import XSpace, read_xspace
from tests.conftest import GPU
from tests.timing.helpers import JAX_PROFILE, JAX_XPLANE

TPU = GPU / "xprof_tpu_inference_2.xplane.pb"
BERT = GPU / "tfprofiler_bert_gpu_multi_worker.xplane.pb"
needs_tpu = pytest.mark.skipif(not TPU.is_file(), reason="../shared/gpu/ absent")
pytest.importorskip("google.protobuf", reason="protobuf missing: pip install 'hloscope[proto]'")


@cache
def tpu_inspection() -> Inspection:
    return inspect_run(TPU)


@cache
def tpu_space() -> XSpace:
    return read_xspace(TPU)


def _recorded() -> dict[str, dict[str, Any]]:
    """Per module, from the raw TPU planes: the op events of each execution (the `XLA
    Ops` events starting inside each `XLA Modules` event), and each op's `flops` and
    `bytes_accessed` stats."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"runs": [], "flops": {}, "bytes": {}})
    for plane in tpu_space().planes:
        if not plane.name.startswith("/device:TPU"):
            continue
        lines = {line.name: line for line in plane.lines}
        base = lines["XLA Ops"].timestamp_ns * 1000
        ops = []
        for ev in lines["XLA Ops"].events:
            meta = plane.event_metadata[ev.metadata_id]
            ops.append((base + ev.offset_ps, meta.display_name, plane.stats_dict(meta.stats)))
        base = lines["XLA Modules"].timestamp_ns * 1000
        for ev in lines["XLA Modules"].events:
            name = plane.event_metadata[ev.metadata_id].name.rsplit("(", 1)[0]
            start = base + ev.offset_ps
            inside = [(op, st) for t, op, st in ops if start <= t < start + ev.duration_ps]
            out[name]["runs"].append(Counter(op for op, _ in inside))
            for op, st in inside:
                out[name]["flops"][op] = st["flops"]
                out[name]["bytes"][op] = st["bytes_accessed"]
    return out


@needs_tpu
def test_the_tpu_xspace_is_a_run() -> None:
    run = load_run(TPU)
    assert (run.manifest.source, run.platform, run.manifest.device) == (
        XSPACE_SOURCE,
        "tpu",
        "TPU v6 Lite",
    )
    assert sorted(m.name for m in run.modules) == sorted(_recorded())
    assert all(m.after is not None and m.before is None for m in run.modules)
    i = tpu_inspection()
    assert i.timings is not None and i.timings.source == "xplane"
    assert {m.key for m in i.modules} == set(i.module_timings)


@needs_tpu
def test_launches_are_the_ops_the_tpu_ran_in_each_execution() -> None:
    """Every execution of every module ran the same ops, once each: the HLO's kernels
    (both halves of each async copy, no scalar copy) and nothing else."""
    recorded = _recorded()
    for m in tpu_inspection().modules:
        assert m.after is not None and m.after.platform == K.TPU
        runs = recorded[m.name]["runs"]
        assert runs and all(r == runs[0] for r in runs), m.name
        assert set(runs[0].values()) <= {1}
        assert sorted(runs[0]) == sorted(k.name for k in m.after.kernels), m.name
        assert m.after.launches == sum(runs[0].values())
        timing = tpu_inspection().timing(m.key)
        assert timing is not None and timing.launches_per_execution == m.after.launches
        assert timing.launch_mismatch is False
    jit_f = next(m for m in tpu_inspection().modules if m.name == "jit_f")
    assert jit_f.after is not None and jit_f.after.launches == 15


@needs_tpu
def test_flops_and_bytes_per_op_are_the_tpu_compilers() -> None:
    """Per op, FLOPs equal the TPU compiler's `flops` stat, and bytes its
    `bytes_accessed` (an async copy's buffer once per half, never its aliased source):
    all 17 ops; jit_f comes to 4.03 GFLOP per run."""
    recorded = _recorded()
    checked = 0
    for m in tpu_inspection().modules:
        cost = tpu_inspection().cost(m.key)
        assert cost is not None
        for op, flops in recorded[m.name]["flops"].items():
            k = cost.kernel(op)
            assert k is not None and k.cost.flops == flops, (m.name, op)
            assert k.cost.bytes == pytest.approx(recorded[m.name]["bytes"][op], rel=1e-6)
            checked += 1
    assert checked == 17
    jit_f = next(m for m in tpu_inspection().modules if m.name == "jit_f")
    total = tpu_inspection().cost(jit_f.key)
    assert total is not None and total.total.flops == 3 * 5 * 1024 * 1024 * 256 == 4_026_531_840


@needs_tpu
def test_report_json_ops_graph_and_html_read_the_profile_alone(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(TPU), "--json"])
    assert result.exit_code == 0, result.output
    docs = {m["name"]: m for m in json.loads(result.stdout)["modules"]}
    f = docs["jit_f"]
    assert f["after"]["launches"] == f["timing"]["launches_per_execution"] == 15
    assert f["timing"]["clock"] == "device" and f["cost"]["flops"] == 4_026_531_840
    assert f["roofline"]["device"] == "TPU v6 Lite"
    # the async copies are not held to the HBM roof: a host link bounds them
    assert {k["name"] for k in f["roofline"]["kernels"]} == {
        "broadcast_add_fusion",
        "broadcast_add_fusion.1",
        "broadcast_add_fusion.2",
    }
    idle = docs["jit_convert_element_type"]["timing"]
    assert (idle["executions"], idle["kernels"], idle["launches_per_execution"]) == (1, [], 0)
    text = runner.invoke(app, ["report", str(TPU)])
    assert text.exit_code == 0 and "4.03 GFLOP" in text.output and "= HLO 15" in text.output
    ops = runner.invoke(app, ["ops", str(TPU)])
    assert ops.exit_code == 0 and "broadcast_add_fusion" in ops.output
    svg = tmp_path / "jit_f.svg"
    graph = runner.invoke(app, ["graph", str(TPU), "-M", "jit_f", "-o", str(svg)])
    assert graph.exit_code == 0, graph.output
    assert "copy-done.4" in svg.with_suffix(".dot").read_text(encoding="utf-8")
    page = tmp_path / "report.html"
    html = runner.invoke(app, ["report", str(TPU), "--html", str(page)])
    assert html.exit_code == 0 and "copy-start.5" in page.read_text(encoding="utf-8")


def test_a_cpu_profile_is_the_run_its_dump_is(tmp_path: Path) -> None:
    """The JAX CPU profile carries its modules' optimized HLO: read from it, each module
    has the kernels, launches and cost of the same module read from the text dump."""
    profile = tmp_path / "vm.xplane.pb"
    shutil.copyfile(JAX_XPLANE, profile)
    from_profile = inspect_run(profile)
    from_dump = inspect_run(JAX_PROFILE / "hlo")
    dumped = {(m.name, m.module_id): m for m in from_dump.modules}
    assert from_profile.run.platform == "cpu" and len(from_profile.modules) == len(dumped)
    for m in from_profile.modules:
        twin = dumped[(m.name, m.module_id)]
        assert m.after is not None and twin.after is not None
        assert [k.name for k in m.after.kernels] == [k.name for k in twin.after.kernels]
        assert m.after.launches == twin.after.launches
        ours, theirs = from_profile.cost(m.key), from_dump.cost(twin.key)
        assert ours is not None and theirs is not None
        assert ours.total == theirs.total, m.name
    mlp = next(m for m in from_profile.modules if m.name == "jit_mlp")
    timing = from_profile.timing(mlp.key)
    assert timing is not None and timing.launch_mismatch is False and timing.clock == "timeline"


def test_a_profile_without_hlo_or_not_a_profile_says_so(tmp_path: Path) -> None:
    runner = CliRunner()
    if BERT.is_file():
        with pytest.raises(UsageError, match="carries no HLO module"):
            load_run(BERT)
        result = runner.invoke(app, ["report", str(BERT)])
        assert result.exit_code == 2 and "hloscope profile" in result.output
    junk = tmp_path / "junk.xplane.pb"
    junk.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")  # a plane longer than the file
    with pytest.raises(ProfileReadError, match="not an XSpace"):
        load_run(junk)
    result = runner.invoke(app, ["report", str(junk)])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_embedded_modules_are_validated() -> None:
    with pytest.raises(ProfileReadError):
        xspace_hlo(b"\x0a\x05\x12\x03ab")  # a plane name running past its plane
    assert xspace_hlo(b"").modules == () and xspace_hlo(b"").platform == "cpu"


def test_reading_a_profile_as_a_run_imports_no_framework(tmp_path: Path) -> None:
    profile = tmp_path / "vm.xplane.pb"
    shutil.copyfile(JAX_XPLANE, profile)
    code = (
        "import sys; from hloscope.inspection import inspect_run; "
        f"inspect_run({str(profile)!r}); "
        "print(sorted(m for m in ('tensorflow', 'jax', 'jaxlib', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
