"""The diagram size budget: scopes, neighbourhoods, and collapsing that loses no unit.

Unit graphs here are built by hand (layers of a made-up model, a flat graph without
metadata); `tests/render/test_dot.py` runs the same functions on the captured dumps.
"""

from __future__ import annotations

import networkx as nx
import pytest

from hloscope.analysis.collapse import (
    GROUP,
    MERGED,
    OP_NAMES,
    ORDER,
    PINNED,
    SCOPE,
    SIGNATURE,
    Collapsed,
    Rows,
    collapse,
    filter_scope,
    matches_scope,
    neighbourhood,
    scope_of,
    scope_prefixes,
)
from hloscope.errors import UsageError


def _layers(n_layers: int, per_layer: int = 4, *, odd_last: bool = True) -> nx.DiGraph:
    """input -> layer_0 .. layer_{n-1} (a chain of `per_layer` units each) -> output.

    Every layer has the same kinds and shapes except, with `odd_last`, the last one
    (another kind of unit: not alike; a layer differing only in shapes would be).
    """
    g = nx.DiGraph()
    order = 0
    g.add_node("in", **{PINNED: True, ORDER: order})
    prev = "in"
    for layer in range(n_layers):
        for j in range(per_layer):
            order += 1
            node = f"k{layer}_{j}"
            odd = odd_last and layer == n_layers - 1
            scope = f"jit(f)/layer_{layer}/block"
            g.add_node(
                node,
                **{
                    SCOPE: scope,
                    OP_NAMES: (f"{scope}/op{j}",),
                    SIGNATURE: (f"kind{j}" + ("x" if odd else ""), "f32[64]"),
                    ORDER: order,
                },
            )
            g.add_edge(prev, node)
            prev = node
    g.add_node("out", **{PINNED: True, ORDER: order + 1})
    g.add_edge(prev, "out")
    return g


def _accounted(g: nx.DiGraph, col: Collapsed) -> None:
    """Every unit is drawn alone or in exactly one group; pinned nodes stay."""
    units = {n for n, d in g.nodes(data=True) if not d.get(PINNED)}
    alone = {n for n in col.graph if GROUP not in col.graph.nodes[n]} - {
        n for n, d in g.nodes(data=True) if d.get(PINNED)
    }
    grouped = [m for group in col.groups.values() for m in group.members]
    assert len(grouped) == len(set(grouped))
    assert alone | set(grouped) == units
    assert not alone & set(grouped)
    assert sum(group.count for group in col.groups.values()) + len(alone) == len(units)
    assert {n for n, d in g.nodes(data=True) if d.get(PINNED)} <= set(col.graph)


def test_scope_of_strips_the_op_and_keeps_parenthesised_paths() -> None:
    assert scope_of("resnet50_1/conv2_block1_1_bn_1/batchnorm/Rsqrt") == (
        "resnet50_1/conv2_block1_1_bn_1/batchnorm"
    )
    assert scope_of("jit(f)/transpose(jvp(layer_0))/reduce_sum") == (
        "jit(f)/transpose(jvp(layer_0))"
    )
    assert scope_of("jit(f)/vmap(a/b)") == "jit(f)"  # no split inside parentheses
    assert scope_of("MatMul") == ""
    assert scope_of(None) == ""
    assert scope_of("jit(f)/a/add_any;jit(f)/b/broadcast_in_dim") == "jit(f)/a"


def _scope_by_characters(name: str) -> str:
    """scope_of as it was before its fast paths: every character walked."""
    name = name.split(";", 1)[0]
    cut, depth = -1, 0
    for i, ch in enumerate(name):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            cut = i
    return name[:cut] if cut > 0 else ""


def test_scope_of_agrees_with_a_walk_over_every_character() -> None:
    # The fast paths (no brackets: the last `/`; else only brackets and slashes looked
    # at) against the plain walk, on names with unbalanced and nested brackets too.
    names = [
        "a/b/c", "/a", "a/", "//", "a", "jit(f)/x", "jit(f/g)/x", "a)/b/c", "a]/(b/c",
        "x[1/2]/y{3/4}/z", "((a/b)/c", "jit(f)/vmap(a/b", "p/q;r/s/t", "{/}/", "é/ü(ß/)/k",
    ]  # fmt: skip
    for name in names:
        assert scope_of(name) == _scope_by_characters(name), name


def test_scope_prefixes_nest_keras_layer_names_by_underscore() -> None:
    assert scope_prefixes("resnet50_1/conv2_block1") == [
        "resnet50",
        "resnet50_1",
        "resnet50_1/conv2",
        "resnet50_1/conv2_block1",
    ]
    # `_` inside parentheses is not a boundary; a leading or doubled `_` is not either
    assert scope_prefixes("jit(f)/jvp(layer_3)") == ["jit(f)", "jit(f)/jvp(layer_3)"]
    assert scope_prefixes("a__b") == ["a__b"]
    assert scope_prefixes("") == []


@pytest.mark.parametrize(
    ("name", "path", "expected"),
    [
        ("resnet50_1/conv2_block1_1_conv_1/Conv2D", "conv2_block1", True),
        ("resnet50_1/conv2_block1_1_conv_1/Conv2D", "resnet50_1/conv2", True),
        ("resnet50_1/conv2_block10_1_conv_1/Conv2D", "conv2_block1", False),
        ("jit(f)/jvp(layer_3)/dot_general", "jit(f)/jvp(layer_3)", True),
        ("jit(f)/jvp(layer_3)/dot_general", "jvp(layer_3)/dot_general", True),
        ("jit(f)/jvp(layer_3)/dot_general", "layer_3", True),
        ("jit(f)/layer_30/dot_general", "layer_3", False),
        ("anything", "", True),
    ],
)
def test_matches_scope(name: str, path: str, expected: bool) -> None:
    assert matches_scope(name, path) is expected


