"""`hloscope profile` and `hloscope bench` through typer's CliRunner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.timing.helpers import GPU_RAW, JAX_PROFILE, TF_PROFILE, needs

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
runner = CliRunner()


def test_profile_table() -> None:
    r = runner.invoke(app, ["profile", str(JAX_PROFILE)])
    assert r.exit_code == 0, r.output
    assert "jit_mlp" in r.output and "ynn_fusion.3" in r.output
    assert "= HLO 11" in r.output


def test_profile_json() -> None:
    r = runner.invoke(app, ["profile", str(TF_PROFILE), "--json", "--skip-first", "0"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    (m,) = doc["modules"].values()
    assert m["executions"] == 3 and m["launch_mismatch"] is False
    assert [k["name"] for k in m["kernels"]] == ["MatMul.2", "broadcast_maximum_fusion"]


def test_profile_one_module_json() -> None:
    r = runner.invoke(app, ["profile", str(GPU_RAW), "--module", "gpu_mlp", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["name"] == "jit_gpu_mlp" and doc["executions"] == 3
    assert doc["kernel_launches_per_execution"] == 5


def test_profile_errors(tmp_path: Path) -> None:
    r = runner.invoke(app, ["profile", str(tmp_path)])
    assert r.exit_code == 2
    assert "hloscope dump --profile" in r.output
    r = runner.invoke(app, ["profile", str(JAX_PROFILE), "--module", "nope"])
    assert r.exit_code == 2 and "jit_mlp" in r.output


def test_bench_errors(tmp_path: Path) -> None:
    r = runner.invoke(app, ["bench", "samples/jax_mlp.py"])
    assert r.exit_code == 2 and "SCRIPT.py:FUNCTION" in r.output
    r = runner.invoke(app, ["bench", f"{tmp_path}/none.py:bench"])
    assert r.exit_code == 2 and "no such script" in r.output
    r = runner.invoke(app, ["bench", "x.py:bench", "--save", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such run folder" in r.output


def test_profile_command_never_imports_a_framework() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from hloscope.cli import app\n"
        f"r = CliRunner().invoke(app, ['profile', {str(JAX_PROFILE)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "bad = [m for m in ('tensorflow', 'jax') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_installed_entry_point_profile() -> None:
    exe = Path(sys.executable).with_name("hloscope")
    if not exe.exists():
        pytest.skip("hloscope entry point not installed in this environment")
    out = subprocess.run(
        [str(exe), "profile", str(JAX_PROFILE), "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert json.loads(out)["modules"]["jit_mlp"]["executions"] == 2


@pytest.mark.tf
def test_bench_dense_relu_saves_bench_json(tmp_path: Path) -> None:
    needs("tensorflow")
    r = runner.invoke(
        app,
        [
            "bench",
            f"{SAMPLES / 'dense_relu.py'}:bench",
            "--repeats",
            "2",
            "--json",
            "--save",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert [m["name"] for m in doc["modes"]] == ["eager", "tf.function", "xla"]
    assert doc["target"].endswith("dense_relu.py:bench")
    assert all(m["repeats"] == 2 and m["error"] is None for m in doc["modes"])
