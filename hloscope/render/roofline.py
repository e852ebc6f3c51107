"""Cost, planned memory and roofline: terminal pieces and JSON documents.

Pure functions of what `hloscope.inspection` gathered (a module's `ModuleCost`, its
`MemoryReport`) and of the roofline `hloscope.timing.roofline` computes; `hloscope
report` prints `cost_view` after the fusion report and `--json` adds `cost_doc`,
`memory_doc` and `roofline_doc` to each module.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.cost import ModuleCost
from hloscope.analysis.memory import KINDS, MISSING_HINT, MemoryReport
from hloscope.inspection import Inspection
from hloscope.render.format import fmt_bytes, fmt_flops, fmt_us, short_name
from hloscope.timing.roofline import KernelRoof, Peaks, roofline

__all__ = ["cost_doc", "cost_view", "memory_doc", "module_roofline", "roofline_doc"]

MIN_SHARE = 0.01
"""Kernels under this share of the measured time are left out of the terminal table."""


def module_roofline(inspection: Inspection, key: str, peaks: Peaks | None) -> list[KernelRoof]:
    """The module's measured kernels against the roofs (empty without times or peaks)."""
    times = inspection.kernel_times(key)
    if times is None or peaks is None:
        return []
    cost = inspection.cost(key)
    return roofline(cost, times, peaks) if cost is not None else []


def cost_doc(cost: ModuleCost | None) -> dict[str, Any] | None:
    """`cost` of a module in `report --json`: totals per execution and per kernel."""
    if cost is None:
        return None
    t = cost.total
    return {
        "flops": t.flops,
        "transcendentals": t.transcendentals,
        "bytes_read": t.bytes_read,
        "bytes_written": t.bytes_written,
        "intensity": _round(cost.intensity),
        "kept_bytes": cost.kept,
        "unknown": list(cost.unknown),
        "kernels": [
            {
                "name": k.name,
                "runs": k.runs,
                "flops": k.cost.flops,
                "transcendentals": k.cost.transcendentals,
                "bytes_read": k.cost.bytes_read,
                "bytes_written": k.cost.bytes_written,
                "kept_bytes": k.kept,
                "known": k.known,
            }
            for k in cost.kernels
        ],
    }


def memory_doc(memory: MemoryReport | None, *, error: str = "", top: int = 5) -> dict[str, Any]:
    """`memory` of a module in `report --json`: XLA's planned peak and its split, or why
    it is not there (`error`: its files could not be read)."""
    if error:
        return {"peak_bytes": None, "error": error}
    if memory is None:
        return {"peak_bytes": None, "missing": MISSING_HINT}
    return {
        "peak_bytes": memory.peak,
        "allocated_bytes": memory.total,
        "reported_bytes": memory.reported,
        "by_kind": dict(memory.by_kind),
        "largest": [
            {
                "allocation": a.index,
                "size": a.size,
                "kind": a.kind,
                "instructions": [v.instruction for v in a.values[:top]],
            }
            for a in memory.largest(top)
        ],
    }


def roofline_doc(peaks: Peaks | None, roofs: list[KernelRoof]) -> dict[str, Any] | None:
    """`roofline` of a module in `report --json` (None without peaks or times)."""
    if peaks is None or not roofs:
        return None
    return {
        "device": peaks.name,
        "source": peaks.source,
        "peak_bandwidth": peaks.bandwidth,
        "peak_flops": peaks.flops,
        "peak_flops_low": peaks.flops_low,
        "ridge": _round(peaks.ridge),
        "kernels": [
            {
                "name": r.name,
                "kind": r.kind,
                "time_us": _round(r.time_us),
                "flops": r.flops,
                "bytes": r.bytes,
                "intensity": _round(r.intensity),
                "bandwidth": _round(r.bandwidth),
                "flops_per_s": _round(r.flops_per_s),
                "bound": r.bound,
                "efficiency": _round(r.efficiency),
                "roof_us": _round(r.roof_us),
                "execution_us": _round(r.execution_us),
                "peak_flops": r.peak_flops,
                "known": r.known,
            }
            for r in roofs
        ],
    }


