"""From a unit graph to spec nodes and edges, within a node budget.

`cut` applies --scope and --around, `fold_parameters` and `expanded` spend the node
budget (`hloscope.analysis.collapse` does the rest), and `Builder` turns the collapsed
graph into `Node`s and `Edge`s: one node per unit or per group of units, one edge per
pair of drawn nodes that talk, labelled with the shapes and bytes it carries.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal

import networkx as nx

from hloscope.analysis.collapse import (
    GROUP,
    MERGED,
    OP_NAMES,
    ORDER,
    Collapsed,
    Group,
    Rows,
    filter_scope,
    layout_size,
    neighbourhood,
)
from hloscope.analysis.fusion import Kernel
from hloscope.errors import UsageError
from hloscope.hlo.model import HloModule, Instruction, Shape
from hloscope.render.diagram.labels import (
    LINE,
    common_root,
    kind_short,
    kinds_line,
    strip_root,
    time_line,
)
from hloscope.render.diagram.spec import GROUP_NODE, KERNEL, OP, PARAMETER, REPEAT, Edge, Node
from hloscope.render.diagram.style import GROUP_COLOR, emphasise
from hloscope.render.diagram.walk import BACK, CLUSTER, INPUTS, ITEM, OPERANDS, ROLE
from hloscope.render.format import counted, fmt_bytes, fmt_shape, left_ellipsis

_EDGE_LABELS_UP_TO = 80  # nodes; bigger graphs carry shapes in edge tooltips only
_LABELLED_SIZE = 1_000  # `layout_size`; past it, edge labels cost dot seconds (issue 14)


def count_role(g: nx.DiGraph | Rows, role: str) -> int:
    """Units of one role in a unit graph."""
    if isinstance(g, Rows):
        return g.info.roles.count(role)  # type: ignore[no-any-return]
    return sum(1 for _, d in g.nodes(data=True) if d.get(ROLE) == role)


def count_units(g: nx.DiGraph) -> int:
    """Kernels and ops in a unit graph: not parameters, the output or control instructions."""
    return sum(1 for _, d in g.nodes(data=True) if d.get(ROLE) in (KERNEL, OP))


def unit_name(d: Mapping[str, object]) -> str | None:
    """The name of the kernel or instruction a unit is."""
    return item_name(d.get(ITEM))


def item_name(item: object) -> str | None:
    """The name of a unit's `ITEM` (a kernel or an instruction)."""
    if isinstance(item, (Kernel, Instruction)):
        return item.name
    return None


def unit_kind(d: Mapping[str, object]) -> str:
    """A kernel's kind, an instruction's opcode."""
    return item_kind(d.get(ITEM))


def item_kind(item: object) -> str:
    """The kind of a unit's `ITEM`: a kernel's kind, an instruction's opcode."""
    if isinstance(item, Kernel):
        return item.kind
    if isinstance(item, Instruction):
        return item.opcode
    return ""


# --- the budget -------------------------------------------------------------------------


def cut(
    g: nx.DiGraph,
    index: Mapping[str, list[str]],
    around: str | None,
    depth: int,
    scope: str | None,
    what: str,
    notes: list[str],
) -> nx.DiGraph:
    """Apply --scope, then --around, saying in `notes` how many `what`s are left.

    Only kernels (or ops) are counted: parameters, the output and control instructions
    such as loops are drawn, but are not kernels.

    Raises:
        UsageError: `scope` or `around` names nothing in the graph.
    """
    total = count_units(g)
    if scope:
        g = filter_scope(g, scope)
        notes.append(f"--scope {scope}: {count_units(g)} of {total} {what}s")
    if around:
        centers = [c for c in index.get(around, []) if c in g]
        if not centers:
            centers = [n for n in (f"k/{around}", f"p/{around}", f"b/{around}") if n in g]
        if not centers:
            raise UsageError(_unknown_name(around, index, what))
        g = neighbourhood(g, centers, max(0, depth))
        notes.append(f"--around {around} --depth {depth}: {count_units(g)} of {total} {what}s")
    return g


