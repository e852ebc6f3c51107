"""Unit graphs as rows: the unit graph of a big module, cheaply.

`unit_rows` walks the module before optimization as
`hloscope.render.diagram.walk.unit_graph` does, but puts the units in
`hloscope.analysis.collapse.Rows` (lists, one entry per unit) instead of a networkx
graph: `collapse_rows` then folds them to the node budget, and only what is drawn on its
own gets an attribute dict (`RowInfo` is what a drawing reads of every row). A module of
500k ops drew in seconds less and a gigabyte less (issue 27). `described_rows` does the
same for any side, each unit with its attribute dict (a kernel graph's units are tens of
thousands, its edges hundreds of thousands). `rows_of` turns a (cut) networkx unit graph
into rows.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from hloscope.analysis import kernels as K
from hloscope.analysis.collapse import (
    OP_NAMES,
    ORDER,
    PINNED,
    SCOPE,
    Rows,
    signature_of,
    structure_of,
)
from hloscope.hlo.model import Computation, HloModule, Instruction, Shape
from hloscope.render.diagram.spec import CONTROL, OP
from hloscope.render.diagram.walk import (
    BACK,
    CLUSTER,
    ITEM,
    OPERANDS,
    ROLE,
    BeforeSide,
    Named,
    Side,
    Sink,
    add_described,
    walk,
)


def unit_rows(
    module: HloModule, side: BeforeSide, *, names: bool = True
) -> tuple[Rows, dict[str, list[str]]]:
    """`unit_graph` before optimization, as rows (`hloscope.analysis.collapse.Rows`).

    The same walk, nodes and edges, but no networkx node nor attribute dict per op: a
    row's attributes are made when it is drawn on its own (`Rows.attrs`), its edges'
    when they are drawn. `Rows.info` holds each row's `RowInfo`, what a group node
    shows of its members.
    """
    sink = _RowSink(module.name, side)
    index = walk(module, side, sink, names=names)
    return sink.rows(), index


def described_rows(module: HloModule, side: Side) -> Rows:
    """`unit_graph` of any side, as rows: each row's attributes are the node's (the dict
    `Side.describe` gives), its edges in columns (`_UnitRowSink`). No name index: for a
    drawing of the whole module."""
    sink = _UnitRowSink(module.name, side)
    walk(module, side, sink, names=False)
    return sink.rows()


def rows_of(g: nx.DiGraph) -> Rows:
    """The rows of a unit graph, with the `Rows.info` that `unit_rows` gives."""
    rows = Rows.from_graph(g)
    info = rows.info = RowInfo()
    for _, d in g.nodes(data=True):
        info.append(d.get(ITEM), d.get(ROLE), d.get(CLUSTER), d.get(OP_NAMES, ()))
    return rows


@dataclass
class RowInfo:
    """What a drawing reads of every row of a unit graph (`Rows.info`), as columns: a
    tuple per row cost 43 MB at 536k ops (issue 27).

    Attributes:
        items: Each row's `ITEM`, its instruction (None for a bare row).
        roles: Its `ROLE`.
        clusters: Its `CLUSTER`.
        names: Its `OP_NAMES`.
    """

    items: list[Any] = field(default_factory=list)
    roles: list[str | None] = field(default_factory=list)
    clusters: list[str | None] = field(default_factory=list)
    names: list[tuple[str, ...]] = field(default_factory=list)

    def append(
        self, item: Any, role: str | None, cluster: str | None, names: tuple[str, ...]
    ) -> None:
        """Add a row's."""
        self.items.append(item)
        self.roles.append(role)
        self.clusters.append(cluster)
        self.names.append(names)

    def keep(self, rows: Sequence[int]) -> RowInfo:
        """These rows' alone, in order (`Rows.keep`)."""
        return RowInfo(
            [self.items[r] for r in rows],
            [self.roles[r] for r in rows],
            [self.clusters[r] for r in rows],
            [self.names[r] for r in rows],
        )


