"""The parser's fast paths (`_Parser.scan`: computations record by record, and
`_Parser.scan_tables`: the stack frame tables line by line) give what the general,
statement-by-statement reader gives alone: the same model, or the same error at the
same line and column. Checked on the corpus, the captured dumps and mutated modules
(the mutations reach the cases the fast paths hand over: comments, joined lines, rows
outside a table, bad numbers)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo import parser
from hloscope.hlo.model import HloModule
from tests.conftest import CORPUS, DATA
from tests.hlo.fuzzing import mutate, seed_modules

MUTATIONS = 1500


@contextmanager
def _statements_only() -> Iterator[None]:
    """The parser with both fast paths off: every line read by `statements`."""
    scan, tables = parser._Parser.scan, parser._Parser.scan_tables
    parser._Parser.scan = parser._Parser.scan_tables = lambda self: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        parser._Parser.scan, parser._Parser.scan_tables = scan, tables  # type: ignore[method-assign]


def _outcome(text: str) -> tuple[str, object]:
    try:
        module = parser.parse_module(text, path="m.hlo")
    except HloParseError as e:
        return "error", (str(e), e.line, e.column)
    return "model", _model(module)


def _model(m: HloModule) -> object:
    comps = [
        (c.name, c.is_entry, c.execution_thread, c.line, [tuple(i) for i in c.instructions])
        for c in m.computations
    ]
    return m.name, dict(m.attributes), comps, dict(m.stack_frames), m.stats


def _both(text: str) -> tuple[tuple[str, object], tuple[str, object]]:
    fast = _outcome(text)
    with _statements_only():
        slow = _outcome(text)
    return fast, slow


def _seeds() -> list[str]:
    return seed_modules([CORPUS / "hlo", DATA], max_chars=40_000)


def test_the_seeds_parse_the_same_both_ways() -> None:
    seeds = _seeds()
    assert len(seeds) > 10
    tables = 0
    for text in seeds:
        fast, slow = _both(text)
        assert fast == slow
        tables += "StackFrames" in text
    assert tables > 0  # JAX dumps with call-stack tables are among them


def test_mutated_modules_parse_the_same_both_ways() -> None:
    rng = random.Random(27)
    seeds = _seeds()
    with_tables = [s for s in seeds if "FileNames" in s]
    kinds = set()
    for _ in range(MUTATIONS):
        # half of them edit a module with stack frame tables, where `scan_tables` reads
        text = mutate(rng.choice(with_tables if rng.random() < 0.5 else seeds), rng)
        fast, slow = _both(text)
        assert fast == slow, text[:400]
        kinds.add(fast[0])
    assert kinds == {"model", "error"}


@pytest.mark.parametrize(
    "tail",
    [
        'FileNames\n1 "a.py"\n\n  FunctionNames  \n1 "f"\n',  # blank lines, spaces
        'FileNames\n1 "a /* b */ c"\n',  # a comment opener inside a string
        "FileLocations\n1 {file_name_id=1 line=3},\n2 {line=4}\n",  # a row joined on
        "FileLocations\n1 {file_name_id=1 line=3 // note\n}\n",  # a comment, a join
        "StackFrames\n99999999999999999999 {file_location_id=1}\n",  # past int64
        '7 "a row outside a table"\n',
        'FileNames\n1 "a"\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}\n',
    ],
)
def test_tables_the_fast_path_hands_over(tail: str) -> None:
    text = "HloModule m\n\n" + tail + "\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}\n"
    fast, slow = _both(text)
    assert fast == slow
