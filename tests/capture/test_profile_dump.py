"""`hloscope dump --profile`: the profiler runs in the child and the run carries timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.analysis.fusion import analyze_module
from hloscope.capture.child_report import ChildReport
from hloscope.capture.run import plan_dump
from hloscope.cli import app
from hloscope.errors import UsageError
from hloscope.frameworks import Framework
from hloscope.manifest import ProfileSettings
from hloscope.runs import load_run
from tests.capture.test_dump import SAMPLES, _needs


@pytest.mark.slow
@pytest.mark.jax
def test_profiled_jax_run_has_kernel_times_in_report(tmp_path: Path) -> None:
    _needs("jax")
    out = tmp_path / "run"
    args = ["dump", "--profile", str(SAMPLES / "jax_mlp.py"), "-o", str(out), "--", "--calls", "3"]
    result = CliRunner().invoke(app, args, env={"XLA_FLAGS": None})
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["profile"] == {
        "framework": "jax",
        "dir": "profile",
        "skip_first": 1,
        "max_executions": None,
        "python_trace": False,
        "profiled": ["jax"],
        "keras_backend": None,
    }
    assert list((out / "profile" / "jax").rglob("*.xplane.pb"))
    assert "HLOSCOPE_PROFILE" in manifest["env"]

    doc = json.loads(CliRunner().invoke(app, ["report", str(out), "--json"]).stdout)
    (mlp,) = [m for m in doc["modules"] if m["name"] == "jit_mlp"]
    timing = mlp["timing"]
    assert timing["executions"] == 2  # three calls, the first one left out as warm-up
    assert timing["total_us"] > 0
    kernels = {k["name"]: k for k in timing["kernels"]}
    after = load_run(out).module("jit_mlp").load_after()
    assert after is not None
    static = {k.name for k in analyze_module(after).kernels}
    assert set(kernels) == static  # every kernel measured, nothing unknown
    assert all(k["calls"] == 2 and k["mean_us"] > 0 for k in kernels.values())
    kernel_sum = sum(k["total_us"] for k in kernels.values())
    assert abs(kernel_sum - timing["kernel_us"]) < 1e-2
    assert timing["kernel_us"] <= timing["total_us"]


def test_profile_framework_is_left_to_the_child_unless_given(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text("print('no framework here')\n")
    plan = plan_dump(script, profile=True, out=tmp_path / "a")  # nothing guessed, no error
    assert plan.profile is not None and plan.profile.frameworks == ()
    config = json.loads(plan.env_set["HLOSCOPE_PROFILE"])
    assert Path(config["hooks"]).is_file() and config["framework"] is None
    assert config["python_trace"] is False
    plan = plan_dump(script, profile=True, framework="tf", out=tmp_path / "b")
    assert plan.profile is not None and plan.profile.frameworks == (Framework.TENSORFLOW,)
    plan = plan_dump(script, profile=True, profile_steps=5, python_trace=True, out=tmp_path / "c")
    assert plan.profile == ProfileSettings(max_executions=5, python_trace=True)
    assert json.loads(plan.env_set["HLOSCOPE_PROFILE"])["python_trace"] is True
    with pytest.raises(UsageError, match="--framework"):
        plan_dump(script, profile=True, framework="mxnet", out=tmp_path / "d")


def test_the_profiled_framework_is_the_one_whose_modules_were_dumped() -> None:
    from types import SimpleNamespace

    from hloscope.capture.run import _profile_outcome

    def outcome(profiled: list[str], *names: str) -> dict[str, object] | None:
        doc = {"profile": {"profiled": {f: {} for f in profiled}, "keras_backend": "jax"}}
        modules = [SimpleNamespace(name=n) for n in names]
        found = _profile_outcome(ProfileSettings(), ChildReport.from_json(doc), modules)
        return found.to_json() if found is not None else None

    # TensorFlow imported for its data pipeline (its profiler ran), JAX compiled
    both = outcome(["tensorflow", "jax"], "jit_step", "jit_broadcast_in_dim")
    assert both is not None and both["framework"] == "jax"
    assert both["profiled"] == ["jax", "tensorflow"] and both["keras_backend"] == "jax"
    used = outcome(["tensorflow", "jax"], "jit_step", "a_inference_f_12__.1")
    assert used is not None and used["framework"] == "jax+tensorflow"
    nothing = outcome([], "jit_step")
    assert nothing is not None and nothing["framework"] is None
    assert _profile_outcome(None, ChildReport(), []) is None
