"""`hloscope passes`: text and the `--json` schema on real pass dumps, module selection,
and the one-line errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hloscope.cli import app
from tests.conftest import DATA

runner = CliRunner()
ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def test_json_schema_is_the_issues() -> None:
    result = runner.invoke(app, ["passes", str(DATA / "jax_passes"), "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc) == {"schema_version", "modules"} and doc["schema_version"] == 1
    [m] = doc["modules"]
    assert set(m) == {"key", "name", "passes", "kernels"}
    assert (m["key"], m["name"]) == ("0000.jit_f", "jit_f")
    for p in m["passes"]:
        assert set(p) == {
            "index", "pipeline", "pass", "instructions", "fusions", "kernels", "launches",
            "duration_s",
        }  # fmt: skip
    for k in m["kernels"]:
        assert set(k) == {"name", "first_pass", "history"}
        for event in k["history"]:
            assert set(event) == {"pass", "change"}
            assert event["change"] in {"created", "grew", "merged", "split", "renamed"}
    first = m["passes"][0]
    assert (first["index"], first["pipeline"], first["pass"]) == (
        5,
        "HLO passes through layout assignment",
        "call-inliner",
    )
    assert first["duration_s"] == 91e-6  # `HLO pass: call-inliner time: 91 us` in the log
    assert m["kernels"][1] == {
        "name": "maximum_reduce_fusion",
        "first_pass": "fusion",
        "history": [{"pass": "fusion", "change": "merged"}],
    }


def test_text_tells_the_story() -> None:
    result = runner.invoke(app, ["passes", str(DATA / "jax_passes")], env=ENV)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("── jit_f  [module 0000]")
    row = next(line for line in out.splitlines() if "/ call-inliner" in line)
    assert row.split()[-4:-1] == ["9", "9", "91.0"] and "17 (−2)" in row
    assert (
        "ynn_fusion [__ynn_fusion]  created by dot-library-rewriter (#16) from dot_general.1" in out
    )
    assert "maximum_reduce_fusion [kLoop]  merged by fusion (#19)" in out
    assert "jit(f)/dot_general → ynn_fusion: never fused" in out
    assert "where compile time goes" in out and "copy-insertion" in out


def test_module_selection_and_errors() -> None:
    ok = runner.invoke(app, ["passes", str(DATA / "tf_passes"), "-M", "dense_relu"], env=ENV)
    assert ok.exit_code == 0 and "broadcast_maximum_fusion" in ok.output
    none = runner.invoke(app, ["passes", str(DATA / "jax_mlp")], env=ENV)
    assert none.exit_code != 0
    assert "no per-pass dumps" in none.output and "hloscope dump --passes" in none.output
    assert "Traceback" not in none.output
    missing = runner.invoke(app, ["passes", str(DATA / "jax_passes"), "-M", "nothing"], env=ENV)
    assert missing.exit_code != 0 and "no module matches" in missing.output


def test_ops_history_says_which_pass_made_each_kernel() -> None:
    result = runner.invoke(app, ["ops", str(DATA / "jax_passes"), "--history"], env=ENV)
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()[1:]}
    assert "⟨maximum_reduce_fusion: merged by fusion (#19)" in lines["jit(f)/add"]
    assert "ynn_fusion: created by dot-library-rewriter (#16)" in lines["jit(f)/dot_general"]
    assert "never fused" in lines["jit(f)/dot_general"]
    assert "⟨" not in lines["jit(f)/jit(relu)"]  # in no kernel: nothing to tell
    doc = json.loads(
        runner.invoke(app, ["ops", str(DATA / "tf_passes"), "--history", "--json"], env=ENV).output
    )
    ops = {o["op"]: o for o in doc[0]["ops"]}
    assert ops["MatMul"]["history"]["left_pass"] is None
    [relu] = ops["Relu"]["history"]["kernels"]
    assert (relu["name"], relu["first_pass"]) == ("broadcast_maximum_fusion", "fusion")
    plain = runner.invoke(app, ["ops", str(DATA / "jax_passes"), "--json"], env=ENV).output
    assert "history" not in json.loads(plain)[0]["ops"][0]
    none = runner.invoke(app, ["ops", str(DATA / "jax_mlp"), "--history"], env=ENV)
    assert none.exit_code != 0 and "hloscope dump --passes" in none.output
