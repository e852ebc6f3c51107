"""`hloscope ops` and `report` as a script reads them: one record per line when piped,
`--format tsv`, and names cut on a terminal without making different names alike."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from typer.testing import CliRunner

from hloscope.analysis import provenance as P
from hloscope.analysis.fusion import analyze_module
from hloscope.cli import app
from hloscope.hlo.names import readable_name
from hloscope.hlo.parser import parse_file
from hloscope.render.format import short_names
from tests.conftest import DATA, dump_file

runner = CliRunner()
ENV = {"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}


def _ops_json(folder: str) -> list[dict[str, object]]:
    result = runner.invoke(app, ["ops", str(DATA / folder), "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    return [op for m in json.loads(result.output) for op in m["ops"]]


def test_piped_ops_print_one_line_per_op_with_full_names() -> None:
    ops = _ops_json("keras_cnn_fit")
    result = runner.invoke(app, ["ops", str(DATA / "keras_cnn_fit")], env=ENV)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith("── ")
    assert lines[1].startswith("the dump records no source line in your code")
    records = lines[2:]
    assert len(records) == len(ops)  # no record wrapped onto a second line at 80 columns
    assert max(map(len, records)) > 80
    for line, op in zip(records, ops, strict=True):
        assert line.startswith(str(op["op"]))  # full name, never elided
        assert "…" not in line.split()[0]


def test_grep_finds_each_op_on_its_own_line() -> None:
    result = runner.invoke(
        app, ["ops", str(DATA / "keras_cnn_fit"), "--op", "conv2d_1/Relu"], env=ENV
    )
    hits = [line for line in result.output.splitlines() if "sequential_1/conv2d_1/Relu " in line]
    assert len(hits) == 1
    assert "fused   → " in hits[0] and "broadcast_maximum_fusion.1 [kLoop]" in hits[0]


def test_tsv_has_a_header_and_one_row_per_op() -> None:
    ops = _ops_json("jax_cases")
    result = runner.invoke(app, ["ops", str(DATA / "jax_cases"), "--format", "tsv"], env=ENV)
    assert result.exit_code == 0
    rows = list(csv.reader(io.StringIO(result.output), delimiter="\t"))
    header, body = rows[0], rows[1:]
    assert header[:4] == ["module", "op", "type", "status"]
    assert len(body) == len(ops) and all(len(r) == len(header) for r in body)
    by = {r[1]: dict(zip(header, r, strict=True)) for r in body}
    merged = by["jit(step)/norm_b/reduce_sum"]
    assert merged["status"] == "merged" and "norm_a/reduce_sum" in merged["evidence"]
    assert by["jit(step)/reduce_window_max"]["kernels"] == "wrapped_reduce-window[kLoop]"
    assert by["jit(step)/reduce_window_max"]["location"].endswith("jax_cases.py:24 (step)")


def test_report_tsv_one_row_per_module_matching_json() -> None:
    run = str(DATA / "jax_cases")
    doc = json.loads(runner.invoke(app, ["report", run, "--json"], env=ENV).output)
    result = runner.invoke(app, ["report", run, "--format", "tsv"], env=ENV)
    rows = list(csv.reader(io.StringIO(result.output), delimiter="\t"))
    assert len(rows) == 1 + len(doc["modules"])
    row = dict(zip(rows[0], rows[1], strict=True))
    m = doc["modules"][0]
    assert row["module"] == m["key"]
    assert int(row["ops_before"]) == m["before"]["ops"]
    assert int(row["kernels_after"]) == m["after"]["kernels"]


def test_unknown_format_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["ops", str(DATA / "jax_cases"), "--format", "csv"], env=ENV)
    assert result.exit_code == 2
    assert "use text or tsv" in result.output


def test_elision_keeps_distinct_op_names_distinct() -> None:
    """Every source op label of the Keras step and of the TF ResNet-50, cut to widths
    down to 20 characters: different names never print alike."""
    for folder in ("keras_cnn_fit", "tf_resnet50"):
        after = parse_file(dump_file(folder, "*cpu_after_optimizations.txt"))
        before = parse_file(dump_file(folder, "*before_optimizations.txt"))
        prov = P.trace(after, analyze_module(after), before)
        labels = [p.op.label for p in prov.placements]
        for width in (20, 32, 56):
            shown = short_names(labels, width)
            assert len(set(shown.values())) == len(set(labels)), (folder, width)
            assert all(len(v) <= width or v == k for k, v in shown.items())


def test_elision_of_layers_that_differ_in_the_middle() -> None:
    names = [
        f"bert_backbone_1/transformer_layer_{i}/feedforward_intermediate_dense_1/Gelu/Pow"
        for i in range(12)
    ]
    shown = short_names(names, 48)
    assert len(set(shown.values())) == 12
    assert "layer_3" in shown[names[3]] and "layer_11" in shown[names[11]]
    assert all(len(v) <= 48 for v in shown.values())


def test_piped_report_prints_full_module_keys_and_op_names() -> None:
    run = str(DATA / "tf_resnet50")
    doc = json.loads(runner.invoke(app, ["report", run, "--json"], env=ENV).output)
    text = runner.invoke(app, ["report", run], env=ENV).output
    (m,) = doc["modules"]
    # the whole key, less TensorFlow's mangling, never cut
    assert "__Xla" in m["key"] and "__Xla" not in text
    assert any(line.startswith(readable_name(m["key"]) + " ") for line in text.splitlines())
    biggest = max((p for p in m["provenance"] if p["status"] == "alone"), key=lambda p: p["bytes"])
    assert biggest["op"] in text  # the biggest unfused op, not cut


def _xla_kernel_ops(folder: str, kernel: str) -> set[str]:
    """The op names of what a fusion computes, from XLA's own parse of the dump: the
    metadata of its fused computation's instructions, constants (which XLA copies into
    every fusion that uses them) and their broadcasts left out."""
    import re

    import pytest

    hlo = pytest.importorskip("jaxlib._hlo")
    text = dump_file(folder, "*jit_mlp.cpu_after_optimizations.txt").read_text()
    module = hlo.hlo_module_from_text(text)
    comps = {c.name: c for c in module.computations()}
    (fusion,) = [i for c in comps.values() for i in c.instructions() if i.name == kernel]
    called = re.search(r"calls=%?([\w.\-]+)", fusion.to_string())
    assert called is not None
    insts = {i.name: i for i in comps[called[1]].instructions()}
    names = set()
    for i in insts.values():
        printed = i.to_string()
        operands = re.findall(r"%([\w.\-]+)", printed.split("(", 1)[1].split(")", 1)[0])
        constant = i.opcode.name == "kConstant" or (
            i.opcode.name == "kBroadcast"
            and all(insts[o].opcode.name == "kConstant" for o in operands if o in insts)
        )
        found = re.search(r'op_name="([^"]+)"', printed)
        if found and not constant and i.opcode.name != "kParameter":
            names.add(found[1])
    return names


def test_ops_kernel_lists_what_a_kernel_holds() -> None:
    kernel = "multiply_multiply_fusion.2"
    truth = _xla_kernel_ops("jax_mlp", kernel)
    assert truth == {f"jit(mlp)/layer0/{op}" for op in ("add", "integer_pow", "mul", "tanh")}
    result = runner.invoke(app, ["ops", str(DATA / "jax_mlp"), "--kernel", kernel, "--json"])
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)
    assert {p["op"] for p in doc["ops"]} == truth
    assert doc["kernel"]["name"] == kernel and doc["kernel"]["kind"] == "kLoop"
    text = runner.invoke(app, ["ops", str(DATA / "jax_mlp"), "--kernel", kernel], env=ENV)
    lines = text.stdout.splitlines()
    assert lines[1].startswith(f"{kernel} [kLoop]: 4 ops, ")
    assert sorted(line.split()[0] for line in lines[2:]) == sorted(truth)
    # --op given a kernel's name lists the same, and says so on stderr
    by_op = runner.invoke(app, ["ops", str(DATA / "jax_mlp"), "--op", kernel], env=ENV)
    assert by_op.exit_code == 0 and by_op.stdout == text.stdout
    assert "names no op but a kernel" in by_op.stderr


def test_ops_kernel_of_no_such_kernel_names_the_closest() -> None:
    result = runner.invoke(app, ["ops", str(DATA / "jax_mlp"), "--kernel", "multiply_fusion.2"])
    assert result.exit_code == 2
    assert "did you mean multiply_multiply_fusion.2" in result.stderr


def test_piped_lines_are_written_as_rich_would_print_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ops` writes its piped lines without laying each out in rich (`_print_lines`):
    every line, styled or not, with controls, wide characters, trailing blanks,
    newlines or tabs (which rich expands), prints byte for byte as `_print` prints it."""
    from rich.text import Text

    from hloscope.cli.app import _print, _print_lines
    from hloscope.render.text import Line

    pieces = ["op", "  ", "\x1b[2J", "\u202e", "宽", "é", "\x7f", "\n", "\t", "x" * 30, "\x85"]
    rng = random.Random(27)
    lines = []
    for _ in range(400):
        text = Text.assemble(
            *[(rng.choice(pieces), rng.choice(["", "bold", "dim"])) for _ in range(6)]
        )
        if rng.random() < 0.2:
            text.append("  [model.py:3]  ", style="dim")
        lines.append(text)
    lines.append(Text("right", justify="right"))
    for line in lines:
        _print(line)
    one_by_one = capsys.readouterr().out
    _print_lines(lines)
    assert capsys.readouterr().out == one_by_one
    # the same lines as `Line`s, made into `Text` only where rich would change them
    made = []
    for _ in range(400):
        line = Line([(rng.choice([*pieces, "\r", "\x07"]), rng.choice(["", "bold"]))])
        for _ in range(rng.randrange(6)):
            line.append(rng.choice(pieces), rng.choice(["", "dim"]))
        made.append(line)
    for line in made:
        _print(line.text())
    one_by_one = capsys.readouterr().out
    _print_lines(made)
    assert capsys.readouterr().out == one_by_one
