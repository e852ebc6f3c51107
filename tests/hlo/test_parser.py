"""The HLO text parser: syntax coverage, agreement with XLA's own parser, and errors."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo.model import HloModule
from hloscope.hlo.parser import parse_file, parse_module, parse_shape
from hloscope.hlo.text import split_modules
from tests.conftest import CORPUS, DATA, dump_file

# ---------------------------------------------------------------------------------------
# The external corpus: every module XLA's C++ parser reads, hloscope reads with the
# same counts (../shared/corpus/MANIFEST.json has XLA's counts).


def _manifest() -> list[dict]:
    path = CORPUS / "MANIFEST.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())


@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").exists(), reason="../shared/corpus absent")
@pytest.mark.parametrize("entry", _manifest(), ids=lambda e: e["file"])
def test_corpus_counts_agree_with_xla(entry: dict) -> None:
    text = (CORPUS / entry["file"]).read_text()
    if entry["xla_parses"]:
        module = parse_module(text, path=entry["file"])
        assert len(module.computations) == entry["computations"]
        assert module.instruction_count == entry["instructions"]
        assert module.stats.total == 0, module.stats
    elif entry.get("split_input_file_chunks"):
        chunks = split_modules(text)
        assert len(chunks) == entry["split_input_file_chunks"]
        modules = [parse_module(chunk) for _, chunk in chunks]
        assert sum(len(m.computations) for m in modules) == entry["split_computations"]
        assert sum(m.instruction_count for m in modules) == entry["split_instructions"]
    else:
        # XLA rejects it only for an opcode newer than that jaxlib; hloscope reads it.
        module = parse_module(text)
        assert module.instruction_count > 0


# ---------------------------------------------------------------------------------------
# Cross-check against jaxlib._hlo on generated modules.


def _xla_view(text: str) -> dict[str, list[tuple[str, str, list[str]]]]:
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(text)
    out = {}
    for comp in module.computations():
        out[comp.name] = [
            (i.name, _opcode_text(i.to_string()), [o.name for o in i.operands()])
            for i in comp.instructions()
        ]
    return out


def _opcode_text(printed: str) -> str:
    """The opcode as XLA prints it (`exponential`), from XLA's own instruction text."""
    after_eq = printed.split(" = ", 1)[1]
    match = re.search(r"(?:^|\s)([a-z][a-z0-9\-]*)\(", after_eq)
    assert match, printed
    return match.group(1)


def _ours(module: HloModule) -> dict[str, list[tuple[str, str, list[str]]]]:
    return {
        c.name: [(i.name, i.opcode, list(i.operands)) for i in c.instructions]
        for c in module.computations
    }


_UNARY = ["exponential", "tanh", "negate", "abs", "sqrt", "log", "sine", "cosine"]
_BINARY = ["add", "multiply", "subtract", "maximum", "minimum", "divide"]