def _unknown_name(name: str, index: Mapping[str, list[str]], what: str) -> str:
    close = difflib.get_close_matches(name, list(index), n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"--around {name!r}: no {what} or instruction of that name in this picture{hint}"


def expanded(
    after: HloModule,
    g: nx.DiGraph,
    expand: Collection[str] | Literal["all"],
    max_nodes: int,
) -> list[str]:
    """Unit ids of the fusions to draw as boxes of their ops.

    Raises:
        UsageError: A name is not a fusion in the picture, or "all" would go over budget.
    """
    fusions = {
        d[ITEM].name: n
        for n, d in g.nodes(data=True)
        if d.get(ROLE) == KERNEL and d[ITEM].fused_computation
    }
    if expand == "all":
        chosen = list(fusions.values())
        size = g.number_of_nodes() + sum(
            len(fused_body(after, g.nodes[n][ITEM])) - 1 for n in chosen
        )
        if size > max_nodes:
            raise UsageError(
                f"--expand all would draw {size} nodes, over --max-nodes {max_nodes}; name "
                "the fusions to expand, narrow with --around/--scope, or raise --max-nodes"
            )
        return chosen
    out = []
    by_computation = {
        d[ITEM].fused_computation: n for n, d in g.nodes(data=True) if d.get(ROLE) == KERNEL
    }
    for name in expand:
        node = fusions.get(name) or by_computation.get(name)
        if node is None:
            shown = ", ".join(sorted(fusions)[:6]) or "none in this picture"
            raise UsageError(f"--expand {name!r}: not a fusion in this picture; fusions: {shown}")
        out.append(node)
    return list(dict.fromkeys(out))


def fused_body(after: HloModule, kernel: Kernel) -> list[Instruction]:
    """The instructions of a fusion's computation, parameters left out."""
    comp = after.computation_map.get(kernel.fused_computation or "")
    if comp is None:
        return []
    return [i for i in comp.instructions if i.opcode != "parameter"]


def fold_parameters(g: nx.DiGraph, max_nodes: int, notes: list[str], what: str) -> None:
    """Over budget, parameters become a line in the tooltip of what they feed."""
    params = [n for n, d in g.nodes(data=True) if d.get(ROLE) == PARAMETER]
    if not params or g.number_of_nodes() <= max_nodes:
        return
    for p in params:
        inst: Instruction = g.nodes[p][ITEM]
        for user in g.successors(p):
            g.nodes[user].setdefault(INPUTS, []).append((inst.name, inst.shape))
    g.remove_nodes_from(params)
    notes.append(
        f"{counted(len(params), 'parameter')} not drawn (listed in the tooltips of the {what} "
        "they feed)"
    )


def fold_parameter_rows(rows: Rows, max_nodes: int, notes: list[str], what: str) -> Rows:
    """`fold_parameters` over rows: the rows left, the folded parameters' (name, shape)
    in the `INPUTS` of the units they feed."""
    params = [r for r, role in enumerate(rows.info.roles) if role == PARAMETER]
    if not params or len(rows) <= max_nodes:
        return rows
    users: dict[int, list[int]] = {p: [] for p in params}
    for u, v in zip(rows.src, rows.dst, strict=True):  # as added: networkx's order
        if u in users:
            users[u].append(v)
    inputs: dict[int, list[tuple[str, Shape]]] = {}
    for p in params:
        inst: Instruction = rows.info.items[p]
        for user in users[p]:
            inputs.setdefault(user, []).append((inst.name, inst.shape))
    folded = set(params)
    attrs = rows.attrs

    def with_inputs(r: int) -> dict[str, Any]:
        d = attrs(r)
        if r in inputs:
            d.setdefault(INPUTS, []).extend(inputs[r])
        return d

    rows.attrs = with_inputs
    notes.append(
        f"{counted(len(params), 'parameter')} not drawn (listed in the tooltips of the {what} "
        "they feed)"
    )
    return rows.keep(r for r in range(len(rows)) if r not in folded)


# --- spec nodes and edges ---------------------------------------------------------------


class Builder:
    """Turns a (collapsed) unit graph into spec nodes and edges.

    Attributes:
        col: The collapsed graph.
        units: The unit graph it was collapsed from.
        unit: "kernel" or "op".
        prefix: Prefix of group node ids (`b/` before optimization).
        root: The name scope every unit shares, left off labels.
    """

    def __init__(self, col: Collapsed, units: nx.DiGraph | Rows, unit: str, prefix: str) -> None:
        self.col = col
        self.units = units
        self.unit = unit
        self.prefix = prefix
        if isinstance(units, Rows):
            # a set: a big module's ops share a few thousand names
            names: Iterable[str] = {name for names in units.info.names for name in names}
        else:
            names = (name for _, d in units.nodes(data=True) for name in d.get(OP_NAMES, ()))
        self.root = common_root(names)
        self.times: dict[str, float] = {}
        self.total = 0.0

    def timings(self, timings: Mapping[str, float] | None, total_us: float | None) -> None:
        """Show these kernel times (share of `total_us`, else of their sum)."""
        if not timings:
            return
        self.times = dict(timings)
        self.total = total_us or sum(timings.values())

    def time_of(self, kernels: Iterable[str]) -> tuple[float | None, float | None]:
        """The summed time of some kernels and its share, or (None, None) untimed."""
        if not self.times:
            return None, None
        found = [self.times[k] for k in kernels if k in self.times]
        if not found:
            return None, None
        t = sum(found)
        return t, (t / self.total if self.total else None)

    def nodes(
        self, make: Callable[[str, dict[str, Any]], Node]
    ) -> tuple[list[Node], dict[str, str]]:
        """Spec nodes in program order (`make` draws a single unit) and the `where` map."""
        out: list[Node] = []
        where: dict[str, str] = {}
        h = self.col.graph
        for n in sorted(h.nodes, key=lambda x: h.nodes[x].get(ORDER, 0)):
            d = h.nodes[n]
            group: Group | None = d.get(GROUP)
            if group is None:
                node = make(n, d)
                name = unit_name(d)
                if name:
                    where.setdefault(name, n)
            else:
                node = self.group_node(group)
                for name in node.members:  # every member's name, in order
                    where.setdefault(name, node.id)
            out.append(node)
        return emphasise(out), where

    def group_node(self, group: Group) -> Node:
        """One node standing for a group of units (a scope, or a repeated block ×N)."""
        members = self._members(group)
        names = [item_name(item) or "" for item, _, _ in members]
        kinds: Counter[str] = Counter()
        # by kind first: a group of a big module holds thousands of units of a few kinds
        for kind, n in Counter(item_kind(item) for item, _, _ in members).items():
            kinds[kind_short(kind)] += n
        kernels = [n for n in names if n] if self.unit == "kernel" else []
        t, share = self.time_of(kernels)
        scope = strip_root(group.scope, self.root) or group.scope or "(top level)"
        # Control instructions (loops) are units too, but not kernels or ops.
        count = sum(1 for _, role, _ in members if role in (KERNEL, OP))
        what = f"{count} {self.unit}s"
        if group.repeat > 1:
            title = f"{left_ellipsis(scope, LINE - 6)} ×{group.repeat}"
            second = (f"#={group.numbers} · " if group.numbers else "") + _per_instance(
                group, count, self.unit
            )
            lines = [title, second, kinds_line(kinds)]
            role = REPEAT
        else:
            title = left_ellipsis(scope, LINE - (8 if group.part else 0))
            if group.part:
                title += f" (part {group.part})"
            lines = [title, f"{what}: {kinds_line(kinds)}"]
            role = GROUP_NODE
        if t is not None:
            lines.append(time_line(t, share))
        clusters = {cluster for _, _, cluster in members}
        return Node(
            id=self.prefix + group.id,
            role=role,
            lines=tuple(lines),
            tooltip=self._group_tooltip(group, what, kinds, names, t, share),
            fill=GROUP_COLOR,
            kind=kinds.most_common(1)[0][0] if kinds else "",
            count=count,
            repeat=group.repeat,
            cluster=clusters.pop() if len(clusters) == 1 else None,
            time_us=t,
            share=share,
            members=tuple(n for n in names if n),
        )

    def _members(self, group: Group) -> list[tuple[Any, str | None, str | None]]:
        """(item, role, cluster) of each unit of a group."""
        if isinstance(self.units, Rows):
            info = self.units.info
            return [(info.items[m], info.roles[m], info.clusters[m]) for m in group.members]
        nodes = self.units.nodes
        return [
            (d.get(ITEM), d.get(ROLE), d.get(CLUSTER))
            for d in map(nodes.__getitem__, group.members)
        ]

    def _group_tooltip(
        self,
        group: Group,
        what: str,
        kinds: Counter[str],
        names: list[str],
        t: float | None,
        share: float | None,
    ) -> str:
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
            tip.append(time_line(t, share))
        return "\n".join(tip)

    def edges(
        self, anchor: Callable[[Edge, list[tuple[str, str]]], list[Edge]] | None = None
    ) -> list[Edge]:
        """One edge per pair of drawn nodes that talk (`anchor` may re-aim it)."""
        h = self.col.graph
        # Labels double dot's ranks and route a box per edge: on a graph with long
        # edges (a collapsed training step, 75 nodes) they took dot from 0.4 s to 7.6 s.
        small = h.number_of_nodes() <= _EDGE_LABELS_UP_TO and layout_size(h) <= _LABELLED_SIZE
        out: list[Edge] = []
        rows, graph = (self.units, None) if isinstance(self.units, Rows) else (None, self.units)
        for a, b, d in h.edges(data=True):
            merged = d.get(MERGED)
            pairs = merged or [(a, b)]
            shapes: list[Shape] = []
            back = False
            for pair in pairs:
                if not merged:  # h is the unit graph itself
                    data = d
                elif rows is not None:  # merged rows' edges are edge numbers
                    data = rows.edge_attrs(pair)
                else:
                    assert graph is not None
                    data = graph.edges[pair]
                shapes.extend(s for _, s in data.get(OPERANDS, ()))
                back = back or bool(data.get(BACK))
            nbytes = sum(s.byte_size for s in shapes)
            distinct = list(dict.fromkeys(fmt_shape(s) for s in shapes))
            if len(pairs) == 1 and len(distinct) == 1:
                label = f"{distinct[0]} · {fmt_bytes(nbytes)}"
            else:
                label = f"{counted(len(pairs), 'tensor')} · {fmt_bytes(nbytes)}"
            tip = f"{self._name(a)} → {self._name(b)}\n" + "\n".join(
                f"{fmt_shape(s)} ({fmt_bytes(s.byte_size)})" for s in shapes[:20]
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
        return self.prefix + n if GROUP in self.col.graph.nodes[n] else n

    def _name(self, n: str) -> str:
        d = self.col.graph.nodes[n]
        group = d.get(GROUP)
        if group is not None:
            return group.scope or "(top level)"
        return unit_name(d) or n


def _per_instance(group: Group, count: int, unit: str) -> str:
    """`12 kernels each`, or `9–31 kernels each` when the instances differ in size (alike
    in structure, not in shapes)."""
    sizes = group.sizes or (count // group.repeat,)
    low, high = min(sizes), max(sizes)
    return f"{low} {unit}s each" if low == high else f"{low}–{high} {unit}s each"
