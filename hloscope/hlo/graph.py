"""`HloModule` -> networkx graphs: a view of the parsed model, never a second truth.

Node and edge attribute names are defined here, once, as constants; analyses and
renderers use the constants rather than string literals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from hloscope.hlo.model import Computation, HloModule

# Node attributes of a computation graph (one node per instruction, keyed by name).
OPCODE = "opcode"
SHAPE = "shape"  # the Shape object
INSTRUCTION = "instruction"  # the Instruction object
IS_ROOT = "is_root"
# Edge attributes (operand -> user).
OPERAND_INDEX = "operand_index"  # first position of the operand in the user's list
OPERAND_INDICES = "operand_indices"  # every position, for an operand used several times
# Call graph: nodes are computation names; edges caller -> callee.
ROLES = "roles"  # e.g. ("calls",), ("condition", "body")
CALLERS = "callers"  # instruction names that make the call
IS_ENTRY = "is_entry"
COMPUTATION = "computation"  # the Computation object


def computation_graph(comp: Computation) -> nx.DiGraph:
    """One DiGraph for a computation: nodes are instructions, edges operand -> user.

    Edges carry the operand's position in the user's operand list (`OPERAND_INDEX`, and
    all positions in `OPERAND_INDICES` when it is used more than once). Operands that do
    not name an instruction of the computation are left out.

    Args:
        comp: The computation.

    Returns:
        A new `networkx.DiGraph`.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> g = hloscope.computation_graph(m.computation_map['fused_computation.4'])
        >>> sorted(g.nodes)
        ['broadcast.11', 'multiply.1', 'param_0.4', 'param_1.5']
    """
    g = nx.DiGraph(name=comp.name)
    g.add_nodes_from(
        (i.name, {OPCODE: i.opcode, SHAPE: i.shape, INSTRUCTION: i, IS_ROOT: i.is_root})
        for i in comp.instructions
    )
    edges: dict[tuple[str, str], list[int]] = {}
    for inst in comp.instructions:
        for index, operand in enumerate(inst.operands):
            edges.setdefault((operand, inst.name), []).append(index)
    g.add_edges_from(
        (src, dst, {OPERAND_INDEX: idx[0], OPERAND_INDICES: tuple(idx)})
        for (src, dst), idx in edges.items()
        if src in g
    )
    return g


def call_graph(module: HloModule) -> nx.DiGraph:
    """The module's call graph: computation -> computation, labelled with the roles.

    Args:
        module: The parsed module.

    Returns:
        A DiGraph whose nodes are computation names (with `IS_ENTRY` and `COMPUTATION`)
        and whose edges carry `ROLES` and `CALLERS` tuples.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> g = hloscope.call_graph(m)
        >>> sorted(g.successors('main.3'))[:2]
        ['fused_computation', 'fused_computation.1']
    """
    g = nx.DiGraph(name=module.name)
    for comp in module.computations:
        g.add_node(comp.name, **{IS_ENTRY: comp.is_entry, COMPUTATION: comp})
    for comp in module.computations:
        for inst in comp.instructions:
            for call in inst.called:
                data = g.get_edge_data(comp.name, call.name)
                if data is None:
                    g.add_edge(comp.name, call.name, **{ROLES: (call.role,), CALLERS: (inst.name,)})
                else:
                    if call.role not in data[ROLES]:
                        data[ROLES] += (call.role,)
                    if inst.name not in data[CALLERS]:
                        data[CALLERS] += (inst.name,)
    return g


def to_networkx(module: HloModule) -> dict[str, nx.DiGraph]:
    """Every computation's graph, by computation name (see `computation_graph`).

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> graphs = hloscope.to_networkx(m)
        >>> g = graphs['fused_computation.4']
        >>> g.number_of_nodes(), g.number_of_edges()
        (4, 3)
    """
    return {c.name: computation_graph(c) for c in module.computations}
