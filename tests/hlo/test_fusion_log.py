"""XLA's priority-fusion log: read as text proto, joined to the ops that run alone."""

from __future__ import annotations

import pytest

from hloscope.analysis.provenance import ALONE, FUSED
from hloscope.analysis.report import analyze_run
from hloscope.errors import HloParseError
from hloscope.hlo.fusion_log import find_log, parse_textproto, read_decisions
from hloscope.runs import load_run
from tests.conftest import DATA

LOG = DATA / "gpu_fusion_log" / "module_0004.jit_f.priority_fusion_dump.txt"


def test_textproto_keeps_every_step_kind() -> None:
    doc = parse_textproto('a { b: "x\\"y" c: 1.5 d: ENUM } a { e { f: 2 } } # note\n')
    assert doc == {"a": [{"b": ['x"y'], "c": [1.5], "d": ["ENUM"]}, {"e": [{"f": [2]}]}]}
    with pytest.raises(HloParseError, match="unclosed"):
        parse_textproto("a { b: 1")
    with pytest.raises(HloParseError, match="unbalanced"):
        parse_textproto("}")


def test_read_decisions() -> None:
    decisions = read_decisions(LOG)
    assert decisions.ineligible["custom-call.1"] == ("not fusible",)
    assert decisions.fused == (("tanh.1", "add.1", "loop_add_fusion"),)
    assert decisions.step_kinds == {"producer_ineligible": 2, "update_priority": 1, "fusion": 1}
    assert decisions.reasons(["nothing", "transpose.1"]) == [
        "the fusion would result in an overly large code duplication"
    ]


def test_log_is_found_beside_the_after_dump_and_joined_to_lone_ops() -> None:
    run = load_run(DATA / "gpu_fusion_log")
    (dump,) = run.modules
    assert dump.platform == "sm_90"
    assert find_log(dump.after) == LOG
    (module,) = analyze_run(run).modules
    assert module.provenance is not None
    by = {p.op.name: p for p in module.provenance.placements}
    assert by["jit(f)/transpose"].status == ALONE
    assert "overly large code duplication" in by["jit(f)/transpose"].evidence
    assert "not fusible" in by["jit(f)/dot_general"].evidence
    assert "library call" in by["jit(f)/dot_general"].evidence
    assert by["jit(f)/add"].status == FUSED and by["jit(f)/add"].evidence == ""
