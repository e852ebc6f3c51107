"""The diagrams themselves: kernels after optimization, ops before, both side by side.

`module_diagram` is the one entry point the CLI, the HTML page and the notebook call:
it takes a `ModuleReport` (parsed modules, their analyses and provenance, all made
before rendering) and draws the side asked for. `kernel_graph`, `op_graph` and
`side_by_side` are its building blocks, for callers that hold the pieces themselves.
Nothing here parses, analyses or reads a file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from hloscope.analysis.collapse import PINNED, Collapsed, Rows, collapse, collapse_rows
from hloscope.analysis.fusion import Kernel, ModuleAnalysis
from hloscope.analysis.memo import Ahead, Later
from hloscope.analysis.provenance import Provenance, ops_to_place, placed_ops
from hloscope.errors import UsageError
from hloscope.hlo.model import HloModule
from hloscope.hlo.parser import paused_gc
from hloscope.render.diagram.build import (
    Builder,
    count_role,
    cut,
    expanded,
    fold_parameter_rows,
    fold_parameters,
    fused_body,
)
from hloscope.render.diagram.nodes import (
    after_node,
    anchor,
    before_node,
    control_clusters,
    expansion,
    fit_clusters,
)
from hloscope.render.diagram.rows import described_rows, rows_of, unit_rows
from hloscope.render.diagram.spec import KERNEL, OP, Cluster, DiagramSpec, Edge, LegendEntry, Node
from hloscope.render.diagram.style import (
    KERNEL_PALETTE,
    NO_KERNEL_COLOR,
    cap_legend,
    kernel_colors,
    kind_legend,
)
from hloscope.render.diagram.walk import (
    ITEM,
    MAX_CALL_DEPTH,
    ROLE,
    TRUNCATED,
    AfterSide,
    BeforeSide,
    unit_graph,
)
from hloscope.render.format import counted, short_name
from hloscope.status import step

if TYPE_CHECKING:
    import networkx as nx

    from hloscope.analysis.report import ModuleReport

DEFAULT_MAX_NODES = 60
"""Node budget of `hloscope graph`: a picture a person reads. At 60, DenseNet121,
ResNet-50, EfficientNetB0 and a 6-layer transformer each draw at most 60 nodes and 85
edges, at most about 4,300 pt tall (DenseNet121 at the former 300: 300 nodes, 836 edges,
18,025 pt); `--max-nodes` draws finer, and at the module's kernel count everything."""

PAGE_MAX_NODES = 200
"""Node budget of each diagram in the HTML page."""


