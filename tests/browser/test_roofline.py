"""The roofline plot in the real browser: one dot per measured kernel with FLOPs, a
tooltip naming the kernel, a click that opens it; nothing logged, nothing fetched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hloscope.inspection import inspect_run
from hloscope.render.html import write_html
from hloscope.timing.roofline import Peaks
from tests.browser.conftest import ReportTab
from tests.conftest import DATA

PEAKS = Peaks("test CPU", 12e9, 34e9, None, "flags")


@pytest.fixture(scope="module")
def roofline_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    run_dir = tmp_path_factory.mktemp("roofline") / "jax_mlp_run"
    shutil.copytree(DATA / "jax_mlp_profile", run_dir)
    manifest = {"script": "samples/jax_mlp.py", "framework": "jax", "platform": "cpu",
                "device": "CPU (2 cores)", "dump_dir": "hlo", "exit_code": 0}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    inspection = inspect_run(run_dir)
    (main,) = inspection.main
    drawn = [r.name for r in inspection.roofline(main.key, PEAKS) if r.flops > 0]
    page = write_html(inspection, run_dir.parent / "report.html", peaks=PEAKS)
    return page, drawn


def test_roofline_dots_hover_and_click(
    tab: ReportTab, roofline_page: tuple[Path, list[str]]
) -> None:
    path, drawn = roofline_page
    assert drawn, "the profiled MLP has kernels with FLOPs"
    tab.open(path)
    page = tab.page
    plot = page.locator(".hs-module[open] section[data-part=roofline]")
    assert "test CPU" in (plot.text_content() or "")
    dots = plot.locator("circle.hs-rl-dot")
    assert dots.count() == len(drawn)
    names = [dots.nth(i).get_attribute("data-kernel") for i in range(dots.count())]
    assert sorted(names) == sorted(drawn)  # type: ignore[type-var]
    first = dots.first
    tip = first.locator("title").text_content() or ""
    assert tip.startswith(names[0] or "?") and "% of roof" in tip
    first.hover()
    first.click()
    details = page.text_content(".hs-module[open] .hs-details") or ""
    assert (names[0] or "?") in details
    assert "% of roof" in details and "bytes read / written" in details
    # the profile's dump has no memory files: the page says which flag writes them
    memory = page.text_content(".hs-module[open] [data-part=memory]") or ""
    assert "--xla_dump_hlo_as_text" in memory
    assert tab.problems() == []


def test_planned_memory_line(tab: ReportTab, tmp_path: Path) -> None:
    page_file = write_html(inspect_run(DATA / "memory_reports", ["jit_block"]), tmp_path / "m.html")
    tab.open(page_file)
    line = tab.page.text_content(".hs-module[open] [data-part=memory]") or ""
    # 1512012 bytes in XLA's memory-usage report; the arena is the largest allocation
    assert "peak planned memory (XLA): 1.4 MiB" in line
    assert "largest: 576.0 KiB temporary" in line
    assert tab.problems() == []


def test_roofline_shows_payloads_as_text(tab: ReportTab, tmp_path: Path) -> None:
    """A device name or kernel kind carrying markup (a manifest and backend_config can)
    reaches the plot as text: the page's CSP and text-only DOM hold for it too."""
    from hloscope.render.html import _page, page_data
    from tests.render.xss_probe import BREAKOUT, CLOSE, SCRIPT, SVG, make_xss_run

    data = page_data(inspect_run(make_xss_run(tmp_path / "xss_run")))
    doc = data["modules"][0]
    name = doc["kernels"][0]["name"]
    doc["roofline"] = {
        "device": f"GPU {SCRIPT}{CLOSE}", "source": BREAKOUT, "peak_bandwidth": 1e12,
        "peak_flops": 1e14, "peak_flops_low": None, "ridge": 100.0,
        "kernels": [{"name": name, "kind": f"kLoop{SVG}", "time_us": 3.0, "flops": 1e6,
                     "bytes": 1e6, "intensity": 1.0, "bandwidth": 3e11, "flops_per_s": 3e11,
                     "bound": "memory", "efficiency": 0.3, "roof_us": 1.0, "known": True}],
    }  # fmt: skip
    page_file = tmp_path / "xss_roofline.html"
    page_file.write_text("".join(_page(data, "xss")), encoding="utf-8")
    tab.open(page_file)
    page = tab.page
    plot = page.locator(".hs-module[open] section[data-part=roofline]")
    text = plot.text_content() or ""
    assert SCRIPT in text and CLOSE in text and BREAKOUT in text
    tip = plot.locator("circle.hs-rl-dot title").text_content() or ""
    assert SVG in tip
    plot.locator("circle.hs-rl-dot").click()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img, iframe, object, embed, foreignObject").count() == 0
    assert (
        page.evaluate(
            "[...document.querySelectorAll('*')].some(e => "
            "[...e.attributes].some(a => a.name.startsWith('on')))"
        )
        is False
    )
    assert tab.problems() == []
