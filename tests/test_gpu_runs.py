"""A real nsys-jax archive as a run, end to end: modules from its binary HLO dump, GPU
time from its NVTX trace, checked against `maxtext_truth.json` (what the GPU ran,
computed from the trace alone, independently of hloscope).

The archive and the truth live in ../shared/gpu (see its README.md); the tests skip
with a reason where they are absent.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.errors import UsageError
from hloscope.inspection import Inspection, inspect_run
from hloscope.runs import load_run
from tests.conftest import GPU

ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"
TRUTH = GPU / "maxtext_truth.json"

pytestmark = [
    pytest.mark.skipif(not ARCHIVE.is_file(), reason="../shared/gpu/ absent"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
pyarrow = pytest.importorskip("pyarrow", reason="pyarrow missing: pip install 'hloscope[nsys]'")


@cache
def inspection() -> Inspection:
    return inspect_run(ARCHIVE)


@cache
def truth() -> dict[str, Any]:
    return dict(json.loads(TRUTH.read_text(encoding="utf-8"))["modules"])


def _modules(name: str) -> list[Any]:
    return [m for m in inspection().modules if m.name == name]


def test_the_archive_is_a_run() -> None:
    run = load_run(ARCHIVE)
    assert run.manifest.source == "nsys-jax" and run.platform == "sm_90"
    assert {m.name for m in run.modules} >= set(truth())
    assert all(m.after is not None and m.after.name.endswith(".hlo.pb.xz") for m in run.modules)
    assert inspection().timings is not None and inspection().timings.source == "nsys"


def test_static_launches_equal_the_thunks_the_gpu_ran() -> None:
    for name, t in truth().items():
        modules = _modules(name)
        if len(modules) != 1:  # jit_add: two programs of one name, merged by the truth
            continue
        (m,) = modules
        assert m.after is not None
        assert math.isclose(m.after.launches, t["thunks_per_execution"], rel_tol=0.01), name


def test_every_hlo_op_of_the_trace_is_a_kernel_with_its_gpu_time() -> None:
    for name, t in truth().items():
        modules = _modules(name)
        if len(modules) != 1:
            continue
        (m,) = modules
        timing = inspection().timing(m.key)
        assert timing is not None and not timing.unknown_ops, (name, timing and timing.unknown_ops)
        # the truth counts every GPU's executions; hloscope's are per GPU
        assert timing.executions * timing.device_count == t["executions"]
        # the kernel's time per execution is the sum of its hlo_ops' times in the truth
        times = inspection().kernel_times(m.key)
        assert times is not None
        kernels = {k.name: k for k in (m.after.kernels if m.after else ())}
        booked = {op: k for k in timing.kernels for op in k.hlo_ops}
        assert set(t["ops"]) <= set(booked), name
        for kernel in timing.kernels:
            expected = sum(t["ops"][op]["ns_per_execution"] for op in kernel.hlo_ops) / 1e3
            assert math.isclose(times[kernel.name], expected, rel_tol=1e-9), kernel.name
            assert kernel.name in kernels  # a top-level kernel of the HLO


def test_train_step_figures() -> None:
    (m,) = _modules("jit_train_step")
    timing = inspection().timing(m.key)
    t = truth()["jit_train_step"]
    assert timing is not None and timing.source == "nsys"
    assert timing.static_launches == 980 == t["thunks_per_execution"]
    assert timing.launch_mismatch is False
    assert timing.device_ops_per_execution == t["gpu_ops_per_execution"]
    assert math.isclose(timing.median_us, t["module_ns_per_execution"] / 1e3, rel_tol=1e-9)
    # async collectives overlap compute: the busy time is below the summed kernel time
    assert timing.busy_us is not None and timing.busy_us < timing.kernel_us


def test_report_json_of_the_archive() -> None:
    result = CliRunner().invoke(app, ["report", str(ARCHIVE), "--json", "-M", "jit_train_step"])
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)["modules"]
    timing = doc["timing"]
    # 4 steady executions on each of the 4 GPUs (the truth's 16 in all)
    assert timing["source"] == "nsys" and timing["executions"] == 4
    assert timing["device_count"] == 4 and len(timing["per_device"]) == 4
    assert sum(d["executions"] for d in timing["per_device"]) == 16
    assert timing["device_ops_per_execution"] == 1177
    by_op = {op: k for k in timing["kernels"] for op in k["hlo_ops"]}
    # the async pair's wrapped op and the custom fusion's cuBLAS call, as the trace names them
    assert by_op["all-to-all.3"]["name"].startswith("all-to-all-start")
    assert by_op["custom-call.220"]["name"] != "custom-call.220"
    assert all(k["device_ops"] >= k["calls"] for k in timing["kernels"])


def test_profile_reads_the_real_tpu_xspace() -> None:
    result = CliRunner().invoke(app, ["profile", str(GPU / "xprof_tpu_inference_2.xplane.pb")])
    assert result.exit_code == 0, result.output
    assert "jit_f" in result.output and "0 op events" not in result.output


def test_profile_says_the_bert_gpu_xspace_holds_no_xla_ops() -> None:
    path = GPU / "tfprofiler_bert_gpu_multi_worker.xplane.pb"
    result = CliRunner().invoke(app, ["profile", str(path)])
    assert "no XLA op" in result.output, result.output
    assert "warm-up" not in result.output


def test_reading_the_archive_imports_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from hloscope.inspection import inspect_run; "
        f"inspect_run({str(ARCHIVE)!r}); "
        "print(sorted(m for m in ('tensorflow', 'jax', 'jaxlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_unpacked_zip_is_read_only_inside_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zip's dump is unpacked into a shared temp folder: a cache whose dump was made a
    link elsewhere, or a cache that is itself a link, is not read through."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert {m.name for m in load_run(ARCHIVE).modules} >= set(truth())
    (cache,) = (tmp_path / "tmp").glob("hloscope-nsys-*")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(cache / "dump", elsewhere)
    (cache / "dump").symlink_to(elsewhere)
    with pytest.raises(UsageError, match="holds no HLO dump"):
        load_run(ARCHIVE)
    shutil.rmtree(cache)
    (tmp_path / "planted" / "dump").mkdir(parents=True)
    (tmp_path / "planted" / ".complete").touch()
    for f in elsewhere.iterdir():
        shutil.copy(f, tmp_path / "planted" / "dump")
    cache.symlink_to(tmp_path / "planted")
    with pytest.raises(UsageError, match="is a link or not yours; not read"):
        load_run(ARCHIVE)


def _as_gpu_xspace() -> Any:
    """The archive's thunks as a GPU XSpace records kernels: an event per thunk on its
    GPU's plane, with XLA's `hlo_op`, `hlo_module`, `program_id` and `run_id` stats, on
    the stream it ran on (overlapping thunks, such as async collectives, on another)."""
    from hloscope.timing.nsys import read_nsys
    from hloscope.timing.trace import Trace, TraceEvent

    archive = read_nsys(ARCHIVE)
    threads = sorted({e.thread for e in archive.executions})
    runs: dict[tuple[Any, ...], int] = {}
    events = []
    for e in archive.executions:
        gpu = threads.index(e.thread)
        run_id = runs[(e.module, e.program_id, gpu)] = (
            runs.get((e.module, e.program_id, gpu), -1) + 1
        )
        streams: list[int] = []  # when the last thunk on each stream ends
        for t in sorted(e.thunks, key=lambda t: t.start_ns):
            stream = next((i for i, end in enumerate(streams) if end <= t.start_ns), len(streams))
            streams[stream:] = [t.start_ns + t.duration_ns, *streams[stream + 1 :]]
            stats = {"hlo_op": t.op, "hlo_module": e.module, "program_id": e.program_id}
            events.append(
                TraceEvent(
                    f"kernel {t.op}", f"/device:GPU:{gpu}", f"Stream #{stream}", stream,
                    t.start_ns * 1000, t.duration_ns * 1000, {**stats, "run_id": run_id},
                )
            )  # fmt: skip
    return Trace(None, "xplane", tuple(events))


def test_gpu_xspace_events_are_booked_to_kernels_under_their_runtime_names() -> None:
    """Read as a GPU XSpace, the trace's thunks land on the kernels the HLO has, those the
    runtime names after another instruction included (`all-to-all.3` for the async pair
    `all-to-all-start`, `custom-call.220` for a `__custom_fusion`), with the times and
    launches the trace says: nothing unknown, nothing missing."""
    from hloscope.timing.attribution import attribute
    from hloscope.timing.results import timing_key

    modules = [m for m in inspection().modules if m.after is not None and m.module_id]
    shared = {m.name for m in modules if len(_modules(m.name)) > 1}
    static = {timing_key(m.name, int(m.module_id or 0), m.name in shared): m.after for m in modules}
    timings = attribute(_as_gpu_xspace(), skip_first=1, static=static)
    checked = 0
    for key, m in timings.modules.items():
        assert m.unknown_ops == () and m.missing_kernels == (), key
        want = truth().get(key)  # a name two programs share is summed in the truth
        if want is None or len(_modules(key)) != 1:
            continue
        assert m.executions * m.device_count == want["executions"]
        for k in m.kernels:
            ns = sum(want["ops"][op]["ns_per_execution"] for op in k.hlo_ops)
            assert k.total_us * 1e3 / m.executions == pytest.approx(ns, rel=1e-9), (key, k.name)
        checked += 1
    # Launches: an XSpace does not mark where one thunk's kernels end and the next
    # thunk's begin, so back-to-back kernels of one op are read as one call. That holds
    # for jit_train_step (980 = 980); jit_raw_generate_synthetic_data's four consecutive
    # `copy_fusion` thunks read as one (2 per execution where the trace has 5).
    train = timings.modules["jit_train_step"]
    assert train.launches_per_execution == truth()["jit_train_step"]["thunks_per_execution"] == 980
    assert {"all-to-all.3", "custom-call.220"} <= {op for k in train.kernels for op in k.hlo_ops}
    assert checked >= 6 and len(static) == len(timings.modules) == 13


def test_what_several_kernels_of_an_op_share_is_said_once() -> None:
    """A dot_general run as six cuBLAS calls (the while loop's peeled and double-buffered
    copies) is explained once, not six times over."""
    (train,) = _modules("jit_train_step")
    assert train.provenance is not None
    several = [
        p
        for p in train.provenance.placements
        if len(p.kernels) > 1 and "library call" in p.evidence
    ]
    assert any(
        p.evidence == f"{len(p.kernels)} kernels are library calls (custom-call:__cublas$gemm)"
        for p in several
    )
    for p in several:
        assert p.evidence.count("library call") == 1, p.evidence
