"""The HTML report in a real browser: it loads from disk, reacts, and runs nothing it shows.

Each test opens a report built from a captured dump (see conftest.py), works the page as
a user would (click a kernel, search ops, sort a table) and checks that the page logged
no error, made no request off disk, and that no payload of the XSS probe ran.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from hloscope.inspection import inspect_run
from hloscope.render.html import write_html
from hloscope.runs import load_run
from tests.browser.conftest import ReportTab
from tests.conftest import DATA

pytestmark = pytest.mark.slow

MODULE = "#hs-m-0"  # the biggest module's section, opened when the page loads
KERNELS = f"{MODULE} section[data-part=kernels]"
OPS = f"{MODULE} section[data-part=ops]"
DETAILS = f"{MODULE} .hs-details"


def _rows(tab: ReportTab, section: str, column: int) -> list[str]:
    return tab.page.eval_on_selector_all(
        f"{section} tbody tr.hs-row",
        f"rows => rows.map(r => r.children[{column}].textContent)",
    )


def test_overview_and_the_biggest_module_load_without_errors(
    tab: ReportTab, reports: dict[str, Path]
) -> None:
    tab.open(reports["tf_dense_relu"])
    page = tab.page
    assert page.title().startswith("hloscope report")
    row = page.text_content("table.hs-modules tbody tr")
    assert row is not None and "a_inference_dense_relu_12.1" in row and "16→12" in row
    assert page.get_attribute(MODULE, "open") is not None
    assert page.get_attribute(MODULE, "data-ready") == "1"
    # both diagrams are drawn, each with clickable kernel nodes
    assert page.locator(f"{MODULE} [data-side=after] svg g.hs-clickable").count() == 2
    assert page.locator(f"{MODULE} [data-side=before] svg g.hs-clickable").count() >= 3
    assert tab.problems() == []


def test_clicking_a_kernel_row_shows_its_fused_ops_sources_and_hlo(
    tab: ReportTab, reports: dict[str, Path]
) -> None:
    tab.open(reports["tf_dense_relu"])
    page = tab.page
    page.click(f"{KERNELS} tr.hs-row:has-text('broadcast_maximum_fusion')")
    details = page.locator(DETAILS)
    assert details.locator("h3").text_content() == "broadcast_maximum_fusion"
    text = details.text_content() or ""
    assert "kLoop" in text and "f32[64,128]{1,0}" in text
    assert "Source ops (2)" in text and "Relu" in text and "add" in text
    fused = details.locator("table.hs-fused td:first-child").all_text_contents()
    assert "maximum" in fused
    hlo = details.locator("pre.hs-hlo").text_content() or ""
    assert "fusion(%MatMul.2" in hlo and "maximum(" in hlo and "metadata" not in hlo
    # the row is marked, and the kernel is marked in both diagrams
    assert page.locator(f"{KERNELS} tr.hs-picked").count() == 1
    assert page.locator(f"{MODULE} [data-side=after] g.hs-sel").count() == 1
    assert page.locator(f"{MODULE} [data-side=before] g.hs-sel").count() >= 2
    assert tab.problems() == []


def test_clicking_a_diagram_node_selects_its_kernel(
    tab: ReportTab, reports: dict[str, Path]
) -> None:
    tab.open(reports["tf_dense_relu"])
    page = tab.page
    node = page.locator(f'{MODULE} [data-side=after] g.node[id="k/MatMul.2"]')
    node.click()
    assert page.locator(f"{DETAILS} h3").text_content() == "MatMul.2"
    assert page.get_attribute(MODULE, "data-selected") == "MatMul.2"
    assert "hs-sel" in (node.get_attribute("class") or "")
    # an op of the before diagram selects the kernel it went to
    page.click(f"{MODULE} [data-side=before] button[title^='fit']")
    op = page.locator(f"{MODULE} [data-side=before] g.hs-clickable:has-text('maximum')").first
    op.click()
    assert page.locator(f"{DETAILS} h3").text_content() == "broadcast_maximum_fusion"
    assert tab.problems() == []


def test_diagrams_zoom_and_pan(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["jax_mlp"])
    page = tab.page
    svg = f"{MODULE} [data-side=after] svg"
    start = page.get_attribute(svg, "viewBox")
    page.click(f"{MODULE} [data-side=after] button[title^='zoom in']")
    zoomed = page.get_attribute(svg, "viewBox")
    assert zoomed != start
    assert float(zoomed.split()[2]) < float(start.split()[2])  # narrower view = zoomed in
    box = page.locator(f"{MODULE} [data-side=after] .hs-viewport").bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 80, y + 60, steps=5)
    page.mouse.up()
    panned = page.get_attribute(svg, "viewBox")
    assert panned.split()[2:] == zoomed.split()[2:] and panned.split()[:2] != zoomed.split()[:2]
    page.mouse.wheel(0, 300)
    assert float(page.get_attribute(svg, "viewBox").split()[2]) > float(panned.split()[2])
    page.click(f"{MODULE} [data-side=after] button[title^='fit']")
    assert tab.problems() == []


def test_op_search_answers_where_did_my_op_go(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["tf_dense_relu"])
    page = tab.page
    page.fill(f"{OPS} input.hs-search", "relu")
    tab.wait_for(f"document.querySelector('{OPS} .hs-count').textContent === '1 of 3 rows'")
    assert _rows(tab, OPS, 0) == ["Relu"]
    assert _rows(tab, OPS, 2) == ["fused"]
    assert _rows(tab, OPS, 3) == ["broadcast_maximum_fusion"]
    page.fill(f"{OPS} input.hs-search", "no such op")
    tab.wait_for(f"document.querySelector('{OPS} .hs-count').textContent.startsWith('0 of')")
    page.fill(f"{OPS} input.hs-search", "")
    tab.wait_for(f"document.querySelector('{OPS} .hs-count').textContent === '3 rows'")
    # clicking an op opens the kernel it went to
    page.click(f"{OPS} tr.hs-row:has-text('MatMul')")
    assert page.locator(f"{DETAILS} h3").text_content() == "MatMul.2"
    assert tab.problems() == []


def test_kernel_table_sorts_and_filters(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["jax_transformer_block"])
    page = tab.page
    header = page.locator(f"{KERNELS} th", has_text="bytes in")
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    names = _rows(tab, KERNELS, 1)
    doc = json.loads(page.text_content("#hs-module-0") or "{}")
    by_name = {k["name"]: k["bytes_in"] for k in doc["kernels"]}
    values = [by_name[n] for n in names]
    assert len(values) > 5 and values == sorted(values, reverse=True)
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    values = [by_name[n] for n in _rows(tab, KERNELS, 1)]
    assert values == sorted(values)
    page.fill(f"{KERNELS} input.hs-search", "kLoop")
    tab.wait_for(f"document.querySelector('{KERNELS} .hs-count').textContent.includes(' of ')")
    kinds = page.eval_on_selector_all(
        f"{KERNELS} tbody tr.hs-row", "rows => rows.map(r => r.children[2].textContent)"
    )
    assert kinds and set(kinds) == {"kLoop"}
    assert tab.problems() == []


def test_timings_chart_and_bench_comparison(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["jax_mlp"])
    page = tab.page
    head = page.text_content(".hs-head") or ""
    assert "samples/jax_mlp.py" in head and "jax 0.10.2" in head and "4.2 s" in head
    bars = page.locator("#hs-heaviest .hs-barrow")
    assert bars.count() == 11
    assert (bars.first.text_content() or "").startswith("ynn_fusion")
    bench = page.text_content("#hs-bench") or ""
    assert "Eager vs XLA" in bench and "jax.jit" in bench and "×46.20" in bench
    assert "(baseline)" in bench
    # the trivial helper modules are folded, and not built until opened
    assert page.locator(".hs-trivial:not([open])").count() == 2  # overview table, sections
    assert page.locator(".hs-module[data-ready='1']").count() == 1
    # a bar opens its kernel, with its time
    bars.first.click()
    details = page.text_content(DETAILS) or ""
    assert "total time over the profiled executions" in details and "µs" in details
    assert tab.problems() == []


def test_modules_build_only_when_opened(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["jax_mlp"])
    page = tab.page
    page.click(".hs-trivial-list > summary")  # the helper modules are folded together
    closed = page.locator(".hs-trivial-list .hs-module:not([open])").first
    section_id = closed.get_attribute("id")
    assert closed.get_attribute("data-ready") is None
    assert closed.locator("table").count() == 0
    closed.locator("summary").click()
    page.wait_for_selector(f"#{section_id}[data-ready='1']")
    assert page.locator(f"#{section_id} section[data-part=kernels] tr.hs-row").count() >= 1
    assert tab.problems() == []


def test_xss_probe_runs_nothing_and_shows_every_payload_as_text(
    tab: ReportTab, reports: dict[str, Path]
) -> None:
    from tests.render.xss_probe import BREAKOUT, CLOSE, SCRIPT, SVG

    tab.open(reports["xss"])
    page = tab.page
    page.click(f"{KERNELS} tr.hs-row")
    page.fill(f"{OPS} input.hs-search", "img")
    tab.wait_for(f"document.querySelector('{OPS} .hs-count').textContent.includes(' of ')")
    page.click(f"{MODULE} [data-side=after] g.hs-clickable")
    assert page.evaluate("window.__pwned") is None
    assert tab.dialogs == []
    # no element came from a payload
    assert page.locator("img, iframe, object, embed, foreignObject").count() == 0
    assert page.locator("script").count() == 3  # the two data blocks and the page's code
    assert (
        page.evaluate(
            "[...document.querySelectorAll('*')].some(e => "
            "[...e.attributes].some(a => a.name.startsWith('on')))"
        )
        is False
    )
    head = page.text_content(".hs-head") or ""
    assert SCRIPT in head and BREAKOUT in head and CLOSE in head and SVG in head
    details = page.text_content(DETAILS) or ""
    assert "modèle/couche_ü/" + BREAKOUT in details and "Relu" + SCRIPT in details
    assert "/tmp/ünïcödé/" + SVG + ".py:8" in details
    assert CLOSE in (page.text_content(f"{DETAILS} pre.hs-hlo") or "")  # backend_config
    # the diagram's labels are text too
    svg_text = page.text_content(f"{MODULE} [data-side=before] svg") or ""
    assert "Relu" + SCRIPT in svg_text and "add_maximum_fusion.é" in svg_text
    assert tab.problems() == []


def test_trivial_module_link_unfolds_and_opens_it(tab: ReportTab, reports: dict[str, Path]) -> None:
    tab.open(reports["jax_mlp"])
    page = tab.page
    page.click("#hs-overview-card .hs-trivial > summary")  # the overview's folded table
    page.click(".hs-trivial table.hs-modules a >> nth=0")
    opened = page.locator(".hs-trivial-list .hs-module[open]")
    assert opened.count() == 1 and opened.get_attribute("data-ready") == "1"
    assert tab.problems() == []


def test_notebook_frame_shows_the_same_report(tab: ReportTab) -> None:
    from hloscope import notebook

    frame_html = notebook.RunView(load_run(DATA / "tf_dense_relu"))._repr_html_()
    page = tab.page
    page.set_content(f"<!DOCTYPE html><html><body>{frame_html}</body></html>")
    page.wait_for_timeout(50)
    deadline = 100
    frame = None
    while deadline and frame is None:
        frames = [f for f in page.frames if f != page.main_frame]
        if frames and frames[0].evaluate("document.documentElement.dataset.ready || ''"):
            frame = frames[0]
        else:
            page.wait_for_timeout(50)
            deadline -= 1
    assert frame is not None, "the report in the iframe never became ready"
    frame.click(f"{KERNELS} tr.hs-row:has-text('MatMul.2')")
    assert frame.text_content(f"{DETAILS} h3") == "MatMul.2"
    assert tab.problems() == []


# --- the 30k-instruction benchmark module ----------------------------------------------


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of benchmarks/parse_bench.py's 85-layer module (27k instructions)."""
    from benchmarks.parse_bench import big_module_file

    cached = Path(tempfile.gettempdir()) / "hloscope-bench-85-layers.hlo.txt"
    if not cached.exists():
        pytest.importorskip("jax", reason="generating the benchmark module needs JAX")
    module = big_module_file(85)  # a single-file run
    out = tmp_path_factory.mktemp("big") / "big.html"
    return write_html(inspect_run(module), out)


