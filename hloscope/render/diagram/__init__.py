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

from typing import TYPE_CHECKING, Any

# Kept importable from here for callers written before the op -> kernel join moved to
# analysis (hloscope/__init__.py, render/html.py, notebook.py).
from hloscope.analysis.provenance import kernel_of_before_ops, kernels_of_before_ops
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
    kernel_graph,
    module_diagrams,
    op_graph,
    side_by_side,
)
from hloscope.render.diagram.views import module_diagram as _module_diagram

if TYPE_CHECKING:
    from hloscope.analysis.report import ModuleReport
    from hloscope.hlo.model import HloModule

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
    "TOOLTIP_CHARS",
    "Cluster",
    "DiagramSpec",
    "Edge",
    "LegendEntry",
    "Node",
    "kernel_graph",
    "kernel_of_before_ops",
    "kernels_of_before_ops",
    "kind_color",
    "module_diagram",
    "module_diagrams",
    "op_graph",
    "side_by_side",
]


def module_diagram(
    module: ModuleReport | HloModule | None, after: HloModule | None = None, /, **options: Any
) -> DiagramSpec:
    """The diagram of one module; see `hloscope.render.diagram.views.module_diagram`.

    Args:
        module: The module's report. (Transitional: `cli.py` still calls
            `module_diagram(before, after, ...)` with parsed modules; that form analyses
            them here and goes away once the CLI passes its `ModuleReport`.)
        after: Only with the transitional form: the module after optimization.
        **options: `stage`, `both`, `timings`, `total_us`, `expand`, `max_nodes`,
            `around`, `depth`, `scope`.

    Returns:
        The diagram.

    Raises:
        UsageError: The side asked for is missing, or an option names nothing.
    """
    from hloscope.analysis.report import ModuleReport

    if isinstance(module, ModuleReport):
        return _module_diagram(module, **options)
    return _module_diagram(_legacy_report(module, after), **options)


def _legacy_report(before: HloModule | None, after: HloModule | None) -> ModuleReport:
    """A ModuleReport for the old `(before, after)` call. Delete with that call form."""
    from hloscope.analysis.fusion import analyze_module
    from hloscope.analysis.provenance import trace
    from hloscope.analysis.report import ModuleReport

    analysis = analyze_module(after) if after is not None else None
    provenance = trace(after, analysis, before) if after is not None and analysis else None
    side = after if after is not None else before
    name = side.name if side is not None else "module"
    return ModuleReport(
        key=name,
        name=name,
        module_id=None,
        platform=None,
        trivial=False,
        before=None,
        after=analysis,
        provenance=provenance,
        before_module=before,
        after_module=after,
    )
