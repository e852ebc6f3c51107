"""`hloscope dump --compare-unfused`: a second run with XLA's fusion passes disabled, both
runs keeping XLA's memory files, and the side-by-side figures against XLA's own files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.inspection import inspect_run
from hloscope.render.unfused import unfused_doc

SCRIPT = """
import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.tanh(x * 2.0 + 1.0) * 3.0 - x)
print(float(f(jnp.ones((256, 256))).sum()))
"""


def _after(run: Path) -> Path:
    (after,) = [p for p in (run / "dump").glob("*jit__lambda*after_optimizations.txt")]
    return after


@pytest.mark.jax
def test_compare_unfused_runs_twice_and_reports_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    script = tmp_path / "chain.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["dump", "--compare-unfused", str(script), "-o", str(out)], env={"XLA_FLAGS": None}
    )
    assert result.exit_code == 0, result.output
    unfused = tmp_path / "run-unfused"
    env = json.loads((unfused / "run.json").read_text())["user_xla_flags"]
    assert re.search(r"--xla_disable_hlo_passes=\S*\bfusion\b", env)
    assert "fusion on vs off" in result.stdout
    # XLA's own files: a real fusion in one; in the other only the fusion wrapper's
    # one-op `wrapped_*` fusions; memory files kept in both
    real_fusion = re.compile(r" fusion\(.*calls=%(?!wrapped_)")
    assert real_fusion.search(_after(out).read_text())
    assert not real_fusion.search(_after(unfused).read_text())
    doc = unfused_doc(inspect_run(out), inspect_run(unfused))
    (module,) = [m for m in doc["modules"] if "lambda" in m["name"]]
    for run, side in ((out, "fused"), (unfused, "unfused")):
        report = _after(run).name.removesuffix(".txt") + "-memory-usage-report.txt"
        text = (run / "dump" / report).read_text()
        total = sum(int(t) for t in re.findall(r"^Total bytes(?: used)?:\s+(\d+)", text, re.M))
        assert module[side]["peak_memory"] == total
    assert module["unfused"]["kernels"] > module["fused"]["kernels"]
    assert module["unfused"]["bytes_moved"] > module["fused"]["bytes_moved"]
