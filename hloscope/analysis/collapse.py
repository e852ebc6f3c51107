"""Size budget for diagrams: choose what to draw when a graph is too big to read.

The input is a *unit graph*: a networkx DiGraph whose nodes are what a diagram would draw
one by one (kernels after optimization, ops before), carrying the node attributes named
below. `neighbourhood` and `filter_scope` cut it down; `collapse` folds it into at most
`max_nodes` nodes by source-op name scope, with repeated identical blocks folded into
one node marked ×N, and says which units every drawn node stands for. Everything here
is a pure function over graphs and small dataclasses; `hloscope.render.dot` draws it.

Scopes are the source-op names of the metadata without their last part: TensorFlow name
scopes (`resnet50_1/conv2_block1_1_bn_1/batchnorm`), Keras layer names, JAX paths
(`jit(f)/jvp(layer_3)`). The scope tree splits them at `/` and, outside parentheses and
brackets, at `_`, so Keras' flat names (`conv2_block1_1_conv`) nest by stage and block.
"""

from __future__ import annotations

import heapq
import itertools
import re
from array import array
from collections import Counter, deque
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import networkx as nx

from hloscope.errors import UsageError

# Node attributes of a unit graph.
SCOPE = "scope"  # str: the name scope the unit comes from ("" when unknown)
OP_NAMES = "op_names"  # tuple[str, ...]: the unit's source op names, its own first
SIGNATURE = "signature"  # hashable: what makes two units alike (kind and shape)
# hashable: what makes two units alike whatever their shapes (the kind); default: the
# first element of a tuple SIGNATURE, else SIGNATURE itself
STRUCTURE = "structure"
PINNED = "pinned"  # bool: never collapsed (parameters, outputs, expanded fusions)
ORDER = "order"  # int: position in program order
# Node attribute of a collapsed graph: the `Group` a node stands for.
GROUP = "group"
# Edge attribute of a collapsed graph: the (src unit, dst unit) pairs an edge stands for.
MERGED = "merged"

# What Graphviz `dot` lays out in a few seconds at most (measured with
# benchmarks/dot_budget.py; figures in its docstring). A few hundred nodes are cheap;
# what costs is edges, and long edges above all: a chain with edges across it (a
# training step's backward pass reading the forward activations) puts a virtual node on
# every rank each edge crosses (`layout_cost`). `hloscope.render.dot` caps dot's
# iterations (nslimit, mclimit) for graphs of more than `DOT_LIMITS_ABOVE` nodes and for
# collapsed ones; a small graph drawn as it is, uncapped, affords far less.
MAX_EDGES = 800
MAX_LAYOUT_COST = 400_000
MAX_PLAIN_LAYOUT_COST = 50_000
MAX_LAYOUT_SIZE = 8_000
DOT_LIMITS_ABOVE = 150

_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII, and short enough for int()
_OPEN = "([{"
_CLOSE = ")]}"
_SCOPE_MARKS = re.compile(r"[()\[\]{}/]")


@dataclass(frozen=True)
class Group:
    """Units drawn as one node.

    Attributes:
        id: The node id in the collapsed graph (`g/<scope>`, `r/<pattern>`).
        scope: The common scope; for a repeat, the pattern with `#` for the number.
        members: Unit ids it stands for, in program order.
        instances: For a repeat: the scope of each instance, in order; else empty.
        numbers: For a repeat: the numbers that vary (`2–84`); else "".
        part: For a slice of a flat scope too wide to draw: `i/n`; else "".
        sizes: For a repeat: the units of each instance, in order (they differ when
            instances are alike in structure but not in shapes, as DenseNet's blocks,
            each reading one more concatenated input); else empty.
    """

    id: str
    scope: str
    members: tuple[Any, ...]
    instances: tuple[str, ...] = ()
    numbers: str = ""
    part: str = ""
    sizes: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        """How many units it stands for."""
        return len(self.members)

    @property
    def repeat(self) -> int:
        """N of ×N: instances of a repeated block (1 for a plain group)."""
        return len(self.instances) or 1


@dataclass(frozen=True)
class Collapsed:
    """A unit graph folded to fit a node budget.

    Attributes:
        graph: Nodes are the units left alone (with their attributes) and one node per
            group (attribute `GROUP`); edges are merged (attribute `MERGED`).
        groups: The groups by node id.
        group_of: Unit id -> group id, for every collapsed unit.
        units: Units in the input graph (pinned nodes not counted).
    """

    graph: nx.DiGraph
    groups: Mapping[str, Group] = field(default_factory=dict)
    group_of: Mapping[Any, str] = field(default_factory=dict)
    units: int = 0

    @property
    def collapsed(self) -> bool:
        """Whether any unit was folded into a group."""
        return bool(self.groups)


