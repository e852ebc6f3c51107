"""The CLI's read-only commands: parse, report, ops; errors; no heavy imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.conftest import DATA, dump_file

runner = CliRunner()


def test_parse_json_schema() -> None:
    path = dump_file("jax_mlp", "*jit_mlp.cpu_after_optimizations.txt")
    result = runner.invoke(app, ["parse", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["name"] == "jit_mlp"
    assert doc["instructions"] == sum(c["instructions"] for c in doc["computations"])
    entry = [c for c in doc["computations"] if c["is_entry"]]
    assert len(entry) == 1 and not entry[0]["is_fused"]
    assert sum(c["is_fused"] for c in doc["computations"]) == doc["opcodes"]["fusion"]


def test_parse_text_summary() -> None:
    path = dump_file("tf_dense_relu", "*cpu_after_optimizations.txt")
    result = runner.invoke(app, ["parse", str(path)])
    assert result.exit_code == 0
    assert "12 instructions" in result.stdout and "kLoop" in result.stdout


def test_report_json_schema_on_a_dump_folder() -> None:
    result = runner.invoke(app, ["report", str(DATA / "tf_dense_relu"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    (m,) = doc["modules"]
    assert m["name"].startswith("a_inference_dense_relu")
    assert m["platform"] == "cpu"
    assert m["before"] == {"instructions": 16, "ops": 10}
    assert m["after"]["instructions"] == 12
    assert m["after"]["kernels"] == 2 and m["after"]["launches"] == 2
    assert m["after"]["fusions"] == 1
    assert m["after"]["kernels_by_kind"] == {"unfused:dot": 1, "kLoop": 1}
    assert m["ops_per_kernel"] == 5.0 and m["alone"] == 1
    assert {p["op"]: p["status"] for p in m["provenance"]} == {
        "MatMul": "alone",
        "add": "fused",
        "Relu": "fused",
    }


def test_report_text_folds_trivial_modules() -> None:
    result = runner.invoke(app, ["report", str(DATA / "jax_mlp")], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert "jit_mlp" in result.stdout
    assert "20 trivial helper modules" in result.stdout
    assert "jit__threefry_seed" not in result.stdout.split("trivial helper")[0]
    full = runner.invoke(app, ["report", str(DATA / "jax_mlp"), "--all"], terminal_width=120)
    assert "jit__threefry_seed" in full.stdout


def test_ops_answers_did_relu_fuse_with_matmul() -> None:
    result = runner.invoke(
        app, ["ops", str(DATA / "tf_dense_relu"), "--op", "relu"], terminal_width=160
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("Relu")]
    assert len(lines) == 1
    assert "fused" in lines[0] and "broadcast_maximum_fusion" in lines[0] and "add" in lines[0]


def test_ops_unfused_is_ordered_by_bytes() -> None:
    result = runner.invoke(app, ["ops", str(DATA / "tf_resnet50"), "--unfused", "--json"])
    assert result.exit_code == 0
    (module,) = json.loads(result.stdout)
    sizes = [op["bytes"] for op in module["ops"]]
    assert sizes and sizes == sorted(sizes, reverse=True)
    assert all(op["status"] == "alone" for op in module["ops"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["parse", "no/such/file.txt"], "no such file"),
        (["report", "no/such/run"], "no such file or folder"),
        (["report", str(DATA / "jax_mlp"), "--module", "nonexistent"], "no module matches"),
    ],
)
def test_errors_are_one_line_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_malformed_file_error_names_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT p = f32[2 parameter(0)\n}\n")
    result = runner.invoke(app, ["parse", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:4:" in result.output and "unclosed" in result.output


def test_installed_entry_point_and_no_framework_imports(tmp_path: Path) -> None:
    exe = shutil.which("hloscope", path=str(Path(sys.executable).parent))
    assert exe, "the hloscope console script is not installed in this environment"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "dump" in out or "report" in out
    # a torch_xla run, copied: reading it keeps caches in the run folder
    torch_run = shutil.copytree(DATA / "torch_mlp", tmp_path / "torch_mlp")
    for argv in (
        ["--help"],
        ["report", str(DATA / "jax_mlp"), "--json"],
        ["report", str(torch_run), "--json"],
        ["ops", str(torch_run)],
        ["profile", str(torch_run)],
    ):
        # checked as the process ends (a command that kept big objects ends in `main`)
        probe = (
            "import atexit, sys\n"
            "from hloscope.cli import main\n"
            # pydantic: typer 0.29 imports it for every command (pyproject.toml pins
            # typer below it), a tenth of a second of start-up
            "heavy = {'tensorflow', 'jax', 'jaxlib', 'keras', 'torch', 'torch_xla', 'pydantic'}\n"
            "atexit.register(lambda: print('HEAVY', sorted(heavy & set(sys.modules))))\n"
            f"sys.argv = ['hloscope', *{argv!r}]\n"
            "main()\n"
        )
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert "HEAVY []" in done.stdout, (argv, done.stdout[-500:] + done.stderr[-500:])


def test_dump_records_the_command_line_as_typed(tmp_path: Path) -> None:
    """run.json's `command` is what the parser read, whatever started hloscope
    (`python -m hloscope` here), options as given and the script's arguments after `--`."""
    (tmp_path / "plain.py").write_text("import sys\nprint(sys.argv[1:])\n")
    command = [sys.executable, "-m", "hloscope", "dump", "--out", "run", "--force"]
    command += ["--module", "f.*", "plain.py", "--", "--x", "1"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # XLA compiled nothing
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["command"] == [
        "hloscope", "dump", "--module", "f.*", "--out", "run", "--force",
        "plain.py", "--", "--x", "1",
    ]  # fmt: skip
    assert manifest["status"] == "no-modules" and manifest["target"]["args"] == ["--x", "1"]
