"""The diagram budget holds `dot` whatever the input (issue 14): edges and long edges,
not only nodes, decide how far a graph is collapsed.

A 300-node collapsed diagram of a training step (a forward chain, a backward chain, and
each backward block reading its forward activations) used to run `dot` past 60 s. The
figures behind the limits are in benchmarks/dot_budget.py.
"""

from __future__ import annotations

import networkx as nx

from hloscope.analysis.collapse import (
    DOT_LIMITS_ABOVE,
    MAX_EDGES,
    MAX_LAYOUT_COST,
    MAX_LAYOUT_SIZE,
    MAX_PLAIN_LAYOUT_COST,
    ORDER,
    SCOPE,
    SIGNATURE,
    collapse,
    layout_cost,
    layout_size,
)


def _letters(n: int) -> str:
    """`a`, `b`, ..., `ba`: layer names without digits, so that no two fold into one
    repeated block (each layer differs, as in a model of distinct stages)."""
    out = ""
    while True:
        n, r = divmod(n, 26)
        out = chr(ord("a") + r) + out
        if n == 0:
            return out


def training_step(layers: int, per_block: int = 6) -> nx.DiGraph:
    """Forward layers, then backward layers in reverse, each backward unit reading a
    forward unit of its layer: long edges across the whole chain."""
    g = nx.DiGraph()
    prev, forward = None, {}
    for phase, order in (("fwd", range(layers)), ("bwd", reversed(range(layers)))):
        for layer in order:
            for b in ("attn", "mlp"):
                for j in range(per_block):
                    node = f"{phase}{layer}{b}{j}"
                    scope = f"jit(train)/{'transpose(jvp(train))/' * (phase == 'bwd')}stage_{_letters(layer)}/{b}"
                    g.add_node(node, **{SCOPE: scope, SIGNATURE: ("k", j, layer), ORDER: len(g)})
                    if prev is not None:
                        g.add_edge(prev, node)
                    if phase == "fwd":
                        forward[(layer, b, j)] = node
                    else:
                        g.add_edge(forward[(layer, b, j)], node)
                    prev = node
    return g


def test_layout_cost_counts_virtual_nodes_per_rank() -> None:
    chain = nx.DiGraph([(i, i + 1) for i in range(9)])
    assert layout_cost(chain) == 10  # ten ranks of one node
    chain.add_edge(0, 9)  # crosses ranks 1..8: a virtual node on each
    assert layout_cost(chain) == 1 + 8 * 2**2 + 1
    fan = nx.DiGraph([("p", "c"), *((f"x{i}", f"x{i + 1}") for i in range(5)), ("x5", "c")])
    # the source `p` sits beside x5, right above its consumer, as dot's ranking puts
    # it (on rank 0 its edge would cross five ranks: 25)
    assert layout_cost(fan) == 5 * 1 + 2**2 + 1


def test_a_training_step_collapses_until_dot_is_fast() -> None:
    g = training_step(layers=150)  # 3,600 units, long edges everywhere
    unbounded = collapse(g, 300, max_edges=10**9, max_cost=10**12, max_size=10**9).graph
    assert layout_cost(unbounded) > MAX_LAYOUT_COST
    col = collapse(g, 300)
    assert col.collapsed
    assert col.graph.number_of_edges() <= MAX_EDGES
    assert layout_cost(col.graph) <= MAX_LAYOUT_COST
    assert layout_size(col.graph) <= MAX_LAYOUT_SIZE
    assert col.graph.number_of_nodes() >= 10  # still a picture, not one box
    assert sum(len(grp.members) for grp in col.groups.values()) + sum(
        1 for n in col.graph if n in g
    ) == len(g)


def test_too_many_edges_collapse_a_graph_within_the_node_budget() -> None:
    g = nx.DiGraph()
    for i in range(200):
        g.add_node(i, **{SCOPE: f"m/layer_{i // 10}", SIGNATURE: ("k", i % 10), ORDER: i})
    for i in range(200):
        for d in range(1, 6):
            if i + d < 200:
                g.add_edge(i, i + d)
    assert g.number_of_edges() > MAX_EDGES
    col = collapse(g, 300)
    assert col.collapsed and col.graph.number_of_edges() <= MAX_EDGES


def test_a_small_graph_drawn_as_is_must_be_cheap_without_dot_limits() -> None:
    g = training_step(layers=6, per_block=6)  # 144 units: dot would run uncapped
    assert len(g) <= DOT_LIMITS_ABOVE and layout_cost(g) > MAX_PLAIN_LAYOUT_COST
    col = collapse(g, 300)
    assert col.collapsed  # collapsed diagrams get dot's iteration limits


def test_cycles_are_broken_as_dot_breaks_them() -> None:
    """Collapsed groups often form cycles; dot reverses an edge of each, and the
    reversed edges are as long as the cycle (one rank per group counted far too few)."""
    ring = nx.DiGraph([(i, i + 1) for i in range(99)] + [(99, 0)])
    assert layout_size(ring) == 100 + 98  # 100 ranks; the closing edge crosses 98


def test_small_cheap_graphs_are_left_alone() -> None:
    g = training_step(layers=2, per_block=3)
    assert collapse(g, 300).graph is g
