"""Golden outputs of `hloscope report` (terminal and `--json`) and `hloscope ops` on real
dumps and a real profile, through the CLI, compared whole with tests/render/golden/.

A change to what these commands print fails here first. When the change is meant,
regenerate the files and read their diff before committing:

    HLOSCOPE_UPDATE_GOLDEN=1 PYTHONPATH=$PWD .venv/bin/python -m pytest -q tests/render/test_report_golden.py
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.conftest import DATA
from tests.render.test_diff_golden import check_golden, normalise_text

# A 100-column terminal without colour, as a user's would be.
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}

FIXED_PEAKS = ["--peak-bandwidth", "12", "--peak-tflops", "0.2"]

CASES = [
    # fixed roofs: the default measures this machine's CPU (hloscope.timing.roofline)
    ("report_jax_mlp_profile.txt", ["report", "jax_mlp_profile", *FIXED_PEAKS]),
    ("report_tf_dense_relu.txt", ["report", "tf_dense_relu", "--all"]),
    ("ops_tf_recsys_scores.txt", ["ops", "tf_recsys_scores"]),
    ("report_jax_mlp_profile.json", ["report", "jax_mlp_profile", "--json", *FIXED_PEAKS]),
    ("ops_jax_mlp.json", ["ops", "jax_mlp", "--op", "layer1", "--json"]),
]


def run_cli(args: list[str]) -> str:
    command, run, *rest = args
    result = CliRunner().invoke(app, [command, str(DATA / run), *rest], env=ENV)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(("golden", "args"), CASES, ids=[c[0] for c in CASES])
def test_golden_output(golden: str, args: list[str]) -> None:
    out = normalise_text(run_cli(args))
    if golden.endswith(".json"):
        json.loads(out)  # still a JSON document after normalising
    check_golden(golden, out)


def test_the_goldens_hold_real_numbers() -> None:
    # What the goldens pin is what the dump says: 11 kernels in jit_mlp, and the profile's
    # steady-state executions, from the raw files rather than from hloscope's renderers.
    doc = json.loads(run_cli(["report", "jax_mlp_profile", "--json"]))
    mlp = next(m for m in doc["modules"] if m["name"] == "jit_mlp")
    after = next((DATA / "jax_mlp_profile").rglob("*jit_mlp.cpu_after_optimizations.txt"))
    entry = after.read_text(encoding="utf-8").split("ENTRY")[1]
    assert mlp["after"]["kernels"] == entry.count(" fusion(") == 11
    assert mlp["timing"]["executions"] >= 1
