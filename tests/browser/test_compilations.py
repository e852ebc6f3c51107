"""The HTML overview of a run that compiled a function several times, and of a run
that failed, in a real browser: variants grouped with their shapes, the failure first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.inspection import inspect_run
from hloscope.render.html import write_html
from tests.browser.conftest import ReportTab
from tests.conftest import DATA

pytestmark = pytest.mark.slow


def _page(tmp_path: Path, name: str) -> Path:
    return write_html(inspect_run(DATA / name), tmp_path / f"{name}.html")


def test_overview_groups_the_compilations_with_their_shapes(tab: ReportTab, tmp_path: Path) -> None:
    tab.open(_page(tmp_path, "jax_recompile"))
    page = tab.page
    title = page.text_content("#hs-compilations h3")
    assert title is not None and title.startswith("jit_attend compiled 6× · args 0, 1, 2 dim 0")
    rows = page.eval_on_selector_all(
        "#hs-compilations table.hs-variants tbody tr",
        "rows => rows.map(r => Array.from(r.children).map(c => c.textContent))",
    )
    manifest = json.loads((DATA / "jax_recompile" / "run.json").read_text(encoding="utf-8"))
    modules = [c["module"] for c in manifest["compiles"] if c["function"] == "jit(attend)"]
    assert [r[5] for r in rows] == modules  # in compile order
    assert [r[0] for r in rows] == [f"#{i}" for i in range(6)]
    assert rows[4][1] == "f32[48,64], f32[48,64], f32[48,64]" and rows[4][3] == "10"
    notes = page.text_content("#hs-compilations")
    assert notes is not None and "#4 fuses differently" in notes and "advice:" in notes
    # the modules table names each variant with its index and input shapes
    cells = page.eval_on_selector_all(
        "table.hs-modules tbody tr td.hs-mname", "cells => cells.map(c => c.textContent)"
    )
    assert cells[0] == "jit_attend #0 f32[8,64], f32[8,64], f32[8,64]"
    # a variant's row opens its module
    page.click("#hs-compilations table.hs-variants tbody tr:nth-child(5) a")
    assert page.get_attribute("details[data-key='0028.jit_attend']", "open") is not None
    assert tab.problems() == []


def test_a_failed_run_states_its_failure_first(tab: ReportTab, tmp_path: Path) -> None:
    tab.open(_page(tmp_path, "tf_compile_fails"))
    page = tab.page
    first = page.text_content("header.hs-head .hs-outcome")
    assert first is not None and first.startswith("✗ the run failed (exit code 1): ")
    assert "Detected unsupported operations" in first
    facts = page.text_content("header.hs-head dl")
    assert facts is not None and "tensorflow 2.21.0" in facts and "exit code1" in facts
    assert tab.problems() == []
