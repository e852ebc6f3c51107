"""A PyTorch/XLA run in `report` (text and JSON) and in the HTML page's data: one view of
its recompiles (the compilations'), and the torch_xla block with what only torch_xla
tells, checked against torch_xla's own counters and log."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.analysis.torch_xla import read_records
from hloscope.cli import app
from hloscope.inspection import inspect_run
from hloscope.render.html import page_data
from tests.conftest import DATA

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
SIZES = DATA / "torch_mlp_adamw" / "sizes"
STEP = "SyncTensorsGraph@torch_mlp.py:76"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A copy of the captured AdamW run at batch sizes 32, 48, 32, 48, 64 (`report
    --json` keeps its output in the run folder)."""
    return Path(shutil.copytree(SIZES, tmp_path / "run"))


def _records(path: Path) -> tuple[dict[str, int], list[float], Counter[str], list[str]]:
    """torch_xla's counters, CompileTime samples, executions per graph hash and compiled
    graph hashes in order."""
    records = read_records(path)
    assert records is not None
    compile_time = records.metric("CompileTime")
    assert compile_time is not None
    executions = Counter(e.graph_hash for e in records.executions)
    return (
        dict(records.counters),
        list(compile_time.samples_s),
        executions,
        [c.graph_hash for c in records.compiles],
    )


def test_report_says_the_recompiles_once(run: Path) -> None:
    result = runner.invoke(app, ["report", str(run)], env=ENV)
    assert result.exit_code == 0, result.output
    out = result.output
    counters, samples, _, _ = _records(run)
    head = next(line for line in out.splitlines() if line.startswith(STEP))
    assert head.startswith(
        f"{STEP} compiled {counters['UncachedCompile']}× · args 0, 7 dim 0: 48, 32, 64 (#1–#3)"
        " · #0 takes 15 inputs, the others 27 · "
    )
    shown = re.search(r"· ([\d.]+) s compiling$", head)
    assert shown is not None and float(shown[1]) == pytest.approx(sum(samples), abs=0.01)
    assert "  advice: pad or bucket args 0, 7 dim 0 to a few sizes: torch_xla" in out
    # the torch_xla block: executions and reads, not the recompiles nor the compile time
    block = out[out.index("torch_xla: ") :]
    assert block.startswith("torch_xla: 4 distinct graphs ran 5 times · 5 executions ")
    assert "compile" not in block.splitlines()[0]
    assert "tensor values read back to Python (.item(), print, if): 1×" in block
    assert out.count("compiled 4×") == 1


def test_report_json_groups_the_modules_by_function(run: Path) -> None:
    result = runner.invoke(app, ["report", str(run), "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    counters, samples, executions, hashes = _records(run)
    modules = sorted(doc["modules"], key=lambda m: m["compilation"])
    assert [m["function"] for m in modules] == [STEP] * counters["UncachedCompile"]
    assert [m["compile_s"] for m in modules] == pytest.approx(samples)
    (step,) = doc["compilations"]
    assert step["function"] == STEP and step["count"] == counters["UncachedCompile"]
    assert step["modules"] == [m["key"] for m in modules]
    assert step["varying"] == [
        {"arg": 0, "dim": 0, "values": [None, 48, 32, 64]},
        {"arg": 7, "dim": 0, "values": [None, 48, 32, 64]},
    ]
    assert doc["run"]["compile_s"] is None  # run.json recorded none; torch_xla did
    torch = doc["torch_xla"]
    assert "functions" not in torch  # the recompiles are `compilations`
    assert torch["compiles"] == counters["UncachedCompile"]
    assert torch["executions"] == counters["ExecuteComputation"]
    assert [g["executions"] for g in torch["graphs"]] == [executions[h] for h in hashes]
    assert {g["function"] for g in torch["graphs"]} == {STEP}


def test_the_page_shows_the_graphs_with_links_to_their_modules() -> None:
    overview = page_data(inspect_run(SIZES))["overview"]
    counters, _, executions, hashes = _records(SIZES)
    page = overview["torch_xla"]
    assert page["headline"].startswith("torch_xla: 4 distinct graphs ran 5 times")
    assert [g["executions"] for g in page["graphs"]] == [executions[h] for h in hashes]
    keys = [m["key"] for m in overview["modules"]]
    for g in page["graphs"]:
        for m in g["modules"]:
            assert keys[m["index"]] == m["key"]
    assert page["notes"] == ["tensor values read back to Python (.item(), print, if): 1×"]
    (step,) = overview["compilations"]
    assert step["count"] == counters["UncachedCompile"]
    assert step["advice"].startswith("pad or bucket args 0, 7 dim 0")


def test_a_run_of_another_framework_has_no_torch_xla_block() -> None:
    overview = page_data(inspect_run(DATA / "jax_recompile"))["overview"]
    assert overview["torch_xla"] is None
