"""The diagram entry points on module reports, golden DOT, and what render may not do.

Golden files in `tests/data/diagram_golden/` hold the exact DOT `to_dot` writes for
small captured modules (see HOW.md there); the ids and the order are deterministic, so
nothing is normalised. Regenerate them after an intended change with
`HLOSCOPE_UPDATE_GOLDEN=1 pytest tests/render/test_diagram.py` and read the diff.
"""

from __future__ import annotations

import ast
import os
from dataclasses import replace
from pathlib import Path

import pytest

from hloscope.analysis.collapse import Rows
from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.report import ModuleReport, analyze_run
from hloscope.hlo.parser import parse_module
from hloscope.render import diagram as G
from hloscope.render import dot as D
from hloscope.runs import load_run
from tests.conftest import DATA
from tests.render.test_dot import LOOP

GOLDEN = DATA / "diagram_golden"
PACKAGE = Path(G.__file__).parent


def _report(folder: str, pattern: str | None = None) -> ModuleReport:
    return analyze_run(load_run(DATA / folder), [pattern] if pattern else []).modules[0]


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("HLOSCOPE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


# --- golden DOT -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("tf_dense_relu.after.dot", {}),
        ("tf_dense_relu.before.dot", {"stage": "before"}),
        ("tf_dense_relu.expand.dot", {"expand": "all"}),
    ],
)
def test_dense_relu_dot_is_golden(name: str, options: dict[str, object]) -> None:
    _golden(name, D.to_dot(G.module_diagram(_report("tf_dense_relu"), **options)))  # type: ignore[arg-type]


def test_recsys_side_by_side_dot_is_golden() -> None:
    spec = G.module_diagram(_report("tf_recsys_scores"), both=True)
    _golden("tf_recsys_scores.side-by-side.dot", D.to_dot(spec))


def test_timed_dot_is_golden() -> None:
    # Times as a profile gives them (µs per execution), one kernel left untimed.
    times = {"dot": 300.0, "add_divide_fusion": 50.0, "custom-call": 150.0}
    spec = G.module_diagram(_report("tf_recsys_scores"), timings=times, total_us=1000.0)
    assert {n.lines[-1] for n in spec.nodes if n.time_us} == {
        "300.0 µs · 30.0%",
        "150.0 µs · 15.0%",
        "50.0 µs · 5.0%",
    }
    _golden("tf_recsys_scores.timed.dot", D.to_dot(spec))


# --- the entry points -------------------------------------------------------------------


def test_module_diagrams_gives_the_page_both_sides() -> None:
    specs = G.module_diagrams(_report("tf_dense_relu"))
    assert set(specs) == {"after", "before"}
    after, before = specs["after"], specs["before"]
    assert after.node_kernels == {
        "k/MatMul.2": ("MatMul.2",),
        "k/broadcast_maximum_fusion": ("broadcast_maximum_fusion",),
    }
    assert before.node_kernels["b/Relu.5"] == ("broadcast_maximum_fusion",)
    assert before.node_kernels["b/MatMul.3"] == ("MatMul.2",)
    assert "b/reshape.3" not in before.node_kernels  # plumbing went to no kernel
    assert "b/p/arg0.1" not in before.node_kernels


def test_module_diagrams_draws_the_sides_there_are() -> None:
    report = _report("tf_dense_relu")
    no_after = replace(report, after_module=None, after=None, provenance=None)
    specs = G.module_diagrams(no_after)
    assert set(specs) == {"before"}
    assert not specs["before"].legend and not specs["before"].node_kernels  # uncoloured
    assert set(G.module_diagrams(replace(report, before_module=None))) == {"after"}


def test_group_nodes_map_to_every_kernel_they_stand_for() -> None:
    specs = G.module_diagrams(_report("tf_resnet50"), max_nodes=40)
    for spec in specs.values():
        groups = [n for n in spec.nodes if n.role in (G.GROUP_NODE, G.REPEAT)]
        assert groups
        for n in groups:
            assert spec.node_kernels[n.id]
    after = specs["after"]
    kernels = {k for ks in after.node_kernels.values() for k in ks}
    assert kernels == set(after.where)  # every kernel reachable from some node


def test_an_op_centres_the_after_side_on_its_kernel() -> None:
    spec = G.module_diagram(_report("tf_dense_relu"), both=True, around="Relu.5", depth=0)
    kernels = {n.id for n in spec.nodes if n.role == G.KERNEL}
    assert kernels == {"k/broadcast_maximum_fusion"}
    assert {n.id for n in spec.nodes if n.role == G.OP} == {"b/Relu.5"}


