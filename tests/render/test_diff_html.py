"""The `hloscope diff --html` page (`diff_page`): its tables row by row on the real fusion
regression, and every string of the document escaped."""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from typing import Any

from hloscope.analysis.diff import diff_runs
from hloscope.render.diff_html import diff_page
from hloscope.render.json import diff_doc
from tests.render.test_diff_golden import REGRESSION, regression_doc, run_diff
from tests.render.test_diff_json import fusions
from tests.render.xss_probe import PAYLOADS


class _Tables(HTMLParser):
    """Every table of a page as rows of `(tr class, [cell text])`, header rows left out;
    and the text of the `<li>` items."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[tuple[str, list[str]]]] = []
        self.items: list[str] = []
        self._cell: list[str] | None = None
        self._row: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = (dict(attrs).get("class") or "", [])
        elif tag in ("td", "li"):
            self._cell = []
        elif tag == "th":
            self._row = None
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row[1].append("".join(self._cell).strip())
        elif tag == "li" and self._cell is not None:
            self.items.append("".join(self._cell))
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
        if tag in ("td", "li"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(page)
    return parser


def test_page_is_self_contained() -> None:
    page = diff_page(regression_doc())
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</body></html>\n")
    assert "<script" not in page and "http" not in page.replace('lang="en"', "")


def test_metric_table_rows() -> None:
    metrics, *_ = _parse(diff_page(regression_doc())).tables
    rows = [cells for _, cells in metrics]
    assert rows[:6] == [
        ["instructions before opt.", "92", "92", "="],
        ["instructions after opt.", "125", "211", "+86 (+68.8%)"],
        ["kernels", "11", "52", "+41 (+372.7%)"],
        ["launches per execution", "11", "52", "+41 (+372.7%)"],
        ["HLO ops per kernel", "6.36", "1.35", "-5.02 (-78.8%)"],
        ["ops alone", "4", "22", "+18 (+450.0%)"],
    ]
    # kernels per kind; an unchanged count reads "=" as in the metric rows and the terminal
    assert rows[6:] == [
        ["kLoop", "7", "48", "+41"],
        ["__ynn_fusion", "4", "4", "="],
    ]
    fa, fb = fusions()
    assert (int(rows[2][1]), int(rows[2][2])) == (len(fa), len(fb))


def test_changed_kernel_and_op_tables() -> None:
    doc = regression_doc()
    [module] = doc["modules"]
    parsed = _parse(diff_page(doc))
    _, kernels, ops = parsed.tables
    assert [css for css, _ in kernels] == [
        k["change"].replace(" ", "-") for k in module["kernel_changes"]
    ]
    for (_, cells), k in zip(kernels, module["kernel_changes"], strict=True):
        change, a, b, moved, time, source = cells
        assert change == k["change"]
        assert [x.split(" [")[0] for x in a.split("\n") if x != "–"] == [r["name"] for r in k["a"]]
        assert [x.split(" [")[0] for x in b.split("\n")] == [r["name"] for r in k["b"]]
        assert moved == f"{k['bytes_a']:,} → {k['bytes_b']:,}" and time == "– → –"
        assert source.split("\n") == (k["source_ops"] or ["–"])
    assert len(ops) == len(module["op_changes"]) == 18
    for (_, cells), o in zip(ops, module["op_changes"], strict=True):
        assert cells == [o["op"], "fused", "alone", ", ".join(o["b"]["kernels"])]
    assert parsed.items == [v["message"] for v in doc["regressions"]]


def test_profiled_page_shows_times() -> None:
    fa, fb = fusions()
    d = run_diff(*REGRESSION)
    timed = diff_runs(
        d.a,
        d.b,
        timings_a={"jit_mlp": dict.fromkeys(fa, 2.0)},
        timings_b={"jit_mlp": dict.fromkeys(fb, 1.0)},
    )
    metrics, kernels, _ = _parse(diff_page(diff_doc(timed, modules=timed.main))).tables
    row = ["kernel time per execution (µs)", "22", "52", "+30 (+136.4%)"]
    assert row in [cells for _, cells in metrics]
    splits = [cells for css, cells in kernels if css == "split"]
    assert [cells[4] for cells in splits] == ["2 → 11"] * 3


def _poison(value: Any, payload: str) -> Any:
    """Every string value of a document with `payload` appended (keys are the schema's)."""
    if isinstance(value, str):
        return value + payload
    if isinstance(value, list):
        return [_poison(v, payload) for v in value]
    if isinstance(value, dict):
        return {k: _poison(v, payload) for k, v in value.items()}
    return value


def _poison_doc(payload: str) -> dict[str, Any]:
    """The regression's document with a payload in every name, path, kind, op and message;
    the schema's own keys and the values the page branches on are kept."""
    doc = copy.deepcopy(regression_doc())
    for side in ("a", "b"):
        doc[side]["path"] += payload
    for side in ("only_a", "only_b"):
        doc[side] = _poison(doc[side], payload)
    for v in doc["regressions"]:
        v["message"] += payload
    for m in doc["modules"]:
        for side in ("a", "b"):
            m[side] = _poison(m[side], payload)
        m["matched_by"] = "structure" + payload
        m["kernels_by_kind"] = {k + payload: v for k, v in m["kernels_by_kind"].items()}
        for k in m["kernel_changes"]:
            k["change"] += payload
            k["source_ops"] = _poison(k["source_ops"], payload)
            k["a"] = [
                {**r, "name": r["name"] + payload, "kind": r["kind"] + payload} for r in k["a"]
            ]
            k["b"] = [
                {**r, "name": r["name"] + payload, "kind": r["kind"] + payload} for r in k["b"]
            ]
        for o in m["op_changes"]:
            o["op"] += payload
            o["a"]["status"] += payload
            o["b"]["status"] += payload
            o["b"]["kernels"] = _poison(o["b"]["kernels"], payload)
    return doc


def test_every_string_is_escaped() -> None:
    for payload in PAYLOADS:
        doc = _poison_doc(payload)
        page = diff_page(doc, title="diff " + payload)
        assert payload not in page
        assert "<script" not in page and "<img" not in page and "<svg" not in page
        parsed = _parse(page)
        # the text comes back whole once the page is read as HTML
        [module] = doc["modules"]
        _, kernels, ops = parsed.tables
        assert kernels[0][1][0] == module["kernel_changes"][0]["change"]
        assert ops[0][1][0] == module["op_changes"][0]["op"]
        assert parsed.items[0] == doc["regressions"][0]["message"]