@dataclass(eq=False)
class Rows:
    """A unit graph as columns, one row per node in node order: what `collapse` reads.

    A big module's op graph is walked straight into rows (`hloscope.render.diagram.walk`):
    a networkx node with an attribute dict per op cost seconds and a gigabyte at 500k
    ops (issue 27), and all but the few dozen nodes drawn end up in groups. Only a node
    drawn on its own gets its attributes, from `attrs`.

    Attributes:
        ids: Node ids.
        orders: The nodes' `ORDER`, None where a node has none.
        scopes: Their `SCOPE` ("" when unknown).
        signatures: Their `SIGNATURE`, the id where a node has none.
        structures: Their `STRUCTURE` (see `STRUCTURE` for the default).
        pinned: Whether each is `PINNED`.
        src: Source row of each edge, edges in the order they were added.
        dst: Destination row of each edge.
        attrs: Row -> the node's attribute dict.
        edge_attrs: Edge -> the edge's attribute dict.
        info: What the renderer keeps per row (not read here), or None: its
            `keep(rows)` gives these rows' (`Rows.keep`).
        graph: The graph's attributes (`name`, ...).
        numbers: 0, 1, ..., one per row, as the number objects the other columns hold
            (`number_objects`), where whoever made the rows gave them.
    """

    ids: list[str]
    orders: list[int | None]
    scopes: list[str]
    signatures: list[Hashable]
    structures: list[Hashable]
    pinned: list[bool]
    src: list[int]
    dst: list[int]
    attrs: Callable[[int], dict[str, Any]]
    edge_attrs: Callable[[int], dict[str, Any]]
    info: Any = None
    graph: dict[str, Any] = field(default_factory=dict)
    numbers: list[int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def number_objects(self) -> list[int]:
        """Each row's number, as one int object per number that every list of row
        numbers made from the rows shares (`keep`, `collapse_rows`): a list of a big
        module's 536k row numbers made its own ints, 15 MB a list (issue 27)."""
        if self.numbers is None:
            self.numbers = list(range(len(self.ids)))
        return self.numbers

    @classmethod
    def from_graph(cls, g: nx.DiGraph) -> Rows:
        """The rows of a networkx unit graph (attributes read from its dicts)."""
        ids = list(g.nodes)
        datas = [g.nodes[n] for n in ids]
        sigs = [signature_of(d, u) for u, d in zip(ids, datas, strict=True)]
        row = {n: i for i, n in enumerate(ids)}
        edges = list(g.edges(data=True))
        return cls(
            ids,
            [d.get(ORDER) for d in datas],
            [d.get(SCOPE) or "" for d in datas],
            sigs,
            [structure_of(d, u) for u, d in zip(ids, datas, strict=True)],
            [bool(d.get(PINNED)) for d in datas],
            [row[u] for u, _, _ in edges],
            [row[v] for _, v, _ in edges],
            datas.__getitem__,
            lambda e: edges[e][2],
            graph=dict(g.graph),
        )

    def to_graph(self) -> nx.DiGraph:
        """The networkx unit graph these rows stand for."""
        g = nx.DiGraph()
        g.graph.update(self.graph)
        g.add_nodes_from((n, self.attrs(i)) for i, n in enumerate(self.ids))
        ids = self.ids
        g.add_edges_from(
            (ids[u], ids[v], self.edge_attrs(e))
            for e, (u, v) in enumerate(zip(self.src, self.dst, strict=True))
        )
        return g

    def keep(self, rows: Iterable[int]) -> Rows:
        """These rows alone (in order), with the edges between them.

        The new rows hold these rows' columns, and only two maps back to them (row and
        edge numbers, as arrays: no number object per row), for `attrs` and `edge_attrs`:
        folding the one parameter of a 500k-op graph held its rows twice (issue 27).
        """
        kept = array("q", rows)
        numbers = self.number_objects()[: len(kept)]
        new = [-1] * len(self.ids)
        for i, r in zip(numbers, kept, strict=True):
            new[r] = i
        edges = array(
            "q",
            [
                e
                for e, (u, v) in enumerate(zip(self.src, self.dst, strict=True))
                if new[u] >= 0 and new[v] >= 0
            ],
        )
        old_attrs, old_edge_attrs = self.attrs, self.edge_attrs
        return Rows(
            [self.ids[r] for r in kept],
            [self.orders[r] for r in kept],
            [self.scopes[r] for r in kept],
            [self.signatures[r] for r in kept],
            [self.structures[r] for r in kept],
            [self.pinned[r] for r in kept],
            [new[self.src[e]] for e in edges],
            [new[self.dst[e]] for e in edges],
            lambda i: old_attrs(kept[i]),
            lambda e: old_edge_attrs(edges[e]),
            self.info.keep(kept) if self.info is not None else None,
            dict(self.graph),
            numbers,
        )

    def edge_order(self) -> list[int]:
        """The edges in the order networkx iterates them: by source node, then as added."""
        return sorted(range(len(self.src)), key=self.src.__getitem__)

    def order_of(self) -> list[int]:
        """Each row's `ORDER`, or its position where it has none (as `collapse` reads it)."""
        return [i if o is None else o for i, o in enumerate(self.orders)]


def name_scope(op_name: str | None) -> str:
    """The name scope of a source op name: everything before its last `/` part.

    JAX sometimes joins two names with `;`; the first one is used. `scope_of` is the
    same, remembered: a caller that remembers it itself (`walk.BeforeSide.name_of`)
    calls this, as a cache of a big module's 318k distinct names would only turn over.
    """
    if not op_name:
        return ""
    name = op_name.split(";", 1)[0]
    cut = name.rfind("/")
    if cut <= 0:
        return ""
    if "(" not in name and "[" not in name and "{" not in name:
        return name[:cut]  # no brackets: the last `/` at depth 0 is the last `/`
    tail = name[cut + 1 :]
    if "(" not in tail and "[" not in tail and "{" not in tail and _ends_at_depth_0(name[:cut]):
        # the last `/` is at depth 0: a big module's names share a few thousand scopes,
        # each name its own last part (`jit(f)/layer_3/add`)
        return name[:cut]
    cut = -1
    depth = 0
    for m in _SCOPE_MARKS.finditer(name):  # only the brackets and slashes
        i, ch = m.start(), m.group()
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            cut = i
    return name[:cut] if cut > 0 else ""


scope_of = lru_cache(maxsize=1 << 16)(name_scope)  # a module's ops share their names' scopes


@lru_cache(maxsize=1 << 14)
def _ends_at_depth_0(text: str) -> bool:
    """Whether every bracket `text` opens is closed (as `scope_of` counts)."""
    depth = 0
    for m in _SCOPE_MARKS.finditer(text):
        ch = m.group()
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
    return depth == 0


def scope_prefixes(scope: str) -> list[str]:
    """Every prefix of `scope` that ends at a scope boundary, shortest first, `scope` last.

    Boundaries are `/` and, outside parentheses and brackets, `_` between two name parts:
    `resnet50_1/conv2_block1` -> `resnet50`, `resnet50_1`, `resnet50_1/conv2`,
    `resnet50_1/conv2_block1`.
    """
    out: list[str] = []
    depth = 0
    for i, ch in enumerate(scope):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and ch in "/_" and 0 < i < len(scope) - 1:
            if ch == "_" and (scope[i - 1] in "/_" or scope[i + 1] in "/_"):
                continue
            if not out or out[-1] != scope[:i]:
                out.append(scope[:i])
    if scope:
        out.append(scope)
    return out


def matches_scope(op_name: str, path: str) -> bool:
    """Whether `op_name` comes from the scope `path`.

    `path` may start at any `/` part of the name, or inside parentheses, and end at any
    boundary (`/`, `_`, `)`): `conv2_block1` matches
    `resnet50_1/conv2_block1_1_conv_1/Conv2D`, `layer_3` matches
    `jit(f)/jvp(layer_3)/dot_general`, but not `jit(f)/layer_30/dot_general`.
    """
    path = path.strip("/")
    if not path:
        return True
    starts = [0] + [i + 1 for i, ch in enumerate(op_name) if ch in "/("]
    for start in starts:
        if op_name.startswith(path, start):
            end = start + len(path)
            if end == len(op_name) or op_name[end] in "/_)" or path[-1] in "/_(":
                return True
    return False


def filter_scope(g: nx.DiGraph, path: str) -> nx.DiGraph:
    """The units that come from scope `path`, with the pinned nodes they touch.

    A unit is kept when its first source op name (`OP_NAMES[0]`: for a kernel, the op
    its root comes from), else its `SCOPE`, matches (see `matches_scope`); when no unit
    matches that way, units with any matching source op are kept (a fusion that holds
    one op of the scope).

    Raises:
        UsageError: When nothing matches; the message lists the biggest scopes.
    """
    names = {
        n: d.get(OP_NAMES) or (d.get(SCOPE) or "",)
        for n, d in g.nodes(data=True)
        if not d.get(PINNED)
    }
    keep = {n for n, ops in names.items() if matches_scope(ops[0], path)}
    if not keep:
        keep = {n for n, ops in names.items() if any(matches_scope(o, path) for o in ops)}
    if not keep:
        hint = ", ".join(top_scopes(g)) or "(the module has no name scopes)"
        raise UsageError(f"nothing comes from scope {path!r}; biggest scopes: {hint}")
    return _induced(g, keep | _touching_pinned(g, keep))


def neighbourhood(
    g: nx.DiGraph, centers: Collection[str], depth: int, *, hub_degree: int = 16
) -> nx.DiGraph:
    """Every node within `depth` edges of `centers`, edges followed in both directions.

    A hub (a node other than a center with more than `hub_degree` edges, such as a
    constant every layer reads) is included but not walked through: otherwise two hops
    through it would reach most of the graph.

    Args:
        g: A unit graph.
        centers: Node ids to start from (all must be in `g`).
        depth: Hops to follow (0: the centers alone).
        hub_degree: Edges above which a node is a hub.

    Returns:
        The induced subgraph, a copy.
    """
    seen = {c: 0 for c in centers if c in g}
    queue = deque(seen)
    while queue:
        node = queue.popleft()
        hops = seen[node]
        if hops >= depth or (hops and g.degree(node) > hub_degree):
            continue
        for other in (*g.predecessors(node), *g.successors(node)):
            if other not in seen:
                seen[other] = hops + 1
                queue.append(other)
    return _induced(g, seen)


def _induced(g: nx.DiGraph, keep: Collection[str]) -> nx.DiGraph:
    """The subgraph on `keep`, nodes and edges in `g`'s order.

    `g.subgraph(keep)` iterates a small `keep` in set order, which depends on string
    hashing: edges would come out in a different order on every run.
    """
    h = nx.DiGraph()
    h.graph.update(g.graph)
    h.add_nodes_from((n, d) for n, d in g.nodes(data=True) if n in keep)
    h.add_edges_from((u, v, d) for u, v, d in g.edges(data=True) if u in keep and v in keep)
    return h


def top_scopes(g: nx.DiGraph, n: int = 6, levels: int = 2) -> list[str]:
    """The `n` scopes (cut to `levels` `/` parts) holding the most units, biggest first."""
    counts: Counter[str] = Counter()
    for _, d in g.nodes(data=True):
        scope = d.get(SCOPE) or ""
        if scope and not d.get(PINNED):
            counts["/".join(scope.split("/")[:levels])] += 1
    return [s for s, _ in counts.most_common(n)]


def layout_cost(g: nx.DiGraph) -> int:
    """How hard a graph is for `dot` to order: the sum over ranks of the squared rank
    width (see `rank_widths`); ordering a rank to cut crossings costs about the
    square of its width."""
    return sum(w * w for w in rank_widths(g))


def layout_size(g: nx.DiGraph) -> int:
    """The nodes `dot` lays out: the graph's own and the virtual ones (see
    `rank_widths`); placing them (network simplex) and routing edges grow with it."""
    return sum(rank_widths(g))


def rank_widths(g: nx.DiGraph) -> list[int]:
    """How many nodes `dot` puts on each rank, virtual ones included.

    As `dot` does: cycles broken by reversing the back edges of a depth-first search in
    node order, ranks by longest path, then each node pulled down next to its nearest
    consumer (close to the shortest edges `dot` looks for); an edge puts a virtual node
    on every rank it crosses. Linear time in the graph.
    """
    dag = nx.DiGraph()
    dag.add_nodes_from(g.nodes)
    dag.add_edges_from(_acyclic_edges(g))
    order = list(nx.topological_sort(dag))
    rank: dict[Hashable, int] = {}
    for n in order:
        rank[n] = max((rank[p] + 1 for p in dag.predecessors(n)), default=0)
    for n in reversed(order):  # down next to its consumers, as dot's ranking pulls it
        below = [rank[s] for s in dag.successors(n)]
        if below:
            rank[n] = max(rank[n], min(below) - 1)
    width = [0] * (max(rank.values(), default=0) + 2)
    for n in g.nodes:
        width[rank[n]] += 1
    spans = [0] * len(width)  # difference array of the virtual nodes per rank
    for u, v in dag.edges:
        lo, hi = sorted((rank[u], rank[v]))
        if hi - lo > 1:
            spans[lo + 1] += 1
            spans[hi] -= 1
    return list(_add_running(width, spans))


def _acyclic_edges(g: nx.DiGraph) -> Iterator[tuple[Hashable, Hashable]]:
    """The edges of `g`, those that close a cycle in a depth-first search (in node
    order, iterative) reversed, self-loops left out: how `dot` breaks cycles."""
    state: dict[Hashable, int] = {}  # 1: on the search path, 2: done
    for root in g.nodes:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(g.successors(root)))]
        while stack:
            node, successors = stack[-1]
            for nxt in successors:
                if nxt == node:
                    continue
                if state.get(nxt) == 1:
                    yield nxt, node
                    continue
                yield node, nxt
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(g.successors(nxt))))
                    break
            else:
                state[node] = 2
                stack.pop()


