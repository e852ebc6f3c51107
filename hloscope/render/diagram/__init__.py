"""Fusion diagrams as plain data: a module's report -> a `DiagramSpec`.

`module_diagram` draws one module for `hloscope graph`, the notebook and the HTML page
(`module_diagrams` gives the page both sides at once): `kernel_graph` draws a module
after optimization at kernel level (one node per kernel, coloured by kind, edges walked
through the free instructions kernels talk through); `op_graph` draws a module before
optimization at op level, coloured by the kernel each op went to; `side_by_side` puts
the two in one picture. A `DiagramSpec` is frozen data: `hloscope.render.dot` turns it
into DOT and runs Graphviz, and the HTML report reuses it.

The package is laid out along the pipeline: `walk` (one walk over what a module
executes -> a unit graph), `build` (node budget, spec nodes and edges), `nodes` (how
each unit is drawn), `labels` and `style` (words and colours), `spec` (the frozen
types), `views` (the diagrams). Big graphs are cut to a node budget first
(`hloscope.analysis.collapse`). Labels are kept short (an ellipsis), with the full text
in the tooltip; escaping happens when DOT is written. Node ids are stable and end up as
the `id=` of the SVG element: `k/<kernel>`, `p/<parameter>`, `c/<control instruction>`,
`out`, `f/<fusion>/<fused instruction>` (after); `b/<instruction>`, `b/p/<parameter>`,
`b/out` (before); `g/<scope>`, `r/<pattern>` (collapsed groups, `b/` first before).
"""

from __future__ import annotations

from hloscope.render.diagram.spec import (
    CONTROL,
    FORMATS,
    GROUP_NODE,
    KERNEL,
    OP,
    OUTPUT,
    PARAMETER,
    REPEAT,
    TOOLTIP_CHARS,
    Cluster,
    DiagramSpec,
    Edge,
    LegendEntry,
    Node,
)
from hloscope.render.diagram.style import HEAVY_COLOR, KERNEL_PALETTE, KIND_COLORS, kind_color
from hloscope.render.diagram.views import (
    DEFAULT_MAX_NODES,
    PAGE_MAX_NODES,
    SIDES,
    after_half,
    kernel_graph,
    module_diagram,
    module_diagrams,
    op_graph,
    side_by_side,
    walk_ops_ahead,
)

__all__ = [
    "CONTROL",
    "DEFAULT_MAX_NODES",
    "FORMATS",
    "GROUP_NODE",
    "HEAVY_COLOR",
    "KERNEL",
    "KERNEL_PALETTE",
    "KIND_COLORS",
    "OP",
    "OUTPUT",
    "PAGE_MAX_NODES",
    "PARAMETER",
    "REPEAT",
    "SIDES",
    "TOOLTIP_CHARS",
    "Cluster",
    "DiagramSpec",
    "Edge",
    "LegendEntry",
    "Node",
    "after_half",
    "kernel_graph",
    "kind_color",
    "module_diagram",
    "module_diagrams",
    "op_graph",
    "side_by_side",
    "walk_ops_ahead",
]