def test_collapse_leaves_a_graph_that_fits_alone() -> None:
    g = _layers(3)
    col = collapse(g, 100)
    assert not col.collapsed
    assert col.graph is g
    assert col.units == 12


def test_repeated_layers_fold_into_one_node_marked_times_n() -> None:
    g = _layers(40)  # 160 units, layers 0..38 alike, layer 39 different
    col = collapse(g, 30)
    _accounted(g, col)
    assert col.graph.number_of_nodes() <= 30
    repeats = [gr for gr in col.groups.values() if gr.repeat > 1]
    assert len(repeats) == 1
    (rep,) = repeats
    # the first instance is drawn on its own, the rest are one node
    assert rep.repeat == 38
    assert rep.instances[0] == "jit(f)/layer_1" and rep.instances[-1] == "jit(f)/layer_38"
    assert rep.numbers == "1–38"
    assert rep.scope == "jit(f)/layer_#"
    assert rep.count == 38 * 4
    # layer_0 (the peeled instance) and the odd last layer are opened to their units
    assert "k0_0" in col.graph and "k39_3" in col.graph
    # edges into and out of the repeated block are merged, with the unit pairs kept
    assert col.graph.has_edge("k0_3", rep.id)
    assert col.graph.edges["k0_3", rep.id][MERGED] == [("k0_3", "k1_0")]
    assert col.graph.has_edge(rep.id, "k39_0")


def test_blocks_alike_but_for_shapes_fold_into_one_repeat() -> None:
    """DenseNet's dense blocks: the same kinds of kernels, each block wider (one more
    concatenated input); one node ×N, its label saying the sizes."""
    g = _layers(12, odd_last=False)
    for n, d in g.nodes(data=True):
        if n.startswith("k"):
            layer = int(n[1:].split("_")[0])
            d[SIGNATURE] = (d[SIGNATURE][0], f"f32[{32 * (layer + 1)}]")
    col = collapse(g, 10)
    _accounted(g, col)
    (rep,) = [gr for gr in col.groups.values() if gr.repeat > 1]
    assert rep.repeat == 11 and rep.scope == "jit(f)/layer_#"
    assert rep.sizes == (4,) * 11


def test_tight_budget_still_accounts_for_every_unit() -> None:
    g = _layers(40)
    for budget in (3, 5, 8, 13):
        col = collapse(g, budget)
        _accounted(g, col)
        assert col.graph.number_of_nodes() <= max(budget, 3)


def test_flat_graph_without_scopes_is_cut_into_ordered_slices() -> None:
    g = nx.DiGraph()
    for i in range(500):
        g.add_node(f"u{i}", **{SCOPE: "", SIGNATURE: ("k", str(i % 7)), ORDER: i})
        if i:
            g.add_edge(f"u{i - 1}", f"u{i}")
    col = collapse(g, 50)
    _accounted(g, col)
    assert col.graph.number_of_nodes() <= 50
    parts = sorted(col.groups.values(), key=lambda gr: gr.members[0])
    assert all(gr.part for gr in parts)
    # slices are contiguous runs in program order
    for gr in parts:
        numbers = [int(m[1:]) for m in gr.members]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def test_neighbourhood_follows_edges_both_ways() -> None:
    g = _layers(3)
    near = neighbourhood(g, ["k1_1"], 2)
    assert set(near) == {"k0_3", "k1_0", "k1_1", "k1_2", "k1_3"}
    assert set(neighbourhood(g, ["k1_1"], 0)) == {"k1_1"}


def test_neighbourhood_does_not_walk_through_hubs() -> None:
    g = _layers(5)
    units = [n for n in g if n.startswith("k")]
    for u in units:  # a constant every unit reads
        g.add_edge("hub", u)
    near = neighbourhood(g, ["k1_1"], 2)
    assert "hub" in near
    assert "k4_3" not in near  # two hops away only through the hub
    assert len(neighbourhood(g, ["hub"], 1)) == len(units) + 1  # a center is walked


def test_filter_scope_keeps_matching_units_and_their_pinned_neighbours() -> None:
    g = _layers(3)
    sub = filter_scope(g, "layer_0")
    assert set(sub) == {"in", "k0_0", "k0_1", "k0_2", "k0_3"}
    with pytest.raises(UsageError, match="biggest scopes: jit"):
        filter_scope(g, "layer_9")


def test_kept_rows_are_renumbered_and_read_their_attributes_from_the_rows_left() -> None:
    # What folding parameters away does: the rows left hold only maps back, not a copy
    # of every row they came from (issue 27)
    g = _layers(2)
    g.nodes["k0_1"][PINNED] = True
    rows = Rows.from_graph(g)
    kept = [r for r in range(len(rows)) if rows.ids[r] != "k0_1"]
    small = rows.keep(iter(kept))
    assert small.ids == [rows.ids[r] for r in kept] and "k0_1" not in small.ids
    assert small.pinned == [rows.pinned[r] for r in kept] and not any(small.pinned[1:-1])
    assert [small.attrs(i) for i in range(len(small))] == [dict(g.nodes[n]) for n in small.ids]
    pairs = [(small.ids[u], small.ids[v]) for u, v in zip(small.src, small.dst, strict=True)]
    assert pairs == [(u, v) for u, v in g.edges if "k0_1" not in (u, v)]
    assert [small.edge_attrs(e) for e in range(len(pairs))] == [g.edges[e] for e in pairs]