def _add_running(width: list[int], spans: list[int]) -> Iterable[int]:
    running = 0
    for w, d in zip(width, spans, strict=True):
        running += d
        yield w + running


def _fits(g: nx.DiGraph, collapsed: bool, max_edges: int, max_cost: int, max_size: int) -> bool:
    """Whether `dot` draws `g` fast: at most `max_edges` edges and `max_size` nodes laid
    out, and a `layout_cost` within `max_cost` with its iterations capped (collapsed or
    big graphs), else within `MAX_PLAIN_LAYOUT_COST`."""
    if g.number_of_edges() > max_edges:
        return False
    widths = rank_widths(g)
    if sum(widths) > max_size:
        return False
    capped = collapsed or g.number_of_nodes() > DOT_LIMITS_ABOVE
    cost = sum(w * w for w in widths)
    return cost <= (max_cost if capped else min(max_cost, MAX_PLAIN_LAYOUT_COST))


def collapse(
    g: nx.DiGraph,
    max_nodes: int,
    *,
    max_edges: int = MAX_EDGES,
    max_cost: int = MAX_LAYOUT_COST,
    max_size: int = MAX_LAYOUT_SIZE,
) -> Collapsed:
    """Fold a unit graph into at most `max_nodes` nodes (pinned nodes included), and
    further while it has more than `max_edges` edges, a `layout_cost` over `max_cost`
    or a `layout_size` over `max_size` (what keeps `dot` fast whatever the input).

    Scopes are opened biggest first while the budget allows. Sibling scopes whose names
    differ only by a number and whose units have the same multiset of `STRUCTURE`s
    (kinds, shapes aside: DenseNet's dense blocks each read one more concatenated input,
    EfficientNet's and ResNet's blocks change width) are one repeated block, drawn as
    one node ×N; when opened, the first instance is shown on its own and the others stay
    one node ×(N-1). A scope with more children than half the budget (a flat graph) is
    cut into contiguous slices in program order. Every
    unit ends up either drawn or in exactly one group.

    Args:
        g: A unit graph.
        max_nodes: The node budget.

    Returns:
        The collapsed graph; `g` itself, with no groups, when it already fits.
    """
    units = sum(1 for _, d in g.nodes(data=True) if not d.get(PINNED))
    if g.number_of_nodes() <= max_nodes and _fits(g, False, max_edges, max_cost, max_size):
        return Collapsed(g, {}, {}, units)
    rows = Rows.from_graph(g)
    col = collapse_rows(rows, max_nodes, max_edges=max_edges, max_cost=max_cost, max_size=max_size)
    ids = rows.ids
    h = col.graph
    for _, _, d in h.edges(data=True):
        d[MERGED] = [(ids[rows.src[e]], ids[rows.dst[e]]) for e in d[MERGED]]
    groups = {
        gid: replace(group, members=tuple(ids[m] for m in group.members))
        for gid, group in col.groups.items()
    }
    for n in h.nodes:
        group = h.nodes[n].get(GROUP)
        if group is not None:
            h.nodes[n][GROUP] = groups[group.id]
    return Collapsed(h, groups, {ids[r]: gid for r, gid in col.group_of.items()}, units)