def _random_module(seed: int) -> str:
    """A random but valid module: elementwise chains, reduces, a fusion, a call, a loop."""
    rng = random.Random(seed)
    n = rng.randint(3, 40)
    layout = "{(f32[8,16]{1,0})->f32[8]{0}}"
    lines = [f"HloModule gen_{seed}, entry_computation_layout={layout}"]
    lines += [
        "",
        "%add_f32 (x: f32[], y: f32[]) -> f32[] {",
        "  %x = f32[] parameter(0)",
        "  %y = f32[] parameter(1)",
        "  ROOT %sum = f32[] add(f32[] %x, f32[] %y)",
        "}",
        "",
        "%fused (p0: f32[8,16], p1: f32[8,16]) -> f32[8,16] {",
        "  %p0 = f32[8,16]{1,0} parameter(0)",
        "  %p1 = f32[8,16]{1,0} parameter(1)",
        "  %m = f32[8,16]{1,0} multiply(%p0, %p1)",
        "  ROOT %e = f32[8,16]{1,0} exponential(%m)",
        "}",
        "",
        "ENTRY %main (arg: f32[8,16]) -> f32[8] {",
        '  %arg = f32[8,16]{1,0} parameter(0), metadata={op_name="x"}',
    ]
    names = ["arg"]
    for i in range(n):
        kind = rng.random()
        a = rng.choice(names)
        name = f"v.{i}"
        md = f'metadata={{op_name="jit(f)/layer_{i % 3}/op" source_file="f.py" source_line={i}}}'
        if kind < 0.4:
            op = rng.choice(_UNARY)
            lines.append(f"  %{name} = f32[8,16]{{1,0}} {op}(%{a}), {md}")
        elif kind < 0.8:
            b = rng.choice(names)
            op = rng.choice(_BINARY)
            lines.append(f"  %{name} = f32[8,16]{{1,0}} {op}(%{a}, %{b}), {md}")
        else:
            b = rng.choice(names)
            lines.append(
                f"  %{name} = f32[8,16]{{1,0}} fusion(%{a}, %{b}), kind=kLoop, calls=%fused, "
                f'backend_config={{"outer_dimension_partitions":[]}}'
            )
        names.append(name)
    lines.append("  %zero = f32[] constant(0)")
    lines.append(
        f"  ROOT %out = f32[8]{{0}} reduce(%{names[-1]}, %zero), dimensions={{1}}, "
        "to_apply=%add_f32"
    )
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.jax
@pytest.mark.parametrize("seed", range(12))
def test_same_structure_as_xla_on_generated_modules(seed: int) -> None:
    text = _random_module(seed)
    assert _ours(parse_module(text)) == _xla_view(text)


@pytest.mark.jax
@pytest.mark.parametrize(
    "path",
    [
        dump_file("jax_mlp", "*jit_mlp.cpu_after_optimizations.txt"),
        dump_file("jax_transformer_block", "*jit_block.before_optimizations.txt"),
        dump_file("tf_resnet50", "*cpu_after_optimizations.txt"),
    ],
    ids=lambda p: p.parent.name + "/" + p.name[:40],
)
def test_same_structure_as_xla_on_captured_dumps(path: Path) -> None:
    text = path.read_text()
    assert _ours(parse_module(text)) == _xla_view(text)


# ---------------------------------------------------------------------------------------
# Syntax the parser must cover, on hand-written modules.


STACK_FRAMES = """\
HloModule jit_outer, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

FileNames
1 "/tmp/j2.py"

FunctionNames
1 "<module>"
2 "outer"
3 "inner"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=6 end_column=20}
2 {file_name_id=1 function_name_id=2 line=5 end_line=5 column=11 end_column=23}
3 {file_name_id=1 function_name_id=3 line=3 end_line=3 column=11 end_column=25}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}


ENTRY %main.1 (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), metadata={op_name="x"}
  %sin.1 = f32[4]{0} sine(%x.1), metadata={op_name="jit(outer)/sin" stack_frame_id=3}
  ROOT %add.1 = f32[4]{0} add(%sin.1, %sin.1), metadata={op_name="jit(outer)/add" stack_frame_id=2}
}
"""


def test_stack_frames_resolve_to_file_line_function_and_call_stack() -> None:
    m = parse_module(STACK_FRAMES)
    sin = m.entry.by_name["sin.1"]
    loc = m.source_location(sin)
    assert loc is not None
    assert (loc.file, loc.line, loc.function) == ("/tmp/j2.py", 3, "inner")
    # inner (line 3) <- outer (line 5) <- <module> (line 7)
    assert [(f.line, f.function) for f in m.stack(sin)] == [
        (3, "inner"),
        (5, "outer"),
        (7, "<module>"),
    ]
    assert m.source_location(m.entry.by_name["x.1"]) is None


def test_inline_source_file_and_tf_metadata() -> None:
    m = parse_file(dump_file("tf_dense_relu", "*before_optimizations.txt"))
    matmul = next(i for i in m.entry.instructions if i.opcode == "dot")
    assert matmul.metadata is not None
    assert matmul.metadata.op_type == "MatMul"
    assert matmul.metadata.source_line is not None
    loc = m.source_location(matmul)
    assert loc is not None and loc.file.endswith(".py")
    assert matmul.attributes["lhs_contracting_dims"] == "{1}"
    assert matmul.attributes["frontend_attributes"] == '{grad_x="false",grad_y="false"}'


