"""The `hloscope diff --json` schema (`diff_doc`), field by field, on the real fusion
regression (tests/data/jax_mlp vs jax_mlp_no_fusion_pass): kernel names and counts checked
against XLA's own parser, times against the timings passed in."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hloscope.analysis import diff as D
from hloscope.analysis.budget import Violation
from hloscope.analysis.diff import diff_runs, regressions
from hloscope.render.json import diff_doc, dumps, run_doc
from tests.analysis.test_diff import xla_entry_fusions
from tests.conftest import DATA, dump_file
from tests.render.test_diff_golden import REGRESSION, regression_doc, run_diff

MODULE_KEYS = {
    "a",
    "b",
    "matched_by",
    "trivial",
    "changed",
    "profiled",
    "metrics",
    "kernels_by_kind",
    "kernel_changes",
    "matched_kernels",
    "op_changes",
    "highlight",
}
CHANGE_KEYS = {
    "change",
    "a",
    "b",
    "source_ops",
    "ops_only_a",
    "ops_only_b",
    "bytes_a",
    "bytes_b",
    "time_a_us",
    "time_b_us",
    "time_delta_us",
    "impact",
}
KERNEL_KEYS = {"name", "kind", "launches", "bytes", "shape", "ops", "time_us"}
METRICS = {
    "instructions_before": None,
    "instructions": None,
    "kernels": "higher",
    "launches": "higher",
    "ops_per_kernel": "lower",
    "ops_alone": "higher",
    "time_us": "higher",
}


@cache
def fusions() -> tuple[list[str], list[str]]:
    """The kernels of jit_mlp in A and in B, as XLA's parser reads the dumps."""
    a, b = (dump_file(f, "module_0030.*after_optimizations.txt") for f in REGRESSION)
    return xla_entry_fusions(a), xla_entry_fusions(b)


def _mlp(doc: dict[str, Any]) -> dict[str, Any]:
    [m] = doc["modules"]
    return m


def test_top_level_and_run_documents() -> None:
    d = run_diff(*REGRESSION)
    doc = diff_doc(d)
    assert set(doc) == {"schema_version", "a", "b", "changed", "modules", "only_a", "only_b"}
    assert doc["schema_version"] == 1 and doc["changed"] is True
    assert doc["a"] == run_doc(d.a.run) and doc["b"] == run_doc(d.b.run)
    assert doc["a"]["path"].endswith("jax_mlp") and doc["b"]["platform"] == "cpu"
    assert json.loads(dumps(doc)) == doc  # plain JSON values only


def test_modules_only_in_one_run() -> None:
    d = run_diff(*REGRESSION)
    doc = diff_doc(d)
    files = (DATA / "jax_mlp").glob("*after_optimizations.txt")
    keys_a = sorted(p.name.split(".")[0].removeprefix("module_") for p in files)
    only = doc["only_a"]
    assert all(set(m) == {"key", "name", "trivial"} for m in only)
    assert sorted(m["key"].split(".")[0] for m in only) == [k for k in keys_a if k != "0030"]
    assert all(m["trivial"] for m in only) and doc["only_b"] == []


def test_module_document_fields_and_metrics() -> None:
    m = _mlp(regression_doc())
    assert set(m) == MODULE_KEYS
    assert m["a"] == m["b"] == {"key": "0030.jit_mlp", "name": "jit_mlp", "trivial": False}
    assert (m["matched_by"], m["trivial"], m["changed"], m["profiled"]) == (
        "name",
        False,
        True,
        False,
    )
    assert {k: v["worse_when"] for k, v in m["metrics"].items()} == METRICS
    fa, fb = fusions()
    kernels = m["metrics"]["kernels"]
    assert (kernels["a"], kernels["b"], kernels["delta"]) == (len(fa), len(fb), len(fb) - len(fa))
    assert kernels["relative"] == round((len(fb) - len(fa)) / len(fa), 6)
    time = m["metrics"]["time_us"]
    assert time == {"a": None, "b": None, "delta": None, "relative": None, "worse_when": "higher"}
    by_kind = m["kernels_by_kind"]
    assert sum(c["a"] for c in by_kind.values()) == len(fa)
    assert sum(c["b"] for c in by_kind.values()) == len(fb)
    assert all(c["delta"] == c["b"] - c["a"] for c in by_kind.values())


