"""Text, JSON, HTML and the notebook API say the same thing about every module.

On every module of the samples' captured dumps in tests/data, each headline figure
(`hloscope.render.figures`) is read from each view as a user gets it: the terminal
report (`hloscope report --all`, piped: its modules table and the module's section),
`hloscope report --json`, the data the HTML page renders (the overview's table cells and
each module's stats, embedded in the written page) and `RunView.summary()`. The text is
parsed back to numbers and compared with the JSON's, and the JSON with the API's, so
that a view rounding or labelling a figure its own way fails here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.hlo.names import readable_name
from hloscope.inspection import inspect_run
from hloscope.notebook import RunView
from hloscope.render.figures import FIGURES, TABLE, one_line
from hloscope.render.format import short_name
from hloscope.render.html import report_page
from hloscope.runs import load_run
from tests.conftest import DATA

# The captured dumps and profiles of the samples (each folder's HOW.md names its sample).
SAMPLES = [
    "tf_dense_relu",  # samples/dense_relu.py
    "tf_dense_relu_profile",
    "jax_mlp",  # samples/jax_mlp.py
    "jax_mlp_profile",
    "jax_mlp_no_fusion_pass",
    "jax_transformer_block",  # samples/jax_transformer_block.py
    "memory_reports",  # five samples, with XLA's memory files
    "tf_recsys_scores",  # samples/recsys_scores.py
    "tf_resnet50",  # samples/resnet50.py
    "jax_recompile",  # samples/jax_recompile.py
    "tf_retrace",  # samples/tf_retrace.py
    "tf_auto_clustering",  # samples/tf_auto_clustering.py
    "jax_four_devices_profile",  # samples/jax_four_devices.py
    "tf_compile_fails",  # samples/dynamic_shape_fails.py
    "torch_mlp",  # samples/torch_mlp.py
    "torch_transformer",  # samples/torch_transformer.py
]

ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
_US = {"µs": 1.0, "ms": 1e3, "s": 1e6}


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env=ENV)
    assert result.exit_code == 0, result.output
    return result.stdout


def _at(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if doc is None:
            return None
        doc = doc[part]
    return doc


def _number(text: str) -> float | None:
    """A figure as the text prints it, back to a number (µs for times); None for `–`."""
    if text == "–":
        return None
    m = re.fullmatch(r"~?(-?[\d.]+)(?: (µs|ms|s))?", text)
    assert m is not None, text
    return float(m[1]) * _US[m[2]] if m[2] else float(m[1])


def _agrees(text: str, value: Any) -> bool:
    """Whether the printed text is the JSON's value at the precision it is printed to."""
    shown = _number(text)
    if value is None or shown is None:
        return value is None and shown is None
    digits = text.split(" ")[0].lstrip("~")
    step = 10 ** -len(digits.split(".")[1]) if "." in digits else 1
    scale = _US[text.split(" ")[1]] if " " in text else 1.0
    return abs(shown - value) <= step * scale / 2 + 1e-9


def _sections(text: str) -> dict[str, str]:
    """The terminal report's module sections, by their heading (`name  [module 0030]`)."""
    return {
        part.split("\n", 1)[0].strip(): " ".join(part.split()) for part in text.split("\n── ")[1:]
    }


def _embedded(page: str, block: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', page)
    assert found is not None, block
    return json.loads(found[1])


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_view_shows_the_same_figures(sample: str, tmp_path: Path) -> None:
    run = tmp_path / sample  # a copy: report --json keeps its document in the run folder
    shutil.copytree(DATA / sample, run)
    text = _cli("report", str(run), "--all")
    doc = json.loads(_cli("report", str(run), "--json"))
    inspection = inspect_run(load_run(run))
    page = report_page(inspection)
    overview = _embedded(page, "hs-overview")
    summary = {row["key"]: row for row in RunView(inspection.run).summary()}
    sections = _sections(text)
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.strip()}

    checked = 0
    for index, m in enumerate(doc["modules"]):
        key = m["key"]
        html = overview["modules"][index]
        figures = {f["name"]: f for f in _embedded(page, f"hs-module-{index}")["figures"]}
        assert html["key"] == key and {f["name"]: f for f in html["figures"]} == figures
        api = summary[key]
        # the JSON's value, the API's value, and the text every view prints, per figure
        for name, f in figures.items():
            label, path = FIGURES[name]
            value = _at(m, path)
            if name == "launches" and m["after"] and not m["after"]["launches_exact"]:
                assert f["text"] == f"~{value}"
            assert api[name] == pytest.approx(value, abs=1e-3), (key, name)
            assert _agrees(f["text"], value), (key, name, f["text"], value)
            assert f["label"].startswith(label)
            checked += 1
        # the HTML overview's table cells are the terminal table's
        cells = [text for _, text in html["cells"]]
        assert [h for h, _ in html["cells"]] == [one_line(h) for h, _ in TABLE]
        row = rows[readable_name(key)]
        if row[0] != "unreadable":
            assert row == cells, key
        # the module's section prints each figure with its label
        where = f"module {key.split('.')[0]}" if m["key"][:4].isdigit() else "module"
        section = sections[f"{short_name(m['name'], 64)}  [{where}]"]
        if m["after"] is not None:
            for header, names in TABLE:
                shown = "→".join(figures[n]["text"] for n in names)
                label = figures[names[0]]["label"] if len(names) == 1 else one_line(header)
                assert f"{label} {shown}" in section, (key, label)
            timed = m.get("timing")
            if timed is not None:
                wall, kernels = figures["wall_per_execution"], figures["kernel_time_per_execution"]
                assert f"wall per execution {wall['text']}" in section
                assert f"kernel time per execution {kernels['text']}" in section
    assert checked >= len(doc["modules"]) * 9
