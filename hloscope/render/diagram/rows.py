"""The op graph before optimization as rows: the unit graph of a big module, cheaply.

`unit_rows` walks the module as `hloscope.render.diagram.walk.unit_graph` does, but
puts the units in `hloscope.analysis.collapse.Rows` (lists, one entry per unit) instead
of a networkx graph: `collapse_rows` then folds them to the node budget, and only what
is drawn on its own gets an attribute dict (`RowInfo` is what a drawing reads of every
row). A module of 500k ops drew in seconds less and a gigabyte less (issue 27).
`rows_of` turns a (cut) networkx unit graph into rows.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from hloscope.analysis import kernels as K
from hloscope.analysis.collapse import OP_NAMES, ORDER, PINNED, SCOPE, Rows
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
    Sink,
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


class _RowSink(Sink):
    """Rows (`Rows`) of the ops before optimization: lists, one entry per unit."""

    def __init__(self, name: str, side: BeforeSide) -> None:
        self.side = side
        self.graph = {"name": name}
        self.row: dict[str, int] = {}
        self.ids: list[str] = []
        self.scopes: list[str] = []
        self.signatures: list[Hashable] = []
        self.pinned: list[bool] = []
        self.info = RowInfo()
        self.fixed: dict[int, dict[str, Any]] = {}  # parameters, the output: as given
        self.edge: dict[int, int] = {}  # (src row << 32 | dst row) -> edge number
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
        self.ids.append(node)
        self.scopes.append(scope)
        self.signatures.append(signature)
        self.pinned.append(pinned)
        return r

    def add(self, node: str, attrs: Mapping[str, Any]) -> None:
        if node in self.row:
            return
        r = self._new(node, attrs.get(SCOPE) or "", node, bool(attrs.get(PINNED)))
        self.info.append(attrs.get(ITEM), attrs.get(ROLE), attrs.get(CLUSTER), ())
        self.fixed[r] = {ORDER: r, **attrs}

    def unit(
        self, node: str, comp: Computation, inst: Instruction, scope: str, cluster: str | None
    ) -> str:
        role = CONTROL if K.classify(inst) == K.CONTROL else OP
        row = self.row
        if node in row:
            return role
        named = self.side.name_of(inst, scope)
        row[node] = len(self.ids)
        self.ids.append(node)
        self.scopes.append(named[0])
        self.signatures.append(self.side.signature(inst))
        self.pinned.append(False)
        info = self.info  # `RowInfo.append`, without a call per op
        info.items.append(inst)
        info.roles.append(role)
        info.clusters.append(cluster)
        info.names.append(named[1])
        return role

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
        key = u << 32 | v
        e = self.edge.get(key)
        if e is None:
            self.edge[key] = len(self.src)
            self.src.append(u)
            self.dst.append(v)
            self.index.append(index)
            self.shape.append(shape)
            return
        self.more.setdefault(e, []).append((index, shape))

    def back(self, src: str, dst: str) -> None:
        self.backs.add(self.edge[self.row[src] << 32 | self.row[dst]])

    def rows(self) -> Rows:
        """The rows, scopes inherited (`inherit_scopes`).

        What `attrs` and `edge_attrs` do not read is then the rows' alone, freed with
        them (a big module's are folded into new rows: `Rows.keep`).
        """
        # each row's order is its number: the number objects the edges hold already
        orders: list[int | None] = list(self.row.values())
        self.edge, self.row = {}, {}  # the walk is done
        self.side.walked()
        _inherit_row_scopes(self.scopes, self.pinned, self.src, self.dst)
        for r, attrs in self.fixed.items():
            if ORDER not in attrs:
                orders[r] = None
        rows = Rows(
            self.ids,
            orders,
            self.scopes,
            self.signatures,
            [sig[0] if isinstance(sig, tuple) and sig else sig for sig in self.signatures],
            self.pinned,
            self.src,
            self.dst,
            self.attrs,
            self.edge_attrs,
            info=self.info,
            graph=self.graph,
        )
        self.ids, self.pinned, self.src, self.dst = [], [], [], []
        return rows

    def attrs(self, r: int) -> dict[str, Any]:
        """Row `r`'s attributes, as `unit_graph` gives them."""
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

    def edge_attrs(self, e: int) -> dict[str, Any]:
        """Edge `e`'s attributes, as `unit_graph` gives them."""
        out: dict[str, Any] = {OPERANDS: [(self.index[e], self.shape[e]), *self.more.get(e, ())]}
        if e in self.backs:
            out[BACK] = True
        return out


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
