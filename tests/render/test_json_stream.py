"""A streamed JSON document is the text `json.dumps` gives for the built one: on the
captured runs (every kind of module, profile and framework they hold), through the
CLI (a bare dump folder is written as it is made), and on values chosen to trip the
indentation (empty and nested stand-ins, newlines and controls in strings). A placement
written straight from its fields (`placement_text`) is its document's text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope.analysis.provenance import Placement, SourceOp
from hloscope.cli import app
from hloscope.cli.app import _json_text
from hloscope.cli.inspect import _peaks
from hloscope.hlo.model import SourceLocation
from hloscope.inspection import inspect_run
from hloscope.render.json import (
    SHARES_LISTED,
    dumps,
    placement_doc,
    placement_records,
    placement_text,
    report_doc,
    report_fields,
)
from hloscope.render.json_stream import (
    Fields,
    Items,
    Records,
    Value,
    built,
    chunks,
    indented,
    write_chunks,
)
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


def _records(rows: Any, doc: Any) -> Records[Any]:
    """Records whose text is their document's."""
    return Records(rows, doc, lambda row, newline: indented(doc(row), newline))


VALUES = [
    Fields(),
    Items(list),
    Fields(a=Items(list), b=Fields(), c=[], d={}),
    Items(lambda: [Items(list), Fields(), [], {}, Items(lambda: [1, [2, {"x": [3]}]])]),
    Fields(nested=Fields(deeper=Fields(list=Items(lambda: iter([{"k": [1, 2]}, "s"]))))),
    Fields(text="line\nbreak \u2028 \x1b[2J é \ud7ff", tab="\t", quote='"'),
    Items(lambda: [math.inf, -math.inf, 1e300, 0.1, -0, True, None, "ü"]),
    Fields({"key with \n newline": Items(lambda: ["v"]), "é": {"ü": []}}),
    Records(list, str, lambda row, newline: "unreached"),
    Fields(rows=_records(lambda: [1, 2], lambda r: {"r": [r] * r})),
    Items(lambda: [Fields(deep=_records(lambda: "ab", lambda r: [r, {}]))]),
    Value(lambda: Fields(a=1)),
    Fields(late=Value(lambda: Items(lambda: [1, Fields(x=Value(lambda: "s"))])), after=[]),
    Items(lambda: [Value(lambda: {"a": [1]}), Value(lambda: Items(list)), Value(dict)]),
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


def test_a_value_is_found_once_when_it_is_reached() -> None:
    """What another process is still making (`Value`) is asked for only once the
    document before it is written, and once."""
    found: list[int] = []

    def find() -> object:
        found.append(1)
        return Items(lambda: [{"late": True}])

    doc = Fields(first=Items(lambda: [1, 2]), late=Value(find), last="x")
    pieces = chunks(doc)
    written = ""
    while '"late": ' not in written:
        written += next(pieces)
    assert not found and '"first": [' in written
    written += "".join(pieces)
    assert found == [1]
    assert written == dumps(built(doc)) and found == [1]  # built: not found again
    assert written == dumps({"first": [1, 2], "late": [{"late": True}], "last": "x"})


def test_writes_are_gathered() -> None:
    writes: list[str] = []
    write_chunks(iter(["a"] * 10), writes.append, size=4)
    assert writes == ["aaaa", "aaaa", "aa"]


def test_records_are_written_from_their_rows() -> None:
    # the text of a row is written as given, at the array's indentation
    seen: list[tuple[int, str]] = []

    def text(row: int, newline: str) -> str:
        seen.append((row, newline))
        return indented({"row": row}, newline)

    doc = Fields(a=Fields(rows=Records(lambda: [1, 2], lambda r: {"row": r}, text)))
    assert "".join(chunks(doc)) == dumps({"a": {"rows": [{"row": 1}, {"row": 2}]}})
    assert seen == [(1, "\n" + "  " * 3), (2, "\n" + "  " * 3)]
    assert built(doc) == {"a": {"rows": [{"row": 1}, {"row": 2}]}}  # built from `doc`


NEWLINES = ["\n", "\n  ", "\n" + "  " * 3]


@pytest.mark.parametrize("name", RUNS)
def test_a_placement_is_written_as_its_document(name: str) -> None:
    placements = [
        p for m in inspect_run(DATA / name).modules if m.provenance for p in m.provenance.placements
    ]
    assert placements
    for newline in NEWLINES:
        for p in placements:
            assert placement_text(p, newline) == indented(placement_doc(p), newline)
    for p in placements:  # compact, as the page embeds it
        assert placement_text(p, None) == json.dumps(
            placement_doc(p), ensure_ascii=False, separators=(",", ":")
        )


OP = SourceOp("jit(f)/mul", "mul", SourceLocation("m.py", 3), True)
ODD = [
    Placement(SourceOp("a"), "dead", (), (), 0, 1, 0),  # no type, no location, no kernels
    Placement(
        OP, "fused", ("fusion.1",), tuple(f"op{i}" for i in range(SHARES_LISTED + 5)), 10**20, 2, 3
    ),
    Placement(
        OP, "merged", (), (), 0, 1, 0, 'XLA said "no"\n\u2028 é \x00', (("k", "how"),), "add.1"
    ),
    Placement(SourceOp('q"uote\\', "t\n", None, False), "alone", ("k\x1f",), ("ü",), 5, 1, 1),
    # types the fields do not say: written as placement_doc has them
    Placement(SourceOp("a", 3, None, 1), "alone", (), (), 1.5, True, False, None, (), ""),  # type: ignore[arg-type]
    Placement(OP, 7, (1,), (None,), 0, 1, 0, merged_with=("x",)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("p", ODD, ids=range(len(ODD)))
def test_an_odd_placement_is_written_as_its_document(p: Placement) -> None:
    for newline in NEWLINES:
        assert placement_text(p, newline) == indented(placement_doc(p), newline)
        assert placement_text(p, newline) == json.dumps(
            placement_doc(p), indent=2, ensure_ascii=False
        ).replace("\n", newline)
    compact = json.dumps(placement_doc(p), ensure_ascii=False, separators=(",", ":"))
    assert placement_text(p, None) == compact


def test_a_page_embeds_placements_as_their_documents() -> None:
    """The page writes each placement's compact text straight from its fields: the
    array `embed_json` writes of their documents, escapes included, in batches; a
    NaN or an infinity (a hand-made placement) is written as `embed_json` writes it."""
    from hloscope.render.html import _embed_items, embed_json

    nan = Placement(SourceOp("n"), "alone", (), (), float("nan"), 1, 1)  # type: ignore[arg-type]
    for rows in (ODD, [], [*ODD, nan, *ODD]):
        records = placement_records(lambda rows=rows: rows)
        want = embed_json([placement_doc(p) for p in rows])
        assert "".join(_embed_items(records, batch=2)) == want
        assert "".join(_embed_items(records)) == want