MANY_FORMS = r"""
HloModule many_forms, is_scheduled=true, num_partitions=2, input_output_alias={ {0}: (0, {}, may-alias) }, entry_computation_layout={(f32[8,128]{1,0:T(8,128)S(1)}, (s32[], f32[2]{0}))->(f32[8,128]{1,0}, token[])}

%cond (p: (s32[], f32[2])) -> pred[] {
  %p = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (p.1: (s32[], f32[2])) -> (s32[], f32[2]) {
  %p.1 = (s32[], f32[2]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%p.1), index=0
  %v = f32[2]{0} get-tuple-element(%p.1), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  ROOT %t = (s32[], f32[2]{0}) tuple(%next, %v)
}

%on_true (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %neg = f32[2]{0} negate(%a)
}

%on_false (b: f32[2]) -> f32[2] {
  %b = f32[2]{0} parameter(0)
  ROOT %cp = f32[2]{0} copy(%b)
}

%fused_computation (param_0: f32[8,128]) -> f32[8,128] {
  %param_0 = f32[8,128]{1,0} parameter(0)
  ROOT %exp = f32[8,128]{1,0} exponential(%param_0)
}, execution_thread="main"

%wrapped (w: f32[2]) -> f32[2] {
  %w = f32[2]{0} parameter(0)
  ROOT %cc = f32[2]{0} custom-call(%w), custom_call_target="foo"
}, execution_thread="side"

ENTRY %main (arg0: f32[8,128], arg1: (s32[], f32[2])) -> (f32[8,128], token[]) {
  %arg0 = f32[8,128]{1,0:T(8,128)S(1)} parameter(0), sharding={devices=[2,1]0,1}
  %arg1 = (s32[], f32[2]{0}) parameter(1), sharding={{replicated}, {maximal device=0}}
  %loop = (s32[], f32[2]{0}) while(%arg1), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"}}
  %vals = f32[2]{0} get-tuple-element(%loop), index=1
  %pred = pred[] constant(true)
  %branch = f32[2]{0} conditional(%pred, %vals, %vals), true_computation=%on_true, false_computation=%on_false
  %fusion = f32[8,128]{1,0} fusion(%arg0), kind=kLoop, calls=%fused_computation, control-predecessors={%branch}
  %ar = f32[8,128]{1,0} all-reduce(%fusion), channel_id=1, replica_groups=[1,2]<=[2], use_global_device_ids=true, to_apply=%on_true
  %ar2 = f32[8,128]{1,0} all-reduce(%ar), replica_groups={{0,1},{2,3}}, to_apply=%on_true
  %start = ((f32[2]{0}), f32[2]{0}, s32[]) async-start(%branch), async_execution_thread="side", calls=%wrapped
  %done = f32[2]{0} async-done(%start)
  %big = f32[1000]{0} constant({...})
  %dyn = f32[<=8,?]{1,0} parameter(2)
  %custom = f32[8,128]{1,0} custom-call(%ar2, %done), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"beta\":0}", frontend_attributes={_xla_note="{not json}", k="a\"b"}
  %tok = token[] after-all()
  %gather = f32[2,3]{1,0} gather(%big, %vals),
      offset_dims={1},
      collapsed_slice_dims={0},
      start_index_map={0},
      index_vector_dim=1,
      slice_sizes={1,3}
  ROOT %out = (f32[8,128]{1,0}, /*index=1*/token[]) tuple(%custom, %tok)
}
"""


