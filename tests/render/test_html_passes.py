"""The pass story's place in the HTML page's data: the module document of a run with
per-pass dumps carries `passes` (the `passes --json` entry and its extras)."""

from __future__ import annotations

from hloscope.inspection import inspect_run
from hloscope.render.html import page_data
from hloscope.render.passes import passes_doc
from tests.conftest import DATA


def test_module_doc_carries_the_story_only_when_asked() -> None:
    inspection = inspect_run(DATA / "jax_passes", passes=True)
    [doc] = page_data(inspection)["modules"]
    story = doc["passes"]
    [plain] = passes_doc(inspection.passes.values())["modules"]
    # the page's document is the JSON one, plus what the page shows besides
    for key in ("key", "name"):
        assert story[key] == plain[key]
    assert [{k: p[k] for k in plain["passes"][0]} for p in story["passes"]] == plain["passes"]
    assert story["start"] == {"instructions": 19, "fusions": 0, "kernels": 9, "launches": 9}
    assert story["slowest"][0]["pass"] == "copy-insertion"
    assert story["kernels"][1]["history"][0]["from"] == ["add.6", "add.7", "max.1", "reduce_sum.7"]
    [without] = page_data(inspect_run(DATA / "jax_passes"))["modules"]
    assert without["passes"] is None
