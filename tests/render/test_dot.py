"""Fusion diagrams, drawn with the real Graphviz `dot` from the captured dumps.

Pictures are checked through the SVG `dot` writes: it must parse as XML and hold the
expected kernels and clusters under their stable ids (`k/<kernel>`, ...). The hostile
module is hand-written: its op names try to break out of DOT strings, HTML-like labels
and SVG attributes.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.provenance import kernel_of_before_ops, trace
from hloscope.analysis.report import ModuleReport, analyze_run
from hloscope.cli import app
from hloscope.errors import HloscopeError, MissingDependencyError, UsageError
from hloscope.hlo.model import HloModule
from hloscope.hlo.parser import parse_file, parse_module
from hloscope.render import diagram as G
from hloscope.render import dot as D
from hloscope.runs import load_run
from tests.conftest import DATA, dump_file

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` missing")
SVG_NS = "{http://www.w3.org/2000/svg}"
runner = CliRunner()


def _pair(folder: str, name: str = "") -> tuple[HloModule, HloModule]:
    stem = f"*{name}" if name else ""
    before = parse_file(dump_file(folder, f"{stem}*before_optimizations.txt"))
    after = parse_file(dump_file(folder, f"{stem}*cpu_after_optimizations.txt"))
    return before, after


def _kernel_spec(folder: str, name: str = "", **options: object) -> G.DiagramSpec:
    before, after = _pair(folder, name)
    analysis = analyze_module(after)
    return G.kernel_graph(after, analysis, trace(after, analysis, before), **options)  # type: ignore[arg-type]


def _report(folder: str, pattern: str | None = None) -> ModuleReport:
    run = analyze_run(load_run(DATA / folder), [pattern] if pattern else [])
    return run.modules[0]


def _svg(spec: G.DiagramSpec, tmp_path: Path, name: str = "g.svg") -> tuple[str, ET.Element]:
    result = D.render(spec, tmp_path / name)
    assert result.out is not None and result.out.is_file()
    assert result.dot.is_file() and result.dot.suffix == ".dot"
    text = result.out.read_text(encoding="utf-8")
    return text, ET.fromstring(text.encode("utf-8"))


def _ids(root: ET.Element, cls: str) -> set[str]:
    return {g.get("id", "") for g in root.iter(f"{SVG_NS}g") if g.get("class") == cls}


def _counted(spec: G.DiagramSpec) -> int:
    return sum(n.count for n in spec.nodes if n.role in (G.KERNEL, G.GROUP_NODE, G.REPEAT))


# --- the after graph --------------------------------------------------------------------


@needs_dot
def test_dense_relu_after_graph(tmp_path: Path) -> None:
    spec = _kernel_spec("tf_dense_relu")
    by_id = {n.id: n for n in spec.nodes}
    assert set(by_id) == {
        "k/MatMul.2",
        "k/broadcast_maximum_fusion",
        "p/arg0.1",
        "p/arg1.1",
        "p/arg2.1",
        "out",
    }
    fusion = by_id["k/broadcast_maximum_fusion"]
    # the kernel's own op (its root's, ReLU) first
    assert fusion.lines[:3] == ("broadcast_maximum_fusion", "kLoop · f32[64,128]", "Relu, add")
    assert fusion.fill == G.kind_color("kLoop") != by_id["k/MatMul.2"].fill
    assert by_id["p/arg0.1"].role == G.PARAMETER and by_id["out"].role == G.OUTPUT
    edges = {(e.src, e.dst): e for e in spec.edges}
    assert edges["k/MatMul.2", "k/broadcast_maximum_fusion"].label == "f32[64,128] · 32.0 KiB"
    assert ("k/broadcast_maximum_fusion", "out") in edges
    assert {r.label for r in spec.legend} == {"dot", "kLoop"}
    assert spec.where["MatMul.2"] == "k/MatMul.2"
    assert spec.where["broadcast_maximum_fusion"] == fusion.id

    text, root = _svg(spec, tmp_path)
    assert {"k/MatMul.2", "k/broadcast_maximum_fusion", "p/arg0.1", "out", "legend"} <= _ids(
        root, "node"
    )
    assert "<title>k/broadcast_maximum_fusion</title>" in text
    assert "Relu, add" in text


@needs_dot
def test_expand_draws_the_fused_ops_in_a_cluster(tmp_path: Path) -> None:
    spec = _kernel_spec("tf_dense_relu", expand="all")
    (cluster,) = spec.clusters
    assert cluster.id == "k/broadcast_maximum_fusion" and cluster.kernel == cluster.id[2:]
    inside = {n.id: n for n in spec.nodes if n.cluster == cluster.id}
    prefix = "f/broadcast_maximum_fusion/"
    assert {n.kind for n in inside.values()} == {"broadcast", "add", "constant", "maximum"}
    edges = {(e.src, e.dst) for e in spec.edges}
    # dot -> add -> max: MatMul.2 feeds the fused add, which feeds the maximum (ReLU)
    assert ("k/MatMul.2", prefix + "add.0") in edges
    assert (prefix + "add.0", prefix + "Relu.0") in edges
    assert (prefix + "Relu.0", "out") in edges
    assert ("p/arg2.1", prefix + "add.1") in edges  # the bias goes to its broadcast
    assert "k/broadcast_maximum_fusion" not in {n.id for n in spec.nodes}

    _, root = _svg(spec, tmp_path)
    assert "k/broadcast_maximum_fusion" in _ids(root, "cluster")
    assert {prefix + "add.0", prefix + "Relu.0"} <= _ids(root, "node")


def test_expand_names_a_fusion_or_fails_with_the_list() -> None:
    spec = _kernel_spec("tf_dense_relu", expand=["fused_computation"])  # by computation
    assert [c.id for c in spec.clusters] == ["k/broadcast_maximum_fusion"]
    with pytest.raises(UsageError, match=r"not a fusion.*broadcast_maximum_fusion"):
        _kernel_spec("tf_dense_relu", expand=["MatMul.2"])


def test_expand_all_refuses_a_big_module() -> None:
    with pytest.raises(UsageError, match="--expand all would draw"):
        _kernel_spec("tf_resnet50", expand="all")


def test_timings_show_time_and_share_and_emphasise_the_heaviest() -> None:
    spec = _kernel_spec(
        "tf_recsys_scores",
        timings={"dot": 300.0, "add_divide_fusion": 50.0, "custom-call": 150.0},
        total_us=1000.0,
    )
    by_id = {n.id: n for n in spec.nodes}
    dot_node = by_id["k/dot"]
    assert dot_node.time_us == 300.0 and dot_node.share == pytest.approx(0.3)
    assert dot_node.lines[-1] == "300.0 µs · 30.0%"
    assert dot_node.heavy and not by_id["k/add_divide_fusion"].heavy
    assert by_id["k/custom-call"].kind == "custom-call:TopK"
    source = D.to_dot(spec)
    assert G.HEAVY_COLOR in source


def test_kernels_talk_through_free_instructions() -> None:
    # The transformer block's kernels meet through bitcasts and parameters only: every
    # kernel has a producer and a consumer in the graph.
    spec = _kernel_spec("jax_transformer_block", "jit_block")
    kernels = {n.id for n in spec.nodes if n.role == G.KERNEL}
    assert len(kernels) == 28
    srcs = {e.src for e in spec.edges}
    dsts = {e.dst for e in spec.edges}
    assert kernels <= dsts
    assert kernels <= srcs | {"k/broadcast_add_fusion"}
    assert ("k/broadcast_add_fusion", "out") in {(e.src, e.dst) for e in spec.edges}


# --- big graphs ----------------------------------------------------------------------------


@needs_dot
def test_resnet_default_fits_and_accounts_for_every_kernel(tmp_path: Path) -> None:
    before, after = _pair("tf_resnet50")
    analysis = analyze_module(after)
    assert len(G.kernel_graph(after, analysis).nodes) <= G.DEFAULT_MAX_NODES == 60
    # a budget over the kernel count draws every kernel
    spec = G.kernel_graph(after, analysis, trace(after, analysis, before), max_nodes=300)
    assert len(spec.nodes) <= 300 and not spec.collapsed
    assert any("321 parameters not drawn" in n for n in spec.notes)
    assert _counted(spec) == analysis.kernel_count == spec.units
    assert set(spec.where) == {k.name for k in analysis.kernels}
    started = time.perf_counter()
    _, root = _svg(spec, tmp_path)
    assert time.perf_counter() - started < 30
    assert {f"k/{k.name}" for k in analysis.kernels} <= _ids(root, "node")


@needs_dot
@pytest.mark.parametrize("budget", [12, 40, 100])
def test_resnet_collapsed_by_scope_keeps_every_kernel(tmp_path: Path, budget: int) -> None:
    before, after = _pair("tf_resnet50")
    analysis = analyze_module(after)
    spec = G.kernel_graph(after, analysis, trace(after, analysis, before), max_nodes=budget)
    assert spec.collapsed
    assert len(spec.nodes) <= budget
    assert _counted(spec) == analysis.kernel_count
    assert set(spec.where) == {k.name for k in analysis.kernels}
    groups = [n for n in spec.nodes if n.role in (G.GROUP_NODE, G.REPEAT)]
    assert groups and all(n.id.startswith(("g/", "r/")) for n in groups)
    for n in groups:
        assert n.count == len(n.members)
        assert all(spec.where[m] == n.id for m in n.members)
    if budget == 40:
        # conv4 has 6 bottleneck blocks; blocks 2-6 have the same kernels: one node ×N
        repeats = {n.lines[0]: n for n in spec.nodes if n.role == G.REPEAT}
        assert any("×" in title for title in repeats)
    _, root = _svg(spec, tmp_path)
    assert {n.id for n in groups} <= _ids(root, "node")


def test_scope_and_around_cut_the_graph() -> None:
    spec = _kernel_spec("tf_resnet50", scope="conv2_block1")
    kernels = [n for n in spec.nodes if n.role == G.KERNEL]
    assert 0 < len(kernels) < 20
    assert any("--scope conv2_block1" in n for n in spec.notes)

    spec = _kernel_spec("tf_resnet50", around="convolution.53", depth=1)
    ids = {n.id for n in spec.nodes}
    assert "k/convolution.53" in ids and len(ids) < 10
    # an instruction inside a fusion centres the picture on its fusion
    spec = _kernel_spec("tf_dense_relu", around="Relu.0", depth=0)
    assert {n.id for n in spec.nodes if n.role == G.KERNEL} == {"k/broadcast_maximum_fusion"}
    with pytest.raises(UsageError, match=r"did you mean MatMul\.2"):
        _kernel_spec("tf_dense_relu", around="MatMul.3x")
    with pytest.raises(UsageError, match="nothing comes from scope"):
        _kernel_spec("tf_resnet50", scope="no_such_layer")


# --- the before graph and side by side --------------------------------------------------


@needs_dot
def test_before_graph_colours_ops_by_their_kernel(tmp_path: Path) -> None:
    before, after = _pair("tf_dense_relu")
    analysis = analyze_module(after)
    prov = trace(after, analysis, before)
    spec = G.op_graph(before, kernel_of_before_ops(before, after, prov, analysis))
    by_id = {n.id: n for n in spec.nodes}
    fused = {by_id[f"b/{name}"].fill for name in ("add.3", "Relu.5", "add.2")}
    assert len(fused) == 1
    assert by_id["b/MatMul.2"].fill not in fused
    assert by_id["b/reshape.3"].fill == "#ffffff" and by_id["b/reshape.3"].kernel is None
    assert by_id["b/Relu.5"].lines[-1] == "→ broadcast_maximum_fusion"
    assert {"b/p/arg0.1", "b/out"} <= set(by_id)
    assert [r.label for r in spec.legend] == ["→ MatMul.2", "→ broadcast_maximum_fusion"]
    _, root = _svg(spec, tmp_path)
    assert {"b/add.3", "b/Relu.5", "b/MatMul.2"} <= _ids(root, "node")


def test_before_graph_without_after_is_uncoloured() -> None:
    before, _ = _pair("tf_dense_relu")
    spec = G.op_graph(before)
    ops = [n for n in spec.nodes if n.role == G.OP]
    assert ops and all(n.kernel is None for n in ops)
    assert not spec.legend


@needs_dot
def test_side_by_side_shares_the_kernel_colours(tmp_path: Path) -> None:
    spec = G.module_diagram(_report("tf_dense_relu"), both=True)
    assert [c.id for c in spec.clusters[:2]] == ["before", "after"]
    by_id = {n.id: n for n in spec.nodes}
    assert by_id["b/Relu.5"].fill == by_id["k/broadcast_maximum_fusion"].fill
    assert by_id["b/MatMul.3"].fill == by_id["k/MatMul.2"].fill
    assert by_id["b/Relu.5"].cluster == "before" and by_id["k/MatMul.2"].cluster == "after"
    _, root = _svg(spec, tmp_path)
    assert {"before", "after"} <= _ids(root, "cluster")


def test_module_diagram_says_which_side_is_missing() -> None:
    report = replace(_report("tf_dense_relu"), after_module=None, after=None, provenance=None)
    with pytest.raises(UsageError, match=r"no after-optimization module.*--stage before"):
        G.module_diagram(report)
    with pytest.raises(UsageError, match=r"no after-optimization module was dumped for 0000"):
        G.module_diagram(report, both=True)
    assert G.module_diagram(report, stage="before").unit == "op"


# --- loops, escaping, rendering ---------------------------------------------------------

LOOP = """HloModule loop_module, is_scheduled=true