def kernel_graph(
    after: HloModule,
    analysis: ModuleAnalysis,
    provenance: Provenance | None = None,
    *,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    expand: Collection[str] | Literal["all"] = (),
    max_nodes: int = DEFAULT_MAX_NODES,
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
        analysis: Its analysis (`ModuleReport.after`).
        provenance: Its provenance (`ModuleReport.provenance`), for source op names with
            their TF op types.
        timings: Kernel name -> microseconds per execution; shown on nodes, heaviest
            emphasised.
        total_us: The module's time per execution (default: the sum of `timings`).
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

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> spec = hloscope.kernel_graph(m.after_module, m.after)
        >>> [n.kernel for n in spec.nodes if n.role == 'kernel']
        ['MatMul.2', 'broadcast_maximum_fusion']
    """
    step(f"drawing the kernels of {after.name} ({len(analysis.kernels):,})")
    side = AfterSide(after, analysis, provenance)
    units: nx.DiGraph | Rows
    opened: list[str] = []
    if around or scope or expand:
        g, index = unit_graph(after, side, names=bool(around))
        notes: list[str] = depth_note(g.graph)
        units = g = cut(g, index, around, depth, scope, "kernel", notes)
        opened = expanded(after, g, expand, max_nodes)
        extra = sum(len(fused_body(after, g.nodes[n][ITEM])) - 1 for n in opened)
        for n in opened:
            g.nodes[n][PINNED] = True
        fold_parameters(g, max_nodes - extra, notes, "kernels")
        col = collapse(g, max(1, max_nodes - extra))
    else:  # the whole module: rows, not a networkx graph of its kernels and their edges
        rows = described_rows(after, side)
        notes = depth_note(rows.graph)
        units = rows = fold_parameter_rows(rows, max_nodes, notes, "kernels")
        col = collapse_rows(rows, max(1, max_nodes))
    builder = Builder(col, units, "kernel", prefix="")
    builder.timings(timings, total_us)
    spec_nodes, where = builder.nodes(lambda n, d: after_node(after, n, d, builder))
    clusters: list[Cluster] = []
    inner_nodes: list[Node] = []
    inner_edges: list[Edge] = []
    for n in opened:
        kernel: Kernel = g.nodes[n][ITEM]
        cluster, nodes, edges = expansion(after, kernel, n, builder)
        clusters.append(cluster)
        inner_nodes.extend(nodes)
        inner_edges.extend(edges)
        where[kernel.name] = n
    clusters = control_clusters(units, spec_nodes) + clusters
    spec_nodes, clusters = fit_clusters(
        [n for n in spec_nodes if n.id not in opened] + inner_nodes, clusters
    )
    aim = partial(anchor, after, g, opened) if opened else None  # into expanded fusions
    edges = builder.edges(aim) + inner_edges
    kernels = count_role(units, KERNEL)
    if col.collapsed:
        repeats = sum(1 for gr in col.groups.values() if gr.repeat > 1)
        notes.append(
            f"collapsed {kernels} kernels into {col.graph.number_of_nodes()} nodes by name "
            "scope"
            + (f" ({repeats} repeated blocks ×N)" if repeats else "")
            + f" to stay under --max-nodes {max_nodes}"
        )
    names = {k.name for k in analysis.kernels}
    return DiagramSpec(
        title=f"{short_name(after.name, 80)} — after optimization",
        nodes=tuple(spec_nodes),
        edges=tuple(edges),
        clusters=tuple(clusters),
        legend=kind_legend(Counter(_kernel_kinds(units))),
        notes=(
            f"{counted(analysis.kernel_count, 'kernel')}, {counted(analysis.launches, 'launch')}",
            *notes,
        ),
        units=kernels,
        unit="kernel",
        collapsed=col.collapsed,
        where=where,
        node_kernels=_after_node_kernels(spec_nodes, names),
    )


def _kernel_kinds(units: nx.DiGraph | Rows) -> Iterator[str]:
    """The kind of each kernel of a unit graph, in order."""
    if isinstance(units, Rows):
        info = units.info
        return (
            item.kind for item, role in zip(info.items, info.roles, strict=True) if role == KERNEL
        )
    return (d[ITEM].kind for _, d in units.nodes(data=True) if d.get(ROLE) == KERNEL)


def _after_node_kernels(
    nodes: Sequence[Node], kernels: Collection[str]
) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for n in nodes:
        shown = tuple(m for m in n.members if m in kernels) or ((n.kernel,) if n.kernel else ())
        if shown:
            out[n.id] = shown
    return out


def op_graph(
    before: HloModule,
    kernel_of: Mapping[str, str] | None = None,
    *,
    kernels_of: Mapping[str, Sequence[str]] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    """The module before optimization at op level, coloured by destination kernel.

    Args:
        before: The module before optimization.
        kernel_of: Instruction name -> the kernel it went to
            (`hloscope.analysis.provenance.kernel_of_before_ops`); None draws the ops
            uncoloured.
        kernels_of: Instruction name -> every kernel it went to, for the tooltips
            (`kernels_of_before_ops`).
        max_nodes: Node budget (see `kernel_graph`).
        around: Draw only the neighbourhood of this instruction, or of the ops that went
            to this kernel.
        depth: Edges to follow from `around`.
        scope: Draw only ops from this name scope.

    Returns:
        The diagram.

    Raises:
        UsageError: When `around` or `scope` names nothing in the module.

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> kernel_of = hloscope.kernel_of_before_ops(m.before_module, m.after_module, m.provenance)
        >>> spec = hloscope.op_graph(m.before_module, kernel_of)
        >>> len(spec.nodes) > 0
        True
    """
    kernel_of = kernel_of if kernel_of is not None else {}  # not read yet: see _kernels_of
    kernels_of = kernels_of if kernels_of is not None else {}
    step(f"drawing the ops of {before.name} ({before.instruction_count:,} instructions)")
    if around or scope:
        side = BeforeSide(before, kernel_of, kernels_of)
        rows, index = unit_rows(before, side, names=True)
        notes: list[str] = depth_note(rows.graph)
        rows = rows_of(cut(rows.to_graph(), index, around, depth, scope, "op", notes))
        rows = fold_parameter_rows(rows, max_nodes, notes, "ops")
        col = collapse_rows(rows, max_nodes)
    else:  # what does not depend on the kernels: walked ahead, maybe (`walk_ops_ahead`)
        walked = _walked_ops(before, max_nodes)
        walked.side.colour(kernel_of, kernels_of, walked.col.graph)
        rows, col, notes = walked.rows, walked.col, list(walked.notes)
    # Rows are in program order (`ORDER`).
    kernel = kernel_of.get
    colors = kernel_colors(
        k
        for inst, role in zip(rows.info.items, rows.info.roles, strict=True)
        if role == OP and (k := kernel(inst.name)) is not None
    )
    builder = Builder(col, rows, "op", prefix="b/")
    spec_nodes, where = builder.nodes(lambda n, d: before_node(before, n, d, colors))
    spec_nodes, clusters = fit_clusters(spec_nodes, control_clusters(rows, spec_nodes))
    ops = count_role(rows, OP)
    if col.collapsed:
        notes.append(
            f"collapsed {ops} ops into {col.graph.number_of_nodes()} nodes by name scope "
            f"to stay under --max-nodes {max_nodes}"
        )
    legend: tuple[LegendEntry, ...] = ()
    if colors:
        counts = Counter(n.kernel for n in spec_nodes if n.kernel)
        legend = cap_legend([LegendEntry(f"→ {k}", c, counts.get(k, 0)) for k, c in colors.items()])
    node_kernels: dict[str, tuple[str, ...]] = {}
    for n in spec_nodes:
        # A group: every kernel its ops went to; one op: the kernel it is coloured by.
        shown = tuple(dict.fromkeys(k for op in n.members for k in kernels_of.get(op, ())))
        shown = shown or ((n.kernel,) if n.kernel else ())
        if shown:
            node_kernels[n.id] = shown
    return DiagramSpec(
        title=f"{short_name(before.name, 80)} — before optimization",
        nodes=tuple(spec_nodes),
        edges=tuple(builder.edges()),
        clusters=tuple(clusters),
        legend=legend,
        notes=(
            f"{ops} ops",
            *(["fill colour = the kernel each op went to"] if colors else []),
            *notes,
        ),
        units=ops,
        unit="op",
        collapsed=col.collapsed,
        where=where,
        node_kernels=node_kernels,
    )


class _WalkedOps(NamedTuple):
    """An op diagram's rows, folded and collapsed to its node budget: what it draws
    before it colours its ops by kernel."""

    side: BeforeSide
    rows: Rows
    col: Collapsed
    notes: tuple[str, ...]


def _walk_ops(before: HloModule, max_nodes: int) -> _WalkedOps:
    # Rows, not a networkx graph: a big module has hundreds of thousands of ops, and all
    # but the few dozen drawn on their own end up in groups (issue 27).
    side = BeforeSide(before, {}, {})  # coloured when drawn (`BeforeSide.colour`)
    rows, _ = unit_rows(before, side, names=False)
    notes = depth_note(rows.graph)
    rows = fold_parameter_rows(rows, max_nodes, notes, "ops")
    return _WalkedOps(side, rows, collapse_rows(rows, max_nodes), tuple(notes))


# The page's op diagram, walked ahead where a process waits anyway (`walk_ops_ahead`).
_page_walk = Ahead(partial(_walk_ops, max_nodes=PAGE_MAX_NODES))


def walk_ops_ahead(before: HloModule) -> None:
    """Walk and collapse the page's op diagram of `before` now (what does not depend on
    the kernels its ops went to), for the next `op_graph` of it with the page's node
    budget to take: the page of a big module does, while a worker process reads its
    after side (`hloscope.analysis.report.analyze_dump`'s `before_ahead`)."""
    step(f"walking the ops of {before.name} while its after side is read")
    with paused_gc():
        _page_walk.ahead(before)


def _walked_ops(before: HloModule, max_nodes: int) -> _WalkedOps:
    """`_walk_ops`: what `walk_ops_ahead` found, else found now."""
    return _page_walk(before) if max_nodes == PAGE_MAX_NODES else _walk_ops(before, max_nodes)


def side_by_side(before_spec: DiagramSpec, after_spec: DiagramSpec) -> DiagramSpec:
    """Before and after in one picture, each op and kernel filled with its kernel's colour.

    Args:
        before_spec: From `op_graph`.
        after_spec: From `kernel_graph`.

    Returns:
        One diagram with two clusters, `before` and `after`.

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> before = hloscope.module_diagram(m, stage='before')
        >>> after = hloscope.module_diagram(m, stage='after')
        >>> len(hloscope.side_by_side(before, after).clusters)
        2
    """
    colors = kernel_colors(n.kernel for n in after_spec.nodes if n.role == KERNEL and n.kernel)
    for c in after_spec.clusters:
        if c.kernel and c.kernel not in colors:
            colors[c.kernel] = KERNEL_PALETTE[len(colors) % len(KERNEL_PALETTE)]
    b_nodes, b_clusters = _paint(before_spec, "before", colors)
    a_nodes, a_clusters = _paint(after_spec, "after", colors)
    parts = [
        Cluster("before", ("before optimization", *before_spec.notes[:1]), fill="#ffffff"),
        Cluster("after", ("after optimization", *after_spec.notes[:1]), fill="#ffffff"),
    ]
    counts = Counter(n.kernel for n in a_nodes if n.kernel)
    legend = cap_legend([LegendEntry(k, c, counts.get(k, 0)) for k, c in colors.items()])
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
        node_kernels={**before_spec.node_kernels, **after_spec.node_kernels},
    )