def collapse_rows(
    rows: Rows,
    max_nodes: int,
    *,
    max_edges: int = MAX_EDGES,
    max_cost: int = MAX_LAYOUT_COST,
    max_size: int = MAX_LAYOUT_SIZE,
) -> Collapsed:
    """`collapse` over rows: the work beyond one pass over the rows and edges scales with
    what is drawn, and only a node drawn on its own gets its attributes (`Rows.attrs`).

    The result is `collapse`'s, but its groups' members and `group_of`'s keys are rows,
    and a merged edge (`MERGED`) lists edge numbers (positions in `Rows.src`), not id
    pairs. When everything fits, it is the whole unit graph, with its own edges.
    """
    units = [i for i, p in zip(rows.number_objects(), rows.pinned, strict=True) if not p]
    pinned = len(rows) - len(units)
    if len(rows) <= max_nodes:
        g = rows.to_graph()
        if _fits(g, False, max_edges, max_cost, max_size):
            return Collapsed(g, {}, {}, len(units))
    order = rows.order_of()
    units.sort(key=order.__getitem__)
    root = _build_tree(rows, units, order)
    budget = max(1, min(max_nodes, len(rows)) - pinned)
    edges = rows.edge_order()
    ends = ([rows.src[e] for e in edges], [rows.dst[e] for e in edges])
    while True:
        col, group_of = _assemble(rows, _cut(root, budget, order), order, len(units), edges, ends)
        if budget <= 2 or _fits(col.graph, col.collapsed, max_edges, max_cost, max_size):
            _untie(root)
            return replace(col, group_of=_RowGroups(group_of))
        # Edges grow with the nodes; the cost, with long edges, about with their cube.
        n_edges, widths = col.graph.number_of_edges(), rank_widths(col.graph)
        cost, size = sum(w * w for w in widths), sum(widths)
        scale = min(0.9, max_edges / n_edges, (max_cost / cost) ** (1 / 3), max_size / size)
        budget = max(2, int(budget * scale))