def test_kernel_groups_cover_every_kernel_once() -> None:
    m = _mlp(regression_doc())
    groups = m["kernel_changes"] + m["matched_kernels"]
    assert all(set(g) == CHANGE_KEYS for g in groups)
    assert all(set(k) == KERNEL_KEYS for g in groups for k in (*g["a"], *g["b"]))
    fa, fb = fusions()
    assert sorted(k["name"] for g in groups for k in g["a"]) == sorted(fa)
    assert sorted(k["name"] for g in groups for k in g["b"]) == sorted(fb)
    assert {g["change"] for g in m["kernel_changes"]} <= set(D.CHANGES) - {D.SAME}
    assert {g["change"] for g in m["matched_kernels"]} == {D.SAME}
    impacts = [g["impact"] for g in m["kernel_changes"]]
    assert impacts == sorted(impacts, reverse=True)  # biggest bytes moved first
    for g in groups:
        assert g["bytes_a"] == sum(k["bytes"] for k in g["a"])
        assert g["bytes_b"] == sum(k["bytes"] for k in g["b"])
        assert g["time_a_us"] is g["time_b_us"] is g["time_delta_us"] is None
    changed = {k["name"]: g["change"] for g in m["kernel_changes"] for k in g["a"]}
    assert m["highlight"]["a"] == changed


def test_op_changes() -> None:
    m = _mlp(regression_doc())
    ops = m["op_changes"]
    assert ops and all(o["unfused"] and not o["fused"] for o in ops)
    assert {(o["a"]["status"], o["b"]["status"]) for o in ops} == {("fused", "alone")}
    fa, fb = fusions()
    assert {k for o in ops for k in o["a"]["kernels"]} <= set(fa)
    assert {k for o in ops for k in o["b"]["kernels"]} <= set(fb)
    assert len(ops) == m["metrics"]["ops_alone"]["delta"]  # 4 alone in A stay alone


def test_regressions_and_tolerance() -> None:
    d = run_diff(*REGRESSION)
    doc = regression_doc()
    assert doc["tolerance"] == 0.05
    found = regressions(d.main, 0.05)
    assert [v["metric"] for v in doc["regressions"]] == ["kernels", "launches", "ops_per_kernel"]
    assert [v["message"] for v in doc["regressions"]] == [v.message for v in found]
    first = doc["regressions"][0]
    assert first == {
        "module": "0030.jit_mlp",
        "metric": "kernels",
        "value": 52,
        "limit": 11,
        "tolerance": 0.05,
        "message": Violation("0030.jit_mlp", "kernels", 52, 11, 0.05).message,
    }
    assert "regressions" not in diff_doc(d) and diff_doc(d, modules=())["modules"] == []


def test_profiled_times() -> None:
    fa, fb = fusions()
    d = diff_runs(
        run_diff(*REGRESSION).a,
        run_diff(*REGRESSION).b,
        timings_a={"jit_mlp": dict.fromkeys(fa, 2.0)},
        timings_b={"0030.jit_mlp": dict.fromkeys(fb, 1.0)},
    )
    m = _mlp(diff_doc(d, modules=d.main))
    assert m["profiled"] is True
    time = m["metrics"]["time_us"]
    assert (time["a"], time["b"], time["delta"]) == (2.0 * len(fa), 1.0 * len(fb), 30.0)
    split = next(g for g in m["kernel_changes"] if g["change"] == "split")
    assert (split["time_a_us"], split["time_b_us"], split["time_delta_us"]) == (2.0, 11.0, 9.0)
    assert split["impact"] == 9.0  # by time now, not bytes
    assert all(k["time_us"] == 2.0 for g in m["matched_kernels"] for k in g["a"])
