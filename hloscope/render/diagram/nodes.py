"""How one unit is drawn: kernels, ops, parameters, loops, and fusions opened up.

Each function here turns one unit of the unit graph (see `walk`) into a `Node` or a
`Cluster`, with its label lines and tooltip; `Builder` calls them for every unit that
is drawn on its own, groups are drawn by `Builder.group_node`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import networkx as nx

from hloscope.analysis.collapse import OP_NAMES, ORDER, Rows
from hloscope.analysis.fusion import Kernel
from hloscope.hlo.model import HloModule, Instruction, Shape
from hloscope.render.diagram.build import Builder
from hloscope.render.diagram.labels import (
    LINE,
    kind_short,
    op_line,
    ops_lines,
    time_line,
    trip_text,
)
from hloscope.render.diagram.spec import CONTROL, KERNEL, OP, OUTPUT, PARAMETER, Cluster, Edge, Node
from hloscope.render.diagram.style import (
    BODY_COLOR,
    CONTROL_COLOR,
    IO_COLOR,
    NO_KERNEL_COLOR,
    kind_color,
)
from hloscope.render.diagram.walk import CLUSTER, INPUTS, ITEM, KERNELS, OPERANDS, OPS, ROLE
from hloscope.render.format import ellipsis, fmt_bytes, fmt_shape, left_ellipsis


def after_node(after: HloModule, n: str, d: dict[str, Any], b: Builder) -> Node:
    """A kernel, control instruction, parameter or the output, after optimization."""
    role = d[ROLE]
    item = d[ITEM]
    if role == KERNEL:
        kernel: Kernel = item
        t, share = b.time_of([kernel.name])
        lines = _kernel_lines(kernel, d, b.root)
        if t is not None:
            lines.append(time_line(t, share))
        return Node(
            id=n,
            role=role,
            lines=tuple(lines),
            tooltip=kernel_tooltip(after, kernel, d.get(OPS, ()), d.get(INPUTS) or [], t, share),
            fill=kind_color(kernel.kind),
            kind=kernel.kind,
            kernel=kernel.name,
            cluster=d.get(CLUSTER),
            time_us=t,
            share=share,
        )
    inst: Instruction = item
    if role in (PARAMETER, OUTPUT):
        return io_node(n, role, inst)
    trips = trip_text(inst)
    return Node(
        id=n,
        role=CONTROL,
        lines=(ellipsis(inst.name, LINE), f"{inst.opcode}{trips}"),
        tooltip=f"{inst.name}: {inst.opcode}{trips}, calls {', '.join(inst.calls())}"
        + op_line(inst),
        fill=CONTROL_COLOR,
        kind=inst.opcode,
        cluster=d.get(CLUSTER),
    )


def _kernel_lines(
    kernel: Kernel, d: Mapping[str, Any], root: str, *, launches: bool = True
) -> list[str]:
    """Name; kind, shape and launches; source ops."""
    second = f"{kind_short(kernel.kind)} · {fmt_shape(kernel.shape)}"
    if launches and kernel.launches is not None and kernel.launches > 1:
        second += f" · ×{kernel.launches}"
    return [
        ellipsis(kernel.name, LINE),
        ellipsis(second, LINE),
        *ops_lines(d.get(OP_NAMES, ()), root),
    ]


def io_node(n: str, role: str, inst: Instruction) -> Node:
    """A parameter or the module's output, drawn the same before and after."""
    if role == PARAMETER:
        return Node(
            id=n,
            role=role,
            lines=(
                ellipsis(inst.name, LINE),
                f"parameter {inst.parameter_number} · {fmt_shape(inst.shape, 30)}",
            ),
            tooltip=f"parameter {inst.parameter_number}: {inst.name}\n{inst.shape.text}"
            + op_line(inst),
            fill=IO_COLOR,
            kind="parameter",
        )
    return Node(
        id=n,
        role=role,
        lines=("output", fmt_shape(inst.shape, LINE)),
        tooltip=f"the module's result ({inst.name})\n{inst.shape.text}",
        fill=IO_COLOR,
        kind="output",
    )