def test_many_syntax_forms() -> None:
    m = parse_module(MANY_FORMS)
    assert m.stats.total == 0
    assert m.is_scheduled
    assert m.attributes["num_partitions"] == "2"
    assert m.attributes["input_output_alias"] == "{ {0}: (0, {}, may-alias) }"
    e = m.entry.by_name
    # shapes: tiles and memory space, tuples, tokens, dynamic dimensions
    layout = e["arg0"].shape.layout
    assert layout is not None
    assert layout.minor_to_major == (1, 0)
    assert layout.tiles == ((8, 128),)
    assert layout.memory_space == 1
    assert e["arg1"].shape.is_tuple and len(e["arg1"].shape.tuple_shapes) == 2
    assert e["tok"].shape.is_token
    assert e["dyn"].shape.dynamic == (True, True)
    assert e["out"].shape.tuple_shapes[1].is_token  # `/*index=1*/` inside a shape
    # called computations by role
    assert e["loop"].calls("condition") == ["cond"] and e["loop"].calls("body") == ["body"]
    assert e["branch"].calls() == ["on_true", "on_false"]
    assert e["fusion"].fusion_kind == "kLoop" and e["fusion"].calls("calls") == [
        "fused_computation"
    ]
    assert e["start"].calls() == ["wrapped"]
    assert e["loop"].backend_config == {"known_trip_count": {"n": "10"}}
    # backend_config as a quoted string, frontend attributes with braces and quotes
    assert e["custom"].backend_config == {"alpha_real": 1, "beta": 0}
    assert e["custom"].custom_call_target == "__cublas$gemm"
    assert e["custom"].attributes["frontend_attributes"] == '{_xla_note="{not json}", k="a\\"b"}'
    # verbatim attributes: sharding forms, replica groups, control predecessors
    assert e["arg0"].attributes["sharding"] == "{devices=[2,1]0,1}"
    assert e["arg1"].attributes["sharding"] == "{{replicated}, {maximal device=0}}"
    assert e["ar"].attributes["replica_groups"] == "[1,2]<=[2]"
    assert e["ar2"].attributes["replica_groups"] == "{{0,1},{2,3}}"
    assert e["fusion"].attributes["control-predecessors"] == "{%branch}"
    assert e["big"].literal == "{...}"
    # a multi-line instruction keeps every attribute
    assert e["gather"].attributes["slice_sizes"] == "{1,3}"
    assert (
        e["gather"].line
        == MANY_FORMS.splitlines().index("  %gather = f32[2,3]{1,0} gather(%big, %vals),") + 1
    )
    # execution threads
    assert m.computation_map["wrapped"].execution_thread == "side"
    assert m.computation_map["fused_computation"].execution_thread == "main"
    assert m.fused_computations == {"fused_computation"}
    assert e["out"].is_root and m.entry.root.name == "out"


SHORT_FORM = """\
HloModule short

add_F32.v3 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}

ENTRY main {
  p0 = f32[4, 1] parameter(0)
  r = f32[4]{0} reshape(f32[4, 1] p0)
  z = f32[] constant(0)
  ROOT s = f32[] reduce(r, z), dimensions={0}, to_apply=add_F32.v3
}
"""


def test_short_form_without_sigils_and_typed_operands() -> None:
    m = parse_module(SHORT_FORM)
    assert [c.name for c in m.computations] == ["add_F32.v3", "main"]
    assert m.entry.name == "main" and m.entry.is_entry
    assert m.entry.by_name["r"].operands == ("p0",)
    assert m.entry.by_name["p0"].shape.dimensions == (4, 1)
    assert m.entry.by_name["s"].calls("to_apply") == ["add_F32.v3"]


def test_shape_sizes() -> None:
    assert parse_shape("f32[8,128]{1,0}").byte_size == 8 * 128 * 4
    assert parse_shape("bf16[3]").byte_size == 6
    assert parse_shape("(f32[2], s8[4])").byte_size == 12
    assert parse_shape("pred[]").num_elements == 1
    assert parse_shape("s4[3]").byte_size == 2


def test_unknown_opcode_is_kept_and_counted_strict_fails() -> None:
    text = (
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] frobnicate(p)\n}\n"
    )
    m = parse_module(text)
    assert m.entry.root.opcode == "frobnicate"
    assert m.stats.unknown_opcodes == {"frobnicate": 1}
    with pytest.raises(HloParseError, match="unknown opcode 'frobnicate'"):
        parse_module(text, strict=True)


