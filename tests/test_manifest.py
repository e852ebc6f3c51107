"""The typed run manifest: round trip, old folders, and malformed run.json files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.errors import DocumentError, UsageError
from hloscope.frameworks import Framework
from hloscope.manifest import (
    MANIFEST,
    Compile,
    ModuleEntry,
    ProfileSettings,
    RunManifest,
    RunStatus,
    Target,
)
from hloscope.runs import load_run
from tests.conftest import DATA


def _run_folder(tmp_path: Path, manifest_text: str) -> Path:
    shutil.copytree(DATA / "tf_dense_relu", tmp_path / "dump")
    (tmp_path / MANIFEST).write_text(manifest_text, encoding="utf-8")
    return tmp_path


def test_round_trip_keeps_every_field() -> None:
    m = RunManifest(
        source="dump",
        command=("hloscope", "dump", "x.py"),
        script_command=("python", "x.py"),
        target=Target("script", "x.py", ("--a", "1")),
        started_at="2026-12-03T07:00:00+00:00",
        profile=ProfileSettings((Framework.JAX,), skip_first=2, profiled=(Framework.JAX,)),
        status=RunStatus.OK,
        frameworks=(Framework.JAX, Framework.TENSORFLOW),
        compiles=(Compile(Framework.JAX, "jit(f)", 0.5, {"compile": 0.5}, "0001.f"),),
        exit_code=0,
        wall_time_s=1.5,
        devices=({"framework": "jax", "platform": "cpu", "kind": "cpu"},),
        exception={"type": "ValueError", "message": "m", "traceback": ["a", "b"]},
        modules=(ModuleEntry("0001.f", "f", "0001", "cpu", "dump/a.txt", "dump/b.txt"),),
    )
    assert RunManifest.loads(m.dumps()) == m
    doc = json.loads(m.dumps())  # the keys and values run folders have always had
    assert doc["framework"] == "jax+tensorflow" and doc["status"] == "ok"
    assert doc["profile"]["framework"] == "jax" and doc["profile"]["skip_first"] == 2
    assert doc["compiles"][0]["framework"] == "jax"
    assert m.script == "x.py"
    assert RunManifest(target=Target("module", "pkg.main")).script == "-m pkg.main"
    assert RunManifest(function="layer").script == "layer"


def test_old_keys_still_load() -> None:
    m = RunManifest.loads(json.dumps({"created": "2026-01-01T00:00:00", "unknown": [1, 2]}))
    assert m.started_at == "2026-01-01T00:00:00" and m.dump_dir == "dump"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"framework": ["jax"]}', "'framework' should be a string, not list"),
        ('{"framework": {"a": 1}}', "'framework' should be a string, not dict"),
        ('{"exit_code": true}', "'exit_code' should be an integer"),
        ('{"exit_code": ' + "9" * 400 + "}", "'exit_code' is out of range"),
        ('{"wall_time_s": 1e999}', "'wall_time_s' is not a finite number"),
        ("[" * 100_000 + "]" * 100_000, "nested too deep|expected a JSON object"),
        ('{"dump_dir": "/etc"}', "outside the run folder"),
        ('{"dump_dir": "../../x"}', "outside the run folder"),
        ('{"modules": [1]}', "should be an object"),
        ('{"profile": {"skip_first": [[1]]}}', "'skip_first' should be an integer"),
        ('{"profile": {"skip_first": -1}}', "skip_first must be 0 or more"),
        ('{"profile": {"dir": "../x"}}', "profile.dir '../x' points outside"),
        ('{"status": "exploded"}', "'status' is 'exploded', not one of running, ok"),
        ('{"compiles": [{"framework": "caffe"}]}', "'caffe' is no framework hloscope knows"),
        ("{truncated", "not a readable run manifest"),
        ("[]", "expected a JSON object"),
    ],
)
def test_malformed_manifest_is_one_clear_error(doc: str, message: str) -> None:
    with pytest.raises(DocumentError, match=message) as caught:
        RunManifest.loads(doc)
    assert isinstance(caught.value, UsageError) and caught.value.exit_code == 2


def test_lone_surrogates_are_replaced_not_printed() -> None:
    m = RunManifest.loads('{"device": "gpu\\ud800", "versions": {"jax": "\\udfff"}}')
    assert m.device is not None
    m.device.encode("utf-8")  # printable: no lone surrogate left
    assert m.versions["jax"].encode("utf-8")


@pytest.mark.parametrize("command", [["report"], ["report", "--json"], ["ops"], ["check"]])
def test_every_command_fails_with_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    run = _run_folder(tmp_path, '{"framework": ["jax"]}')
    extra = ["--max-kernels", "5"] if command == ["check"] else []
    result = CliRunner().invoke(app, [*command, str(run), *extra])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (line,) = result.output.strip().splitlines()
    assert line.startswith("hloscope: error:") and "'framework' should be a string" in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_manifest_is_refused_without_hanging(tmp_path: Path) -> None:
    shutil.copytree(DATA / "tf_dense_relu", tmp_path / "dump")
    os.mkfifo(tmp_path / MANIFEST)
    with pytest.raises(UsageError, match="not a regular file"):
        load_run(tmp_path)


def test_report_json_shows_how_the_run_was_made(tmp_path: Path) -> None:
    m = RunManifest(
        source="dump",
        command=("hloscope", "dump", "model.py"),
        target=Target("script", "model.py"),
        started_at="2026-12-03T07:00:00+00:00",
        frameworks=(Framework.TENSORFLOW,),
    )
    run = _run_folder(tmp_path, m.dumps())
    result = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["run"]
    assert doc["script"] == "model.py" and doc["started"] == m.started_at
    assert doc["command"] == ["hloscope", "dump", "model.py"]
