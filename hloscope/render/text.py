"""Result objects -> rich renderables for the terminal.

Functions here build `rich` tables and text from analysis results; they never compute
anything the analyses did not, and never print: the CLI prints what they return.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.stats import ModuleStats


def parse_summary(stats: ModuleStats, *, top_opcodes: int = 12) -> RenderableType:
    """The `hloscope parse` summary: counts, fusions by kind, opcode histogram."""
    fused = sum(1 for c in stats.computations if c.is_fused)
    head = Text.assemble(
        ("HloModule ", "bold"),
        (stats.name, "bold cyan"),
        f"  ({'scheduled, after optimization' if stats.is_scheduled else 'not scheduled'})\n",
        f"{len(stats.computations)} computations ({fused} fused), "
        f"{stats.instructions} instructions",
    )
    parts: list[RenderableType] = [head]
    if stats.not_understood:
        parts.append(
            Text(
                f"{stats.not_understood} pieces kept verbatim, not understood (see --strict)",
                style="yellow",
            )
        )
    if stats.fusions_by_kind:
        kinds = Table(title="fusions by kind", title_justify="left", box=None)
        kinds.add_column("kind")
        kinds.add_column("count", justify="right")
        for kind, n in stats.fusions_by_kind.items():
            kinds.add_row(kind, str(n))
        parts.append(kinds)
    ops = Table(title="opcodes", title_justify="left", box=None)
    ops.add_column("opcode")
    ops.add_column("count", justify="right")
    items = list(stats.opcodes.items())
    for opcode, n in items[:top_opcodes]:
        ops.add_row(opcode, str(n))
    if len(items) > top_opcodes:
        rest = sum(n for _, n in items[top_opcodes:])
        ops.add_row(f"… {len(items) - top_opcodes} more", str(rest), style="dim")
    parts.append(ops)
    return Group(*parts)