def test_unexpected_text_is_counted_and_strict_fails() -> None:
    text = "HloModule m\n\nsomething odd here\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"
    assert parse_module(text).stats.total == 1
    with pytest.raises(HloParseError, match="strict"):
        parse_module(text, strict=True)


# ---------------------------------------------------------------------------------------
# Malformed input: a clear error naming file, line, column and the offending text.


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "empty file", 1),
        ("   \n\n", "no HLO text", 1),
        ("HloModuleX", "expected 'HloModule <name>'", 1),
        ("HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n", "not closed", 3),
        (
            "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  q = f32[2] parameter(1)\n"
            '  ROOT a = f32[2] add(p, q), metadata={op_name="x"\n}\n',
            "unclosed '{'",
            6,
        ),
        ("HloModule m\n\nENTRY e {\n  p = f32[2 parameter(0)\n}\n", r"unclosed '\['", 4),
        ("HloModule m\n\nENTRY e {\n  this is not hlo\n}\n", "expected an instruction", 4),
        ("HloModule m\n", "no computations", 1),
    ],
)
def test_malformed_text_errors(text: str, message: str, line: int) -> None:
    with pytest.raises(HloParseError, match=message) as info:
        parse_module(text, path="bad.hlo")
    assert info.value.line == line
    assert str(info.value).startswith(f"bad.hlo:{line}")


def test_truncated_real_dump_names_the_file(tmp_path: Path) -> None:
    text = dump_file("tf_resnet50", "*cpu_after_optimizations.txt").read_text()
    cut = tmp_path / "truncated.txt"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(HloParseError) as info:
        parse_file(cut)
    assert info.value.path == str(cut) and info.value.line > 0


def test_binary_missing_and_directory(tmp_path: Path) -> None:
    binary = tmp_path / "dump.pb"
    binary.write_bytes(b"\x08\x01\x12\x00binary\x00data")
    with pytest.raises(HloParseError, match="binary data"):
        parse_file(binary)
    with pytest.raises(HloParseError, match="no such file"):
        parse_file(tmp_path / "missing.txt")
    with pytest.raises(HloParseError, match="directory"):
        parse_file(tmp_path)


def test_all_captured_dumps_parse_cleanly() -> None:
    files = sorted(DATA.glob("**/*optimizations.txt"))
    assert len(files) > 20
    for f in files:
        m = parse_file(f, strict=True)
        assert m.instruction_count > 0


def test_only_newlines_end_lines() -> None:
    # U+2028 and a form feed inside quoted metadata are not line breaks for XLA
    text = (
        "HloModule m\r\n\r\nENTRY e {\r\n"
        '  ROOT p = f32[2] parameter(0), metadata={op_name="a\u2028b\x0cc"}\r\n}\r\n'
    )
    m = parse_module(text)
    assert m.entry.root.metadata is not None
    assert m.entry.root.metadata.op_name == "a\u2028b\x0cc"
    assert m.entry.root.line == 4


def test_slow_path_for_deep_nesting_and_tuple_typed_operands() -> None:
    deep = '{"a":{"b":{"c":{"d":{"e":{"f":[1,{"g":2}]}}}}}}'  # beyond the fast regex
    text = (
        "HloModule m\n\nENTRY e {\n"
        "  p = (f32[2], s32[]) parameter(0)\n"
        f"  ROOT g = f32[2] get-tuple-element((f32[2], s32[]) p), index=0, backend_config={deep}\n"
        "}\n"
    )
    root = parse_module(text).entry.root
    assert root.operands == ("p",)
    assert root.attributes["index"] == "0"
    assert root.backend_config == {"a": {"b": {"c": {"d": {"e": {"f": [1, {"g": 2}]}}}}}}