def test_before_side_finds_a_free_instruction_by_the_ops_that_make_its_value() -> None:
    # XLA_Retvals.5 is a get-tuple-element (draws nothing): it centres on its producer.
    spec = G.module_diagram(
        _report("tf_dense_relu"), stage="before", around="XLA_Retvals.5", depth=0
    )
    assert [n.id for n in spec.nodes if n.role == G.OP] == ["b/XLA_Retvals.3"]


# --- --around counts kernels, not loops (issue 12) --------------------------------------


def test_around_counts_only_kernels_not_loops() -> None:
    after = parse_module(LOOP)
    analysis = analyze_module(after)
    # By hand from LOOP: the kernels are `next_i` and `add_fusion` (body); `loop` is the
    # while instruction, drawn but no kernel, and its condition `lt` never launches (the
    # trip count is known: xla/backends/gpu/runtime/while_thunk.cc).
    spec = G.kernel_graph(after, analysis, around="loop", depth=1)
    assert "--around loop --depth 1: 2 of 2 kernels" in spec.notes
    assert {n.id for n in spec.nodes if n.role == G.CONTROL} == {"c/loop"}


def test_around_a_kernel_whose_loop_is_cut_away_draws_it_at_the_top() -> None:
    after = parse_module(LOOP)
    spec = G.kernel_graph(after, analyze_module(after), around="next_i", depth=0)
    assert "--around next_i --depth 0: 1 of 2 kernels" in spec.notes
    assert [(n.id, n.cluster) for n in spec.nodes] == [("k/next_i", None)]
    assert spec.clusters == ()
    assert '"k/next_i" [' in D.to_dot(spec)


def test_around_output_is_the_same_on_every_run() -> None:
    # The cut graph keeps the program order: its edges came out in hash order before.
    report = _report("tf_resnet50")
    first = D.to_dot(G.module_diagram(report, around="convolution.59", depth=2))
    again = D.to_dot(G.module_diagram(report, around="convolution.59", depth=2))
    assert first == again
    lines = [line for line in first.splitlines() if " -> " in line]
    assert lines and lines != sorted(lines, reverse=True)


# --- render draws, it does not load or analyse ------------------------------------------

_FORBIDDEN = {
    "analyze_module",
    "analyze_dump",
    "analyze_run",
    "trace",
    "parse_file",
    "parse_module",
    "load_run",
    "open",
    "read_text",
}


def test_the_diagram_package_neither_parses_nor_analyses() -> None:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                found += [(path.name, a.name) for a in node.names if a.name in _FORBIDDEN]
            elif isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name in _FORBIDDEN:
                    found.append((path.name, name))
    assert found == []


def test_no_file_of_the_package_is_over_700_lines() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= 700, sizes


def _hostile_report(text: str) -> ModuleReport:
    from hloscope.analysis.provenance import trace

    module = parse_module(text)
    analysis = analyze_module(module)
    return ModuleReport(
        key="k",
        name=module.name,
        module_id=None,
        platform=None,
        trivial=False,
        before=analysis,
        after=analysis,
        provenance=trace(module, analysis, module),
        before_module=module,
        after_module=module,
    )


def test_a_chain_of_1500_free_instructions_draws_without_recursion() -> None:
    from tests.hlo.test_hostile import _chain

    spec = G.module_diagram(_hostile_report(_chain(1500)))
    assert [n.id for n in spec.nodes if n.role == G.KERNEL]  # the negate at its head


def test_calls_nested_past_the_drawn_depth_are_said_not_dropped() -> None:
    from tests.hlo.test_hostile import _nested_calls

    spec = G.module_diagram(_hostile_report(_nested_calls(70)), stage="before")
    assert any("nested deeper than" in note for note in spec.notes)
    shallow = G.module_diagram(_hostile_report(_nested_calls(10)), stage="before")
    assert not any("nested deeper than" in note for note in shallow.notes)


