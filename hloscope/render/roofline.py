"""Cost, planned memory and roofline -> terminal lines and tables of one module.

Pure renderers of what `hloscope.inspection` gathered (a module's `ModuleCost`, its
`MemoryReport`) and of the roofline `Inspection.roofline` placed; `hloscope report`
prints `cost_part` inside each module's section. The JSON documents of the same results
are `render.cost_json`.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.cost import ModuleCost
from hloscope.analysis.memory import KINDS, MISSING_HINT, MemoryReport
from hloscope.render.fit import fit_names, name_room
from hloscope.render.format import counted, fmt_bytes, fmt_flops, fmt_us
from hloscope.render.holds import labelled
from hloscope.timing.roofline import KernelRoof, Peaks

__all__ = ["MIN_SHARE", "cost_part"]

MIN_SHARE = 0.01
"""Kernels under this share of the measured time are left out of the terminal table."""


def cost_part(
    cost: ModuleCost | None,
    memory: MemoryReport | None,
    roofs: list[KernelRoof],
    peaks: Peaks | None,
    *,
    holds: Mapping[str, str] | None = None,
    top: int = 8,
    width: int | None = None,
    memory_error: str | None = None,
) -> list[RenderableType]:
    """A module's cost per execution, its planned memory and, when it was profiled and
    the device's roofs are known, the kernels furthest below their roof.

    Args:
        cost: Bytes and FLOPs (`Inspection.cost`).
        memory: XLA's planned memory, or None.
        roofs: Its kernels against the roofs (`Inspection.roofline`).
        peaks: The roofs.
        holds: Kernel name -> what it holds, printed beside each kernel's name.
        top: Most kernels in the roofline table.
        width: The terminal's width, which kernel names are cut to fit (None: a pipe).
        memory_error: Why the planned memory could not be read, if it could not.
    """
    parts: list[RenderableType] = [_cost_line(cost), _memory_line(memory, memory_error)]
    if roofs and peaks is not None:
        parts.extend(_roof_part(roofs, peaks, top, holds, width))
    return parts


def _roof_part(
    roofs: list[KernelRoof],
    peaks: Peaks,
    top: int,
    holds: Mapping[str, str] | None,
    width: int | None,
) -> list[RenderableType]:
    """The kernels that take at least 1% of the measured time, furthest below the roof
    first (tiny kernels are all launch latency and would fill the table)."""
    total = sum(r.execution_us for r in roofs) or 1.0
    big = [r for r in roofs if r.execution_us / total >= MIN_SHARE]
    parts: list[RenderableType] = [_roof_table(big[:top], peaks, holds, width)]
    above = sum(r.efficiency > 1 for r in roofs)
    if above:
        runs = "runs above its roof" if above == 1 else "run above their roof"
        parts.append(Text(
            f"{counted(above, 'kernel')} {runs}: the roofs read too low for this device\n(a CPU "
            "probe on a busy machine, or operands served from cache); pass\n"
            "--peak-bandwidth/--peak-tflops, or delete the probe's cache to measure again",
            style="yellow",
        ))  # fmt: skip
    left = len(roofs) - min(len(big), top)
    if left:
        parts.append(Text(f"… {counted(left, 'more kernel')} (under 1% of the time each, or "
                          f"past the first {top}); --json lists all", style="dim"))  # fmt: skip
    return parts


def _cost_line(cost: ModuleCost | None) -> Text:
    if cost is None:
        return Text.assemble(("cost", "bold"), ": no after-optimization module", style="dim")
    t = cost.total
    line = (
        f" per execution: {fmt_flops(t.flops)}"
        + (f" (+{fmt_flops(t.transcendentals, 'transc.')})" if t.transcendentals else "")
        + f", {fmt_bytes(t.bytes)} moved ({fmt_bytes(t.bytes_read)} read,"
        f" {fmt_bytes(t.bytes_written)} written), {cost.intensity or 0:.3g} FLOP/B"
        f"\nfusion kept {fmt_bytes(cost.kept)} of intermediates out of memory"
    )
    if cost.unknown:
        line += f"; {counted(len(cost.unknown), 'library call')} of unknown FLOPs"
    return Text.assemble(("cost", "bold"), line)


def _memory_line(memory: MemoryReport | None, error: str | None = None) -> Text:
    if error:
        return Text.assemble(("memory", "bold"), f": {error}", style="yellow")
    if memory is None:
        return Text.assemble(("memory", "bold"), f": not in the dump ({MISSING_HINT})", style="dim")
    split = ", ".join(
        f"{kind} {fmt_bytes(memory.by_kind[kind])}" for kind in KINDS if memory.by_kind[kind]
    )
    biggest = memory.largest(1)
    tail = ""
    if biggest:
        a = biggest[0]
        names = ", ".join(v.instruction for v in a.values[:3])
        tail = f"\nlargest buffer {fmt_bytes(a.size)} {a.kind} ({names})"
    return Text.assemble(
        ("memory", "bold"), f" planned by XLA: peak {fmt_bytes(memory.peak)} ({split}){tail}"
    )


def _roof_table(
    roofs: list[KernelRoof], peaks: Peaks, holds: Mapping[str, str] | None, width: int | None
) -> Table:
    title = Text.assemble(
        ("roofline", "bold"),
        f" ({peaks.name}, {peaks.source}: "
        f"{fmt_flops(peaks.bandwidth, 'B/s')}, {fmt_flops(peaks.flops, 'FLOP/s')}"
        + (f" f32, {fmt_flops(peaks.flops_low, 'FLOP/s')} 16-bit" if peaks.flops_low else "")
        + ")\nfurthest below the roof first; time and roof per call of the kernel",
    )
    t = Table(
        title=title, title_justify="left", box=None, pad_edge=False, collapse_padding=True,
        title_style="",
    )  # fmt: skip
    headers = ["kernel · ops", "kind", "time", "FLOP/B", "achieved", "bound", "of roof", "roof"]
    for col in headers:
        left = col in ("kernel · ops", "kind", "bound")
        t.add_column(col, justify="left" if left else "right", no_wrap=True,
                     overflow="ellipsis" if col == "kernel · ops" else "fold")  # fmt: skip
    rows = [
        [
            labelled(r.name, holds),
            r.kind,
            fmt_us(r.time_us),
            f"{r.intensity or 0:.3g}",
            fmt_flops(r.flops_per_s, "FLOP/s")
            if r.bound == "compute"
            else fmt_flops(r.bandwidth, "B/s"),
            r.bound,
            f"{r.efficiency:.1%}",
            fmt_us(r.roof_us),
        ]
        for r in roofs
    ]
    for row in fit_names(rows, name_room(headers, rows, width)):
        t.add_row(*row)
    return t
