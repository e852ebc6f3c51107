"""networkx views of the parsed model."""

from __future__ import annotations

import networkx as nx

from hloscope.hlo import graph as G
from hloscope.hlo.parser import parse_file, parse_module
from tests.conftest import dump_file
from tests.hlo.test_parser import MANY_FORMS


def test_computation_graph_edges_follow_operands() -> None:
    module = parse_file(dump_file("jax_mlp", "*jit_mlp.cpu_after_optimizations.txt"))
    graphs = G.to_networkx(module)
    assert set(graphs) == {c.name for c in module.computations}
    for comp in module.computations:
        g = graphs[comp.name]
        assert g.number_of_nodes() == len(comp.instructions)
        assert nx.is_directed_acyclic_graph(g)
        for inst in comp.instructions:
            assert g.nodes[inst.name][G.OPCODE] == inst.opcode
            for index, operand in enumerate(inst.operands):
                assert index in g.edges[operand, inst.name][G.OPERAND_INDICES]
        roots = [n for n, d in g.nodes(data=True) if d[G.IS_ROOT]]
        assert roots == [comp.root.name]


def test_operand_used_twice_keeps_both_positions() -> None:
    module = parse_module(
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, p)\n}\n"
    )
    g = G.computation_graph(module.entry)
    assert g.edges["p", "a"][G.OPERAND_INDICES] == (0, 1)
    assert g.edges["p", "a"][G.OPERAND_INDEX] == 0


def test_call_graph_roles() -> None:
    module = parse_module(MANY_FORMS)
    cg = G.call_graph(module)
    assert cg.nodes["main"][G.IS_ENTRY]
    assert cg.edges["main", "cond"][G.ROLES] == ("condition",)
    assert cg.edges["main", "body"][G.ROLES] == ("body",)
    assert cg.edges["main", "fused_computation"][G.ROLES] == ("calls",)
    assert cg.edges["main", "on_true"][G.ROLES] == ("true_computation", "to_apply")
    assert cg.edges["main", "on_true"][G.CALLERS] == ("branch", "ar", "ar2")
    assert set(cg.successors("main")) == {
        "cond", "body", "on_true", "on_false", "fused_computation", "wrapped",
    }  # fmt: skip
