"""`hloscope dump --profile` on every way of reaching XLA: the framework is decided in the
child while the script runs, and the profile holds every kernel of the module it ran.

Each script (tests/data/profile_scripts, see its HOW.md) runs its compiled step three
times, so three executions is the truth to check against: two steady-state ones after
the warm-up one. Kernel names are checked against the after-optimization HLO the same
run dumped, parsed by XLA's own parser where JAX is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope.analysis.fusion import analyze_module
from hloscope.capture.run import TIMINGS_CACHE, plan_dump, run_dump
from hloscope.cli import app
from hloscope.runs import load_run
from hloscope.store import REPORT_CACHE
from hloscope.timing.sources import load_profile
from hloscope.timing.xplane import find_profiles, read_xspace
from tests.conftest import DATA

SCRIPTS = DATA / "profile_scripts"


def _needs(*packages: str) -> None:
    for package in packages:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")


def _quiet(data: bytes) -> None:
    pass


def _profile(
    script: str, out: Path, env: dict[str, str] | None = None, **options: Any
) -> dict[str, Any]:
    """Run `dump --profile` on a script; return run.json."""
    environ = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "KERAS_BACKEND")}
    environ.update({"TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
    plan = plan_dump(SCRIPTS / script, out=out, profile=True, environ=environ, **options)
    result = run_dump(plan, out=_quiet, err=_quiet, environ=environ)
    assert result.status == "ok", (out / "stderr.log").read_text()[-3000:]
    manifest: dict[str, Any] = json.loads((out / "run.json").read_text())
    return manifest


def _check_module(out: Path, prefix: str) -> None:
    """The run's module named `prefix...` ran three times, and every kernel of its
    after-optimization HLO was measured in both steady-state executions."""
    timings = load_profile(out)
    (key,) = [k for k in timings.modules if k.startswith(prefix)]
    m = timings.modules[key]
    assert (m.executions, m.skipped, m.cold) == (2, 1, False)
    after = load_run(out).module(m.name).load_after()
    assert after is not None
    static = analyze_module(after)
    assert {k.name for k in m.kernels} == {k.name for k in static.kernels}
    assert m.launch_mismatch is False and m.launches_per_execution == static.launches
    assert 0 < m.kernel_us <= m.total_us


def _events_named(out: Path, text: str) -> int:
    """Events of the raw profiles (decoded plane by plane) whose name contains text."""
    n = 0
    for path in find_profiles(out / "profile"):
        for plane in read_xspace(path).planes:
            names = {k: m.name for k, m in plane.event_metadata.items()}
            n += sum(text in names.get(e.metadata_id, "") for ln in plane.lines for e in ln.events)
    return n


@pytest.mark.slow
@pytest.mark.jax
def test_plain_jax(tmp_path: Path) -> None:
    _needs("jax")
    manifest = _profile("jax_plain.py", tmp_path / "run")
    assert manifest["profile"]["framework"] == "jax"
    assert manifest["profile"]["profiled"] == ["jax"]
    assert manifest["profile"]["keras_backend"] is None
    _check_module(tmp_path / "run", "jit_layer")
    layer = load_profile(tmp_path / "run").module("jit_layer")
    assert layer.compile_us is not None and 0 < layer.compile_us < manifest["wall_time_s"] * 1e6
    # no Python tracer: no event of the script's own functions
    assert _events_named(tmp_path / "run", "jax_plain.py") == 0


@pytest.mark.slow
@pytest.mark.jax
def test_python_trace_is_asked_for(tmp_path: Path) -> None:
    _needs("jax")
    manifest = _profile("jax_plain.py", tmp_path / "run", python_trace=True)
    assert manifest["profile"]["python_trace"] is True
    assert _events_named(tmp_path / "run", "jax_plain.py") > 0
    _check_module(tmp_path / "run", "jit_layer")


@pytest.mark.slow
@pytest.mark.tf
def test_plain_tensorflow(tmp_path: Path) -> None:
    _needs("tensorflow")
    # with TensorFlow's warnings shown: hloscope's own options must cause none
    manifest = _profile("tf_plain.py", tmp_path / "run", env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert manifest["profile"]["framework"] == "tensorflow"
    assert manifest["profile"]["profiled"] == ["tensorflow"]
    _check_module(tmp_path / "run", "a_inference_layer")
    stderr = (tmp_path / "run" / "stderr.log").read_text()
    assert "expects an i value" not in stderr


@pytest.mark.slow
@pytest.mark.jax
def test_keras_on_jax_from_the_environment(tmp_path: Path) -> None:
    _needs("keras", "jax")
    manifest = _profile("keras_predict.py", tmp_path / "run", env={"KERAS_BACKEND": "jax"})
    assert "keras on jax" in (tmp_path / "run" / "stdout.log").read_text()
    profile = manifest["profile"]
    assert (profile["framework"], profile["profiled"], profile["keras_backend"]) == (
        "jax",
        ["jax"],
        "jax",
    )
    assert manifest["versions"].get("tensorflow") is None  # nothing imported it
    _check_module(tmp_path / "run", "jit_predict_step")


@pytest.mark.slow
@pytest.mark.jax
def test_keras_on_jax_from_keras_json(tmp_path: Path) -> None:
    _needs("keras", "jax")
    home = tmp_path / "keras_home"
    home.mkdir()
    (home / "keras.json").write_text(json.dumps({"backend": "jax"}))
    manifest = _profile("keras_predict.py", tmp_path / "run", env={"KERAS_HOME": str(home)})
    assert manifest["profile"]["keras_backend"] == "jax"
    assert manifest["profile"]["profiled"] == ["jax"]
    _check_module(tmp_path / "run", "jit_predict_step")


@pytest.mark.slow
@pytest.mark.tf
def test_keras_on_tensorflow(tmp_path: Path) -> None:
    _needs("keras", "tensorflow")
    env = {"KERAS_BACKEND": "tensorflow"}
    manifest = _profile("keras_predict.py", tmp_path / "run", env=env)
    assert "keras on tensorflow" in (tmp_path / "run" / "stdout.log").read_text()
    profile = manifest["profile"]
    # Keras on TensorFlow imports JAX too; JAX compiled nothing, so it was not profiled
    assert (profile["framework"], profile["profiled"]) == ("tensorflow", ["tensorflow"])
    _check_module(tmp_path / "run", "a_inference_one_step_on_data")


@pytest.mark.slow
@pytest.mark.tf
def test_tf_keras(tmp_path: Path) -> None:
    _needs("tf_keras", "tensorflow")
    manifest = _profile("tf_keras_predict.py", tmp_path / "run")
    assert manifest["profile"]["framework"] == "tensorflow"
    assert manifest["profile"]["keras_backend"] == "tensorflow"
    _check_module(tmp_path / "run", "a_inference_run_step")


@pytest.mark.slow
@pytest.mark.jax
def test_flax(tmp_path: Path) -> None:
    _needs("flax", "jax")
    manifest = _profile("flax_train.py", tmp_path / "run")
    assert manifest["profile"]["profiled"] == ["jax"]
    _check_module(tmp_path / "run", "jit_train_step")


@pytest.mark.slow
@pytest.mark.jax
def test_framework_override_that_never_runs_records_nothing_and_says_so(tmp_path: Path) -> None:
    _needs("jax")
    out = tmp_path / "run"
    args = ["dump", "--profile", "--framework", "tf", str(SCRIPTS / "jax_plain.py"), "-o", str(out)]
    result = CliRunner().invoke(app, args, env={"XLA_FLAGS": None})
    assert result.exit_code == 0, result.output
    assert "--profile recorded nothing" in result.output
    manifest = json.loads((out / "run.json").read_text())
    assert (
        manifest["profile"]["profiled"] == [] and manifest["profile"]["framework"] == "tensorflow"
    )
    assert not list(out.rglob("*.xplane.pb"))


@pytest.mark.slow
@pytest.mark.jax
def test_force_removes_the_earlier_profile_and_keeps_user_files(tmp_path: Path) -> None:
    _needs("jax")
    out = tmp_path / "run"
    _profile("jax_plain.py", out)
    runner = CliRunner()
    first = json.loads(runner.invoke(app, ["report", str(out), "--json"]).stdout)
    assert any(m.get("timing") for m in first["modules"])
    assert (out / TIMINGS_CACHE).is_file()  # the report kept its timings
    # a report of a run older than a second keeps its document too; this one is younger
    (out / REPORT_CACHE).write_text('{"version": 1, "entries": {}}')
    (out / "notes.txt").write_text("mine")
    (out / "mine").mkdir()
    args = ["dump", "--force", str(SCRIPTS / "jax_plain.py"), "-o", str(out)]
    result = runner.invoke(app, args, env={"XLA_FLAGS": None})
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    for name in ("dump/", "profile/", "run.json", "stdout.log", "stderr.log", TIMINGS_CACHE):
        assert name in said
    assert REPORT_CACHE in said and not (out / REPORT_CACHE).exists()
    assert "other files there were kept" in said
    assert (out / "notes.txt").read_text() == "mine" and (out / "mine").is_dir()
    assert not (out / "profile").exists() and not (out / TIMINGS_CACHE).exists()
    doc = json.loads(runner.invoke(app, ["report", str(out), "--json"]).stdout)
    assert doc["modules"] and not any(m.get("timing") for m in doc["modules"])
