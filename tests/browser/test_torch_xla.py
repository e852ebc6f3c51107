"""The HTML page of a PyTorch/XLA run in a real browser: its recompiles in the
Compilations card, its graphs with how many times each ran in the PyTorch/XLA card."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from hloscope.analysis.torch_xla import read_records
from hloscope.inspection import inspect_run
from hloscope.render.html import write_html
from tests.browser.conftest import ReportTab
from tests.conftest import DATA

pytestmark = pytest.mark.slow
RUN = DATA / "torch_mlp_adamw" / "sizes"


def test_torch_xla_graphs_and_their_compilations(tab: ReportTab, tmp_path: Path) -> None:
    tab.open(write_html(inspect_run(RUN), tmp_path / "torch.html"))
    page = tab.page
    records = read_records(RUN)
    assert records is not None
    title = page.text_content("#hs-compilations h3")
    uncached = records.counters["UncachedCompile"]
    assert title is not None
    assert title.startswith(f"SyncTensorsGraph@torch_mlp.py:76 compiled {uncached}×")
    rows = page.eval_on_selector_all(
        "#hs-torch-xla table tbody tr",
        "rows => rows.map(r => Array.from(r.children).map(c => c.textContent))",
    )
    runs = Counter(e.graph_hash for e in records.executions)
    assert [r[0] for r in rows] == [f"{runs[c.graph_hash]}×" for c in records.compiles]
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)  # modules in compile order
    # a graph's module link opens the module
    page.click("#hs-torch-xla table tbody tr:nth-child(2) a")
    assert page.get_attribute(f"details[data-key='{rows[1][1]}']", "open") is not None
    # the long input lists wrap instead of widening the page
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 400
    assert tab.problems() == []
