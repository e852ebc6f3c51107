"""Fusion diagrams as plain data: analysis results -> a `DiagramSpec`.

`kernel_graph` draws a module after optimization at kernel level (one node per kernel,
coloured by kind, edges walked through the free instructions kernels talk through);
`op_graph` draws a module before optimization at op level, coloured by the kernel each
op went to; `side_by_side` puts the two in one picture. A `DiagramSpec` is frozen data:
`hloscope.render.dot` turns it into DOT and runs Graphviz, and the HTML report reuses it.

Big graphs are cut to a node budget first (`hloscope.analysis.collapse`). Labels are
kept short (an ellipsis), with the full text in the tooltip; escaping happens when DOT is
written. Node ids are stable and end up as the `id=` of the SVG element: `k/<kernel>`,
`p/<parameter>`, `c/<control instruction>`, `out`, `f/<fusion>/<fused instruction>`
(after); `b/<instruction>`, `b/p/<parameter>`, `b/out` (before); `g/<scope>`,
`r/<pattern>` (collapsed groups, `b/` first before).
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import networkx as nx

from hloscope.analysis import kernels as K
from hloscope.analysis.collapse import (
    GROUP,
    MERGED,
    OP_NAMES,
    ORDER,
    PINNED,
    SCOPE,
    SIGNATURE,
    Collapsed,
    Group,
    collapse,
    filter_scope,
    neighbourhood,
    scope_of,
)
from hloscope.analysis.fusion import Kernel, ModuleAnalysis, analyze_module, trip_count, walk
from hloscope.analysis.provenance import Provenance, source_op
from hloscope.analysis.report import ModuleReport
from hloscope.errors import UsageError
from hloscope.hlo.model import Computation, HloModule, Instruction, Shape

# Node roles.
KERNEL = "kernel"
PARAMETER = "parameter"
OUTPUT = "output"
CONTROL = "control"
OP = "op"  # an op before optimization, or an instruction inside an expanded fusion
GROUP_NODE = "group"
REPEAT = "repeat"

FORMATS = ("svg", "png", "pdf", "dot")

# Fill colours by kernel kind; kinds not listed get one of `_EXTRA` by a stable hash.
KIND_COLORS: Mapping[str, str] = {
    "kLoop": "#cfe2f3",
    "kInput": "#d9ead3",
    "kOutput": "#fff2cc",
    "kCustom": "#fce5cd",
    "unfused:dot": "#f4cccc",
    "unfused:convolution": "#f4cccc",
}
_CUSTOM_CALL_COLOR = "#d9d2e9"
_COLLECTIVE_COLOR = "#d0e0e3"
_UNFUSED_COLOR = "#eeeeee"
_CONTROL_COLOR = "#ffffff"
_IO_COLOR = "#f3f3f3"
_GROUP_COLOR = "#f8f8f8"
_NO_KERNEL_COLOR = "#ffffff"
_EXTRA = ("#ead1dc", "#fde9a9", "#c9daf8", "#b6d7a8", "#f9cb9c", "#d5a6bd")
# One colour per kernel (ColorBrewer Set3), for "which kernel did this op go to".
KERNEL_PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)
HEAVY_COLOR = "#b00000"

_LINE = 40  # characters per label line
TOOLTIP_CHARS = 2000  # characters per tooltip
_EDGE_LABELS_UP_TO = 80  # nodes; bigger graphs carry shapes in edge tooltips only
_LEGEND_ROWS = 14


@dataclass(frozen=True)
class Node:
    """One drawn node.

    Attributes:
        id: Stable id, also the SVG element id (see the module docstring).
        role: KERNEL, PARAMETER, OUTPUT, CONTROL, OP, GROUP_NODE or REPEAT.
        lines: Label lines, plain text; the first is the title.
        tooltip: The full text.
        fill: Fill colour (`#rrggbb`).
        kind: Kernel kind (kernels), opcode (ops), or the main kind (groups).
        kernel: The kernel it is or went to, if any.
        count: Kernels (or ops) it stands for.
        repeat: N of ×N for a repeated block, else 1.
        cluster: The id of the cluster it is drawn in, if any.
        time_us: Total time, when timings were given.
        share: Share of the module's total time.
        heavy: Whether it is one of the heaviest (drawn emphasised).
        members: For groups: the names of what it stands for.
    """

    id: str
    role: str
    lines: tuple[str, ...]
    tooltip: str
    fill: str
    kind: str = ""
    kernel: str | None = None
    count: int = 1
    repeat: int = 1
    cluster: str | None = None
    time_us: float | None = None
    share: float | None = None
    heavy: bool = False
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edge:
    """Data flowing from one node to another.

    Attributes:
        src: Producer node id.
        dst: Consumer node id.
        label: Short text drawn on the edge ("" for none).
        tooltip: The full text.
        bytes: Bytes the edge carries.
        tensors: Tensors it stands for (more than one once nodes are merged).
        constraint: False for back edges (into a loop) that must not shape the layout.
    """

    src: str
    dst: str
    label: str = ""
    tooltip: str = ""
    bytes: int = 0
    tensors: int = 1
    constraint: bool = True


@dataclass(frozen=True)
class Cluster:
    """A box around nodes: an expanded fusion, a loop body, one side of a side-by-side.

    Attributes:
        id: Stable id (an expanded fusion's is its kernel id `k/<name>`).
        lines: Label lines; the first is the title.
        tooltip: The full text.
        fill: Background colour.
        parent: The enclosing cluster's id, if any.
        kernel: The kernel it shows, for an expanded fusion.
    """

    id: str
    lines: tuple[str, ...]
    tooltip: str = ""
    fill: str = "#ffffff"
    parent: str | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class LegendEntry:
    """One row of the legend: a colour and what it means."""

    label: str
    fill: str
    count: int = 0


@dataclass(frozen=True)
class DiagramSpec:
    """Everything needed to draw one diagram, as plain data.

    Attributes:
        title: Title line (the module name and stage).
        nodes: Nodes in program order.
        edges: Edges.
        clusters: Clusters, parents before children.
        legend: Legend rows.
        notes: Lines under the title: filters applied, what was collapsed.
        units: Kernels (or ops) in the picture, counting what groups stand for.
        unit: "kernel" or "op".
        collapsed: Whether groups stand for several units.
        where: Kernel (or op) name -> id of the node or cluster that shows it.
    """

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    clusters: tuple[Cluster, ...] = ()
    legend: tuple[LegendEntry, ...] = ()
    notes: tuple[str, ...] = ()
    units: int = 0
    unit: str = "kernel"
    collapsed: bool = False
    where: Mapping[str, str] = field(default_factory=dict)


# --- public builders --------------------------------------------------------------------


def kernel_graph(
    after: HloModule,
    analysis: ModuleAnalysis,
    provenance: Provenance | None = None,
    *,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    expand: Collection[str] | Literal["all"] = (),
    max_nodes: int = 300,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    """The module after optimization at kernel level.

    One node per kernel (fusion, custom call, unfused op), coloured by kind, labelled
    with name, kind, output shape and source ops; parameters and the output as their own
    nodes; edges through the free instructions (get-tuple-element, bitcast, tuple) that
    connect kernels, labelled with shape and bytes.

    Args:
        after: The module after optimization.
        analysis: `analyze_module(after)`.
        provenance: `trace(...)`, for source op names with their TF op types.
        timings: Kernel name -> total microseconds; shown on nodes, heaviest emphasised.
        total_us: The module's total time (default: the sum of `timings`).
        expand: Fusion names to draw as a box of their fused ops, or "all".
        max_nodes: Node budget; over it, parameters fold into the kernels they feed,
            then kernels collapse by name scope and repeated blocks.
        around: Draw only the neighbourhood of this kernel or instruction.
        depth: Edges to follow from `around`.
        scope: Draw only kernels with a source op from this name scope.

    Returns:
        The diagram.

    Raises:
        UsageError: When `around`, `scope` or `expand` names nothing in the module.
    """
    g, index = _after_units(after, analysis, provenance)
    notes: list[str] = []
    g = _filter(g, index, around, depth, scope, "kernel", notes)
    expanded = _expanded(after, g, expand, max_nodes)
    extra = sum(len(_fused_body(after, g.nodes[n][_ITEM])) - 1 for n in expanded)
    for n in expanded:
        g.nodes[n][PINNED] = True
    _fold_parameters(g, max_nodes - extra, notes, "kernels")
    col = collapse(g, max(1, max_nodes - extra))
    builder = _Builder(col, g, "kernel", prefix="")
    builder.timings(timings, total_us)
    spec_nodes, where = builder.nodes(lambda n, d: _after_node(after, n, d, builder))
    clusters: list[Cluster] = []
    inner_nodes: list[Node] = []
    inner_edges: list[Edge] = []
    for n in expanded:
        kernel: Kernel = g.nodes[n][_ITEM]
        cluster, nodes, edges = _expansion(after, kernel, n, builder)
        clusters.append(cluster)
        inner_nodes.extend(nodes)
        inner_edges.extend(edges)
        where[kernel.name] = n
    clusters = _control_clusters(g, spec_nodes) + clusters
    spec_nodes = [n for n in spec_nodes if n.id not in expanded] + inner_nodes
    edges = builder.edges(lambda e, pairs: _anchor(after, g, expanded, e, pairs)) + inner_edges
    if col.collapsed:
        repeats = sum(1 for gr in col.groups.values() if gr.repeat > 1)
        notes.append(
            f"collapsed {_count_role(g, KERNEL)} kernels into {col.graph.number_of_nodes()} nodes by name "
            f"scope"
            + (f" ({repeats} repeated blocks ×N)" if repeats else "")
            + f" to stay under --max-nodes {max_nodes}"
        )
    legend = _kind_legend(g)
    return DiagramSpec(
        title=f"{_short_module(after.name)} — after optimization",
        nodes=tuple(spec_nodes),
        edges=tuple(edges),
        clusters=tuple(clusters),
        legend=legend,
        notes=(f"{analysis.kernel_count} kernels, {analysis.launches} launches", *notes),
        units=_count_role(g, KERNEL),
        unit="kernel",
        collapsed=col.collapsed,
        where=where,
    )


def op_graph(
    before: HloModule,
    kernel_of: Mapping[str, str] | None = None,
    *,
    kernels_of: Mapping[str, Sequence[str]] | None = None,
    max_nodes: int = 300,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    """The module before optimization at op level, coloured by destination kernel.

    Args:
        before: The module before optimization.
        kernel_of: Instruction name -> the kernel it went to (`kernel_of_before_ops`);
            None draws the ops uncoloured.
        kernels_of: Instruction name -> every kernel it went to, for the tooltips.
        max_nodes: Node budget (see `kernel_graph`).
        around: Draw only the neighbourhood of this instruction, or of the ops that went
            to this kernel.
        depth: Edges to follow from `around`.
        scope: Draw only ops from this name scope.

    Returns:
        The diagram.

    Raises:
        UsageError: When `around` or `scope` names nothing in the module.
    """
    kernel_of = kernel_of or {}
    g, index = _before_units(before, kernel_of, kernels_of or {})
    notes: list[str] = []
    g = _filter(g, index, around, depth, scope, "op", notes)
    _fold_parameters(g, max_nodes, notes, "ops")
    col = collapse(g, max_nodes)
    colors = _kernel_colors(
        kernel_of[d[_ITEM].name]
        for _, d in sorted(g.nodes(data=True), key=lambda nd: nd[1].get(ORDER, 0))
        if d.get(_ROLE) == OP and d[_ITEM].name in kernel_of
    )
    builder = _Builder(col, g, "op", prefix="b/")
    spec_nodes, where = builder.nodes(lambda n, d: _before_node(before, n, d, colors))
    edges = builder.edges()
    if col.collapsed:
        notes.append(
            f"collapsed {_count_role(g, OP)} ops into {col.graph.number_of_nodes()} nodes by name scope "
            f"to stay under --max-nodes {max_nodes}"
        )
    legend: tuple[LegendEntry, ...] = ()
    if colors:
        counts = Counter(n.kernel for n in spec_nodes if n.kernel)
        rows = [LegendEntry(f"→ {k}", c, counts.get(k, 0)) for k, c in colors.items()]
        legend = _cap_legend(rows)
    total_ops = sum(1 for _, d in g.nodes(data=True) if d.get(_ROLE) == OP)
    return DiagramSpec(
        title=f"{_short_module(before.name)} — before optimization",
        nodes=tuple(spec_nodes),
        edges=tuple(edges),
        clusters=tuple(_control_clusters(g, spec_nodes)),
        legend=legend,
        notes=(
            f"{total_ops} ops",
            *(["fill colour = the kernel each op went to"] if colors else []),
            *notes,
        ),
        units=_count_role(g, OP),
        unit="op",
        collapsed=col.collapsed,
        where=where,
    )


def side_by_side(before_spec: DiagramSpec, after_spec: DiagramSpec) -> DiagramSpec:
    """Before and after in one picture, each op and kernel filled with its kernel's colour.

    Args:
        before_spec: From `op_graph`.
        after_spec: From `kernel_graph`.

    Returns:
        One diagram with two clusters, `before` and `after`.
    """
    colors = _kernel_colors(n.kernel for n in after_spec.nodes if n.role == KERNEL and n.kernel)
    for c in after_spec.clusters:
        if c.kernel and c.kernel not in colors:
            colors[c.kernel] = KERNEL_PALETTE[len(colors) % len(KERNEL_PALETTE)]

    def paint(spec: DiagramSpec, part: str) -> tuple[list[Node], list[Cluster]]:
        nodes = []
        for n in spec.nodes:
            fill = colors.get(n.kernel, n.fill) if n.kernel and n.role in (KERNEL, OP) else n.fill
            if n.role == OP and n.kernel and n.kernel not in colors:
                fill = _NO_KERNEL_COLOR
            nodes.append(replace(n, fill=fill, cluster=n.cluster or part))
        clusters = [
            replace(
                c,
                parent=c.parent or part,
                fill=colors.get(c.kernel, c.fill) if c.kernel else c.fill,
            )
            for c in spec.clusters
        ]
        return nodes, clusters

    b_nodes, b_clusters = paint(before_spec, "before")
    a_nodes, a_clusters = paint(after_spec, "after")
    parts = [
        Cluster("before", ("before optimization", *before_spec.notes[:1]), fill="#ffffff"),
        Cluster("after", ("after optimization", *after_spec.notes[:1]), fill="#ffffff"),
    ]
    counts = Counter(n.kernel for n in a_nodes if n.kernel)
    legend = _cap_legend([LegendEntry(k, c, counts.get(k, 0)) for k, c in colors.items()])
    notes = ("fill colour = kernel: each op has the colour of the kernel it went to",)
    title = after_spec.title.replace(" — after optimization", " — before and after optimization")
    return DiagramSpec(
        title=title,
        nodes=(*b_nodes, *a_nodes),
        edges=(*before_spec.edges, *after_spec.edges),
        clusters=(*parts, *b_clusters, *a_clusters),
        legend=legend,
        notes=notes
        + tuple(n for n in before_spec.notes[1:] if not n.startswith("fill colour"))
        + after_spec.notes[1:],
        units=after_spec.units,
        unit="kernel",
        collapsed=before_spec.collapsed or after_spec.collapsed,
        where={**before_spec.where, **after_spec.where},
    )


def kernels_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, tuple[str, ...]]:
    """Before-optimization instruction name -> every kernel it went to, in kernel order.

    The join is on source op names (`provenance.kernel_ops`): an op goes to the kernels
    holding an instruction with its op name, preferring those where that instruction has
    the same opcode; an op that is still a kernel under its own name goes there first.
    Ops whose source op reached no kernel (folded, dead, only bitcasts now) are left out.

    Args:
        before: The module before optimization.
        after: The module after optimization.
        provenance: `trace(after, analysis, before)`.
        analysis: `analyze_module(after)`; computed when not given.
    """
    analysis = analysis or analyze_module(after)
    by_op: dict[str, list[str]] = {}
    for kernel_name, ops in provenance.kernel_ops.items():
        for sop in ops:
            by_op.setdefault(sop.name, []).append(kernel_name)
    by_op_code: dict[tuple[str, str], list[str]] = {}
    own: dict[str, str] = {}
    for k in analysis.kernels:
        own[k.name] = k.opcode
        for inst in k.ops:
            fused_op = source_op(after, inst)
            if fused_op is not None:
                names = by_op_code.setdefault((fused_op.name, inst.opcode), [])
                if k.name not in names:
                    names.append(k.name)
    out: dict[str, tuple[str, ...]] = {}
    for ex in walk(before):
        inst = ex.instruction
        if ex.cls in (K.FREE, K.CONTROL) or inst.name in out:
            continue
        found: list[str] = []
        if own.get(inst.name) == inst.opcode:
            found.append(inst.name)
        op = source_op(before, inst, ex.scope)
        if op is not None:
            found.extend(by_op_code.get((op.name, inst.opcode)) or by_op.get(op.name, []))
        if found:
            out[inst.name] = tuple(dict.fromkeys(found))
    return out


def kernel_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, str]:
    """Before-optimization instruction name -> the (first) kernel it went to.

    See `kernels_of_before_ops` for the join and for every kernel of an op that went to
    several.
    """
    return {k: v[0] for k, v in kernels_of_before_ops(before, after, provenance, analysis).items()}


def module_diagram(
    module: ModuleReport,
    *,
    stage: Literal["before", "after"] = "after",
    both: bool = False,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    expand: Collection[str] | Literal["all"] = (),
    max_nodes: int = 300,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    """The diagram `hloscope graph` draws for one module, from whichever sides it has.

    Args:
        module: The analysed module (its parsed sides, analyses and provenance).
        stage: Which side to draw: the kernel graph (`after`) or the op graph (`before`,
            coloured by kernel when `after` is there too).
        both: Draw both sides in one picture (`side_by_side`); `stage` is ignored.
        timings: Kernel name -> total microseconds (after side only).
        total_us: The module's total time.
        expand: Fusions to draw as boxes of their ops (after side only).
        max_nodes: Node budget (per side when both are drawn).
        around: Neighbourhood of this kernel or instruction.
        depth: Edges to follow from `around`.
        scope: Only what comes from this name scope.

    Raises:
        UsageError: The side asked for is missing, or an option names nothing.
    """
    before, after = module.before_module, module.after_module
    need = ("before", "after") if both else (stage,)
    for side, parsed in (("before", before), ("after", after)):
        if side in need and parsed is None:
            other = "after" if side == "before" else "before"
            hint = "" if both else f"; draw the other side with --stage {other}"
            raise UsageError(f"no {side}-optimization module was dumped for this module{hint}")
    analysis, provenance = module.after, module.provenance

    def after_spec(budget: int, around_name: str | None) -> DiagramSpec:
        assert after is not None and analysis is not None
        return kernel_graph(
            after,
            analysis,
            provenance,
            timings=timings,
            total_us=total_us,
            expand=expand,
            max_nodes=budget,
            around=around_name,
            depth=depth,
            scope=scope,
        )

    kernel_of: dict[str, str] = {}
    kernels_of: dict[str, tuple[str, ...]] = {}
    if before is not None and after is not None and provenance is not None:
        kernels_of = kernels_of_before_ops(before, after, provenance, analysis)
        kernel_of = {k: v[0] for k, v in kernels_of.items()}

    def before_spec(budget: int) -> DiagramSpec:
        assert before is not None
        return op_graph(
            before,
            kernel_of or None,
            kernels_of=kernels_of,
            max_nodes=budget,
            around=around,
            depth=depth,
            scope=scope,
        )

    if both:
        # A name from either side centres both: an op centres the after side on its kernel.
        around_after = kernel_of.get(around, around) if around else None
        return side_by_side(
            before_spec(max(2, max_nodes // 2)), after_spec(max(2, max_nodes // 2), around_after)
        )
    if stage == "after":
        return after_spec(max_nodes, around)
    return before_spec(max_nodes)


# --- unit graphs ------------------------------------------------------------------------

# Private node attributes of unit graphs (the shared ones are in hloscope.analysis.collapse).
_ROLE = "role"
_ITEM = "item"  # the Kernel, or the Instruction
_OPS = "ops"  # tuple[str, ...]: source op labels (kernels)
_CLUSTER = "cluster"  # the control node whose callee it runs in
_INPUTS = "inputs"  # folded parameters: list of (name, Shape)
_KERNELS = "kernels"  # before ops: every kernel they went to
# Private edge attribute: the (operand index, Shape) pairs the edge feeds.
_OPERANDS = "operands"

_PASS_THROUGH_SKIP = frozenset({"constant", "after-all", "partition-id", "replica-id"})


class _Flow:
    """Where the values of one computation come from, walked through free instructions."""

    def __init__(
        self,
        comp: Computation,
        node_of: Callable[[Instruction], str | None],
        parameter: Callable[[Instruction], list[tuple[str, Shape]]],
    ) -> None:
        self.comp = comp
        self.node_of = node_of
        self.parameter = parameter
        self.memo: dict[str, list[tuple[str, Shape]]] = {}

    def sources(self, name: str) -> list[tuple[str, Shape]]:
        """(node id, shape seen) pairs that produce the value `name`."""
        memo = self.memo.get(name)
        if memo is not None:
            return memo
        self.memo[name] = []  # guards against a cycle in a broken module
        inst = self.comp.by_name.get(name)
        out: list[tuple[str, Shape]] = []
        if inst is not None:
            out = self._resolve(inst)
        self.memo[name] = out
        return out

    def _resolve(self, inst: Instruction) -> list[tuple[str, Shape]]:
        node = self.node_of(inst)
        if node is not None:
            return [(node, inst.shape)]
        op = inst.opcode
        if op == "parameter":
            return self.parameter(inst)
        if op in _PASS_THROUGH_SKIP or not inst.operands:
            return []
        if op == "get-tuple-element":
            src = self.comp.by_name.get(inst.operands[0])
            index = int(inst.attributes.get("index", "0") or 0)
            if src is not None and src.opcode == "tuple" and index < len(src.operands):
                return self.sources(src.operands[index])
            return [(n, inst.shape) for n, _ in self.sources(inst.operands[0])]
        if op == "tuple" or inst.shape.is_tuple:
            return [s for o in inst.operands for s in self.sources(o)]
        if op in ("bitcast", "copy-done", "domain"):
            return [(n, inst.shape) for n, _ in self.sources(inst.operands[0])]
        if op == "add-dependency":
            return self.sources(inst.operands[0])
        return [s for o in inst.operands for s in self.sources(o)]


def _add_flow(g: nx.DiGraph, src: str, dst: str, index: int, shape: Shape) -> None:
    if src == dst:
        return
    data = g.get_edge_data(src, dst)
    if data is None:
        g.add_edge(src, dst, **{_OPERANDS: [(index, shape)]})
    else:
        data[_OPERANDS].append((index, shape))


def _after_units(
    after: HloModule, analysis: ModuleAnalysis, provenance: Provenance | None
) -> tuple[nx.DiGraph, dict[str, list[str]]]:
    """The kernel-level unit graph, and instruction name -> unit ids (for --around)."""
    kernels = {(k.computation, k.name): k for k in analysis.kernels}
    comps = after.computation_map
    g = nx.DiGraph(name=after.name)
    index: dict[str, list[str]] = {}
    counter = iter(range(1 << 62))
    entry = after.entry
    visited: set[str] = set()

    def add(node: str, **attrs: object) -> None:
        if node not in g:
            g.add_node(node, **{ORDER: next(counter)}, **attrs)

    def visit(comp: Computation, caller: str | None) -> None:
        if comp.name in visited:
            return
        visited.add(comp.name)

        def node_of(inst: Instruction) -> str | None:
            k = kernels.get((comp.name, inst.name))
            if k is not None:
                return f"k/{inst.name}"
            if K.classify(inst) == K.CONTROL:
                return f"c/{inst.name}"
            if comp is entry and inst.opcode == "parameter":
                return f"p/{inst.name}"
            return None

        def parameter(inst: Instruction) -> list[tuple[str, Shape]]:
            return [(caller, inst.shape)] if caller else []

        flow = _Flow(comp, node_of, parameter)
        for inst in comp.instructions:
            node = node_of(inst)
            if node is None:
                continue
            kernel = kernels.get((comp.name, inst.name))
            if kernel is not None:
                op_name = inst.metadata.op_name if inst.metadata else None
                ops = _kernel_ops(after, kernel, provenance)
                # The kernel's own op (its root's) first: the one that names it best.
                ops.sort(key=lambda o: o[1] != op_name)
                add(
                    node,
                    **{
                        _ROLE: KERNEL,
                        _ITEM: kernel,
                        _OPS: tuple(label for label, _ in ops),
                        OP_NAMES: tuple(name for _, name in ops),
                        SCOPE: scope_of(op_name) or _first_scope(n for _, n in ops),
                        SIGNATURE: (kernel.kind, _short_shape(kernel.shape)),
                        _CLUSTER: _body(caller),
                    },
                )
                for fused in kernel.ops:
                    index.setdefault(fused.name, []).append(node)
            elif node.startswith("p/"):
                add(node, **{_ROLE: PARAMETER, _ITEM: inst, PINNED: True, SCOPE: ""})
            else:
                op_name = inst.metadata.op_name if inst.metadata else None
                add(
                    node,
                    **{
                        _ROLE: CONTROL,
                        _ITEM: inst,
                        SCOPE: scope_of(op_name),
                        OP_NAMES: (op_name,) if op_name else (),
                        SIGNATURE: ("control", inst.opcode),
                        _CLUSTER: _body(caller),
                    },
                )
            index.setdefault(inst.name, []).insert(0, node)
            for i, operand in enumerate(inst.operands):
                for src, shape in flow.sources(operand):
                    if src.startswith("p/") and src not in g:
                        param = entry.by_name[src[2:]]
                        add(src, **{_ROLE: PARAMETER, _ITEM: param, PINNED: True, SCOPE: ""})
                    _add_flow(g, src, node, i, shape)
            if node.startswith("c/"):
                for callee in inst.calls():
                    if callee in comps:
                        visit(comps[callee], node)
        # What the computation returns flows to its caller (a loop's back edge) or out.
        root = comp.root
        results = flow.sources(root.name)
        if caller is None:
            add("out", **{_ROLE: OUTPUT, _ITEM: root, PINNED: True, SCOPE: ""})
            for i, (src, shape) in enumerate(results):
                _add_flow(g, src, "out", i, shape)
        else:
            for i, (src, shape) in enumerate(results):
                if src != caller:
                    _add_flow(g, src, caller, i, shape)
                    g.edges[src, caller]["back"] = True
        for inst in comp.instructions:
            if inst.name not in index:
                found = [n for n, _ in flow.sources(inst.name)]
                if found:
                    index[inst.name] = found

    visit(entry, None)
    # Fused computations' instructions resolve to the fusion that calls them.
    for k in analysis.kernels:
        if k.fused_computation:
            index.setdefault(k.fused_computation, []).append(f"k/{k.name}")
    _inherit_scopes(g)
    return g, index


def _kernel_ops(
    after: HloModule, kernel: Kernel, provenance: Provenance | None
) -> list[tuple[str, str]]:
    """(label, op name) of each source op of a kernel, in order."""
    if provenance is not None and kernel.name in provenance.kernel_ops:
        return [(op.label, op.name) for op in provenance.kernel_ops[kernel.name]]
    seen: dict[str, str] = {}
    for inst in kernel.ops:
        op = source_op(after, inst)
        if op is not None and op.name not in seen:
            seen[op.name] = op.label
    return [(label, name) for name, label in seen.items()]


def _first_scope(names: Iterable[str]) -> str:
    for name in names:
        scope = scope_of(name)
        if scope:
            return scope
    return ""


def _inherit_scopes(g: nx.DiGraph) -> None:
    """Units with no scope (no metadata) take a producer's, else a consumer's."""
    for _ in range(2):
        for n in sorted(g.nodes, key=lambda x: g.nodes[x][ORDER]):
            d = g.nodes[n]
            if d.get(PINNED) or d.get(SCOPE):
                continue
            for other in (*g.predecessors(n), *g.successors(n)):
                scope = g.nodes[other].get(SCOPE)
                if scope and not g.nodes[other].get(PINNED):
                    d[SCOPE] = scope
                    break


def _before_units(
    before: HloModule,
    kernel_of: Mapping[str, str],
    kernels_of: Mapping[str, Sequence[str]],
) -> tuple[nx.DiGraph, dict[str, list[str]]]:
    """The op-level unit graph of a module before optimization (calls inlined)."""
    comps = before.computation_map
    g = nx.DiGraph(name=before.name)
    index: dict[str, list[str]] = {}
    counter = iter(range(1 << 62))
    entry = before.entry
    for kernel_name in set(kernel_of.values()):
        index.setdefault(kernel_name, [])

    def add(node: str, **attrs: object) -> None:
        if node not in g:
            g.add_node(node, **{ORDER: next(counter)}, **attrs)

    def visit(
        comp: Computation,
        path: str,
        scope: str,
        params: list[list[tuple[str, Shape]]] | None,
        caller: str | None,
        depth: int,
    ) -> list[tuple[str, Shape]]:
        if depth > 64:
            return []

        def node_of(inst: Instruction) -> str | None:
            cls = K.classify(inst)
            if inst.opcode == "call":
                return None
            if cls == K.CONTROL:
                return f"b/c/{path}{inst.name}"
            if cls != K.FREE:
                return f"b/{path}{inst.name}"
            if comp is entry and inst.opcode == "parameter":
                return f"b/p/{inst.name}"
            return None

        def parameter(inst: Instruction) -> list[tuple[str, Shape]]:
            number = inst.parameter_number or 0
            if params is not None:
                return params[number] if number < len(params) else []
            return [(caller, inst.shape)] if caller else []

        flow = _Flow(comp, node_of, parameter)
        for inst in comp.instructions:
            if inst.opcode == "call":
                callee = comps.get(inst.calls()[0]) if inst.called else None
                if callee is not None:
                    inner_scope = _call_scope(scope, inst)
                    args = [flow.sources(o) for o in inst.operands]
                    flow.memo[inst.name] = visit(
                        callee, f"{path}{inst.name}/", inner_scope, args, caller, depth + 1
                    )
                continue
            node = node_of(inst)
            if node is None:
                continue
            if node.startswith("b/p/"):
                add(node, **{_ROLE: PARAMETER, _ITEM: inst, PINNED: True, SCOPE: ""})
            else:
                op = source_op(before, inst, scope)
                role = CONTROL if node.startswith("b/c/") else OP
                add(
                    node,
                    **{
                        _ROLE: role,
                        _ITEM: inst,
                        SCOPE: scope_of(op.name) if op else "",
                        OP_NAMES: (op.name,) if op else (),
                        _OPS: (op.label,) if op else (),
                        SIGNATURE: (inst.opcode, _short_shape(inst.shape)),
                        _KERNELS: tuple(kernels_of.get(inst.name, ()))
                        or ((kernel_of[inst.name],) if inst.name in kernel_of else ()),
                        _CLUSTER: _body(caller),
                    },
                )
                kernel = kernel_of.get(inst.name)
                if kernel is not None:
                    index.setdefault(kernel, []).append(node)
            index.setdefault(inst.name, []).append(node)
            for i, operand in enumerate(inst.operands):
                for src, shape in flow.sources(operand):
                    if src.startswith("b/p/") and src not in g:
                        param = entry.by_name[src[4:]]
                        add(src, **{_ROLE: PARAMETER, _ITEM: param, PINNED: True, SCOPE: ""})
                    _add_flow(g, src, node, i, shape)
            if node.startswith("b/c/"):
                for callee_name in inst.calls():
                    if callee_name in comps:
                        results = visit(
                            comps[callee_name], f"{path}{inst.name}/", scope, None, node, depth + 1
                        )
                        for i, (src, shape) in enumerate(results):
                            if src != node:
                                _add_flow(g, src, node, i, shape)
                                g.edges[src, node]["back"] = True
        return flow.sources(comp.root.name)

    results = visit(entry, "", "", None, None, 0)
    add("b/out", **{_ROLE: OUTPUT, _ITEM: entry.root, PINNED: True, SCOPE: ""})
    for i, (src, shape) in enumerate(results):
        _add_flow(g, src, "b/out", i, shape)
    _inherit_scopes(g)
    return g, index


def _call_scope(scope: str, call: Instruction) -> str:
    """The op_name prefix XLA's call inliner gives a callee's instructions."""
    name = call.metadata.op_name if call.metadata and call.metadata.op_name else ""
    if not name:
        return scope
    return name if not scope or name.startswith(scope) else f"{scope}/{name}"


def _filter(
    g: nx.DiGraph,
    index: Mapping[str, list[str]],
    around: str | None,
    depth: int,
    scope: str | None,
    what: str,
    notes: list[str],
) -> nx.DiGraph:
    total = sum(1 for _, d in g.nodes(data=True) if not d.get(PINNED))
    if scope:
        g = filter_scope(g, scope)
        kept = sum(1 for _, d in g.nodes(data=True) if not d.get(PINNED))
        notes.append(f"--scope {scope}: {kept} of {total} {what}s")
    if around:
        centers = [c for c in index.get(around, []) if c in g]
        if not centers:
            centers = [n for n in (f"k/{around}", f"p/{around}", f"b/{around}") if n in g]
        if not centers:
            raise UsageError(_unknown_name(around, index, what))
        g = neighbourhood(g, centers, max(0, depth))
        kept = sum(1 for _, d in g.nodes(data=True) if not d.get(PINNED))
        notes.append(f"--around {around} --depth {depth}: {kept} of {total} {what}s")
    return g


def _unknown_name(name: str, index: Mapping[str, list[str]], what: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(index), n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"--around {name!r}: no {what} or instruction of that name in this picture{hint}"


def _expanded(
    after: HloModule,
    g: nx.DiGraph,
    expand: Collection[str] | Literal["all"],
    max_nodes: int,
) -> list[str]:
    """Unit ids of the fusions to draw as boxes of their ops."""
    fusions = {
        d[_ITEM].name: n
        for n, d in g.nodes(data=True)
        if d.get(_ROLE) == KERNEL and d[_ITEM].fused_computation
    }
    if expand == "all":
        chosen = list(fusions.values())
        size = g.number_of_nodes() + sum(
            len(_fused_body(after, g.nodes[n][_ITEM])) - 1 for n in chosen
        )
        if size > max_nodes:
            raise UsageError(
                f"--expand all would draw {size} nodes, over --max-nodes {max_nodes}; name "
                "the fusions to expand, narrow with --around/--scope, or raise --max-nodes"
            )
        return chosen
    out = []
    by_computation = {
        d[_ITEM].fused_computation: n for n, d in g.nodes(data=True) if d.get(_ROLE) == KERNEL
    }
    for name in expand:
        node = fusions.get(name) or by_computation.get(name)
        if node is None:
            shown = ", ".join(sorted(fusions)[:6]) or "none in this picture"
            raise UsageError(f"--expand {name!r}: not a fusion in this picture; fusions: {shown}")
        out.append(node)
    return list(dict.fromkeys(out))


def _fused_body(after: HloModule, kernel: Kernel) -> list[Instruction]:
    comp = after.computation_map.get(kernel.fused_computation or "")
    if comp is None:
        return []
    return [i for i in comp.instructions if i.opcode != "parameter"]


def _fold_parameters(g: nx.DiGraph, max_nodes: int, notes: list[str], what: str) -> None:
    """Over budget, parameters become a line in the tooltip of what they feed."""
    params = [n for n, d in g.nodes(data=True) if d.get(_ROLE) == PARAMETER]
    if not params or g.number_of_nodes() <= max_nodes:
        return
    for p in params:
        inst: Instruction = g.nodes[p][_ITEM]
        for user in g.successors(p):
            g.nodes[user].setdefault(_INPUTS, []).append((inst.name, inst.shape))
    g.remove_nodes_from(params)
    notes.append(
        f"{len(params)} parameters not drawn (listed in the tooltips of the {what} they feed)"
    )


# --- spec nodes and edges ---------------------------------------------------------------


class _Builder:
    """Turns a (collapsed) unit graph into spec nodes and edges."""

    def __init__(self, col: Collapsed, units: nx.DiGraph, unit: str, prefix: str) -> None:
        self.col = col
        self.units = units
        self.unit = unit
        self.prefix = prefix
        self.root = _common_root(units)
        self.times: dict[str, float] = {}
        self.total = 0.0

    def timings(self, timings: Mapping[str, float] | None, total_us: float | None) -> None:
        if not timings:
            return
        self.times = dict(timings)
        self.total = total_us or sum(timings.values())

    def time_of(self, kernels: Iterable[str]) -> tuple[float | None, float | None]:
        if not self.times:
            return None, None
        found = [self.times[k] for k in kernels if k in self.times]
        if not found:
            return None, None
        t = sum(found)
        return t, (t / self.total if self.total else None)

    def group_id(self, gid: str) -> str:
        return self.prefix + gid

    def nodes(self, make: Callable[[str, dict], Node]) -> tuple[list[Node], dict[str, str]]:
        out: list[Node] = []
        where: dict[str, str] = {}
        h = self.col.graph
        for n in sorted(h.nodes, key=lambda x: h.nodes[x].get(ORDER, 0)):
            d = h.nodes[n]
            group: Group | None = d.get(GROUP)
            if group is None:
                node = make(n, d)
                name = _unit_name(d)
                if name:
                    where.setdefault(name, n)
            else:
                node = self.group_node(group)
                for m in group.members:
                    name = _unit_name(self.units.nodes[m])
                    if name:
                        where.setdefault(name, node.id)
            out.append(node)
        return _emphasise(out), where

    def group_node(self, group: Group) -> Node:
        members = [self.units.nodes[m] for m in group.members]
        names = [_unit_name(d) or "" for d in members]
        kinds = Counter(_kind_short(_unit_kind(d)) for d in members)
        kernels = [n for n in names if n] if self.unit == "kernel" else []
        t, share = self.time_of(kernels)
        scope = _strip_root(group.scope, self.root) or group.scope or "(top level)"
        # Control instructions (loops) are units too, but not kernels or ops.
        count = sum(1 for d in members if d.get(_ROLE) in (KERNEL, OP))
        what = f"{count} {self.unit}s"
        if group.repeat > 1:
            per = count // group.repeat
            title = f"{_left_ellipsis(scope, _LINE - 6)} ×{group.repeat}"
            second = (f"#={group.numbers} · " if group.numbers else "") + f"{per} {self.unit}s each"
            lines = [title, second, _kinds_line(kinds)]
            role = REPEAT
        else:
            title = _left_ellipsis(scope, _LINE - (8 if group.part else 0))
            if group.part:
                title += f" (part {group.part})"
            lines = [title, f"{what}: {_kinds_line(kinds)}"]
            role = GROUP_NODE
        if t is not None:
            lines.append(_time_line(t, share))
        tip = [
            f"{group.scope or '(top level)'}",
            f"{what} in one node"
            + (f", {group.repeat} repeated blocks" if group.repeat > 1 else ""),
            "kinds: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common()),
        ]
        if group.instances:
            tip.append("instances: " + ", ".join(group.instances[:20]))
        tip.append(f"{self.unit}s: " + ", ".join(n for n in names[:40] if n))
        if len(names) > 40:
            tip[-1] += f", … ({len(names) - 40} more)"
        if t is not None:
            tip.append(_time_line(t, share))
        clusters = {d.get(_CLUSTER) for d in members}
        return Node(
            id=self.group_id(group.id),
            role=role,
            lines=tuple(lines),
            tooltip="\n".join(tip),
            fill=_GROUP_COLOR,
            kind=kinds.most_common(1)[0][0] if kinds else "",
            count=count,
            repeat=group.repeat,
            cluster=clusters.pop() if len(clusters) == 1 else None,
            time_us=t,
            share=share,
            members=tuple(n for n in names if n),
        )

    def edges(
        self, anchor: Callable[[Edge, list[tuple[str, str]]], list[Edge]] | None = None
    ) -> list[Edge]:
        h = self.col.graph
        small = h.number_of_nodes() <= _EDGE_LABELS_UP_TO
        out: list[Edge] = []
        for a, b, d in h.edges(data=True):
            pairs = d.get(MERGED) or [(a, b)]
            shapes: list[Shape] = []
            back = False
            for u, v in pairs:
                data = self.units.edges[u, v]
                shapes.extend(s for _, s in data.get(_OPERANDS, ()))
                back = back or bool(data.get("back"))
            nbytes = sum(s.byte_size for s in shapes)
            distinct = list(dict.fromkeys(_short_shape(s) for s in shapes))
            if len(pairs) == 1 and len(distinct) == 1:
                label = f"{distinct[0]} · {_bytes(nbytes)}"
            else:
                label = f"{len(pairs)} tensors · {_bytes(nbytes)}"
            tip = f"{self._name(a)} → {self._name(b)}\n" + "\n".join(
                f"{_short_shape(s)} ({_bytes(s.byte_size)})" for s in shapes[:20]
            )
            edge = Edge(
                src=self._id(a),
                dst=self._id(b),
                label=label if small else "",
                tooltip=tip,
                bytes=nbytes,
                tensors=len(pairs),
                constraint=not back,
            )
            out.extend(anchor(edge, pairs) if anchor else [edge])
        return out

    def _id(self, n: str) -> str:
        return self.group_id(n) if GROUP in self.col.graph.nodes[n] else n

    def _name(self, n: str) -> str:
        d = self.col.graph.nodes[n]
        group = d.get(GROUP)
        if group is not None:
            return group.scope or "(top level)"
        return _unit_name(d) or n


def _count_role(g: nx.DiGraph, role: str) -> int:
    return sum(1 for _, d in g.nodes(data=True) if d.get(_ROLE) == role)


def _unit_name(d: Mapping[str, object]) -> str | None:
    item = d.get(_ITEM)
    if isinstance(item, (Kernel, Instruction)):
        return item.name
    return None


def _unit_kind(d: Mapping[str, object]) -> str:
    item = d.get(_ITEM)
    if isinstance(item, Kernel):
        return item.kind
    if isinstance(item, Instruction):
        return item.opcode
    return ""


def _after_node(after: HloModule, n: str, d: dict, b: _Builder) -> Node:
    role = d[_ROLE]
    item = d[_ITEM]
    inputs = d.get(_INPUTS) or []
    if role == KERNEL:
        kernel: Kernel = item
        t, share = b.time_of([kernel.name])
        second = f"{_kind_short(kernel.kind)} · {_short_shape(kernel.shape)}"
        if kernel.launches is not None and kernel.launches > 1:
            second += f" · ×{kernel.launches}"
        lines = [ellipsis(kernel.name, _LINE), ellipsis(second, _LINE)]
        lines.extend(_ops_lines(d.get(OP_NAMES, ()), b.root))
        if t is not None:
            lines.append(_time_line(t, share))
        return Node(
            id=n,
            role=role,
            lines=tuple(lines),
            tooltip=_kernel_tooltip(after, kernel, d.get(_OPS, ()), inputs, t, share),
            fill=kind_color(kernel.kind),
            kind=kernel.kind,
            kernel=kernel.name,
            cluster=d.get(_CLUSTER),
            time_us=t,
            share=share,
        )
    inst: Instruction = item
    if role in (PARAMETER, OUTPUT):
        return _io_node(n, role, inst)
    trips = _trip_text(inst)
    return Node(
        id=n,
        role=CONTROL,
        lines=(ellipsis(inst.name, _LINE), f"{inst.opcode}{trips}"),
        tooltip=f"{inst.name}: {inst.opcode}{trips}, calls {', '.join(inst.calls())}"
        + _op_line(inst),
        fill=_CONTROL_COLOR,
        kind=inst.opcode,
        cluster=d.get(_CLUSTER),
    )


def _io_node(n: str, role: str, inst: Instruction) -> Node:
    """A parameter or the module's output, drawn the same before and after."""
    if role == PARAMETER:
        return Node(
            id=n,
            role=role,
            lines=(
                ellipsis(inst.name, _LINE),
                f"parameter {inst.parameter_number} · {_short_shape(inst.shape, 30)}",
            ),
            tooltip=f"parameter {inst.parameter_number}: {inst.name}\n{inst.shape.text}"
            + _op_line(inst),
            fill=_IO_COLOR,
            kind="parameter",
        )
    return Node(
        id=n,
        role=role,
        lines=("output", _short_shape(inst.shape, _LINE)),
        tooltip=f"the module's result ({inst.name})\n{inst.shape.text}",
        fill=_IO_COLOR,
        kind="output",
    )


def _before_node(before: HloModule, n: str, d: dict, colors: Mapping[str, str]) -> Node:
    role = d[_ROLE]
    inst: Instruction = d[_ITEM]
    inputs = d.get(_INPUTS) or []
    if role in (PARAMETER, OUTPUT):
        return _io_node(n, role, inst)
    kernels: tuple[str, ...] = d.get(_KERNELS, ())
    kernel = kernels[0] if kernels else None
    lines = [
        ellipsis(inst.name, _LINE),
        ellipsis(f"{inst.opcode} · {_short_shape(inst.shape)}", _LINE),
    ]
    ops = d.get(_OPS, ())
    if ops:
        lines.append(_left_ellipsis(ops[0], _LINE))
    if role == OP:
        lines.append(ellipsis(f"→ {kernel}", _LINE) if kernel else "→ no kernel")
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
    if inputs:
        tip.append("inputs: " + ", ".join(f"{name} {_short_shape(s)}" for name, s in inputs))
    return Node(
        id=n,
        role=role,
        lines=tuple(lines),
        tooltip="\n".join(tip),
        fill=colors.get(kernel, _NO_KERNEL_COLOR) if kernel else _NO_KERNEL_COLOR,
        kind=inst.opcode,
        kernel=kernel,
        cluster=d.get(_CLUSTER),
    )


def _kernel_tooltip(
    after: HloModule,
    kernel: Kernel,
    ops: Sequence[str],
    inputs: Sequence[tuple[str, Shape]],
    t: float | None,
    share: float | None,
) -> str:
    tip = [kernel.name, f"kind: {kernel.kind} ({kernel.cls})"]
    if kernel.fused_computation:
        tip.append(f"calls {kernel.fused_computation} ({kernel.instruction_count} ops)")
    tip.append(f"shape: {kernel.shape.text}")
    tip.append(f"reads {_bytes(kernel.bytes_in)} · writes {_bytes(kernel.bytes_out)}")
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
        tip.append("inputs: " + ", ".join(f"{name} {_short_shape(s)}" for name, s in inputs))
    if t is not None:
        tip.append(_time_line(t, share))
    return "\n".join(tip)


def _op_line(inst: Instruction) -> str:
    md = inst.metadata
    if md is None or not md.op_name:
        return ""
    return f"\nsource op: {md.op_name}" + (f" ({md.op_type})" if md.op_type else "")


def _trip_text(inst: Instruction) -> str:
    if inst.opcode != "while":
        return ""
    n = trip_count(inst)
    return f" ×{n}" if n is not None else " (trip count unknown)"


def _emphasise(nodes: list[Node]) -> list[Node]:
    """Mark the heaviest timed nodes: the top tenth, at least 1 and at most 5."""
    timed = sorted((n for n in nodes if n.time_us), key=lambda n: -(n.time_us or 0))
    if not timed:
        return nodes
    top = min(5, max(1, math.ceil(len(timed) / 10)))
    heavy = {n.id for n in timed[:top]}
    return [replace(n, heavy=True) if n.id in heavy else n for n in nodes]


def _anchor(
    after: HloModule,
    g: nx.DiGraph,
    expanded: Collection[str],
    e: Edge,
    pairs: list[tuple[str, str]],
) -> list[Edge]:
    """Re-aim edges at the ops inside expanded fusions."""
    if e.src not in expanded and e.dst not in expanded:
        return [e]
    src = _root_op(after, g.nodes[e.src][_ITEM], e.src) if e.src in expanded else e.src
    if e.dst not in expanded:
        return [replace(e, src=src)]
    kernel: Kernel = g.nodes[e.dst][_ITEM]
    indices = {i for u, v in pairs for i, _ in g.edges[u, v].get(_OPERANDS, ())}
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


def _expansion(
    after: HloModule, kernel: Kernel, node: str, b: _Builder
) -> tuple[Cluster, list[Node], list[Edge]]:
    """A fusion drawn as a box of its fused computation's instructions."""
    d = b.units.nodes[node]
    t, share = b.time_of([kernel.name])
    comp = after.computation_map[kernel.fused_computation or ""]
    lines = [
        ellipsis(kernel.name, _LINE),
        ellipsis(f"{_kind_short(kernel.kind)} · {_short_shape(kernel.shape)}", _LINE),
        *_ops_lines(d.get(OP_NAMES, ()), b.root),
    ]
    if t is not None:
        lines.append(_time_line(t, share))
    cluster = Cluster(
        id=node,
        lines=tuple(lines),
        tooltip=_kernel_tooltip(after, kernel, d.get(_OPS, ()), d.get(_INPUTS) or [], t, share),
        fill=kind_color(kernel.kind),
        parent=d.get(_CLUSTER),
        kernel=kernel.name,
    )
    nodes: list[Node] = []
    edges: list[Edge] = []
    params = {i.name for i in comp.instructions if i.opcode == "parameter"}
    for inst in comp.instructions:
        if inst.name in params:
            continue
        op_id = f"f/{kernel.name}/{inst.name}"
        second = _short_shape(inst.shape, _LINE)
        if inst.opcode == "constant" and inst.literal:
            second = ellipsis(f"{inst.literal} · {second}", _LINE)
        tip = f"{inst.name}: {inst.opcode}\n{inst.shape.text}" + _op_line(inst)
        nodes.append(
            Node(
                id=op_id,
                role=OP,
                lines=(inst.opcode, second),
                tooltip=tip,
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
                    label=_short_shape(shape, 24) if shape.dimensions else "",
                    tooltip=f"{operand} → {inst.name}\n{shape.text} ({_bytes(shape.byte_size)})",
                    bytes=shape.byte_size,
                )
            )
    return cluster, nodes, edges


def _body(control: str | None) -> str | None:
    """The id of the box around what a control instruction runs."""
    return f"{control}/body" if control else None


def _control_clusters(g: nx.DiGraph, nodes: Sequence[Node]) -> list[Cluster]:
    """One box per loop, conditional or async call, around the kernels it runs."""
    used = {n.cluster for n in nodes if n.cluster and n.cluster.endswith("/body")}
    # Enclosing boxes of nested loops are needed even when they hold no node themselves.
    todo = list(used)
    while todo:
        control = todo.pop().removesuffix("/body")
        parent = g.nodes[control].get(_CLUSTER) if control in g else None
        if parent and parent not in used:
            used.add(parent)
            todo.append(parent)
    out = []
    for body in sorted(used, key=lambda c: g.nodes[c.removesuffix("/body")].get(ORDER, 0)):
        control = body.removesuffix("/body")
        if control not in g:
            continue
        inst: Instruction = g.nodes[control][_ITEM]
        out.append(
            Cluster(
                id=body,
                lines=(f"inside {inst.name}{_trip_text(inst)}",),
                tooltip=f"what {inst.opcode} {inst.name} runs: {', '.join(inst.calls())}",
                fill="#fbfbfb",
                parent=g.nodes[control].get(_CLUSTER),
            )
        )
    return _parents_first(out)


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


def _kind_legend(g: nx.DiGraph) -> tuple[LegendEntry, ...]:
    counts: Counter[str] = Counter(
        d[_ITEM].kind for _, d in g.nodes(data=True) if d.get(_ROLE) == KERNEL
    )
    by_color: dict[str, list[tuple[str, int]]] = {}
    for kind, n in counts.most_common():
        by_color.setdefault(kind_color(kind), []).append((kind, n))
    rows = [
        LegendEntry(", ".join(_kind_short(k) for k, _ in kinds), color, sum(n for _, n in kinds))
        for color, kinds in by_color.items()
    ]
    return _cap_legend(rows)


def _cap_legend(rows: list[LegendEntry]) -> tuple[LegendEntry, ...]:
    if len(rows) <= _LEGEND_ROWS:
        return tuple(rows)
    rest = rows[_LEGEND_ROWS - 1 :]
    more = LegendEntry(f"… {len(rest)} more", "#ffffff", sum(r.count for r in rest))
    return (*rows[: _LEGEND_ROWS - 1], more)


def kind_color(kind: str) -> str:
    """The fill colour of a kernel kind (stable across runs and modules)."""
    color = KIND_COLORS.get(kind)
    if color is not None:
        return color
    if kind.startswith("custom-call:"):
        return _CUSTOM_CALL_COLOR
    if kind.startswith("unfused:"):
        return _UNFUSED_COLOR
    if kind in K.COLLECTIVE_OPCODES or kind.startswith("all-") or kind.startswith("collective"):
        return _COLLECTIVE_COLOR
    return _EXTRA[zlib.crc32(kind.encode()) % len(_EXTRA)]


def _kernel_colors(kernels: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k in kernels:
        if k not in out:
            out[k] = KERNEL_PALETTE[len(out) % len(KERNEL_PALETTE)]
    return out


# --- text -------------------------------------------------------------------------------


def _kind_short(kind: str) -> str:
    for prefix in ("unfused:", "custom-call:"):
        if kind.startswith(prefix):
            return kind[len(prefix) :]
    return kind.lstrip("_") if kind.startswith("__") else kind


def _kinds_line(kinds: Counter[str]) -> str:
    parts = [f"{n} {k}" for k, n in kinds.most_common(3)]
    if len(kinds) > 3:
        parts.append("…")
    return ellipsis(", ".join(parts), _LINE)


def _short_shape(shape: Shape, limit: int = 60) -> str:
    """`f32[64,128]` without the layout; tuples as `(f32[10], s32[10])`."""
    if shape.is_tuple:
        text = "(" + ", ".join(_short_shape(s, limit) for s in shape.tuple_shapes) + ")"
    elif shape.is_token:
        text = "token"
    else:
        dims = ",".join(
            f"<={d}" if i < len(shape.dynamic) and shape.dynamic[i] else str(d)
            for i, d in enumerate(shape.dimensions)
        )
        text = f"{shape.element_type}[{dims}]"
    return ellipsis(text, limit)


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n_f = n / 1024
        if n_f < 1024 or unit == "GiB":
            return f"{n_f:.3g} {unit}"
        n = int(n_f)
    return f"{n} B"


def _time_line(t: float, share: float | None) -> str:
    text = f"{t / 1000:.3g} ms" if t >= 1000 else f"{t:.3g} µs"
    return text + (f" · {share:.1%}" if share is not None else "")


def ellipsis(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def _left_ellipsis(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _split_path(name: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(name):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append(name[start:i])
            start = i + 1
    parts.append(name[start:])
    return parts


def _common_root(g: nx.DiGraph) -> str:
    """The scope every unit shares (`resnet50_1/`, `jit(block)/`), to leave off labels."""
    common: list[str] | None = None
    for _, d in g.nodes(data=True):
        for name in d.get(OP_NAMES, ()):
            parts = _split_path(name)[:-1]
            if common is None:
                common = parts
            else:
                i = 0
                while i < min(len(common), len(parts)) and common[i] == parts[i]:
                    i += 1
                common = common[:i]
            if not common:
                return ""
    return "/".join(common) + "/" if common else ""


def _strip_root(name: str, root: str) -> str:
    if root and name.startswith(root):
        return name[len(root) :]
    if root and name + "/" == root:
        return ""
    return name


def _ops_lines(op_names: Sequence[str], root: str) -> list[str]:
    """Up to two label lines naming a kernel's source ops, shortened."""
    names = [_strip_root(n.split(";", 1)[0], root) for n in op_names]
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        return []
    if len(names) == 1:
        return [_path_ellipsis(names[0], _LINE)]
    paths = [_split_path(n) for n in names]
    common: list[str] = paths[0][:-1]
    for p in paths[1:]:
        i = 0
        while i < min(len(common), len(p) - 1) and common[i] == p[i]:
            i += 1
        common = common[:i]
    leaves = list(dict.fromkeys("/".join(p[len(common) :]) for p in paths))
    shown: list[str] = []
    for leaf in leaves:
        candidate = ", ".join([*shown, leaf])
        if len(candidate) > _LINE - 6 and shown:
            break
        shown.append(leaf)
    leaf_line = ", ".join(shown)
    if len(shown) < len(leaves):
        leaf_line += f" +{len(leaves) - len(shown)}"
    lines = [ellipsis(leaf_line, _LINE)]
    if common:
        lines.insert(0, _path_ellipsis("/".join(common) + "/", _LINE))
    return lines


def _path_ellipsis(path: str, limit: int) -> str:
    """Shorten a scope path in the middle, keeping its first and last parts."""
    if len(path) <= limit:
        return path
    parts = _split_path(path.rstrip("/"))
    tail = "/" if path.endswith("/") else ""
    if len(parts) >= 3:
        short = f"{parts[0]}/…/{parts[-1]}{tail}"
        if len(short) <= limit:
            return short
    return _left_ellipsis(path, limit)


def _short_module(name: str) -> str:
    """TensorFlow's module names carry a config hash: `a_inference_f_12__XlaMustCompile_…`."""
    cut = name.find("__XlaMustCompile")
    if cut > 0:
        name = name[:cut]
    return ellipsis(name, 80)