def test_big_module_becomes_interactive_in_seconds(
    tab: ReportTab, big_report: Path, record_property: Any
) -> None:
    wall = tab.open(big_report)
    page = tab.page
    ready_at = int(page.evaluate("document.documentElement.dataset.readyAt"))
    build = int(page.get_attribute(MODULE, "data-build-ms") or "0")
    count = page.text_content(f"{KERNELS} .hs-count") or ""
    assert count.replace(",", "").startswith("2886 rows")
    # virtualised: a screenful of rows in the DOM, not thousands
    assert page.locator(f"{KERNELS} tr.hs-row").count() < 80
    # a click and a search on the 2,886-kernel table answer at once
    first_paint = page.evaluate(
        "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame("
        "() => r(performance.now()))))"
    )
    t = page.evaluate("performance.now()")
    page.click(f"{KERNELS} tr.hs-row >> nth=3")
    page.fill(f"{KERNELS} input.hs-search", "kLoop")
    tab.wait_for(f"document.querySelector('{KERNELS} .hs-count').textContent.includes(' of ')")
    react = page.evaluate("performance.now()") - t
    size = big_report.stat().st_size
    figures = {
        "file_mb": round(size / 2**20, 2),
        "navigation_to_interactive_ms": ready_at,
        "navigation_to_painted_ms": round(first_paint),
        "module_build_ms": build,
        "test_wall_s": round(wall, 2),
        "click_and_search_ms": round(react),
    }
    record_property("big_module", figures)
    print(f"\nbig module report: {figures}")
    assert ready_at < 5000, figures
    assert size < 12 * 2**20, figures
    page.locator(f"{KERNELS} .hs-vscroll").evaluate("e => e.scrollTop = 40000")
    page.wait_for_timeout(100)
    assert page.locator(f"{KERNELS} tr.hs-row").count() > 0
    assert tab.problems() == []