def before_node(before: HloModule, n: str, d: dict[str, Any], colors: Mapping[str, str]) -> Node:
    """An op (filled with the colour of the kernel it went to), loop, parameter or output."""
    role = d[ROLE]
    inst: Instruction = d[ITEM]
    if role in (PARAMETER, OUTPUT):
        return io_node(n, role, inst)
    kernels: tuple[str, ...] = d.get(KERNELS, ())
    kernel = kernels[0] if kernels else None
    lines = [
        ellipsis(inst.name, LINE),
        ellipsis(f"{inst.opcode} · {fmt_shape(inst.shape)}", LINE),
    ]
    ops = d.get(OPS, ())
    if ops:
        lines.append(left_ellipsis(ops[0], LINE))
    if role == OP:
        lines.append(ellipsis(f"→ {kernel}", LINE) if kernel else "→ no kernel")
    tip = [f"{inst.name}: {inst.opcode}", inst.shape.text]
    if ops:
        tip.append(f"source op: {ops[0]}")
    loc = before.source_location(inst)
    if loc is not None:
        tip.append(f"at {loc}")
    if kernels:
        tip.append("went to kernel " + ", ".join(kernels))
    elif role == OP:
        tip.append("went to no kernel (removed, folded, or only a bitcast now)")
    inputs = d.get(INPUTS) or []
    if inputs:
        tip.append("inputs: " + ", ".join(f"{name} {fmt_shape(s)}" for name, s in inputs))
    return Node(
        id=n,
        role=role,
        lines=tuple(lines),
        tooltip="\n".join(tip),
        fill=colors.get(kernel, NO_KERNEL_COLOR) if kernel else NO_KERNEL_COLOR,
        kind=inst.opcode,
        kernel=kernel,
        cluster=d.get(CLUSTER),
    )


def kernel_tooltip(
    after: HloModule,
    kernel: Kernel,
    ops: Sequence[str],
    inputs: Sequence[tuple[str, Shape]],
    t: float | None,
    share: float | None,
) -> str:
    """Everything about a kernel: kind, shape, bytes, launches, source ops and lines, time."""
    tip = [kernel.name, f"kind: {kernel.kind} ({kernel.cls})"]
    if kernel.fused_computation:
        tip.append(f"calls {kernel.fused_computation} ({kernel.instruction_count} ops)")
    tip.append(f"shape: {kernel.shape.text}")
    tip.append(f"reads {fmt_bytes(kernel.bytes_in)} · writes {fmt_bytes(kernel.bytes_out)}")
    if kernel.launches != 1:
        tip.append(f"launches: {kernel.launches if kernel.launches is not None else 'unknown'}")
    if ops:
        tip.append(f"source ops ({len(ops)}):")
        tip.extend(f"  {op}" for op in ops[:30])
        if len(ops) > 30:
            tip.append(f"  … {len(ops) - 30} more")
    locations = list(
        dict.fromkeys(str(loc) for i in kernel.ops if (loc := after.source_location(i)))
    )
    if locations:
        tip.append("at " + "; ".join(locations[:5]))
    if inputs:
        tip.append("inputs: " + ", ".join(f"{name} {fmt_shape(s)}" for name, s in inputs))
    if t is not None:
        tip.append(time_line(t, share))
    return "\n".join(tip)


# --- expanded fusions ---------------------------------------------------------------------


def expansion(
    after: HloModule, kernel: Kernel, node: str, b: Builder
) -> tuple[Cluster, list[Node], list[Edge]]:
    """A fusion drawn as a box of its fused computation's instructions."""
    assert isinstance(b.units, nx.DiGraph)  # the kernel graph is never in rows
    d = b.units.nodes[node]
    t, share = b.time_of([kernel.name])
    comp = after.computation_map[kernel.fused_computation or ""]
    lines = _kernel_lines(kernel, d, b.root, launches=False)
    if t is not None:
        lines.append(time_line(t, share))
    cluster = Cluster(
        id=node,
        lines=tuple(lines),
        tooltip=kernel_tooltip(after, kernel, d.get(OPS, ()), d.get(INPUTS) or [], t, share),
        fill=kind_color(kernel.kind),
        parent=d.get(CLUSTER),
        kernel=kernel.name,
    )
    nodes: list[Node] = []
    edges: list[Edge] = []
    params = {i.name for i in comp.instructions if i.opcode == "parameter"}
    for inst in comp.instructions:
        if inst.name in params:
            continue
        op_id = f"f/{kernel.name}/{inst.name}"
        second = fmt_shape(inst.shape, LINE)
        if inst.opcode == "constant" and inst.literal:
            second = ellipsis(f"{inst.literal} · {second}", LINE)
        nodes.append(
            Node(
                id=op_id,
                role=OP,
                lines=(inst.opcode, second),
                tooltip=f"{inst.name}: {inst.opcode}\n{inst.shape.text}" + op_line(inst),
                fill="#ffffff",
                kind=inst.opcode,
                kernel=kernel.name,
                cluster=node,
            )
        )
        for operand in dict.fromkeys(inst.operands):
            if operand in params or operand not in comp.by_name:
                continue
            shape = comp.by_name[operand].shape
            edges.append(
                Edge(
                    src=f"f/{kernel.name}/{operand}",
                    dst=op_id,
                    label=fmt_shape(shape, 24) if shape.dimensions else "",
                    tooltip=f"{operand} → {inst.name}\n{shape.text} ({fmt_bytes(shape.byte_size)})",
                    bytes=shape.byte_size,
                )
            )
    return cluster, nodes, edges


