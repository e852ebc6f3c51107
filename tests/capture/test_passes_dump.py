"""`hloscope dump --passes`: the flags and logging variables it sets, what it says it
wrote, and a real run whose story `hloscope passes` tells."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.capture.flags import merge_xla_flags, split_flags
from hloscope.capture.passes import pass_dump_size, pass_environ
from hloscope.capture.run import plan_dump
from hloscope.cli import app
from hloscope.errors import UsageError
from tests.conftest import DATA

runner = CliRunner()
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}


def test_pass_re_flag_is_added_and_a_user_one_replaced() -> None:
    merged = merge_xla_flags("--xla_dump_hlo_pass_re=fusion --xla_foo=1", Path("/d"), None, ".*")
    assert split_flags(merged.value) == [
        "--xla_foo=1",
        "--xla_dump_to=/d",
        "--xla_dump_hlo_as_text",
        "--xla_dump_hlo_pass_re=.*",
    ]
    assert merged.conflicts == (
        "--xla_dump_hlo_pass_re=fusion (hloscope sets --xla_dump_hlo_pass_re=.*)",
    )
    # without --passes the user's own regex stays
    kept = merge_xla_flags("--xla_dump_hlo_pass_re=fusion", Path("/d"), None)
    assert "--xla_dump_hlo_pass_re=fusion" in split_flags(kept.value) and not kept.conflicts


def test_logging_variables_keep_the_users_modules() -> None:
    env, notes = pass_environ({})
    assert env == {"TF_CPP_VMODULE": "hlo_pass_pipeline=1", "TF_CPP_MIN_LOG_LEVEL": "0"}
    assert notes == ()
    env, notes = pass_environ(
        {"TF_CPP_VMODULE": "gpu_compiler=2,hlo_pass_pipeline=3", "TF_CPP_MIN_LOG_LEVEL": "2"}
    )
    assert env["TF_CPP_VMODULE"] == "gpu_compiler=2,hlo_pass_pipeline=1"
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert len(notes) == 2 and "replaced by 0" in notes[1]


def test_plan_sets_them_only_with_passes(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("pass\n")
    plain = plan_dump(tmp_path / "m.py", out=tmp_path / "a", environ={})
    # TensorFlow's compile log is always on; the pass timers only with --passes
    assert "hlo_pass_pipeline" not in plain.env_set["TF_CPP_VMODULE"]
    assert "TF_CPP_MIN_LOG_LEVEL" not in plain.env_set and plain.passes is None
    plan = plan_dump(tmp_path / "m.py", out=tmp_path / "b", environ={}, passes=".*")
    assert plan.passes == ".*"
    assert plan.env_set["XLA_FLAGS"].endswith("--xla_dump_hlo_pass_re=.*")
    assert plan.env_set["TF_CPP_VMODULE"] == "device_compilation_profiler=1,hlo_pass_pipeline=1"
    with pytest.raises(UsageError, match="--pass-re"):
        plan_dump(tmp_path / "m.py", out=tmp_path / "c", environ={}, passes="(")


def test_dump_size_counts_per_pass_dumps_only(tmp_path: Path) -> None:
    shutil.copytree(DATA / "jax_passes" / "dump", tmp_path / "dump")
    size = pass_dump_size(tmp_path / "dump")
    files = [
        p
        for p in (tmp_path / "dump").iterdir()
        if ".after_" in p.name or ".copy-insertion." in p.name
    ]
    assert size.files == len(files) == 26
    assert size.bytes == sum(p.stat().st_size for p in files)
    assert not size.big


@pytest.mark.slow
@pytest.mark.jax
def test_dump_passes_then_passes_tells_the_story(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = tmp_path / "run"
    script = DATA / "jax_passes" / "script.py"
    result = runner.invoke(app, ["dump", "--passes", str(script), "-o", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "per-pass dumps: 26 files" in result.output
    manifest = json.loads((out / "run.json").read_text())
    assert "--passes" in manifest["command"]
    modules = manifest["env"]["TF_CPP_VMODULE"].split(",")
    assert modules == ["device_compilation_profiler=1", "hlo_pass_pipeline=1"]
    story = runner.invoke(app, ["passes", str(out), "--json"], env=ENV)
    assert story.exit_code == 0, story.output
    [module] = json.loads(story.output)["modules"]
    passes = {p["pass"]: p for p in module["passes"]}
    assert passes["call-inliner"]["instructions"] == 17
    assert passes["dot-library-rewriter"]["duration_s"] > 0  # timed from the run's log
    assert [k["first_pass"] for k in module["kernels"]] == ["dot-library-rewriter", "fusion"]