def test_unit_graph_without_the_name_index_is_the_same_graph() -> None:
    # The index only serves --around; the graph must not depend on whether it is built.
    from hloscope.render.diagram.walk import AfterSide, unit_graph

    m = _report("tf_dense_relu")
    assert m.after_module is not None and m.after is not None
    full, index = unit_graph(m.after_module, AfterSide(m.after_module, m.after, m.provenance))
    bare, none = unit_graph(
        m.after_module, AfterSide(m.after_module, m.after, m.provenance), names=False
    )
    assert index and not none
    assert list(full.nodes(data=True)) == list(bare.nodes(data=True))
    assert list(full.edges(data=True)) == list(bare.edges(data=True))


def test_the_op_graph_reads_each_ops_first_kernel_from_its_kernels() -> None:
    # not a second dict of a big module's ops (issue 27), and the same answers as one
    from hloscope.render.diagram.views import _FirstKernels

    kernels_of = {"a": ("k1", "k2"), "b": ("k2",)}
    first = _FirstKernels(kernels_of)
    assert dict(first) == {"a": "k1", "b": "k2"} and set(first.values()) == {"k1", "k2"}
    assert first.get("a") == "k1" and first.get("c") is None and first.get("c", "-") == "-"
    assert "b" in first and "c" not in first and len(first) == 2


@pytest.mark.parametrize("folder", ["tf_resnet50", "jax_transformer_block"])
def test_an_op_diagram_colours_its_ops_alike_from_any_mapping_of_their_kernels(
    folder: str,
) -> None:
    """The page's op diagram reads each op's kernel from its kernels (`_FirstKernels` of
    a `Later`); a caller may give its own mapping. Both draw the same."""
    from hloscope.render.diagram import views

    m = _report(folder)
    assert m.before_module is not None
    kernels_of = views._kernels_of(m)
    plain = {op: kernels[0] for op, kernels in kernels_of.items()}
    for max_nodes in (G.PAGE_MAX_NODES, 10_000):
        ours = views._before(m, kernels_of, max_nodes=max_nodes)
        theirs = G.op_graph(m.before_module, plain, kernels_of=kernels_of, max_nodes=max_nodes)
        assert D.to_dot(ours) == D.to_dot(theirs)
        assert ours.legend == theirs.legend and ours.where == theirs.where
        assert len({n.fill for n in ours.nodes if n.kernel}) > 3  # coloured by kernel


def test_kernel_colours_go_by_first_appearance_round_the_palette() -> None:
    from hloscope.render.diagram.style import KERNEL_PALETTE, kernel_colors

    n = len(KERNEL_PALETTE)
    names = [f"k{i}" for i in range(n + 2)]
    colors = kernel_colors(iter(["k1", "k0", "k1", *names]))
    assert list(colors) == ["k1", "k0", *names[2:]]
    assert colors["k1"] == KERNEL_PALETTE[0] and colors["k0"] == KERNEL_PALETTE[1]
    assert colors[names[n]] == KERNEL_PALETTE[0] != colors[names[n + 1]]


def test_the_op_graph_walk_leaves_its_names_with_the_rows_alone() -> None:
    # the walk's cache of names held a key per op of a big module (issue 27)
    from hloscope.hlo.parser import parse_file
    from hloscope.render.diagram.rows import unit_rows
    from hloscope.render.diagram.walk import BeforeSide
    from tests.conftest import dump_file

    before = parse_file(dump_file("jax_mlp", "*jit_mlp.before_optimizations.txt"))
    side = BeforeSide(before, {}, {})
    rows, _ = unit_rows(before, side)
    assert side.named == {}
    assert len(rows) > 10 and any(names for names in rows.info.names)


@pytest.mark.parametrize("folder", ["tf_dense_relu", "tf_resnet50", "jax_transformer_block"])
def test_an_op_diagram_walked_ahead_is_the_one_walked_as_it_is_drawn(folder: str) -> None:
    """What a page walks of the op diagram while a worker reads the after side
    (`walk_ops_ahead`, before the kernels are known) is taken by the next drawing, once,
    and draws what a walk at drawing time draws, each op's kernels included."""
    from hloscope.render.diagram import views

    m = _report(folder)
    assert m.before_module is not None
    now = D.to_dot(G.module_diagram(m, stage="before", max_nodes=G.PAGE_MAX_NODES))
    G.walk_ops_ahead(m.before_module)
    assert id(m.before_module) in views._page_walk._kept
    ahead = D.to_dot(G.module_diagram(m, stage="before", max_nodes=G.PAGE_MAX_NODES))
    assert id(m.before_module) not in views._page_walk._kept
    assert ahead == now
    assert "went to kernel" in now