def anchor(
    after: HloModule,
    g: nx.DiGraph,
    expanded: Collection[str],
    e: Edge,
    pairs: list[tuple[str, str]],
) -> list[Edge]:
    """Re-aim edges at the ops inside expanded fusions."""
    if e.src not in expanded and e.dst not in expanded:
        return [e]
    src = _root_op(after, g.nodes[e.src][ITEM], e.src) if e.src in expanded else e.src
    if e.dst not in expanded:
        return [replace(e, src=src)]
    kernel: Kernel = g.nodes[e.dst][ITEM]
    indices = {i for u, v in pairs for i, _ in g.edges[u, v].get(OPERANDS, ())}
    comp = after.computation_map[kernel.fused_computation or ""]
    targets: list[str] = []
    for param in comp.parameters:
        if param.parameter_number in indices:
            targets.extend(
                f"f/{kernel.name}/{i.name}" for i in comp.instructions if param.name in i.operands
            )
    targets = list(dict.fromkeys(targets)) or [_root_op(after, kernel, e.dst)]
    return [replace(e, src=src, dst=t) for t in targets]


def _root_op(after: HloModule, kernel: Kernel, node: str) -> str:
    comp = after.computation_map.get(kernel.fused_computation or "")
    if comp is None:
        return node
    return f"f/{kernel.name}/{comp.root.name}"


# --- loop boxes -------------------------------------------------------------------------


def control_clusters(g: nx.DiGraph | Rows, nodes: Sequence[Node]) -> list[Cluster]:
    """One box per loop, conditional or async call, around the kernels it runs."""
    used = {n.cluster for n in nodes if n.cluster and n.cluster.endswith("/body")}
    if not used:
        return []
    attrs = _attrs_of(g)
    # Enclosing boxes of nested loops are needed even when they hold no node themselves.
    todo = list(used)
    while todo:
        control = attrs(todo.pop().removesuffix("/body"))
        parent = control.get(CLUSTER) if control is not None else None
        if parent and parent not in used:
            used.add(parent)
            todo.append(parent)
    out = []
    # --around can leave out the loop whose body a kernel runs in: no box for that body.
    shown = {body: d for body in used if (d := attrs(body.removesuffix("/body"))) is not None}
    for body, d in sorted(shown.items(), key=lambda bd: bd[1].get(ORDER, 0)):
        inst: Instruction = d[ITEM]
        out.append(
            Cluster(
                id=body,
                lines=(f"inside {inst.name}{trip_text(inst)}",),
                tooltip=f"what {inst.opcode} {inst.name} runs: {', '.join(inst.calls())}",
                fill=BODY_COLOR,
                parent=d.get(CLUSTER),
            )
        )
    return _parents_first(out)


def _attrs_of(g: nx.DiGraph | Rows) -> Callable[[str], Mapping[str, Any] | None]:
    """Node id -> its attributes, None when it is not in `g`."""
    if isinstance(g, nx.DiGraph):
        return lambda n: g.nodes[n] if n in g else None
    row = {n: i for i, n in enumerate(g.ids)}
    return lambda n: g.attrs(row[n]) if n in row else None


def fit_clusters(
    nodes: Sequence[Node], clusters: Sequence[Cluster]
) -> tuple[list[Node], list[Cluster]]:
    """Nodes and clusters inside a box that is not drawn move to the top level.

    `hloscope.render.dot` draws a node only inside its cluster, so a node whose box was
    cut away (--around, --scope) would silently vanish from the picture.
    """
    ids = {c.id for c in clusters}
    return (
        [n if n.cluster is None or n.cluster in ids else replace(n, cluster=None) for n in nodes],
        [c if c.parent is None or c.parent in ids else replace(c, parent=None) for c in clusters],
    )


def _parents_first(clusters: list[Cluster]) -> list[Cluster]:
    known: set[str | None] = {None}
    out: list[Cluster] = []
    pending = list(clusters)
    while pending:
        rest = [c for c in pending if c.parent not in known and c.parent in {p.id for p in pending}]
        ready = [c for c in pending if c not in rest]
        if not ready:
            ready, rest = rest, []
        out.extend(ready)
        known.update(c.id for c in ready)
        pending = rest
    return out