def cost_view(
    inspection: Inspection, peaks: Peaks | None, *, show_all: bool = False, top: int = 8
) -> RenderableType:
    """Per module: bytes, FLOPs and intensity, planned memory, and the kernels furthest
    below their roof (when the run was profiled and the device's peaks are known)."""
    parts: list[RenderableType] = []
    for m in inspection.modules if show_all else inspection.main:
        parts.append(Text(f"── {short_name(m.key, 60)}: cost and memory", style="bold"))
        parts.append(_cost_line(inspection.cost(m.key)))
        parts.append(
            _memory_line(inspection.memory.get(m.key), inspection.memory_errors.get(m.key))
        )
        roofs = module_roofline(inspection, m.key, peaks)
        if roofs and peaks is not None:
            parts.extend(_roof_part(roofs, peaks, top))
    return Group(*parts)


def _roof_part(roofs: list[KernelRoof], peaks: Peaks, top: int) -> list[RenderableType]:
    """The kernels that take at least 1% of the measured time, furthest below the roof
    first (tiny kernels are all launch latency and would fill the table)."""
    total = sum(r.execution_us for r in roofs) or 1.0
    big = [r for r in roofs if r.execution_us / total >= MIN_SHARE]
    parts: list[RenderableType] = [_roof_table(big[:top], peaks)]
    above = sum(r.efficiency > 1 for r in roofs)
    if above:
        parts.append(Text(
            f"{above} kernels run above their roof: the roofs are too low for this device "
            "(a CPU probe on a busy machine, or operands served from cache); pass "
            "--peak-bandwidth/--peak-tflops, or delete the probe's cache to measure again",
            style="yellow",
        ))  # fmt: skip
    left = len(roofs) - min(len(big), top)
    if left:
        parts.append(Text(f"… {left} more kernels (under 1% of the time each, or past the "
                          f"first {top}); --json lists all", style="dim"))  # fmt: skip
    return parts


def _cost_line(cost: ModuleCost | None) -> Text:
    if cost is None:
        return Text("cost: no after-optimization module", style="dim")
    t = cost.total
    line = (
        f"cost per execution: {fmt_flops(t.flops)} (+{fmt_flops(t.transcendentals, 'transc.')}),"
        f" {fmt_bytes(t.bytes)} moved ({fmt_bytes(t.bytes_read)} read,"
        f" {fmt_bytes(t.bytes_written)} written), {cost.intensity or 0:.3g} FLOP/B;"
        f" fusion kept {fmt_bytes(cost.kept)} of intermediates out of memory"
    )
    if cost.unknown:
        line += f"; {len(cost.unknown)} library calls of unknown FLOPs"
    return Text(line)


def _memory_line(memory: MemoryReport | None, error: str | None = None) -> Text:
    if error:
        return Text(f"planned memory: {error}", style="yellow")
    if memory is None:
        return Text(f"planned memory: not in the dump ({MISSING_HINT})", style="dim")
    split = ", ".join(
        f"{kind} {fmt_bytes(memory.by_kind[kind])}" for kind in KINDS if memory.by_kind[kind]
    )
    biggest = memory.largest(1)
    tail = ""
    if biggest:
        a = biggest[0]
        names = ", ".join(v.instruction for v in a.values[:3])
        tail = f"; largest {fmt_bytes(a.size)} {a.kind} ({names})"
    return Text(f"planned memory (XLA): peak {fmt_bytes(memory.peak)} ({split}){tail}")


def _roof_table(roofs: list[KernelRoof], peaks: Peaks) -> Table:
    title = (
        f"furthest below the roof ({peaks.name}, {peaks.source}: "
        f"{fmt_flops(peaks.bandwidth, 'B/s')}, {fmt_flops(peaks.flops, 'FLOP/s')}"
        + (f" f32, {fmt_flops(peaks.flops_low, 'FLOP/s')} 16-bit" if peaks.flops_low else "")
        + ")"
    )
    t = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for col in ("kernel", "kind", "time", "FLOP/B", "achieved", "bound", "of roof", "roof"):
        t.add_column(col, justify="left" if col in ("kernel", "kind", "bound") else "right")
    for r in roofs:
        achieved = (
            fmt_flops(r.flops_per_s, "FLOP/s")
            if r.bound == "compute"
            else fmt_flops(r.bandwidth, "B/s")
        )
        t.add_row(
            short_name(r.name, 36), r.kind, fmt_us(r.time_us), f"{r.intensity or 0:.3g}",
            achieved, r.bound, f"{r.efficiency:.1%}", fmt_us(r.roof_us),
        )  # fmt: skip
    return t


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")
