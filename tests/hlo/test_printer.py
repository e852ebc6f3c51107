"""HLO text printed from the parsed model reads back, in XLA's own parser, as the module
it was printed from."""

from __future__ import annotations

import pytest

from hloscope.hlo.parser import parse_file, parse_module
from hloscope.hlo.printer import computation_text, instruction_text, module_text
from tests.conftest import DATA

DUMPS = sorted(DATA.glob("*/*_optimizations.txt"))


def _xla_counts(text: str) -> list[tuple[str, int]]:
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(text)
    return [(c.name, len(list(c.instructions()))) for c in module.computations()]


@pytest.mark.parametrize("path", DUMPS[::7], ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_printed_modules_read_back_in_xla_as_the_same_module(path: object) -> None:
    original = path.read_text(encoding="utf-8")  # type: ignore[attr-defined]
    try:
        expected = _xla_counts(original)
    except Exception:  # a module this jaxlib's parser is too old for
        pytest.skip("XLA's parser here does not read the original")
    printed = module_text(parse_file(path))  # type: ignore[arg-type]
    assert sorted(_xla_counts(printed)) == sorted(expected)


def test_a_fused_computation_prints_as_the_dump_shows_it_less_metadata() -> None:
    path = next((DATA / "jax_mlp").glob("module_0030.*after_optimizations.txt"))
    module = parse_file(path)
    comp = module.computation_map["fused_computation.4"]
    dumped = path.read_text(encoding="utf-8").split("%fused_computation.4 ", 1)[1]
    lines = ["%fused_computation.4 " + dumped.split("\n}\n", 1)[0], "}"]
    expected = "\n".join(lines)
    for line in computation_text(comp).splitlines()[1:-1]:
        assert line in expected  # each instruction is the dump's line up to its metadata
    assert "metadata=" not in computation_text(comp)
    assert "metadata={op_name=" in computation_text(comp, metadata=True)


def test_printing_reads_attributes_without_keeping_them() -> None:
    # a page prints every fused instruction of a big module: a dict kept for each was
    # 194 MB for a 153 MB module (issue 27)
    path = next((DATA / "jax_mlp").glob("module_0030.*after_optimizations.txt"))
    printed = [instruction_text(i) for c in parse_file(path).computations for i in c.instructions]
    module = parse_file(path)
    insts = [i for c in module.computations for i in c.instructions]
    unread = [i.name for i in insts if getattr(i.attributes, "_map", 0) is None]
    assert [instruction_text(i) for i in insts] == printed
    assert unread and unread == [i.name for i in insts if getattr(i.attributes, "_map", 0) is None]
    [dict(i.attributes) for i in insts]  # read through the mapping: kept, printed alike
    assert [instruction_text(i) for i in insts] == printed
    assert not [i.name for i in insts if getattr(i.attributes, "_map", 0) is None]


def test_metadata_with_braces_inside_quotes_is_left_out_whole() -> None:
    text = (
        "HloModule m\n\nENTRY e {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
        '  ROOT a = f32[] add(x, y), metadata={op_name="f{o}o\\"}" source_line=3}, '
        "sharding={replicated}\n}\n"
    )
    root = parse_module(text).entry.root
    assert instruction_text(root) == "ROOT %a = f32[] add(%x, %y), sharding={replicated}"