%fused_body (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %c = f32[] constant(1)
  %b = f32[4]{0} broadcast(%c), dimensions={}
  ROOT %a = f32[4]{0} add(%p0, %b)
}

%body (state: (s32[], f32[4])) -> (s32[], f32[4]) {
  %state = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %x = f32[4]{0} get-tuple-element(%state), index=1
  %one = s32[] constant(1)
  %next_i = s32[] add(%i, %one)
  %add_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_body
  ROOT %t = (s32[], f32[4]{0}) tuple(%next_i, %add_fusion)
}

%cond (state.1: (s32[], f32[4])) -> pred[] {
  %state.1 = (s32[], f32[4]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%state.1), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i.1, %n), direction=LT
}

ENTRY %main (x0: f32[4]) -> f32[4] {
  %x0 = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %x0)
  %loop = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"}}
  ROOT %res = f32[4]{0} get-tuple-element(%loop), index=1
}
"""


@needs_dot
def test_loop_body_kernels_are_drawn_inside_a_box(tmp_path: Path) -> None:
    after = parse_module(LOOP)
    analysis = analyze_module(after)
    spec = G.kernel_graph(after, analysis, expand="all")
    by_id = {n.id: n for n in spec.nodes}
    assert by_id["c/loop"].lines == ("loop", "while ×10")
    assert by_id["k/next_i"].cluster == "c/loop/body"
    assert {c.id: c.parent for c in spec.clusters} == {
        "c/loop/body": None,
        "k/add_fusion": "c/loop/body",
    }
    edges = {(e.src, e.dst): e for e in spec.edges}
    assert ("p/x0", "c/loop") in edges
    assert ("c/loop", "f/add_fusion/a") in edges  # the body's parameter comes from the loop
    assert not edges["f/add_fusion/a", "c/loop"].constraint  # the back edge
    assert ("c/loop", "out") in edges
    _, root = _svg(spec, tmp_path)
    assert {"c/loop/body", "k/add_fusion"} <= _ids(root, "cluster")


HOSTILE = r"""HloModule hostile_module, is_scheduled=true