class _RowGroups(Mapping[int, str]):
    """Row -> group id, read from `_assemble`'s list (a dict would hold every row)."""

    def __init__(self, of: list[str | None]) -> None:
        self._of = of

    def __getitem__(self, row: int) -> str:
        gid = self._of[row] if 0 <= row < len(self._of) else None
        if gid is None:
            raise KeyError(row)
        return gid

    def __iter__(self) -> Iterator[int]:
        return (r for r, gid in enumerate(self._of) if gid is not None)

    def __len__(self) -> int:
        return sum(1 for gid in self._of if gid is not None)


# --- the scope tree ---------------------------------------------------------------------


@dataclass(eq=False)
class _Scope:
    prefix: str
    token: str  # the part after the parent's prefix, separator stripped
    sep: str  # the separator before `token` ("" at the top)
    parent: _Scope | None
    children: dict[str, _Scope] = field(default_factory=dict)
    units: list[int] = field(default_factory=list)
    count: int = 0
    first: int = 0
    structure: Hashable = None


def _build_tree(rows: Rows, units: list[int], order: Sequence[int]) -> _Scope:
    root = _Scope("", "", "", None)
    index = {"": root}
    leaves: dict[str, _Scope] = {"": root}  # by scope: a big module's units share few
    scopes = rows.scopes
    for u in units:
        scope = scopes[u]
        leaf = leaves.get(scope)
        if leaf is None:
            leaf = leaves[scope] = _leaf(root, index, scope)
        leaf.units.append(u)

    # Children before parents, without recursion: scopes nest as deep as an op_name
    # has `/`s, which the input decides (issue 14).
    tree = [root]
    for s in tree:
        tree.extend(s.children.values())
    structs: dict[int, Counter[Hashable]] = {}
    structures = rows.structures
    alike: dict[frozenset[tuple[Hashable, int]], frozenset[tuple[Hashable, int]]] = {}
    for s in reversed(tree):
        struct: Counter[Hashable] = Counter(map(structures.__getitem__, s.units))
        firsts = [order[u] for u in s.units[:1]]
        s.count = len(s.units)
        for child in s.children.values():
            struct.update(structs.pop(id(child)))
            s.count += child.count
            firsts.append(child.first)
        s.first = min(firsts) if firsts else 0
        # one set for the scopes alike: a big module repeats its blocks thousands of times
        found = frozenset(struct.items())
        s.structure = alike.setdefault(found, found)
        structs[id(s)] = struct
    return root


