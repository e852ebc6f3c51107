"""How a diagram looks: fill colours by kernel kind and by kernel, legends, emphasis.

Colours are stable across runs and modules: a kind always gets the same fill, and the
kernels of one picture take the palette in program order. Everything here maps names
and counts to colours and legend rows; it knows nothing of HLO.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from hloscope.analysis import kernels as K
from hloscope.render.diagram.labels import kind_short
from hloscope.render.diagram.spec import LegendEntry, Node

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
_EXTRA = ("#ead1dc", "#fde9a9", "#c9daf8", "#b6d7a8", "#f9cb9c", "#d5a6bd")
CONTROL_COLOR = "#ffffff"
IO_COLOR = "#f3f3f3"
GROUP_COLOR = "#f8f8f8"
NO_KERNEL_COLOR = "#ffffff"
BODY_COLOR = "#fbfbfb"
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
"""Outline of the heaviest timed nodes."""

_LEGEND_ROWS = 14


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


def kernel_colors(kernels: Iterable[str]) -> dict[str, str]:
    """Kernel name -> its palette colour, in the order the kernels first come."""
    distinct = dict.fromkeys(kernels)  # first come, first coloured
    return {k: KERNEL_PALETTE[i % len(KERNEL_PALETTE)] for i, k in enumerate(distinct)}


def kind_legend(kinds: Counter[str]) -> tuple[LegendEntry, ...]:
    """One row per fill colour, naming the kernel kinds drawn in it and their count."""
    by_color: dict[str, list[tuple[str, int]]] = {}
    for kind, n in kinds.most_common():
        by_color.setdefault(kind_color(kind), []).append((kind, n))
    rows = [
        LegendEntry(", ".join(kind_short(k) for k, _ in kinds), color, sum(n for _, n in kinds))
        for color, kinds in by_color.items()
    ]
    return cap_legend(rows)


def cap_legend(rows: list[LegendEntry]) -> tuple[LegendEntry, ...]:
    """At most `_LEGEND_ROWS` rows; the rest summed up in a last `… N more` row."""
    if len(rows) <= _LEGEND_ROWS:
        return tuple(rows)
    rest = rows[_LEGEND_ROWS - 1 :]
    more = LegendEntry(f"… {len(rest)} more", "#ffffff", sum(r.count for r in rest))
    return (*rows[: _LEGEND_ROWS - 1], more)


def emphasise(nodes: list[Node]) -> list[Node]:
    """Mark the heaviest timed nodes: the top tenth, at least 1 and at most 5."""
    timed = sorted((n for n in nodes if n.time_us), key=lambda n: -(n.time_us or 0))
    if not timed:
        return nodes
    top = min(5, max(1, math.ceil(len(timed) / 10)))
    heavy = {n.id for n in timed[:top]}
    return [replace(n, heavy=True) if n.id in heavy else n for n in nodes]