class _Columns(Sink):
    """Rows (`Rows`) of a walk's units, and its edges: lists, one entry per unit and per
    edge. What a row holds of its unit is the subclass's."""

    def __init__(self, name: str) -> None:
        self.graph = {"name": name}
        self.row: dict[str, int] = {}
        self.ids: list[str] = []
        self.scopes: list[str] = []
        self.signatures: list[Hashable] = []
        self.pinned: list[bool] = []
        self.info = RowInfo()
        # the attributes of the rows that keep them as given: the op graph's parameters
        # and output, every row of `_UnitRowSink`
        self.fixed: dict[int, dict[str, Any]] = {}
        # Edges are added a destination at a time (a unit's operands, then the next
        # unit's): the edges into the destination now, by source row, find an edge
        # added again. No dict of every edge: its keys and numbers were 57 MB of int
        # objects at 893k edges, freed among objects kept (issue 27).
        self.dst_now = -1
        self.into_now: dict[int, int] = {}
        self.first = array("q")  # by row: its first edge in, -1 while it has none
        self.src: list[int] = []
        self.dst: list[int] = []
        # Each edge's first (operand index, shape), in two lists (no tuple per edge); the
        # rest, for the few edges that feed several operands, by edge.
        self.index: list[int] = []
        self.shape: list[Shape] = []
        self.more: dict[int, list[tuple[int, Shape]]] = {}
        self.backs: set[int] = set()

    def __contains__(self, node: str) -> bool:
        return node in self.row

    def _new(self, node: str, scope: str, signature: Hashable, pinned: bool) -> int:
        r = self.row[node] = len(self.ids)
        self.first.append(-1)
        self.ids.append(node)
        self.scopes.append(scope)
        self.signatures.append(signature)
        self.pinned.append(pinned)
        return r

    def add(self, node: str, attrs: Mapping[str, Any]) -> None:
        """A unit whose attributes the row keeps as given: the op graph's parameters and
        output, every unit of `_UnitRowSink`."""
        if node in self.row:
            return
        r = self._new(
            node, attrs.get(SCOPE) or "", signature_of(attrs, node), bool(attrs.get(PINNED))
        )
        self.info.append(
            attrs.get(ITEM), attrs.get(ROLE), attrs.get(CLUSTER), attrs.get(OP_NAMES, ())
        )
        self.fixed[r] = {ORDER: r, **attrs}

    def _row(self, node: str) -> int:
        """A bare row for a node an edge names before it is added (as networkx adds it)."""
        r = self._new(node, "", node, False)
        self.info.append(None, None, None, ())
        self.fixed[r] = {}
        return r

    def flow(self, src: str, dst: str, index: int, shape: Shape) -> None:
        if src == dst:
            return
        row = self.row
        u = row.get(src)
        if u is None:
            u = self._row(src)
        v = row.get(dst)
        if v is None:
            v = self._row(dst)
        if v != self.dst_now:
            self._into(v)
        e = self.into_now.get(u)
        if e is None:
            self.into_now[u] = e = len(self.src)
            if self.first[v] < 0:
                self.first[v] = e
            self.src.append(u)
            self.dst.append(v)
            self.index.append(index)
            self.shape.append(shape)
            return
        self.more.setdefault(e, []).append((index, shape))

    def _into(self, v: int) -> None:
        """Make `v` the destination now: its edges so far (a loop's, which its body's
        results flow back into, once the body is walked)."""
        self.dst_now, self.into_now = v, {}
        first, dst, src = self.first[v], self.dst, self.src
        if first >= 0:
            for e in range(first, len(dst)):
                if dst[e] == v:
                    self.into_now.setdefault(src[e], e)

    def back(self, src: str, dst: str) -> None:
        v = self.row[dst]
        if v != self.dst_now:
            self._into(v)
        self.backs.add(self.into_now[self.row[src]])

    def rows(self) -> Rows:
        """The rows, scopes inherited (`inherit_scopes`).

        What `attrs` and `edge_attrs` do not read is then the rows' alone, freed with
        them (a big module's are folded into new rows: `Rows.keep`).
        """
        # each row's order is its number: the number objects the edges hold already
        numbers = list(self.row.values())
        orders: list[int | None] = list(numbers)
        self.row, self.into_now, self.first = {}, {}, array("q")  # the walk is done
        _inherit_row_scopes(self.scopes, self.pinned, self.src, self.dst)
        self._walked()
        for r, attrs in self.fixed.items():
            if ORDER not in attrs:
                orders[r] = None
        rows = Rows(
            self.ids,
            orders,
            self.scopes,
            self.signatures,
            self._structures(),
            self.pinned,
            self.src,
            self.dst,
            self.attrs,
            self.edge_attrs,
            info=self.info,
            graph=self.graph,
            numbers=numbers,
        )
        self.ids, self.pinned, self.src, self.dst = [], [], [], []
        return rows

    def _walked(self) -> None:
        """The walk is done, and the scopes inherited."""

    def _structures(self) -> list[Hashable]:
        """Each row's `STRUCTURE` (`collapse.structure_of`), from its signature."""
        return [sig[0] if isinstance(sig, tuple) and sig else sig for sig in self.signatures]

    def attrs(self, r: int) -> dict[str, Any]:
        """Row `r`'s attributes, as `unit_graph` gives them."""
        raise NotImplementedError

    def edge_attrs(self, e: int) -> dict[str, Any]:
        """Edge `e`'s attributes, as `unit_graph` gives them."""
        out: dict[str, Any] = {OPERANDS: [(self.index[e], self.shape[e]), *self.more.get(e, ())]}
        if e in self.backs:
            out[BACK] = True
        return out


