"""Hostile and malformed HLO text (issue 14), one test per bug class: call cycles, slow
regexes, exceptions other than the parse error, what the analyses rely on, the module
split marker, comments in shape text, and recursion whose depth the input decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.provenance import trace
from hloscope.errors import HloParseError
from hloscope.hlo.graph import call_graph, to_networkx
from hloscope.hlo.model import load_json, unescape
from hloscope.hlo.parser import parse_module, parse_modules, parse_shape
from hloscope.hlo.text import split_modules
from tests.conftest import CORPUS
from tests.hlo.fuzzing import deadline

H = "HloModule m\n\n"
NEGATE = "{\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n\n"


def _comp(name: str, root: str, *, header: str = "") -> str:
    """A one-parameter computation whose root is `root` (e.g. `call(p), to_apply=f`)."""
    return f"{header}{name} {{\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] {root}\n}}\n\n"


def _entry(root: str) -> str:
    return _comp("e", root, header="ENTRY ")


def _error(text: str, **kwargs: object) -> HloParseError:
    with pytest.raises(HloParseError) as info:
        parse_module(text, path="bad.hlo", **kwargs)  # type: ignore[arg-type]
    e = info.value
    assert e.line >= 1 and e.column >= 1, str(e)
    assert str(e).startswith(f"bad.hlo:{e.line}:{e.column}: ")
    return e


def _xla_rejects(text: str) -> None:
    hlo = pytest.importorskip("jaxlib._hlo")
    with pytest.raises(Exception):  # noqa: B017 - XLA's binding raises a bare RuntimeError
        hlo.hlo_module_from_text(text)


# ---------------------------------------------------------------------------------------
# Call cycles: XLA rejects them; the analyses would walk them forever.

CYCLES = {
    "fusion calls itself": H
    + _comp("f", "fusion(p), kind=kLoop, calls=f")
    + _entry("fusion(p), kind=kLoop, calls=f"),
    "call through another": H
    + _comp("f", "call(p), to_apply=g")
    + _comp("g", "call(p), to_apply=f")
    + _entry("call(p), to_apply=f"),
    "entry calls itself": H + _entry("call(p), to_apply=e"),
    "while body": H
    + "c {\n  p = f32[2] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n"
    + _comp("b", "while(p), condition=c, body=b")
    + _entry("while(p), condition=c, body=b"),
    "conditional branch": H
    + _comp("x", "negate(p)")
    + "y {\n  p = f32[2] parameter(0)\n  t = pred[] constant(true)\n"
    + "  ROOT r = f32[2] conditional(t, p, p), branch_computations={x, y}\n}\n\n"
    + _entry("call(p), to_apply=y"),
    "async wrapped": H
    + _comp("w", "call(p), to_apply=v")
    + "v {\n  p = f32[2] parameter(0)\n"
    + "  s = ((f32[2]), f32[2]) async-start(p), calls=w\n"
    + "  ROOT r = f32[2] async-done(s)\n}\n\n"
    + _entry("call(p), to_apply=v"),
}


@pytest.mark.parametrize("text", CYCLES.values(), ids=CYCLES.keys())
def test_call_cycles_are_rejected_naming_the_cycle(text: str) -> None:
    e = _error(text)
    assert "calls itself" in e.message
    cycle = e.message.split(": ", 1)[1].split(" -> ")
    assert len(cycle) >= 2 and cycle[0] == cycle[-1]


def test_the_cycle_is_named_in_call_order() -> None:
    e = _error(CYCLES["call through another"])
    assert e.message == "computation 'f' calls itself: f -> g -> f"
    # At the call that closes the cycle: g's call of f.
    assert e.line == 10 and e.column == len("  ROOT r = f32[2] call(p), to_apply=") + 1


@pytest.mark.jax
@pytest.mark.parametrize("text", CYCLES.values(), ids=CYCLES.keys())
def test_xla_rejects_the_cycles_too(text: str) -> None:
    _xla_rejects(text)


def test_cycle_check_is_linear_in_the_module() -> None:
    # 5,000 computations each calling the next one, defined later in the text: the
    # depth-first search runs (no shortcut) and must not recurse or blow up.
    n = 5000
    parts = [H, _entry("call(p), to_apply=c0")]
    parts += [_comp(f"c{i}", f"call(p), to_apply=c{i + 1}") for i in range(n)]
    text = "".join(parts) + _comp(f"c{n}", "negate(p)")
    with deadline(20):
        assert len(parse_module(text).computations) == n + 2
        e = _error(
            text.replace("ROOT r = f32[2] negate(p)", "ROOT r = f32[2] call(p), to_apply=c0")
        )
    assert e.message.startswith("computation 'c0' calls itself: c0 -> c1 -> c2")


# ---------------------------------------------------------------------------------------
# Regexes run in linear time: a 1 MB line of each pathological kind parses or fails at
# once (before the fix, 40k characters of the first took 44 s).

MB = 1_000_000
PATHOLOGICAL = {
    "metadata token without =": f'metadata={{op_name="x" {"a" * MB}}}',
    "metadata words without =": f"metadata={{{'ab ' * (MB // 3)}}}",
    "escaped quotes, unterminated": 'metadata={op_name="' + '\\"' * (MB // 2) + "}",
    "quotes and backslashes": "frontend_attributes={" + '"\\' * (MB // 2) + "}",
    "unclosed comments": "metadata={op_name=" + "/*a" * (MB // 3) + "}",
    "opening braces": "backend_config=" + "{" * MB,
    "nested braces": "backend_config=" + "{a" * (MB // 2),
    "blanks before =": "sharding" + " " * MB + "x",
    "commas and equals": "a=b" + ", c= " * (MB // 5) + " !",
}


@pytest.mark.parametrize("tail", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_a_megabyte_pathological_attribute_parses_or_fails_at_once(tail: str) -> None:
    text = f"{H}ENTRY e {{\n  ROOT p = f32[2] parameter(0), {tail}\n}}\n"
    with deadline(10):  # generous: a linear pass over 1 MB, not a speed target
        try:
            parse_module(text)
        except HloParseError as e:
            assert e.line >= 1 and e.column >= 1


PATHOLOGICAL_LINES = {
    "blanks in a header": "e" + " " * MB + "x {",
    "blanks after a closing brace": "}" + " " * MB + "x",
    "blanks in a dimension": "  ROOT p = f32[" + " " * MB + "x] parameter(0)",
    "tiles without end": "  ROOT p = f32[2]{0:" + "T(" * (MB // 2) + "} parameter(0)",
    "long name without =": "  ROOT " + "a" * MB + " parameter(0)",
    "long shape": "  ROOT p = f" + "3" * MB + "[2] parameter(0)",
    "many operands": "  ROOT p = f32[2] add(" + "p, " * (MB // 3) + "p)",
    "unclosed comments in operands": "  ROOT p = f32[2] add(" + "/*p" * (MB // 3) + ")",
    "brackets in a tuple shape": "  ROOT p = " + "(" * MB + " parameter(0)",
}


@pytest.mark.parametrize("line", PATHOLOGICAL_LINES.values(), ids=PATHOLOGICAL_LINES.keys())
def test_a_megabyte_pathological_line_parses_or_fails_at_once(line: str) -> None:
    text = f"{H}ENTRY e {{\n  p = f32[2] parameter(0)\n{line}\n}}\n"
    with deadline(10), pytest.raises(HloParseError) as info:
        parse_module(text)
    assert info.value.line >= 1 and info.value.column >= 1


# ---------------------------------------------------------------------------------------
# Only parse errors: numbers, escapes and surrogates that raised other exceptions.

BAD_NUMBERS = {
    "superscript dimension": "f32[²]",
    "arabic-indic dimension": "f32[٣]",
    "dimension of 10^310": "f32[1" + "0" * 310 + "]",
    "dimension past int64": "f32[9223372036854775808]",
    "5,000-digit dimension": "f32[" + "9" * 5000 + "]",
    "underscore in dimension": "f32[1_0]",
    "5,000-digit layout": "f32[2]{" + "9" * 5000 + "}",
    "array past 2^63 bytes": "f32[4294967296,4294967296]",
}


@pytest.mark.parametrize("shape", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
def test_bad_numbers_in_shapes_are_parse_errors(shape: str) -> None:
    e = _error(f"{H}ENTRY e {{\n  ROOT p = {shape} parameter(0)\n}}\n")
    assert e.line == 4 and e.column == len("  ROOT p = ") + 1


def test_the_largest_xla_dimension_is_kept() -> None:
    shape = parse_shape("u8[9223372036854775807]")
    assert shape.dimensions == (2**63 - 1,) and shape.byte_size == 2**63 - 1


@pytest.mark.parametrize("value", ["²", "9" * 5000, "-", "1_0"])
def test_bad_numbers_in_metadata_and_tables_are_kept_as_text(value: str) -> None:
    text = (
        'HloModule m\n\nFileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n\n'
        f"FileLocations\n1 {{file_name_id={value} function_name_id=1 line={value} "
        f"column={value}}}\n\nStackFrames\n1 {{file_location_id={value} parent_frame_id=1}}\n\n"
        "ENTRY e {\n"
        f"  ROOT p = f32[2] parameter(0), metadata={{source_line={value} stack_frame_id={value}}}\n"
        "}\n"
    )
    m = parse_module(text)
    md = m.entry.root.metadata
    assert md is not None and md.source_line is None and md.stack_frame_id is None
    assert md.fields["source_line"] == value
    assert m.stack_frames[1].location.line is None


BAD_ESCAPES = ["\\xZZ", "\\x", "\\N{EM DASH}", "\\ud800", "\\U0011ffff", "\\777", "\\q"]


@pytest.mark.parametrize("escape", BAD_ESCAPES)
def test_bad_escapes_are_kept_as_written(escape: str) -> None:
    text = (
        f"{H}ENTRY e {{\n  p = f32[2] parameter(0)\n"
        f'  ROOT c = f32[2] custom-call(p), custom_call_target="a{escape}", '
        f'metadata={{op_name="a{escape}"}}\n}}\n'
    )
    root = parse_module(text).entry.root
    assert root.custom_call_target == f"a{escape}"
    assert root.metadata is not None and root.metadata.op_name == f"a{escape}"
    root.custom_call_target.encode("utf-8")  # printable: no lone surrogate


def test_valid_escapes_are_decoded() -> None:
    assert unescape(r"a\"b\\c\n") == 'a"b\\c\n'
    assert unescape(r"caf\303\251 \xc3\xa9 \u00e9") == "café é é"
    assert unescape(r"\xff") == "\ufffd"  # not UTF-8: replaced, never a lone surrogate
    assert unescape("tail\\") == "tail\\"  # a lone trailing backslash is kept


def test_a_lone_surrogate_in_the_text_is_a_parse_error() -> None:
    # What `bytes.decode("utf-8", "surrogateescape")` makes of a stray byte.
    text = f'{H}ENTRY e {{\n  ROOT p = f32[2] parameter(0), metadata={{op_name="a\udcff"}}\n}}\n'
    e = _error(text)
    assert e.line == 4 and e.column == text.split("\n")[3].index("\udcff") + 1
    str(e).encode("utf-8")


def test_json_backend_config_never_raises() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = (
        f"{H}ENTRY e {{\n  p = f32[2] parameter(0)\n"
        f'  ROOT c = f32[2] custom-call(p), custom_call_target="x", backend_config={deep}\n}}\n'
    )
    root = parse_module(text).entry.root
    assert root.backend_config is None
    assert root.attributes["backend_config"] == deep  # kept as text
    assert load_json("[" * 100 + "]" * 100) is not None  # a sane depth is decoded
    assert load_json('{"n": ' + "9" * 5000 + "}") is None
    assert load_json('{"a": "\\ud800", "b": "\\ud83d\\ude00", "c": "\\\\ud800"}') == {
        "a": "\\ud800",
        "b": "\U0001f600",
        "c": "\\ud800",
    }
    json.dumps(load_json('["\\udfff"]'), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------------------
# Every parse error names a line and a column.

NO_COLUMN_BEFORE = {
    "no computations": ("HloModule m\n", 1, 1),
    "unbalanced bracket in attributes": (
        f"{H}ENTRY e {{\n  p = f32[2] parameter(0)\n"
        "  ROOT n = f32[2] negate(p), sharding={devices=[2]0,1}}\n}\n",
        5,
        55,
    ),
    "unterminated string": (
        f'{H}ENTRY e {{\n  ROOT p = f32[2] parameter(0), custom_call_target="x\n}}\n',
        4,
        52,
    ),
}


@pytest.mark.parametrize(
    ("text", "line", "column"), NO_COLUMN_BEFORE.values(), ids=NO_COLUMN_BEFORE.keys()
)
def test_errors_carry_line_and_column(text: str, line: int, column: int) -> None:
    e = _error(text)
    assert (e.line, e.column) == (line, column)


def test_a_file_without_modules_has_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "none.hlo"
    f.write_text("// nothing here\n")
    with pytest.raises(HloParseError) as info:
        parse_modules(f)
    assert (info.value.line, info.value.column) == (1, 1)


def test_non_utf8_file_has_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "latin1.hlo"
    f.write_bytes(b"HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0) // caf\xe9\n}\n")
    with pytest.raises(HloParseError) as info:
        parse_modules(f)
    assert (info.value.line, info.value.column) == (
        4,
        len("  ROOT p = f32[2] parameter(0) // caf") + 1,
    )


def test_binary_file_has_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "dump.pb"
    f.write_bytes(b"HloModule m\n\x08\x01\x00")
    with pytest.raises(HloParseError, match="binary data") as info:
        parse_modules(f)
    assert (info.value.line, info.value.column) == (2, 3)


# ---------------------------------------------------------------------------------------
# What the analyses rely on is checked at load time, as XLA's parser does.

INVALID = {
    "parameter(abc)": (H + "ENTRY e {\n  ROOT p = f32[2] parameter(abc)\n}\n", "parameter number"),
    "missing computation": (
        H
        + "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT f = f32[2] fusion(p), kind=kLoop, calls=nope\n}\n",
        "computation 'nope' does not exist",
    ),
    "undefined operand": (H + _entry("add(p, q)"), "operand 'q' is not defined"),
    "operand defined after its use": (
        H
        + "ENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] add(p, q)\n"
        + "  q = f32[2] negate(p)\n  ROOT r = f32[2] add(a, q)\n}\n",
        "operand 'q' is not defined before this instruction",
    ),
    "instruction defined twice": (
        H + "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT p = f32[2] negate(p)\n}\n",
        "instruction 'p' is defined twice",
    ),
    "computation defined twice": (
        H + "f " + NEGATE + "f " + NEGATE + _entry("call(p), to_apply=f"),
        "computation 'f' is defined twice",
    ),
    "tuple index not a number": (
        H + "ENTRY e {\n  p = (f32[2]) parameter(0)\n"
        "  ROOT g = f32[2] get-tuple-element(p), index=abc\n}\n",
        "tuple index",
    ),
}


@pytest.mark.parametrize(("text", "message"), INVALID.values(), ids=INVALID.keys())
def test_what_the_analyses_rely_on_is_validated(text: str, message: str) -> None:
    assert message in _error(text).message


@pytest.mark.jax
@pytest.mark.parametrize(("text", "message"), INVALID.values(), ids=INVALID.keys())
def test_xla_rejects_the_same_modules(text: str, message: str) -> None:
    _xla_rejects(text)


@pytest.mark.parametrize(
    ("params", "message"),
    [(["1"], "not in [0, 1)"), (["0", "0"], "used twice"), (["0", "2"], "not in [0, 2)")],
)
def test_parameter_numbers_are_zero_to_n(params: list[str], message: str) -> None:
    # XLA aborts the process on these (a CHECK in hlo_computation.cc), so no oracle run.
    body = "".join(f"  p{i} = f32[2] parameter({n})\n" for i, n in enumerate(params))
    e = _error(f"{H}ENTRY e {{\n{body}  ROOT r = f32[2] negate(p0)\n}}\n")
    assert message in e.message


# ---------------------------------------------------------------------------------------
# Only a line that is exactly `// -----` separates modules.


def test_banners_do_not_split_modules() -> None:
    text = (
        f"// ---------------------------\n{H}{_comp('f', 'negate(p)')}"
        f"// ----- not a marker either\n{_entry('call(p), to_apply=f')}"
        "  // -----  \nHloModule second\n\nENTRY e2 {\n  ROOT p = f32[] parameter(0)\n}\n"
    )
    chunks = split_modules(text)
    assert len(chunks) == 2
    assert "ENTRY e " in chunks[0][1]  # the banner did not cut the first module short
    assert chunks[1][0] == text.split("\n").index("  // -----  ") + 2


@pytest.mark.skipif(not (CORPUS / "hlo").is_dir(), reason="../shared/corpus absent")
def test_xla_if_conditional_reads_as_one_module() -> None:
    path = CORPUS / "hlo" / "mhlo_import_if_conditional.hlo"
    entry = next(
        e
        for e in json.loads((CORPUS / "MANIFEST.json").read_text())
        if e["file"].endswith(path.name)
    )
    (module,) = parse_modules(path)
    assert len(module.computations) == entry["computations"] == 14
    assert module.instruction_count == entry["instructions"]


# ---------------------------------------------------------------------------------------
# Shape text: XLA's `/*index=N*/` comments are dropped, the parsed shape stays whole.


def test_tuple_shape_text_has_no_index_comments() -> None:
    printed = "(f32[2]{0}, s32[], f32[], f32[], pred[], /*index=5*/f32[3,4]{1,0}, token[])"
    text = f"{H}ENTRY e {{\n  ROOT p = {printed} parameter(0)\n}}\n"
    shape = parse_module(text).entry.root.shape
    assert shape.text == printed.replace("/*index=5*/", "")
    assert "/*" not in str(shape)
    assert len(shape.tuple_shapes) == 7
    assert shape.tuple_shapes[5].dimensions == (3, 4)
    assert shape.tuple_shapes[6].is_token


# ---------------------------------------------------------------------------------------
# No recursion whose depth the input decides.


def _chain(n: int) -> str:
    lines = ["HloModule chain", "", "ENTRY e {", "  p = f32[4]{0} parameter(0)"]
    lines += ["  a = f32[4]{0} negate(p)"]
    prev = "a"
    for i in range(n):
        lines.append(f"  b{i} = f32[4]{{0}} bitcast({prev})")
        prev = f"b{i}"
    lines += [f"  ROOT r = f32[4]{{0}} negate({prev})", "}"]
    return "\n".join(lines) + "\n"


def _nested_calls(n: int) -> str:
    parts = [H, _comp("c0", "negate(p)")]
    parts += [_comp(f"c{i}", f"call(p), to_apply=c{i - 1}") for i in range(1, n)]
    return "".join(parts) + _entry(f"call(p), to_apply=c{n - 1}")


@pytest.mark.parametrize("text", [_chain(1500), _nested_calls(1200)], ids=["chain", "calls"])
def test_deep_modules_go_through_the_hlo_layer_and_analyses(text: str) -> None:
    with deadline(60):  # a hang guard, not a speed target
        module = parse_module(text)
        graphs = to_networkx(module)
        calls = call_graph(module)
        analysis = analyze_module(module)
        trace(module, analysis, before=module)
    assert sum(g.number_of_nodes() for g in graphs.values()) == module.instruction_count
    assert calls.number_of_edges() == len(module.computations) - 1


def test_deep_scopes_collapse_without_recursion() -> None:
    import networkx as nx

    from hloscope.analysis.collapse import SCOPE, collapse

    deep = "/".join(f"s{i}" for i in range(1500))
    g = nx.DiGraph()
    for i in range(40):
        g.add_node(f"u{i}", **{SCOPE: f"{deep}/x{i % 4}/op{i}"})
        if i:
            g.add_edge(f"u{i - 1}", f"u{i}")
    folded = collapse(g, max_nodes=8)
    assert folded.collapsed
    assert (
        sum(grp.count for grp in folded.groups.values())
        + (folded.graph.number_of_nodes() - len(folded.groups))
        == 40
    )
