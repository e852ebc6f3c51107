"""Every document hloscope saves or passes between processes reads back as what was
written (`to_json` then `from_json`), and a malformed one is one `DocumentError`, never a
sentinel value: run.json's sections, bench.json, the dump child's report, the caches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hloscope.capture.child_report import (
    ChildReport,
    CompileWatchReport,
    ProfileOutcome,
    TorchXlaOutcome,
    read_child_report,
)
from hloscope.cli.cached import Output
from hloscope.errors import DocumentError, UsageError
from hloscope.frameworks import Framework
from hloscope.manifest import ProfileSettings, RunStatus
from hloscope.timing.bench import BenchResult, ModeResult
from hloscope.timing.roofline import Peaks


def _through_json(doc: dict[str, Any]) -> Any:
    return json.loads(json.dumps(doc))


def test_child_report_round_trip_and_the_runner_s_own_form(tmp_path: Path) -> None:
    report = ChildReport(
        exit_code=1,
        exception={"type": "ValueError", "message": "m", "traceback": ["a", "b"]},
        versions={"python": "3.11.7", "jax": "0.10.2"},
        devices=({"framework": "jax", "platform": "cpu"},),
        environment={"XLA_FLAGS": "--x"},
        compiles=CompileWatchReport((("jax", "compile", "jit(f)", 0.5),), (Framework.JAX,), ()),
        profile=ProfileOutcome((Framework.JAX,), "jax", ()),
        torch_xla=TorchXlaOutcome({"PT_XLA_DEBUG_LEVEL": "2"}, "CPU", None),
    )
    assert ChildReport.from_json(_through_json(report.to_json())) == report
    assert report.traceback == ("a", "b") and report.torch_xla_env == {"PT_XLA_DEBUG_LEVEL": "2"}
    # as runner.py writes it: profilers by name with details, versions that may be None
    raw = {"versions": {"jax": None, "python": "3"}, "profile": {"profiled": {"jax": {}}}}
    read = ChildReport.from_json(raw)
    assert read.versions == {"python": "3"} and read.profile is not None
    assert read.profile.profiled == (Framework.JAX,)
    path = tmp_path / ".child-report.json"
    assert read_child_report(path) is None  # the child was killed before writing one
    path.write_text("{not json")
    with pytest.raises(DocumentError, match="not JSON"):
        read_child_report(path)
    assert not path.exists()  # read once, then removed


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "expected a JSON object"),
        ({"exit_code": "0"}, "exit_code should be an integer"),
        ({"devices": [1]}, "devices should be a list of objects"),
        ({"compiles": {"events": "x"}}, "should be lists"),
        ({"profile": {"profiled": [1]}}, "profile.profiled should be a list of names"),
        ({"torch_xla": {"device": 3}}, "torch_xla.device should be a string"),
    ],
)
def test_a_malformed_child_report_is_one_document_error(doc: Any, message: str) -> None:
    with pytest.raises(DocumentError, match=message) as caught:
        ChildReport.from_json(doc)
    assert isinstance(caught.value, UsageError)


def test_bench_document_round_trip() -> None:
    result = BenchResult(
        framework=Framework.TORCH_XLA,
        device="cpu",
        modes=(
            ModeResult("eager", "eager", 0.1, 0.002, 0.0019, 0.0021, 50),
            ModeResult("xla", "torch_xla", 0.5, 0.001, 0.0009, 0.0011, 50, speedup=2.0),
        ),
        baseline="eager",
        notes=("note",),
        target="x.py:bench",
    )
    doc = _through_json(result.to_json())
    assert doc["schema_version"] == 1 and doc["framework"] == "torch_xla"
    assert BenchResult.from_json(doc) == result


def test_profile_settings_and_run_status_round_trip() -> None:
    settings = ProfileSettings(
        (Framework.JAX, Framework.TENSORFLOW), "profile", 2, 5, True, (Framework.JAX,), "jax"
    )
    assert ProfileSettings.from_json(_through_json(settings.to_json())) == settings
    assert settings.to_json()["framework"] == "jax+tensorflow"
    assert [RunStatus(s.value) for s in RunStatus] == list(RunStatus)
    assert str(RunStatus.NO_MODULES) == "no-modules" and RunStatus.NO_MODULES.failed


def test_cache_entries_round_trip_and_refuse_another_shape() -> None:
    output = Output("table\n", ("warning: x",))
    assert Output.from_json(_through_json(output.to_json())) == output
    with pytest.raises(DocumentError):
        Output.from_json({"stdout": 3, "warnings": []})
    peaks = Peaks("cpu", 2.0e10, 1.0e11, None, "probe")
    assert Peaks.from_json(_through_json(peaks.to_json())) == peaks
    for bad in ({"name": "x"}, {"name": "x", "bandwidth": "nan", "flops": 1}, [], None):
        with pytest.raises(DocumentError):
            Peaks.from_json(bad)


def test_unreadable_memory_files_are_an_error_beside_the_reports(tmp_path: Path) -> None:
    import shutil

    from hloscope.inspection import inspect_run
    from hloscope.render.json import report_doc
    from tests.conftest import DATA

    run = tmp_path / "run"
    shutil.copytree(DATA / "memory_reports", run)
    broken = next(run.glob("*dense_relu*-buffer-assignment.txt"))
    broken.write_text("Allocation 0: size=not-a-number\n" * 3)
    inspection = inspect_run(run, timings=False, bench=False)
    key = next(m.key for m in inspection.modules if "dense_relu" in m.key)
    assert key in inspection.memory_errors and key not in inspection.memory
    assert any(k not in inspection.memory_errors for k in inspection.memory)  # the others
    doc = next(m for m in report_doc(inspection)["modules"] if m["key"] == key)
    assert doc["memory"] == {"peak_bytes": None, "error": inspection.memory_errors[key]}