def test_big_modules_share_what_repeats() -> None:
    """The model keeps one object for what thousands of instructions repeat (issue 14's
    memory target): operand names are their definitions' names, attribute keys, op types
    and source files are one string each, identical metadata is one object."""
    m = parse_file(dump_file("tf_dense_relu", "*before_optimizations.txt"))
    names = {i.name: i.name for _, i in m.instructions()}
    operands = [o for _, i in m.instructions() for o in i.operands]
    assert operands and all(o is names[o] for o in operands)
    keys: dict[str, str] = {}
    for _, inst in m.instructions():
        for key in inst.attributes:
            assert keys.setdefault(key, key) is key
    metadata = [i.metadata for _, i in m.instructions() if i.metadata is not None]
    types = {md.op_type: md.op_type for md in metadata if md.op_type}
    assert all(md.op_type is types[md.op_type] for md in metadata if md.op_type)
    assert not hasattr(next(iter(metadata)), "__dict__")
    assert not hasattr(m.entry.root, "__dict__")


def test_metadata_fields_are_read_from_its_text() -> None:
    text = (
        "HloModule m\n\nENTRY e {\n"
        '  ROOT p = f32[2] parameter(0), metadata={op_type="Add" op_name="a/\\"b\\"" '
        'source_file="f.py" source_line=7 scheduling_name="p.1" deduplicated_name="x"}\n'
        "}\n"
    )
    md = parse_module(text).entry.root.metadata
    assert md is not None
    assert md.text == parse_module(text).entry.root.attributes["metadata"]
    assert md.fields == {
        "op_type": "Add",
        "op_name": 'a/"b"',
        "source_file": "f.py",
        "source_line": "7",
        "scheduling_name": "p.1",
        "deduplicated_name": "x",
    }
    assert (md.op_type, md.op_name, md.source_file, md.source_line) == ("Add", 'a/"b"', "f.py", 7)


def test_a_file_without_split_markers_is_not_copied() -> None:
    text = dump_file("tf_dense_relu", "*before_optimizations.txt").read_text()
    [(line, chunk)] = split_modules(text)
    assert line == 1 and chunk is text
    two = split_modules(f"{text}// -----\n{text}")
    assert [c for _, c in two] == [text, text]
    assert two[1][0] == text.count("\n") + 2


def test_a_process_that_froze_its_objects_is_not_asked_to_count_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once a command froze its objects (`freeze_kept`), `paused_gc` does not count the
    frozen ones on leaving (`gc.get_freeze_count` walks them all: 0.9 s of a 1.2 s
    `report --json` read back of 165 modules); what a `kept` block made is frozen too."""
    import gc

    import hloscope.hlo.parser as parser

    def counted() -> int:
        raise AssertionError("counted the frozen objects")

    monkeypatch.setattr(parser, "_FROZEN", [True])
    monkeypatch.setattr(gc, "get_freeze_count", counted)
    try:
        with parser.paused_gc(kept=True):
            late = [[n] for n in range(100)]
        assert gc.isenabled()
        young = {id(o) for generation in (0, 1, 2) for o in gc.get_objects(generation)}
        assert id(late[0]) not in young  # frozen
    finally:
        gc.unfreeze()


def test_the_collector_is_back_as_it_was_after_a_parse() -> None:
    """`paused_gc` turns the collector back on, moves what the parse made out of the
    young generations unwalked, and leaves what someone froze frozen."""
    import gc

    from hloscope.hlo.parser import paused_gc

    text = "HloModule m\nENTRY e {\n  ROOT p = f32[4]{0} parameter(0)\n}\n"
    assert gc.isenabled()
    module = parse_module(text)
    young = {id(o) for generation in (0, 1) for o in gc.get_objects(generation)}
    assert gc.is_tracked(module.entry.root) and id(module.entry.root) not in young
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with paused_gc():
        with paused_gc():
            parse_module(text)
        assert not gc.isenabled()
    assert gc.isenabled()
    kept = [object() for _ in range(3)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        parse_module(text)
        assert gc.get_freeze_count() == frozen and gc.isenabled()
        with paused_gc(kept=True):  # made late for what is kept: frozen with it
            late = [[n] for n in range(100)]
        assert gc.get_freeze_count() >= frozen + len(late) and gc.isenabled()
    finally:
        gc.unfreeze()
    with paused_gc(kept=True):  # nothing kept: made old, not frozen
        late = [[n] for n in range(100)]
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert not any(id(late[0]) in {id(o) for o in gc.get_objects(g)} for g in (0, 1))
    del kept
