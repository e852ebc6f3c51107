"""End-to-end tests of `hloscope dump` with real TensorFlow and JAX on the CPU.

Each sample is dumped once per module (module-scoped fixtures) and the tests read that
run: the folder, the manifest, and the summary numbers against the parsed modules. The
failure paths use tiny scripts written to tmp_path. One test runs the installed
`hloscope` entry point in a subprocess (Ctrl-C handling needs a real process).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.report import analyze_run
from hloscope.cli import app
from hloscope.hlo.names import readable_name
from hloscope.hlo.parser import parse_file
from hloscope.runs import is_trivial, load_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
HLOSCOPE = Path(sys.executable).with_name("hloscope")


def _needs(package: str) -> None:
    # find_spec, not importorskip: the framework runs in the child, not in pytest.
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")


@dataclass(frozen=True)
class Dumped:
    out: Path
    result: Result

    @property
    def manifest(self) -> dict:
        return json.loads((self.out / "run.json").read_text())


def dump(args: Sequence[str], *, xla_flags: str | None = None) -> Result:
    """`hloscope dump ARGS` through CliRunner, with XLA_FLAGS set or unset."""
    return CliRunner().invoke(app, ["dump", *args], env={"XLA_FLAGS": xla_flags})


def _dump_sample(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Dumped:
    out = tmp_path_factory.mktemp("runs") / name
    result = dump([str(SAMPLES / f"{name}.py"), "-o", str(out), "--", "--calls", "1", *args])
    assert result.exit_code == 0, result.output
    return Dumped(out, result)


@pytest.fixture(scope="module")
def dense_relu(tmp_path_factory: pytest.TempPathFactory) -> Dumped:
    _needs("tensorflow")
    return _dump_sample(tmp_path_factory, "dense_relu")


@pytest.fixture(scope="module")
def recsys(tmp_path_factory: pytest.TempPathFactory) -> Dumped:
    _needs("tensorflow")
    return _dump_sample(tmp_path_factory, "recsys_scores", "--items", "1000")


@pytest.fixture(scope="module")
def jax_mlp(tmp_path_factory: pytest.TempPathFactory) -> Dumped:
    _needs("jax")
    return _dump_sample(tmp_path_factory, "jax_mlp")


@pytest.fixture(scope="module")
def transformer(tmp_path_factory: pytest.TempPathFactory) -> Dumped:
    _needs("jax")
    return _dump_sample(tmp_path_factory, "jax_transformer_block")


SAMPLE_RUNS = [
    pytest.param("dense_relu", "tensorflow", "a_inference_dense_relu_", marks=pytest.mark.tf),
    pytest.param("recsys", "tensorflow", "a_inference_recsys_scores_", marks=pytest.mark.tf),
    pytest.param("jax_mlp", "jax", "jit_mlp", marks=pytest.mark.jax),
    pytest.param("transformer", "jax", "jit_block", marks=pytest.mark.jax),
]


def _summary_line(output: str, key_part: str) -> list[str]:
    line = next(x for x in output.splitlines() if key_part in x and "→" in x)
    return line.split()


@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "framework", "main_module"), SAMPLE_RUNS)
def test_sample_run_folder_and_manifest(
    request: pytest.FixtureRequest, fixture: str, framework: str, main_module: str
) -> None:
    dumped: Dumped = request.getfixturevalue(fixture)
    out, manifest = dumped.out, dumped.manifest
    assert sorted(p.name for p in out.iterdir()) == ["dump", "run.json", "stderr.log", "stdout.log"]
    assert manifest["schema_version"] == 1
    assert manifest["status"] == "ok" and manifest["exit_code"] == 0
    assert manifest["interrupted"] is False
    assert manifest["framework"] == framework
    assert manifest["versions"][framework] and manifest["versions"]["python"]
    assert manifest["platform"] == "cpu" and manifest["device"]
    assert manifest["wall_time_s"] > 0
    assert manifest["cwd"] == os.getcwd()
    assert manifest["command"][:2] == ["hloscope", "dump"]
    command = manifest["command"]
    assert command[command.index("--out") + 1] == str(out)
    assert command[command.index("--") + 1 :] == manifest["target"]["args"]
    assert manifest["target"]["kind"] == "script"
    assert manifest["target"]["args"][:2] == ["--calls", "1"]
    flags = manifest["env"]["XLA_FLAGS"]
    assert f"--xla_dump_to={out / 'dump'}" in flags and "--xla_dump_hlo_as_text" in flags
    assert manifest["env"]["PYTHONUNBUFFERED"] == "1"
    # the script's own output is streamed and saved
    printed = (out / "stdout.log").read_text()
    assert printed.strip() and printed in dumped.result.stdout
    # modules: every entry points at real files, in the raw dump
    run = load_run(out)
    assert [m["key"] for m in manifest["modules"]] == [m.key for m in run.modules]
    for entry in manifest["modules"]:
        assert (out / entry["before"]).is_file() and (out / entry["after"]).is_file()
        assert entry["platform"] == "cpu"
    main = [m for m in run.modules if m.name.startswith(main_module)]
    assert len(main) == 1 and not is_trivial(main[0])


@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "framework", "main_module"), SAMPLE_RUNS)
def test_sample_summary_matches_parsed_modules(
    request: pytest.FixtureRequest, fixture: str, framework: str, main_module: str
) -> None:
    dumped: Dumped = request.getfixturevalue(fixture)
    run = load_run(dumped.out)
    (main,) = [m for m in run.modules if m.name.startswith(main_module)]
    assert main.before is not None and main.after is not None
    before, after = parse_file(main.before), parse_file(main.after)
    counts = analyze_module(after)
    # piped (as here), each module is one line under its whole key (TensorFlow's
    # mangling dropped), however long
    key = readable_name(main.key)
    cells = _summary_line(dumped.result.stdout, key)
    assert cells[0] == key
    assert cells[1:5] == [
        f"{before.instruction_count}→{after.instruction_count}",
        f"{analyze_module(before).ops}→{counts.kernel_count}",
        str(counts.fusions),
        str(counts.launches),
    ]
    assert counts.kernel_count >= 1 and counts.launches >= counts.kernel_count
    # biggest first, helpers folded into one line
    report = analyze_run(run)
    assert report.main[0].key == main.key
    for row in report.trivial:
        assert f" {readable_name(row.key)} " not in dumped.result.stdout
    if report.trivial:
        assert f"+ {len(report.trivial)} trivial helper modules" in dumped.result.stdout


@pytest.mark.slow
@pytest.mark.jax
def test_jax_sample_says_what_ran(jax_mlp: Dumped) -> None:
    assert "ran in" in jax_mlp.result.stderr
    assert "compiled for cpu (jax " in jax_mlp.result.stderr
    assert f"hloscope report {jax_mlp.out}" in jax_mlp.result.stderr
    assert "Traceback" not in jax_mlp.result.output


# ---------------------------------------------------------------------------------------
# Failure paths


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.py", None, "missing.py: no such file"),
        ("model.txt", "print(1)\n", "model.txt: not a Python script (expected a .py file"),
        ("broken.py", "x = 1\ndef f(:\n", "broken.py:2: syntax error: invalid syntax"),
    ],
)
def test_bad_script_is_one_line_exit_2(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    script = tmp_path / name
    if content is not None:
        script.write_text(content)
    result = dump([str(script), "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"hloscope: error: {tmp_path}/{message}")
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_missing_module_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = dump(["-m", "no_such_module_here", "-o", "run"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "hloscope: error: -m no_such_module_here: no module named 'no_such_module_here' "
        "(run hloscope from the folder that holds it, or install it in that Python)"
    ]
    assert not (tmp_path / "run").exists()


def test_nothing_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain module run with -m and --python: arguments pass through, XLA never runs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.py").write_text("import sys\nprint('args', sys.argv[1:])\n")
    result = dump(["-m", "plain", "--python", sys.executable, "-o", "run", "--", "--a", "1"])
    assert result.exit_code == 1, result.output
    assert "args ['--a', '1']" in result.stdout
    assert "XLA compiled nothing" in result.stderr
    assert "jit_compile=True" in result.stderr and "jax.jit" in result.stderr
    assert "Traceback" not in result.output
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "no-modules" and manifest["modules"] == []
    assert manifest["target"] == {"kind": "module", "name": "plain", "args": ["--a", "1"]}
    assert manifest["framework"] is None
    assert Path(manifest["python"]).resolve() == Path(sys.executable).resolve()
    assert manifest["command"][2:6] == ["-m", "plain", "--python", sys.executable]


def test_non_empty_out_is_refused_without_force(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text("print('run', 1)\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    result = dump([str(script), "-o", str(out)])
    assert result.exit_code == 2
    assert "--force" in result.stderr and "-o DIR" in result.stderr
    assert "not empty" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    # --force replaces an earlier run's files but keeps what is not hloscope's
    (out / "dump").mkdir()
    (out / "dump" / "module_0000.old.before_optimizations.txt").write_text("HloModule old")
    result = dump([str(script), "-o", str(out), "--force"])
    assert result.exit_code == 1  # nothing compiled
    assert (out / "mine.txt").read_text() == "keep me"
    assert list((out / "dump").iterdir()) == []
    assert (out / "stdout.log").read_text() == "run 1\n"


@pytest.mark.jax
def test_script_raises_keeps_dumps_user_xla_flags_and_module_re(tmp_path: Path) -> None:
    _needs("jax")
    script = tmp_path / "raises.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "print(jax.jit(lambda x: x * 2 + 1)(jnp.ones(4)))\n"
        "def fail():\n"
        "    raise ValueError('boom from the model')\n"
        "fail()\n"
    )
    out = tmp_path / "run"
    user_flags = "--xla_dump_hlo_as_proto --xla_dump_to=/somewhere/else"
    result = dump([str(script), "-o", str(out), "--module", "lambda"], xla_flags=user_flags)
    assert result.exit_code == 1
    # said once, before the run, that --xla_dump_to was overridden
    assert result.stderr.count("overriding XLA_FLAGS") == 1
    assert "--xla_dump_to=/somewhere/else" in result.stderr
    # the failure, with the end of the script's traceback
    assert f"{script} failed with exit code 1:" in result.stderr
    tail = result.stderr.split("failed with exit code 1:")[1]
    assert 'raise ValueError("boom from the model")' in tail or "raise ValueError('boom" in tail
    assert "ValueError: boom from the model" in tail
    assert "runpy" not in result.stderr and "runner.py" not in result.stderr
    # dumps kept and summarised; the user's flag was honoured (protos next to the text)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "failed" and manifest["exit_code"] == 1
    assert manifest["exception"]["type"] == "ValueError"
    assert manifest["user_xla_flags"] == user_flags
    assert manifest["env"]["XLA_FLAGS"].startswith("--xla_dump_hlo_as_proto ")
    assert manifest["xla_flag_conflicts"]
    # --module limited the dump to the jitted lambda (JAX's helpers were left out)
    assert [m["name"] for m in manifest["modules"]] == ["jit__lambda"]
    assert "--xla_dump_hlo_module_re=lambda" in manifest["env"]["XLA_FLAGS"]
    assert list((out / "dump").glob("*.hlo.pb"))
    assert "jit__lambda" in result.stdout


@pytest.mark.tf
@pytest.mark.slow
def test_xla_compile_error_is_surfaced(tmp_path: Path) -> None:
    _needs("tensorflow")
    out = tmp_path / "run"
    result = dump([str(SAMPLES / "dynamic_shape_fails.py"), "-o", str(out)])
    assert result.exit_code == 1
    assert "failed with exit code 1" in result.stderr
    after = result.stderr.split("XLA could not compile:", 1)[1]
    assert "Detected unsupported operations" in after and "UniqueWithCounts" in after
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert any("UniqueWithCounts" in line for line in manifest["xla_errors"])
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------------------
# The installed entry point, and Ctrl-C


def test_help_is_fast_and_imports_no_framework() -> None:
    code = (
        "import sys, hloscope.cli, hloscope.runs, hloscope.capture.run\n"
        "print(sorted(m for m in ('tensorflow', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    result = subprocess.run([str(HLOSCOPE), "dump", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "--force" in result.stdout and "--module" in result.stdout


@pytest.mark.jax
@pytest.mark.slow
def test_ctrl_c_stops_the_script_and_keeps_the_dump(tmp_path: Path) -> None:
    _needs("jax")
    script = tmp_path / "sleeper.py"
    script.write_text(
        "import time, jax, jax.numpy as jnp\n"
        "jax.jit(lambda x: x * 2 + 1)(jnp.ones(4)).block_until_ready()\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.Popen(
        [str(HLOSCOPE), "dump", str(script), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 90
    line = b""
    while b"ready" not in line and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
    assert b"ready" in line, proc.stderr.read() if proc.stderr else ""
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - start < 10  # SIGINT reached the script: no SIGTERM grace
    text = stderr.decode()
    assert re.search(r"interrupted .*sleeper\.py after [\d.]+ s; kept the \d+ modules", text)
    assert "KeyboardInterrupt" in text  # the script's own traceback, streamed
    assert "hloscope: error" not in text
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["interrupted"] is True
    assert any(m["name"] == "jit__lambda" for m in manifest["modules"])
    assert b"jit__lambda" in stdout