def _drawn(rows: Rows) -> tuple[object, ...]:
    """What a drawing reads of a unit graph's rows: their columns, each row's attributes,
    then the edges in networkx's order (`Rows.edge_order`) with theirs."""
    ids = rows.ids
    edges = [(ids[rows.src[e]], ids[rows.dst[e]], rows.edge_attrs(e)) for e in rows.edge_order()]
    columns = (rows.ids, rows.orders, rows.scopes, rows.signatures, rows.structures, rows.pinned)
    return (*columns, [rows.attrs(r) for r in range(len(rows))], edges)


# A conditional that runs the same computation in both branches: the op graph walks it
# twice in the same place, so edges into its ops come again after others.
SAME_BRANCHES = """HloModule same_branches

%branch (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %e = f32[4]{0} exponential(%p)
  ROOT %n = f32[4]{0} add(%e, %p)
}

ENTRY %main (i: s32[], x: f32[4]) -> f32[4] {
  %i = s32[] parameter(0)
  %x = f32[4]{0} parameter(1)
  %y = f32[4]{0} negate(%x)
  ROOT %c = f32[4]{0} conditional(%i, %y, %y), branch_computations={%branch, %branch}
}
"""


def _text_report(text: str) -> ModuleReport:
    """A report whose both sides are the module `text`."""
    module = parse_module(text)
    return replace(
        _report("tf_dense_relu"),
        before_module=module,
        after_module=module,
        after=analyze_module(module),
    )


@pytest.mark.parametrize(
    "folder",
    [
        "tf_dense_relu",
        "tf_resnet50",
        "jax_transformer_block",
        "jax_scan_profile",
        "loop",
        "same branches",
    ],
)
def test_a_whole_module_walked_into_rows_is_its_unit_graph(folder: str) -> None:
    """The kernel graph of a whole module is walked into rows, not networkx (its edges
    held 90 MB at 44,640 kernels, issue 27), and the op graph too: the same nodes, the
    same attributes, the same edges in the same order. A loop's back edges come after
    its body is walked; an op walked again adds to the edges it has already (one edge,
    both operands)."""
    from hloscope.render.diagram.rows import described_rows, unit_rows
    from hloscope.render.diagram.walk import AfterSide, BeforeSide, unit_graph

    texts = {"loop": LOOP, "same branches": SAME_BRANCHES}
    m = _text_report(texts[folder]) if folder in texts else _report(folder)
    assert m.after_module is not None and m.after is not None
    after = AfterSide(m.after_module, m.after, m.provenance)
    g, _ = unit_graph(m.after_module, after, names=False)
    assert _drawn(described_rows(m.after_module, after)) == _drawn(Rows.from_graph(g))
    if folder == "loop":
        assert any(d.get("back") for _, _, d in g.edges(data=True))
    if m.before_module is not None:
        g, _ = unit_graph(m.before_module, BeforeSide(m.before_module, {}, {}), names=False)
        rows, _ = unit_rows(m.before_module, BeforeSide(m.before_module, {}, {}), names=False)
        assert _drawn(rows) == _drawn(Rows.from_graph(g))
        if folder == "same branches":  # walked twice: each edge into the branch's ops, once
            assert len(g["b/c/c"]["b/c/e"]["operands"]) == 2


def test_rows_kept_and_collapsed_share_one_number_object_per_row() -> None:
    # a list of a big module's 536k row numbers made its own ints, 15 MB a list (issue 27)
    from hloscope.analysis.collapse import collapse_rows
    from hloscope.render.diagram.rows import unit_rows
    from hloscope.render.diagram.walk import BeforeSide

    m = _report("tf_resnet50")
    assert m.before_module is not None
    rows, _ = unit_rows(m.before_module, BeforeSide(m.before_module, {}, {}), names=False)
    numbers = rows.number_objects()
    assert all(o is None or o is numbers[r] for r, o in enumerate(rows.orders))
    kept = rows.keep(range(1, len(rows)))
    assert kept.number_objects() == list(range(len(kept)))
    assert all(a is b for a, b in zip(kept.number_objects(), numbers, strict=False))
    assert all(kept.src[e] is numbers[kept.src[e]] for e in range(len(kept.src)))
    col = collapse_rows(kept, 20)
    assert col.collapsed
    members = [m for group in col.groups.values() for m in group.members]
    assert members and all(m is numbers[m] for m in members)