def _untie(root: _Scope) -> None:
    """Break the tree's parent links: its cycles would outlive `collapse` while the
    collector is paused (`hloscope.hlo.parser.paused_gc`), as it is for a big module."""
    stack = [root]
    while stack:
        s = stack.pop()
        stack.extend(s.children.values())
        s.parent = None


def _leaf(root: _Scope, index: dict[str, _Scope], scope: str) -> _Scope:
    """The tree node of `scope`, made with its parents where missing."""
    node = root
    for prefix in scope_prefixes(scope):
        child = index.get(prefix)
        if child is None:
            start = len(node.prefix)
            sep = prefix[start] if start and prefix[start] in "/_" else ""
            child = _Scope(prefix, prefix[start + len(sep) :], sep, node)
            node.children[prefix] = child
            index[prefix] = child
        node = child
    return node


def signature_of(d: Mapping[str, Any], u: str) -> Hashable:
    """The signature of unit `u`, whose attributes are `d`."""
    sig = d.get(SIGNATURE)
    return sig if sig is not None else u


def structure_of(d: Mapping[str, Any], u: str) -> Hashable:
    """The structure of unit `u`, whose attributes are `d`."""
    if d.get(STRUCTURE) is not None:
        found: Hashable = d[STRUCTURE]
        return found
    sig: Hashable = d.get(SIGNATURE)
    if isinstance(sig, tuple) and sig:
        first: Hashable = sig[0]
        return first
    return sig if sig is not None else u


