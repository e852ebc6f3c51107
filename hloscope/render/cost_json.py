"""Cost, planned memory and roofline -> the JSON documents of `report --json`.

`cost_doc`, `memory_doc` and `roofline_doc` are a module's `cost`, `memory` and
`roofline` objects (README.md, "JSON"); the terminal lines of the same results are
`render.roofline`, the roofline itself is computed by `Inspection.roofline`.
"""

from __future__ import annotations

from typing import Any

from hloscope.analysis.cost import ModuleCost
from hloscope.analysis.memory import MISSING_HINT, MemoryReport
from hloscope.timing.roofline import KernelRoof, Peaks

__all__ = ["cost_doc", "memory_doc", "roofline_doc"]


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


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")
