"""`report`, `ops`, `graph` and `check` on runs that compiled a function several times,
and on a run that failed: what they say first, the JSON fields, picking a variant."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.conftest import DATA

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Copies of the captured runs (`report --json` keeps its output in a run folder)."""
    for name in ("jax_recompile", "tf_retrace", "tf_compile_fails"):
        shutil.copytree(DATA / name, tmp_path / name)
    return tmp_path


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=ENV)
    return result.exit_code, result.output


def test_report_leads_a_recompiled_function_with_one_line(runs: Path) -> None:
    code, out = _invoke("report", str(runs / "jax_recompile"))
    assert code == 0, out
    manifest = json.loads((runs / "jax_recompile" / "run.json").read_text(encoding="utf-8"))
    seconds = sum(c["seconds"] for c in manifest["compiles"] if c["function"] == "jit(attend)")
    head = next(line for line in out.splitlines() if line.startswith("jit_attend compiled"))
    assert head.startswith("jit_attend compiled 6× · args 0, 1, 2 dim 0: 8, 16, 24, 32, 48, 64 · ")
    shown = re.search(r"· ([\d.]+) (s|ms) compiling$", head)
    assert shown is not None
    assert float(shown[1]) * (1 if shown[2] == "s" else 1e-3) == pytest.approx(seconds, rel=0.01)
    assert "  #4 fuses differently: 10 kernels instead of 7 (kLoop +3)" in out
    assert "JAX: the input types changed at q, k, v (e.g. at q, now f32[16,64]" in out
    assert "  advice: pad or bucket args 0, 1, 2 dim 0" in out
    total = sum(c["seconds"] for c in manifest["compiles"])
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("compiling took "))
    cold = lines[at]
    assert f"of the run's {manifest['wall_time_s']:.2f} s wall time" in cold
    assert "the JIT cold start" in lines[at + 1]
    assert f"{total:.2f} s" in cold
    # the table lists the variants together, in compile order
    rows = [line.split()[0] for line in out.splitlines() if re.match(r"00\d\d\.jit_attend ", line)]
    assert rows == [f"00{n}.jit_attend" for n in (12, 16, 20, 24, 28, 32)]


def test_report_of_a_tf_retrace(runs: Path) -> None:
    code, out = _invoke("report", str(runs / "tf_retrace"))
    assert code == 0, out
    assert "a_inference_attend compiled 6× · args 0, 1, 2 dim 0: 8, 16, 24, 32, 40, 48" in out
    assert "#4, #5 fuse differently: 10 kernels instead of 7 (kLoop +3)" in out
    assert "TensorFlow: 6 of the last 11 calls to attend triggered tf.function retracing" in out
    assert "input_signature" in out


def test_report_json_fields(runs: Path) -> None:
    code, out = _invoke("report", str(runs / "jax_recompile"), "--json")
    assert code == 0, out
    doc = json.loads(out)
    manifest = json.loads((runs / "jax_recompile" / "run.json").read_text(encoding="utf-8"))
    assert doc["run"]["status"] == "ok" and doc["run"]["error"] is None
    assert doc["run"]["compile_s"] == pytest.approx(sum(c["seconds"] for c in manifest["compiles"]))
    by_key = {m["key"]: m for m in doc["modules"]}
    m = by_key["0028.jit_attend"]
    assert (m["function"], m["compilation"]) == ("jit_attend", 4)
    assert m["inputs"] == ["f32[48,64]"] * 3 and m["outputs"] == ["f32[48,64]"]
    recorded = next(c for c in manifest["compiles"] if c["module"] == "0028.jit_attend")
    assert m["compile_s"] == pytest.approx(recorded["seconds"])
    attend = next(c for c in doc["compilations"] if c["function"] == "jit_attend")
    assert set(attend) == {"function", "count", "modules", "varying", "kernels", "compile_s"}
    assert attend["count"] == 6
    assert attend["modules"] == [f"00{n}.jit_attend" for n in (12, 16, 20, 24, 28, 32)]
    lengths = [8, 16, 24, 32, 48, 64]
    assert attend["varying"] == [{"arg": a, "dim": 0, "values": lengths} for a in range(3)]
    assert attend["kernels"] == [by_key[k]["after"]["kernels"] for k in attend["modules"]]
    assert all(c["count"] > 1 for c in doc["compilations"])


def test_pick_a_variant_by_index_or_shape(runs: Path) -> None:
    run = str(runs / "jax_recompile")
    code, out = _invoke("ops", run, "-M", "jit_attend#4")
    assert code == 0 and out.startswith("── jit_attend  [module 0028]")
    code, out = _invoke("report", run, "-M", "jit_attend(f32[48,64])", "--json")
    assert code == 0 and [m["key"] for m in json.loads(out)["modules"]] == ["0028.jit_attend"]
    code, out = _invoke("ops", run, "-M", "jit_attend")  # every compilation of it
    assert code == 0 and len(re.findall(r"^── jit_attend", out, re.M)) == 6
    code, out = _invoke("check", run, "-M", "jit_attend#5", "--max-kernels", "6")
    assert code == 0, out
    code, out = _invoke("graph", run, "-M", "jit_attend", "-o", str(runs / "g.dot"))
    assert code == 2
    assert "matches 6 compilations of jit_attend" in out and "jit_attend#5 (f32[64,64]" in out
    code, out = _invoke("graph", run, "-M", "jit_attend#5", "-o", str(runs / "g.dot"))
    assert code == 0 and (runs / "g.dot").is_file()


def test_a_failed_run_says_so_first(runs: Path) -> None:
    run = str(runs / "tf_compile_fails")
    code, out = _invoke("report", run)
    lines = out.splitlines()
    assert code == 0
    assert "tensorflow 2.21.0" in lines[0] and "jax" not in lines[0]
    assert lines[1].startswith("✗ the run failed (exit code 1): ")
    assert "Detected unsupported operations" in lines[1] and "UniqueWithCounts" in lines[1]
    assert lines[1].endswith("; 0 modules dumped")
    code, out = _invoke("report", run, "--json")
    doc = json.loads(out)
    assert doc["run"]["status"] == "failed" and doc["run"]["exit_code"] == 1
    assert "Detected unsupported operations" in doc["run"]["error"]
    assert doc["run"]["framework"] == "tensorflow"
    code, out = _invoke("ops", run)
    assert code == 1 and out.startswith("hloscope: the run failed (exit code 1): ")


def test_check_fails_a_failed_run(runs: Path) -> None:
    code, out = _invoke("check", str(runs / "tf_compile_fails"), "--max-kernels", "100")
    assert code == 1
    assert out.startswith("hloscope: samples/dynamic_shape_fails.py: the run failed (exit code 1)")
    assert "UniqueWithCounts" in out and len(out.strip().splitlines()) == 1
