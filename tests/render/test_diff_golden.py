"""Golden outputs of `hloscope diff`: the terminal text (`diff_view` on a fixed-width rich
`Console`) and the JSON document (`diff_doc`) of real dumps, compared whole with the files
in tests/render/golden/ after paths, times and versions are normalised.

A change to what `hloscope diff` prints fails here first. When the change is meant,
regenerate the files and read their diff before committing:

    HLOSCOPE_UPDATE_GOLDEN=1 PYTHONPATH=$PWD .venv/bin/python -m pytest -q tests/render/test_diff_golden.py
"""

from __future__ import annotations

import io
import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType

from hloscope.analysis.diff import RunDiff, diff_runs, regressions
from hloscope.analysis.report import analyze_run
from hloscope.render.diff_text import diff_view
from hloscope.render.json import diff_doc, dumps
from hloscope.runs import load_run
from tests.conftest import DATA

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("HLOSCOPE_UPDATE_GOLDEN") == "1"

# The real fusion regression (samples/flags_demo.md) and one TensorFlow function dumped by
# two processes (its module names differ by TensorFlow's hashes and counters).
REGRESSION = ("jax_mlp", "jax_mlp_no_fusion_pass")
TF_TWO_DUMPS = ("tf_dense_relu", "tf_dense_relu_profile")
TOLERANCE = 0.05


@cache
def run_diff(a: str, b: str) -> RunDiff:
    """`diff_runs` of two folders of tests/data (not profiled)."""
    return diff_runs(analyze_run(load_run(DATA / a)), analyze_run(load_run(DATA / b)))


def render(renderable: RenderableType, width: int = 100) -> str:
    """What a terminal `width` columns wide shows, without colour."""
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


_VERSION = re.compile(r"\b(jax|jaxlib|tensorflow|keras|python|hloscope) \d+\.\d+[\w.+-]*")
_SECONDS = re.compile(r"(?<= · )\d+(?:\.\d+)? s\b")


def normalise_text(text: str) -> str:
    """Paths below tests/data, framework versions and run times made placeholders."""
    text = text.replace(str(DATA), "<data>")
    text = _VERSION.sub(r"\1 <version>", text)
    return _SECONDS.sub("<seconds> s", text)


# Keys of a run document that change between captures of the same program.
_VOLATILE = re.compile(r"version|time|started|created|command|host|_at$")


def normalise_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """A `diff_doc` with the run documents' paths, times and versions made placeholders
    (`schema_version` and the module documents are kept as they are)."""
    out = dict(doc)
    for side in ("a", "b"):
        run = dict(out[side])
        run["path"] = normalise_text(str(run["path"]))
        for key, value in run.items():
            if _VOLATILE.search(key) and value is not None:
                run[key] = f"<{key}>"
        out[side] = run
    return out


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/render/golden/<name> (or write it, with HLOSCOPE_UPDATE_GOLDEN=1)."""
    path = GOLDEN / name
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
    assert path.is_file(), f"{path} is missing: regenerate it (see this module's docstring)"
    assert actual == path.read_text(encoding="utf-8")


def regression_doc() -> dict[str, Any]:
    """The `hloscope diff --json --fail-on-regression --tolerance 5%` document of the
    real regression, as the CLI builds it (non-trivial modules shown)."""
    d = run_diff(*REGRESSION)
    found = regressions(d.main, TOLERANCE)
    return diff_doc(d, modules=d.main, regressions=found, tolerance=TOLERANCE)


def test_regression_text_golden() -> None:
    check_golden("diff_regression.txt", normalise_text(render(diff_view(run_diff(*REGRESSION)))))


def test_regression_json_golden() -> None:
    check_golden("diff_regression.json", dumps(normalise_doc(regression_doc())) + "\n")


def test_tf_two_dumps_text_golden() -> None:
    text = render(diff_view(run_diff(*TF_TWO_DUMPS), show_all=True))
    check_golden("diff_tf_two_dumps.txt", normalise_text(text))


def test_normalising_keeps_what_the_diff_says() -> None:
    # The placeholders hide only paths, times and versions: counts stay in the golden.
    text = normalise_text("A /x · jax 0.10.2 · cpu · 5.3 s\n  kernels   11   52   +41")
    assert text == "A /x · jax <version> · cpu · <seconds> s\n  kernels   11   52   +41"
    doc = normalise_doc(json.loads(json.dumps(regression_doc())))
    assert doc["a"]["path"] == "<data>/jax_mlp" and doc["modules"] == regression_doc()["modules"]


def test_no_stale_golden_files() -> None:
    # a renamed test must not leave its old golden file behind
    from tests.render.test_report_golden import CASES

    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(
        ["diff_regression.json", "diff_regression.txt", "diff_tf_two_dumps.txt"]
        + [name for name, _ in CASES]
    )
