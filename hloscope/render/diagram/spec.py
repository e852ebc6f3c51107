"""The diagram's intermediate form: frozen data that `hloscope.render.dot` draws.

A `DiagramSpec` holds nodes, edges, clusters and a legend as plain strings and numbers;
building one (`hloscope.render.diagram.build`) decides what is drawn and how it reads,
writing DOT and running Graphviz happen later, from this alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Node roles.
KERNEL = "kernel"
PARAMETER = "parameter"
OUTPUT = "output"
CONTROL = "control"
OP = "op"  # an op before optimization, or an instruction inside an expanded fusion
GROUP_NODE = "group"
REPEAT = "repeat"

FORMATS = ("svg", "png", "pdf", "dot")
"""Picture formats `hloscope.render.dot.render` writes."""

TOOLTIP_CHARS = 2000
"""Characters per tooltip."""


@dataclass(frozen=True)
class Node:
    """One drawn node.

    Attributes:
        id: Stable id, also the SVG element id (see `hloscope.render.diagram`).
        role: KERNEL, PARAMETER, OUTPUT, CONTROL, OP, GROUP_NODE or REPEAT.
        lines: Label lines, plain text; the first is the title.
        tooltip: The full text.
        fill: Fill colour (`#rrggbb`).
        kind: Kernel kind (kernels), opcode (ops), or the main kind (groups).
        kernel: The kernel it is or went to, if any.
        count: Kernels (or ops) it stands for.
        repeat: N of ×N for a repeated block, else 1.
        cluster: The id of the cluster it is drawn in, if any.
        time_us: Its time, when timings were given.
        share: Share of the module's total time.
        heavy: Whether it is one of the heaviest (drawn emphasised).
        members: For groups: the names of what it stands for.

    Example:
        >>> spec = hloscope.module_diagram(hloscope.inspect_run("tests/data/tf_dense_relu").main[0])
        >>> sorted({n.role for n in spec.nodes})
        ['kernel', 'output', 'parameter']
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

    Example:
        >>> spec = hloscope.module_diagram(hloscope.inspect_run("tests/data/tf_dense_relu").main[0])
        >>> all(isinstance(e, hloscope.Edge) for e in spec.edges), len(spec.edges) > 0
        (True, True)
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

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> before = hloscope.module_diagram(m, stage='before')
        >>> after = hloscope.module_diagram(m, stage='after')
        >>> [isinstance(c, hloscope.Cluster) for c in hloscope.side_by_side(before, after).clusters]
        [True, True]
    """

    id: str
    lines: tuple[str, ...]
    tooltip: str = ""
    fill: str = "#ffffff"
    parent: str | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class LegendEntry:
    """One row of the legend: a colour and what it means.

    Example:
        >>> spec = hloscope.module_diagram(hloscope.inspect_run("tests/data/tf_dense_relu").main[0])
        >>> all(isinstance(e, hloscope.LegendEntry) for e in spec.legend)
        True
    """

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
        node_kernels: Node id -> the kernels a node shows: a kernel itself, the fusion
            an op inside an expanded fusion belongs to, the kernel an op before
            optimization is coloured by, every kernel of a group (every kernel its ops
            went to, before optimization). Nodes that show no kernel are left out. The
            HTML page links diagram nodes to its kernel table with it.

    Example:
        >>> spec = hloscope.module_diagram(hloscope.inspect_run("tests/data/tf_dense_relu").main[0])
        >>> isinstance(spec, hloscope.DiagramSpec), spec.notes
        (True, ('2 kernels, 2 launches',))
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
    node_kernels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