class _RowSink(_Columns):
    """Rows of the ops before optimization: what a drawing reads of each op kept in
    columns, its attributes made when it is drawn on its own (`attrs`)."""

    def __init__(self, name: str, side: BeforeSide) -> None:
        super().__init__(name)
        self.side = side

    def unit(
        self, node: str, comp: Computation, inst: Instruction, scope: str, cluster: str | None
    ) -> str:
        role = CONTROL if K.classify(inst) == K.CONTROL else OP
        row = self.row
        if node in row:
            return role
        named = self.side.name_of(inst, scope)
        self._new(node, named[0], self.side.signature(inst), False)
        info = self.info  # `RowInfo.append`, without a call per op
        info.items.append(inst)
        info.roles.append(role)
        info.clusters.append(cluster)
        info.names.append(named[1])
        return role

    def _walked(self) -> None:
        self.side.walked()

    def attrs(self, r: int) -> dict[str, Any]:
        fixed = self.fixed.get(r)
        if fixed is not None:
            return dict(fixed)
        inst, cluster = self.info.items[r], self.info.clusters[r]
        # `BeforeSide.name_of`'s, made again for the few rows drawn alone: a tuple kept
        # per row cost 20 MB at 536k ops (issue 27)
        names = self.info.names[r]
        named: Named = (self.scopes[r], names, inst.metadata.op_type if names else None)
        attrs = self.side.attrs(inst, named, self.scopes[r], self.signatures[r])  # type: ignore[arg-type]
        return {ORDER: r, **attrs, CLUSTER: cluster}


class _UnitRowSink(_Columns):
    """Rows of any side's units, each with the attributes `Side.describe` gives it, as
    `unit_graph`'s nodes have them, and its edges in columns: no networkx adjacency
    dicts and no dict per edge. The 215k edges between the 44,640 kernels of a 153 MB
    module held 90 MB that way (issue 27)."""

    def __init__(self, name: str, side: Side) -> None:
        super().__init__(name)
        self.side = side

    def unit(
        self, node: str, comp: Computation, inst: Instruction, scope: str, cluster: str | None
    ) -> str:
        return add_described(self, self.side, node, comp, inst, scope, cluster)

    def _walked(self) -> None:
        # an inherited scope is the node's, as `inherit_scopes` sets it (a bare row,
        # with no attributes, has none to set)
        for r, d in self.fixed.items():
            if self.scopes[r] and not d.get(SCOPE) and ORDER in d:
                d[SCOPE] = self.scopes[r]

    def _structures(self) -> list[Hashable]:
        fixed = self.fixed
        return [structure_of(fixed[r], u) for r, u in enumerate(self.ids)]

    def attrs(self, r: int) -> dict[str, Any]:
        return dict(self.fixed[r])


def _inherit_row_scopes(
    scopes: list[str], pinned: list[bool], src: Sequence[int], dst: Sequence[int]
) -> None:
    """`inherit_scopes` over rows (in node order, as the rows are)."""
    todo = [
        r for r, (scope, pin) in enumerate(zip(scopes, pinned, strict=True)) if not (scope or pin)
    ]
    if not todo:
        return
    near: dict[int, tuple[list[int], list[int]]] = {r: ([], []) for r in todo}
    for u, v in zip(src, dst, strict=True):  # as added: networkx's order of neighbours
        if v in near:
            near[v][0].append(u)
        if u in near:
            near[u][1].append(v)
    for _ in range(2):
        for r in todo:
            if scopes[r]:
                continue
            preds, succs = near[r]
            for other in (*preds, *succs):
                if scopes[other] and not pinned[other]:
                    scopes[r] = scopes[other]
                    break