# --- README screenshots -----------------------------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("HLOSCOPE_SCREENSHOTS"),
    reason="set HLOSCOPE_SCREENSHOTS=docs/img to refresh the README screenshots",
)
def test_screenshots_for_the_readme(
    tab: ReportTab, reports: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = Path(os.environ["HLOSCOPE_SCREENSHOTS"]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # the jax_mlp run as `hloscope dump` leaves it, loaded by a relative path as users do
    run = Path("hloscope-runs") / "jax_mlp-20261202-182452"
    shutil.copytree(reports["jax_mlp"].parent / "jax_mlp_run", tmp_path / run)
    monkeypatch.chdir(tmp_path)
    page_file = write_html(inspect_run(run), tmp_path / "report.html")
    page = tab.page
    page.set_viewport_size({"width": 1280, "height": 800})
    tab.open(page_file)
    page.screenshot(path=str(out / "report_overview.png"))
    page.click("#hs-heaviest .hs-barrow >> nth=3")
    page.evaluate("document.querySelector('#hs-m-0').scrollIntoView()")
    page.screenshot(path=str(out / "report_module.png"))
    for name in ("report_overview.png", "report_module.png"):
        assert (out / name).stat().st_size < 300_000
    assert tab.problems() == []


def test_a_module_on_four_devices_says_its_figures_are_per_device(
    tab: ReportTab, tmp_path: Path
) -> None:
    """tests/data/jax_four_devices_profile: the biggest module ran on four CPU devices."""
    page_path = write_html(inspect_run(DATA / "jax_four_devices_profile"), tmp_path / "r.html")
    tab.open(page_path)
    facts = tab.page.text_content(f"{MODULE} .hs-stats") or ""
    assert "executions profiled per device" in facts
    assert "4devices (times per device)" in facts  # value, then label
    assert "slowest device / median" in facts
    assert tab.problems() == []


def test_the_page_shows_the_figures_the_terminal_prints(
    tab: ReportTab, reports: dict[str, Path]
) -> None:
    """The overview's table and the module's stats show `render.figures` verbatim: the
    page computes and rounds none of them (tests/render/test_figures_agree.py compares
    those with the terminal, JSON and API on every sample)."""
    from hloscope.render.figures import figure_cells, module_figures

    tab.open(reports["jax_mlp"])
    page = tab.page
    inspection = inspect_run(load_run(reports["jax_mlp"].parent / "jax_mlp_run"))
    m = inspection.main[0]
    figures = module_figures(m, inspection.timing(m.key))
    cells = page.eval_on_selector_all(
        "table.hs-modules tbody tr >> nth=0 >> td[data-figure]",
        "tds => tds.map(t => t.textContent)",
    )
    assert cells == [text for _, text in figure_cells(figures)]
    stats = page.eval_on_selector_all(
        f"{MODULE} .hs-stat[data-figure]:not([data-figure=''])",
        "ds => ds.map(d => [d.dataset.figure, d.querySelector('b').textContent,"
        " d.querySelector('span').textContent])",
    )
    assert stats == [[f.name, f.text, f.label] for f in figures.values()]
    assert {"kernel_time_per_execution", "wall_per_execution"} <= {s[0] for s in stats}
    assert tab.problems() == []
