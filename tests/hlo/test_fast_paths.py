"""The parser's fast paths (`_Parser.scan`: computations record by record, and
`_Parser.scan_tables`: the stack frame tables line by line; `Metadata`'s one-match read)
give what the general, statement-by-statement reader gives alone: the same model, or the
same error at the same line and column. Checked on the corpus, the captured dumps and mutated modules
(the mutations reach the cases the fast paths hand over: comments, joined lines, rows
outside a table, bad numbers)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo import model, parser
from hloscope.hlo.model import HloModule, Metadata
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


@pytest.mark.parametrize(
    "body",
    [
        # literals, read by `scan` itself
        "  %c = f32[2]{0} constant({1, 2})\n  ROOT %i = s32[4]{0} iota(), iota_dimension=0",
        "  %c = (f32[], s32[]) constant((1, 2))\n  ROOT %p = u32[] partition-id()",
        "  %p = f32[] parameter(0)\n  ROOT %c = f32[] constant(%p)",
        # operands not as XLA spells them
        "  %p = f32[] parameter(0)\n  ROOT %a = f32[] add(%p,%p)",
        "  %p = f32[] parameter(0)\n  ROOT %a = f32[] add(p, @p)",
        "  %p = f32[] parameter(0)\n  ROOT %a = f32[] add(%p , %p )",
        "  %p = f32[] parameter(0)\n  ROOT %a = f32[] add(%p, %q)",
        "  %p = f32[] parameter(0)\n  ROOT %a = f32[] add(%p, %%p)",
        # comments among operands: XLA's, and others
        "  %p = f32[] parameter(0)\n  ROOT %t = (f32[], f32[]) tuple(%p, /*index=1*/%p)",
        "  %p = f32[] parameter(0)\n  ROOT %t = (f32[], f32[]) tuple(%p /* a */, %p)",
        "  %p = f32[] parameter(0)\n  ROOT %t = (f32[], f32[]) tuple(p /* a */ p)",
        "  %p = f32[] parameter(0)\n  ROOT %t = () tuple(/* none */)",
        "  %p = f32[] parameter(0)\n  ROOT %t = (f32[]) tuple(/* unclosed %p)",
        # parameter numbers out of order, padded, repeated, missing
        "  %b = f32[] parameter(1)\n  %a = f32[] parameter(0)\n  ROOT %s = f32[] add(%a, %b)",
        "  %b = f32[] parameter(01)\n  %a = f32[] parameter(0)\n  ROOT %s = f32[] add(%a, %b)",
        "  %b = f32[] parameter(0)\n  %a = f32[] parameter(0)\n  ROOT %s = f32[] add(%a, %b)",
        "  %b = f32[] parameter(2)\n  %a = f32[] parameter(0)\n  ROOT %s = f32[] add(%a, %b)",
        # attributes naming called computations: one, two, one given twice
        '  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%f, metadata={op_name="x"}',
        "  %p = f32[] parameter(0)\n  ROOT %w = f32[] while(%p), condition=%g, body=%f",
        "  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%f, to_apply=%h",
        "  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply={%f, %h}",
        "  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%nowhere",
    ],
)
def test_instructions_the_fast_path_reads_or_hands_over(body: str) -> None:
    callees = "".join(
        f"%{name} (x: f32[]) -> {shape} {{\n  ROOT %x = f32[] parameter(0)\n}}\n\n"
        for name, shape in (("f", "f32[]"), ("g", "f32[]"), ("h", "f32[]"))
    )
    text = f"HloModule m\n\n{callees}ENTRY %e (p: f32[]) -> f32[] {{\n{body}\n}}\n"
    fast, slow = _both(text)
    assert fast == slow


def _metadata_fields(text: str, *, general: bool) -> tuple[object, ...]:
    md = Metadata.of_text(text)
    if not general:
        return tuple(getattr(md, f) for f in _FIELDS)
    canonical = model._CANONICAL_METADATA
    model._CANONICAL_METADATA = re.compile(r"(?!)")  # matches nothing: the general path
    try:
        return tuple(getattr(md, f) for f in _FIELDS)
    finally:
        model._CANONICAL_METADATA = canonical


_FIELDS = ("op_type", "op_name", "source_file", "source_line", "stack_frame_id")
_METADATA = re.compile(r'metadata=(\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})')
_EDITS = ['"', "\\", " ", "=", "}", "{", ",", "\n", "1", "é", "\\n", "\t", ' op_name="y"',
          "source_line=9", " stack_frame_id=3", "stack_frame_id=99999999999999999999"]  # fmt: skip


def test_metadata_as_xla_prints_it_reads_as_any_other() -> None:
    """`Metadata`'s one-match read of XLA's own layout gives the fields the general
    key=value read gives, on every metadata of the seeds and on edits of them."""
    texts = sorted({t for s in _seeds() for t in _METADATA.findall(s)})
    assert sum(model._CANONICAL_METADATA.fullmatch(t) is not None for t in texts) > len(texts) / 2
    rng = random.Random(27)
    edited = []
    while len(edited) < 20_000:
        t = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(1, max(2, len(t) - 1))
            t = t[:k] + rng.choice(_EDITS) + t[k + rng.randrange(0, 3) :]
        if t.startswith("{") and t.endswith("}"):
            edited.append(t)
    for text in texts + edited:
        assert _metadata_fields(text, general=False) == _metadata_fields(text, general=True), text