def _units_of(s: _Scope) -> Iterable[int]:
    stack = [s]  # depth first, in the recursive order, without recursion
    while stack:
        scope = stack.pop()
        yield from scope.units
        stack.extend(reversed(scope.children.values()))


# --- choosing the cut -------------------------------------------------------------------

_UNIT, _GROUP, _REPEAT, _SLICE = "unit", "group", "repeat", "slice"


@dataclass(eq=False)
class _Elem:
    kind: str
    scopes: list[_Scope]
    units: list[int]
    first: int
    peeled: bool = False
    parent: _Scope | None = None  # for a slice: the scope it slices
    part: str = ""

    @property
    def count(self) -> int:
        return sum(s.count for s in self.scopes) + len(self.units)

    @property
    def expandable(self) -> bool:
        return self.kind == _GROUP or (self.kind == _REPEAT and not self.peeled)


def _make(s: _Scope) -> _Elem:
    while not s.units and len(s.children) == 1:
        s = next(iter(s.children.values()))
    if s.count == 1:
        (u,) = tuple(_units_of(s))
        return _Elem(_UNIT, [], [u], s.first)
    return _Elem(_GROUP, [s], [], s.first)


def _children(e: _Elem, order: Sequence[int]) -> list[_Elem]:
    if e.kind == _REPEAT:
        first, rest = e.scopes[0], e.scopes[1:]
        out = [_make(first)]
        if len(rest) >= 2:
            out.append(_Elem(_REPEAT, rest, [], rest[0].first, peeled=True))
        else:
            out.append(_make(rest[0]))
        return out
    (s,) = e.scopes
    while not s.units and len(s.children) == 1:
        s = next(iter(s.children.values()))
    classes: dict[Hashable, list[_Scope]] = {}
    for child in s.children.values():
        pattern = _DIGITS.sub("#", child.token)
        key: Hashable = (pattern, child.structure) if pattern != child.token else child
        classes.setdefault(key, []).append(child)
    out = []
    for members in classes.values():
        if len(members) >= 2:
            members.sort(key=_natural_key)
            out.append(_Elem(_REPEAT, members, [], min(m.first for m in members)))
        else:
            out.append(_make(members[0]))
    out.extend(_Elem(_UNIT, [], [u], order[u]) for u in s.units)
    out.sort(key=lambda x: x.first)
    return out


def _natural_key(s: _Scope) -> tuple[int, ...]:
    return tuple(int(d) for d in _DIGITS.findall(s.token))


def _cut(root: _Scope, budget: int, order: Sequence[int]) -> list[_Elem]:
    start = _make(root)
    current: dict[int, _Elem] = {id(start): start}
    # Biggest first; ties in program order. The serial keeps heap entries comparable.
    heap: list[tuple[int, int, int, _Elem]] = []
    serial = itertools.count()

    def push(e: _Elem) -> None:
        if e.expandable:
            heapq.heappush(heap, (-e.count, e.first, next(serial), e))

    push(start)
    while heap:
        e = heapq.heappop(heap)[3]
        if id(e) not in current:
            continue
        kids = _children(e, order)
        total = len(current)
        if total - 1 + len(kids) <= budget:
            del current[id(e)]
            for k in kids:
                current[id(k)] = k
                push(k)
            continue
        slots = budget - total + 1
        if e.kind == _GROUP and len(kids) > budget // 2 and slots >= 2:
            del current[id(e)]
            for k in _slices(e.scopes[0], kids, slots):
                current[id(k)] = k
    return sorted(current.values(), key=lambda x: x.first)


