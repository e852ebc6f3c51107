"""`ModuleSeries`: successive dumps of one module parsed with what did not change reused,
each module equal to what `parse_module` makes of the same text (and to XLA's count)."""

from __future__ import annotations

import json

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo.model import HloModule
from hloscope.hlo.parser import parse_module
from hloscope.hlo.series import ModuleSeries, split_computations
from tests.conftest import CORPUS, DATA


def _series_texts(folder: str) -> list[str]:
    """A module's before-optimization dump, its per-pass dumps in step order, and its
    after-optimization dump: the texts `hloscope passes` reads one after the other."""
    dump = DATA / folder / "dump"
    before = sorted(dump.glob("*.before_optimizations.txt"))
    steps = sorted(
        (p for p in dump.glob("*.txt") if ".after_" in p.name or ".copy-insertion." in p.name),
        key=lambda p: p.name,
    )
    after = sorted(dump.glob("*_after_optimizations.txt"))
    return [p.read_text() for p in [*before, *steps, *after]]


def _same(a: HloModule, b: HloModule) -> None:
    """Equal as the analyses see them (line numbers aside)."""
    assert (a.name, dict(a.attributes), dict(a.stack_frames)) == (
        b.name,
        dict(b.attributes),
        dict(b.stack_frames),
    )
    assert [(c.name, c.is_entry, c.execution_thread) for c in a.computations] == [
        (c.name, c.is_entry, c.execution_thread) for c in b.computations
    ]
    for ca, cb in zip(a.computations, b.computations, strict=True):
        assert [i._replace(line=0) for i in ca.instructions] == [
            i._replace(line=0) for i in cb.instructions
        ], ca.name


@pytest.mark.parametrize("folder", ["jax_passes", "tf_passes"])
def test_each_dump_equals_a_whole_parse_and_most_is_reused(folder: str) -> None:
    texts = _series_texts(folder)
    assert len(texts) > 10
    series = ModuleSeries()
    for text in texts:
        _same(series.parse(text), parse_module(text))
    # consecutive dumps differ little: most instruction lines were not parsed again
    assert series.reused > 2 * series.parsed


def test_instruction_counts_equal_xlas_parser() -> None:
    hlo = pytest.importorskip("jaxlib._hlo")
    series = ModuleSeries()
    for text in _series_texts("jax_passes"):
        ours = series.parse(text)
        xla = hlo.hlo_module_from_text(text)
        assert ours.instruction_count == sum(len(c.instructions()) for c in xla.computations())


def test_unrelated_modules_in_a_row_are_parsed_right() -> None:
    """Nothing is reused wrongly when one module follows another it shares nothing with
    (the corpus: real modules of many shapes)."""
    manifest = CORPUS / "MANIFEST.json"
    if not manifest.exists():
        pytest.skip("the corpus is not beside the checkout")
    entries = [e for e in json.loads(manifest.read_text()) if e["xla_parses"]][:40]
    series = ModuleSeries()
    for entry in entries:
        text = (CORPUS / entry["file"]).read_text()
        try:
            expected = parse_module(text)
        except HloParseError:
            with pytest.raises(HloParseError):
                series.parse(text)
            continue
        _same(series.parse(text), expected)


def test_a_changed_line_is_parsed_and_the_rest_reused() -> None:
    text = _series_texts("jax_passes")[-1]
    series = ModuleSeries()
    first = series.parse(text)
    changed = text.replace("kind=kLoop", "kind=kInput", 1)
    assert changed != text
    second = series.parse(changed)
    _same(second, parse_module(changed))
    fusion = next(
        i
        for c in second.computations
        for i in c.instructions
        if i.opcode == "fusion" and i.fusion_kind == "kInput"
    )
    assert fusion.fusion_kind == "kInput"
    # the computations that did not change are the very same objects
    shared = [c for c in second.computations if any(c is d for d in first.computations)]
    assert len(shared) == len(second.computations) - 1


def test_bad_text_raises_what_the_whole_parse_raises() -> None:
    series = ModuleSeries()
    series.parse(_series_texts("jax_passes")[0])
    broken = _series_texts("jax_passes")[1].replace("parameter(0)", "parameter(", 1)
    with pytest.raises(HloParseError) as ours:
        series.parse(broken)
    with pytest.raises(HloParseError) as whole:
        parse_module(broken)
    assert str(ours.value) == str(whole.value)


def test_split_keeps_every_computation_and_refuses_other_shapes() -> None:
    text = _series_texts("tf_passes")[-1]
    split = split_computations(text)
    assert split is not None
    head, chunks = split
    assert head.startswith("HloModule ")
    assert [name for name, _, _ in chunks] == [c.name for c in parse_module(text).computations]
    assert (
        split_computations("HloModule m\n// a comment\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}")
        is None
    )