%fused_computation (param_0: f32[8], param_1: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  %param_1 = f32[8]{0} parameter(1)
  %add.1 = f32[8]{0} add(%param_0, %param_1), metadata={op_type="Add<T>" op_name="model/\"quoted\"/{braces}/<script>alert(1)</script>/add"}
  ROOT %maximum.1 = f32[8]{0} maximum(%add.1, %param_1), metadata={op_type="Relu" op_name="model/ünïcødé \\N \\G back\\slash/&amp;/relu"}
}

ENTRY %main (p0: f32[8], p1: f32[8]) -> f32[8] {
  %p0 = f32[8]{0} parameter(0), metadata={op_name="<script>alert(2)</script>"}
  %p1 = f32[8]{0} parameter(1)
  %copy.3 = f32[8]{0} copy(%p0), metadata={op_name="\"]; evil [label=\"x<b>bold</b>\\"}
  ROOT %add_max_fusion = f32[8]{0} fusion(%copy.3, %p1), kind=kLoop, calls=%fused_computation, metadata={op_type="Relu" op_name="model/ünïcødé \\N \\G back\\slash/&amp;/relu"}
}
"""


@needs_dot
@pytest.mark.parametrize("options", [{}, {"expand": "all"}, {"max_nodes": 2}])
def test_hostile_names_survive_dot_and_svg(tmp_path: Path, options: dict[str, object]) -> None:
    after = parse_module(HOSTILE)
    analysis = analyze_module(after)
    spec = G.kernel_graph(after, analysis, **options)  # type: ignore[arg-type]
    text, root = _svg(spec, tmp_path)
    assert "<script" not in text and "<b>" not in text
    assert "evil" not in _ids(root, "node")  # the DOT string was not broken out of
    titles = " ".join(
        a.get("{http://www.w3.org/1999/xlink}title", "") for a in root.iter(f"{SVG_NS}a")
    )
    if not options:
        assert "<script>alert(1)</script>" in titles  # shown as text, in the tooltip
        assert "ünïcødé ⧵N ⧵G back⧵slash/&amp;/relu" in titles  # \N not expanded by dot
        assert '"]; evil [label="x<b>bold</b>⧵' in titles
        labels = " ".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))
        assert "ünïcødé ⧵N ⧵G back⧵slash" in labels  # HTML-like labels too
        assert "hloscope" not in labels.replace("hostile_module", "")  # no \G expansion


def test_long_labels_get_an_ellipsis_and_the_full_text_goes_to_the_tooltip() -> None:
    name = "x" * 300
    text = HOSTILE.replace("%copy.3", f"%{name}")
    after = parse_module(text)
    spec = G.kernel_graph(after, analyze_module(after))
    node = next(n for n in spec.nodes if n.kernel == name)
    assert node.lines[0] == "x" * 39 + "…"
    assert name in node.tooltip
    assert all(len(line) <= 40 for n in spec.nodes for line in n.lines)


def test_render_writes_the_dot_file_even_without_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _kernel_spec("tf_dense_relu")
    monkeypatch.setattr(D.shutil, "which", lambda _: None)
    with pytest.raises(MissingDependencyError, match="apt-get install graphviz"):
        D.render(spec, tmp_path / "x.svg")
    assert (tmp_path / "x.dot").read_text(encoding="utf-8").startswith("digraph")
    assert not (tmp_path / "x.svg").exists()


def test_render_reports_a_dot_that_runs_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(*args: object, **kwargs: object) -> None:
        raise subprocess.TimeoutExpired("dot", 0.1)

    monkeypatch.setattr(D.shutil, "which", lambda _: "/usr/bin/dot")
    monkeypatch.setattr(D.subprocess, "run", slow)
    with pytest.raises(HloscopeError, match=r"did not finish in 0.1 s.*--max-nodes"):
        D.render(_kernel_spec("tf_dense_relu"), tmp_path / "x.svg", timeout=0.1)
    assert (tmp_path / "x.dot").is_file()


def test_render_dot_only_and_unknown_format(tmp_path: Path) -> None:
    spec = _kernel_spec("tf_dense_relu")
    result = D.render(spec, tmp_path / "only.dot", "dot")
    assert result.out is None and result.dot == tmp_path / "only.dot"
    with pytest.raises(UsageError, match="unknown picture format"):
        D.render(spec, tmp_path / "x.gif", "gif")


# --- the command --------------------------------------------------------------------------


@needs_dot
def test_cli_graph_default_output_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["graph", str(DATA / "tf_dense_relu"), "--expand", "all"])
    assert result.exit_code == 0, result.output
    svg = tmp_path / "a_inference_dense_relu_12.1.after.svg"
    assert svg.is_file() and (tmp_path / "a_inference_dense_relu_12.1.after.dot").is_file()
    assert f"wrote {svg.name} (" in result.output
    ET.fromstring(svg.read_bytes())


@needs_dot
def test_cli_graph_png_side_by_side_and_before(tmp_path: Path) -> None:
    out = tmp_path / "both.png"
    result = runner.invoke(
        app, ["graph", str(DATA / "tf_dense_relu"), "--side-by-side", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG"
    before_file = dump_file("tf_dense_relu", "*before_optimizations.txt")
    out = tmp_path / "before.svg"
    result = runner.invoke(app, ["graph", str(before_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "b/Relu.5" in _ids(ET.fromstring(out.read_bytes()), "node")  # the file's stage
    out = tmp_path / "after.svg"  # a stage asked for wins over the file's
    result = runner.invoke(app, ["graph", str(before_file), "--stage", "after", "-o", str(out)])
    assert result.exit_code == 0, result.output
    ids = _ids(ET.fromstring(out.read_bytes()), "node")
    assert "b/Relu.5" not in ids and "k/broadcast_maximum_fusion" in ids


@needs_dot
def test_cli_graph_collapses_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "r.svg"
    result = runner.invoke(
        app, ["graph", str(DATA / "tf_resnet50"), "--max-nodes", "50", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "165 kernels collapsed by name scope" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "x.gif"], "unknown picture type .gif"),
        (["--around", "nosuch"], "--around 'nosuch'"),
        (["--stage", "during"], "--stage 'during'"),
        (["--expand", "MatMul.2"], "not a fusion"),
    ],
)
def test_cli_graph_errors_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["graph", str(DATA / "tf_dense_relu"), "-o", str(tmp_path / "g.svg"), *args]
    )
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.count("\n") == 1