def _slices(parent: _Scope, kids: list[_Elem], slots: int) -> list[_Elem]:
    size = -(-len(kids) // slots)
    chunks = [kids[i : i + size] for i in range(0, len(kids), size)]
    out = []
    for i, chunk in enumerate(chunks):
        if len(chunk) == 1:
            out.append(chunk[0])
            continue
        scopes = [s for k in chunk for s in k.scopes]
        unit_ids = [u for k in chunk for u in k.units]
        out.append(
            _Elem(
                _SLICE,
                scopes,
                unit_ids,
                chunk[0].first,
                parent=parent,
                part=f"{i + 1}/{len(chunks)}",
            )
        )
    return out


# --- the collapsed graph ----------------------------------------------------------------


def _assemble(
    rows: Rows,
    elems: list[_Elem],
    order: Sequence[int],
    units: int,
    edges: list[int],
    ends: tuple[list[int], list[int]],
) -> tuple[Collapsed, list[str | None]]:
    groups: dict[str, Group] = {}
    group_of: list[str | None] = [None] * len(rows)
    for e in elems:
        if e.kind == _UNIT:
            continue
        members = sorted(
            [u for s in e.scopes for u in _units_of(s)] + e.units, key=order.__getitem__
        )
        group = _group(e, members, groups)
        groups[group.id] = group
        for u in members:
            group_of[u] = group.id

    ids = rows.ids
    h = nx.DiGraph(name=rows.graph.get("name", ""))
    for r in sorted(range(len(rows)), key=order.__getitem__):
        gid = group_of[r]
        if gid is None:
            h.add_node(ids[r], **rows.attrs(r))
        elif gid not in h:
            group = groups[gid]
            h.add_node(gid, **{GROUP: group, ORDER: order[group.members[0]]})
    node = [ids[r] if gid is None else gid for r, gid in enumerate(group_of)]
    merged: dict[tuple[str, str], list[int]] = {}
    for edge, u, v in zip(edges, *ends, strict=True):
        a, b = node[u], node[v]
        if a == b:
            continue
        found = merged.get((a, b))
        if found is None:
            merged[(a, b)] = [edge]
        else:
            found.append(edge)
    h.add_edges_from((a, b, {MERGED: pairs}) for (a, b), pairs in merged.items())
    return Collapsed(h, groups, {}, units), group_of


def _group(e: _Elem, members: list[int], taken: Mapping[str, Group]) -> Group:
    if e.kind == _REPEAT:
        first = e.scopes[0]
        parent = first.parent.prefix if first.parent else ""
        pattern = parent + first.sep + _DIGITS.sub("#", first.token)
        gid = _unique(f"r/{pattern}", taken)
        return Group(
            gid,
            pattern,
            tuple(members),
            instances=tuple(s.prefix for s in e.scopes),
            numbers=_numbers([s.token for s in e.scopes]),
            sizes=tuple(s.count for s in e.scopes),
        )
    if e.kind == _SLICE:
        scope = e.parent.prefix if e.parent else ""
        return Group(_unique(f"g/{scope}#{e.part}", taken), scope, tuple(members), part=e.part)
    scope = e.scopes[0].prefix
    return Group(_unique(f"g/{scope}", taken), scope, tuple(members))


def _unique(gid: str, taken: Mapping[str, object]) -> str:
    if gid not in taken:
        return gid
    n = 2
    while f"{gid}~{n}" in taken:
        n += 1
    return f"{gid}~{n}"


def _numbers(tokens: list[str]) -> str:
    """The numbers that vary between instance names: `2–84`, or `1, 3, 7`."""
    runs = [[int(d) for d in _DIGITS.findall(t)] for t in tokens]
    width = min(len(r) for r in runs)
    parts = []
    for i in range(width):
        values = [r[i] for r in runs]
        if len(set(values)) == 1:
            continue
        ordered = sorted(set(values))
        if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
            parts.append(f"{ordered[0]}–{ordered[-1]}")
        else:
            shown = ", ".join(str(v) for v in ordered[:4])
            parts.append(shown + (", …" if len(ordered) > 4 else ""))
    return "; ".join(parts)


def _touching_pinned(g: nx.DiGraph, keep: set[str]) -> set[str]:
    out = set()
    for n in keep:
        for other in (*g.predecessors(n), *g.successors(n)):
            if g.nodes[other].get(PINNED):
                out.add(other)
    return out