def _paint(
    spec: DiagramSpec, part: str, colors: Mapping[str, str]
) -> tuple[list[Node], list[Cluster]]:
    """One side's nodes and clusters in the shared kernel colours, inside box `part`."""
    nodes = []
    for n in spec.nodes:
        fill = colors.get(n.kernel, n.fill) if n.kernel and n.role in (KERNEL, OP) else n.fill
        if n.role == OP and n.kernel and n.kernel not in colors:
            fill = NO_KERNEL_COLOR
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


# --- the entry point --------------------------------------------------------------------


def module_diagram(
    module: ModuleReport,
    *,
    stage: Literal["before", "after"] = "after",
    both: bool = False,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    expand: Sequence[str] | Literal["all"] = (),
    max_nodes: int = DEFAULT_MAX_NODES,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
    after: Callable[[], DiagramSpec | None] | None = None,
) -> DiagramSpec:
    """The diagram of one module: `hloscope graph`, the notebook's `graph`, the HTML page.

    Args:
        module: The module's report, with its parsed modules, analyses and provenance.
        stage: Which side to draw: the kernel graph (`after`) or the op graph (`before`,
            coloured by the kernel each op went to when the after side is there too).
        both: Draw both sides in one picture (`side_by_side`); `stage` is ignored.
        timings: Kernel name -> microseconds per execution (after side only).
        total_us: The module's time per execution (default: the sum of `timings`).
        expand: Fusions to draw as boxes of their ops, or "all" (after side only).
        max_nodes: Node budget (per side when both are drawn).
        around: Neighbourhood of this kernel or instruction.
        depth: Edges to follow from `around`.
        scope: Only what comes from this name scope.
        after: With `both` and no `around`: the after side drawn elsewhere (by
            `after_half` with the same arguments, where the after module was analysed),
            asked for once the before side is drawn; None from it: drawn here.

    Returns:
        The diagram.

    Raises:
        UsageError: The side asked for is missing, or an option names nothing.

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> spec = hloscope.module_diagram(m, stage='after')
        >>> len(spec.nodes) > 0, '->' in hloscope.to_dot(spec)
        (True, True)
    """
    # An after side drawn elsewhere is checked there, once this process's side is drawn
    # (asking for it here would wait for the worker analysing it)
    away = both and after is not None and not around
    for side in ("before",) if away else ("before", "after") if both else (stage,):
        if not _has(module, side):
            raise UsageError(_missing(module, side, both))
    # A unit per op of a big module: millions of objects and few cycles, which the
    # collector would walk several times over (a fifth of `graph`, issue 27)
    with paused_gc():
        return _module_diagram(
            module, stage, both, timings, total_us, expand, max_nodes, around, depth, scope, after
        )


