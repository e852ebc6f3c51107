"""The pass story in the real browser: the section of `hloscope dump --passes` runs, with
the counts after each pass and the pass times, and a picked kernel's history."""

from __future__ import annotations

from pathlib import Path

from hloscope.inspection import inspect_run
from hloscope.render.html import write_html
from tests.browser.conftest import ReportTab
from tests.conftest import DATA


def test_passes_section_and_kernel_history(tab: ReportTab, tmp_path: Path) -> None:
    page_file = write_html(inspect_run(DATA / "jax_passes", passes=True), tmp_path / "p.html")
    tab.open(page_file)
    page = tab.page
    section = page.locator(".hs-module[open] section[data-part=passes]")
    rows = section.locator("table.hs-passes tbody tr")
    assert rows.count() == 10  # before optimization, then the 9 changes
    inliner = section.locator("tr[data-pass=call-inliner]").text_content() or ""
    assert "17 (−2)" in inliner and "91.0 µs" in inliner
    text = section.text_content() or ""
    assert "1 by dot-library-rewriter, 1 by fusion" in text
    assert "Where compile time goes" in text and "copy-insertion" in text
    page.click(".hs-module[open] tr.hs-row:has-text('maximum_reduce_fusion')")
    details = page.text_content(".hs-module[open] .hs-details") or ""
    assert "History (compiler passes)" in details
    assert "merged by fusion (#19) from add.6, add.7, max.1, reduce_sum.7" in details
    assert tab.problems() == []


def test_pages_without_pass_dumps_have_no_section(tab: ReportTab, tmp_path: Path) -> None:
    page_file = write_html(inspect_run(DATA / "tf_dense_relu", passes=True), tmp_path / "t.html")
    tab.open(page_file)
    assert tab.page.locator("section[data-part=passes]").count() == 0
    tab.page.click(".hs-module[open] tr.hs-row:has-text('broadcast_maximum_fusion')")
    assert "History" not in (tab.page.text_content(".hs-module[open] .hs-details") or "")
    assert tab.problems() == []
