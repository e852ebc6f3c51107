"""A streamed JSON document is the text `json.dumps` gives for the built one: on the
captured runs (every kind of module, profile and framework they hold), through the
CLI (a bare dump folder is written as it is made), and on values chosen to trip the
indentation (empty and nested stand-ins, newlines and controls in strings)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.cli.app import _json_text
from hloscope.cli.inspect import _peaks
from hloscope.inspection import inspect_run
from hloscope.render.json import dumps, report_doc, report_fields
from hloscope.render.json_stream import Fields, Items, built, chunks, write_chunks
from tests.conftest import DATA

RUNS = [
    "jax_mlp",
    "jax_transformer_block",
    "tf_dense_relu",
    "tf_resnet50",
    "jax_four_devices_profile",
    "jax_recompile",
    "jax_mlp_profile",
    "tf_auto_clustering",
    "torch_mlp",
]
PEAKS = ["--peak-bandwidth", "12", "--peak-tflops", "0.2"]


@pytest.mark.parametrize("name", RUNS)
def test_a_streamed_report_is_the_built_one(name: str) -> None:
    inspection = inspect_run(DATA / name)
    streamed = "".join(chunks(report_fields(inspection)))
    assert streamed == dumps(report_doc(inspection))
    assert json.loads(streamed)["modules"]  # and a document with modules in it


def test_the_cli_streams_a_bare_folder_as_it_printed_it_whole() -> None:
    # a bare dump folder with a profile keeps nothing: its document is streamed
    folder = DATA / "jax_mlp_profile"
    result = CliRunner().invoke(app, ["report", str(folder), "--json", *PEAKS])
    assert result.exit_code == 0, result.output
    inspection = inspect_run(folder)
    peaks = _peaks(inspection, 12.0, 0.2)
    assert peaks is not None
    assert result.stdout == _json_text(report_doc(inspection, peaks))


def test_ops_json_streams_the_same_document() -> None:
    result = CliRunner().invoke(app, ["ops", str(DATA / "jax_mlp"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc and all({"module", "name", "ops"} <= set(m) for m in doc)
    assert result.stdout == _json_text(doc)


VALUES = [
    Fields(),
    Items(list),
    Fields(a=Items(list), b=Fields(), c=[], d={}),
    Items(lambda: [Items(list), Fields(), [], {}, Items(lambda: [1, [2, {"x": [3]}]])]),
    Fields(nested=Fields(deeper=Fields(list=Items(lambda: iter([{"k": [1, 2]}, "s"]))))),
    Fields(text="line\nbreak \u2028 \x1b[2J é \ud7ff", tab="\t", quote='"'),
    Items(lambda: [math.inf, -math.inf, 1e300, 0.1, -0, True, None, "ü"]),
    Fields({"key with \n newline": Items(lambda: ["v"]), "é": {"ü": []}}),
]


@pytest.mark.parametrize("doc", VALUES, ids=range(len(VALUES)))
def test_stand_ins_write_as_json_dumps_does(doc: object) -> None:
    assert "".join(chunks(doc)) == json.dumps(built(doc), indent=2, ensure_ascii=False)


class _Three(int):
    """An int subclass (as an IntEnum is): encoded as json.dumps encodes it."""


PLAIN = [
    {},
    [],
    (1, (2, ())),
    {1: "int key", 2.5: "float key", False: "bool key", None: "null key", "": [{}]},
    [math.nan, math.inf, -math.inf, -0.0, 1e-320, 10**40, _Three(3), {"n": math.nan}],
    {"s": '\x00\x1f\x7f\u2028\ud800 😀 \\ "', "nested": [[[[]]], {"a": {"b": []}}]},
]


@pytest.mark.parametrize("value", PLAIN, ids=range(len(PLAIN)))
def test_dumps_is_json_dumps(value: object) -> None:
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("name", RUNS[:4])
def test_dumps_of_a_report_is_json_dumps(name: str) -> None:
    doc = report_doc(inspect_run(DATA / name))
    assert dumps(doc) == json.dumps(doc, indent=2, ensure_ascii=False)


def test_items_are_made_as_they_are_written() -> None:
    made: list[int] = []

    def items() -> object:
        for i in range(3):
            made.append(i)
            yield {"i": i}

    pieces = chunks(Fields(items=Items(items)))
    first = next(pieces) + next(pieces)
    assert made == [0] and '"items": ' in first  # one item made, not the list
    assert "".join([first, *pieces]) == dumps({"items": [{"i": i} for i in range(3)]})


def test_writes_are_gathered() -> None:
    writes: list[str] = []
    write_chunks(iter(["a"] * 10), writes.append, size=4)
    assert writes == ["aaaa", "aaaa", "aa"]