def after_half(
    module: ModuleReport,
    *,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    expand: Sequence[str] | Literal["all"] = (),
    max_nodes: int = DEFAULT_MAX_NODES,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    """The after side of `module_diagram(module, both=True)` with the same arguments
    (without `around`): what the worker process that analyses a big module's after side
    draws there (`hloscope.analysis.report.analyze_dump`'s `draw_after`), while this
    process draws the before side.

    Raises:
        UsageError: The after side is missing, or `expand` or `scope` names nothing.
    """
    if not _has(module, "after"):
        raise UsageError(_missing(module, "after", True))
    with paused_gc():
        return _after(module, timings, total_us, expand, _half(max_nodes), depth=depth, scope=scope)


def _half(max_nodes: int) -> int:
    """The node budget of each side of a side-by-side diagram."""
    return max(2, max_nodes // 2)


def _module_diagram(
    module: ModuleReport,
    stage: Literal["before", "after"],
    both: bool,
    timings: Mapping[str, float] | None,
    total_us: float | None,
    expand: Sequence[str] | Literal["all"],
    max_nodes: int,
    around: str | None,
    depth: int,
    scope: str | None,
    after: Callable[[], DiagramSpec | None] | None = None,
) -> DiagramSpec:
    if both:
        kernels_of = _kernels_of(module)
        half = _half(max_nodes)
        before_spec = _before(
            module, kernels_of, max_nodes=half, around=around, depth=depth, scope=scope
        )
        drawn = after() if after is not None and not around else None
        if drawn is not None:
            return side_by_side(before_spec, drawn)
        if not _has(module, "after"):
            raise UsageError(_missing(module, "after", both))
        # A name from either side centres both: an op centres the after side on its kernel.
        around_after = _FirstKernels(kernels_of).get(around, around) if around else None
        after_spec = _after(
            module, timings, total_us, expand, half, around=around_after, depth=depth, scope=scope
        )
        return side_by_side(before_spec, after_spec)
    if stage == "after":
        return _after(
            module, timings, total_us, expand, max_nodes, around=around, depth=depth, scope=scope
        )
    return _before(
        module, _kernels_of(module), max_nodes=max_nodes, around=around, depth=depth, scope=scope
    )


SIDES = ("after", "before")
"""The page's two diagrams, in the order `module_diagrams` draws them."""


def module_diagrams(
    module: ModuleReport,
    *,
    timings: Mapping[str, float] | None = None,
    total_us: float | None = None,
    max_nodes: int = PAGE_MAX_NODES,
    sides: Collection[str] = SIDES,
) -> dict[str, DiagramSpec]:
    """Both diagrams of a module, as the HTML page shows them, for the sides it has.

    Args:
        module: The module's report.
        timings: Kernel name -> microseconds per execution, shown on the after side.
        total_us: The module's time per execution (default: the sum of `timings`).
        max_nodes: Node budget of each diagram.
        sides: Only these of `SIDES`.

    Returns:
        `"after"` -> the kernel graph and `"before"` -> the op graph (coloured by
        kernel when the after side is there), each only where the module has that side.
    """
    out: dict[str, DiagramSpec] = {}
    with paused_gc():  # as in module_diagram
        if "after" in sides and _has(module, "after"):
            out["after"] = _after(module, timings, total_us, (), max_nodes)
        if "before" in sides and _has(module, "before"):
            out["before"] = _before(module, _kernels_of(module), max_nodes=max_nodes)
    return out


def _has(module: ModuleReport, side: str) -> bool:
    if side == "before":
        return module.before_module is not None
    return module.after_module is not None and module.after is not None


def _missing(module: ModuleReport, side: str, both: bool) -> str:
    other = "after" if side == "before" else "before"
    hint = "" if both else f"; draw the other side with --stage {other}"
    why = f" ({module.error})" if module.error else ""
    return f"no {side}-optimization module was dumped for {module.key}{why}{hint}"


def _kernels_of(module: ModuleReport) -> Mapping[str, tuple[str, ...]]:
    """Before-optimization op -> the kernels it went to, when both sides are there;
    found the first time it is read (the after side may still be analysed in a worker
    process while the before side is walked: `analysis.report.analyze_dump`)."""

    def found() -> dict[str, tuple[str, ...]]:
        before = module.before_module
        if before is None:
            return {}
        ops = ops_to_place(before)  # before the after side is read: it may be on its way
        after = module.after_module
        if after is None or module.after is None or module.provenance is None:
            return {}
        return placed_ops(ops, after, module.provenance, module.after)

    return Later(found)


class _FirstKernels(Mapping[str, str]):
    """Op -> the first of its kernels (the one it is coloured by), read from the op ->
    kernels mapping: not a second dict of a big module's 536k ops (issue 27)."""

    def __init__(self, kernels_of: Mapping[str, tuple[str, ...]]) -> None:
        self._of = kernels_of

    def __getitem__(self, op: str) -> str:
        return self._of[op][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._of)

    def __len__(self) -> int:
        return len(self._of)

    def __contains__(self, op: object) -> bool:
        return op in self._of

    def get(self, op: str, default: Any = None) -> Any:
        kernels = self._of.get(op)
        return default if kernels is None else kernels[0]


def _after(
    module: ModuleReport,
    timings: Mapping[str, float] | None,
    total_us: float | None,
    expand: Collection[str] | Literal["all"],
    max_nodes: int,
    *,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    assert module.after_module is not None and module.after is not None
    return kernel_graph(
        module.after_module,
        module.after,
        module.provenance,
        timings=timings,
        total_us=total_us,
        expand=expand,
        max_nodes=max_nodes,
        around=around,
        depth=depth,
        scope=scope,
    )


def _before(
    module: ModuleReport,
    kernels_of: Mapping[str, tuple[str, ...]],
    *,
    max_nodes: int,
    around: str | None = None,
    depth: int = 2,
    scope: str | None = None,
) -> DiagramSpec:
    assert module.before_module is not None
    return op_graph(
        module.before_module,
        _FirstKernels(kernels_of),
        kernels_of=kernels_of,
        max_nodes=max_nodes,
        around=around,
        depth=depth,
        scope=scope,
    )


def depth_note(graph: Mapping[str, Any]) -> list[str]:
    """A note when the walk (whose graph attributes are `graph`) left out calls nested
    too deep to draw."""
    if not graph.get(TRUNCATED):
        return []
    return [f"calls nested deeper than {MAX_CALL_DEPTH} levels are not drawn"]
