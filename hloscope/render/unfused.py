"""Fusion on vs off, side by side: what `hloscope dump --compare-unfused` prints.

A pure function of two inspections (the default run and the run with XLA's fusion passes
disabled, see `hloscope.capture.compare`): per module present in both, kernels, launches
per execution, bytes moved (`hloscope.analysis.cost`), XLA's planned peak memory and,
when both runs were profiled, kernel time per execution.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from hloscope.analysis.report import ModuleReport
from hloscope.inspection import Inspection
from hloscope.render.format import DASH, fmt_bytes, fmt_count, fmt_us, short_name

__all__ = ["unfused_doc", "unfused_table"]

ROWS = ("kernels", "launches", "bytes_moved", "peak_memory", "kernel_us")
_LABELS = {
    "kernels": "kernels",
    "launches": "launches per execution",
    "bytes_moved": "bytes moved per execution",
    "peak_memory": "peak planned memory",
    "kernel_us": "kernel time per execution",
}


def _figures(inspection: Inspection, m: ModuleReport) -> dict[str, float | None]:
    cost = inspection.cost(m.key)
    memory = inspection.memory.get(m.key)
    times = inspection.kernel_times(m.key)
    return {
        "kernels": m.after.kernel_count if m.after else None,
        "launches": m.after.launches if m.after else None,
        "bytes_moved": cost.total.bytes if cost else None,
        "peak_memory": memory.peak if memory is not None else None,
        "kernel_us": sum(times.values()) if times else None,
    }


def _pairs(fused: Inspection, unfused: Inspection) -> list[tuple[ModuleReport, ModuleReport]]:
    others = {m.name: m for m in unfused.main}
    return [(m, others[m.name]) for m in fused.main if m.name in others]


def unfused_doc(fused: Inspection, unfused: Inspection) -> dict[str, Any]:
    """`{"fused": path, "unfused": path, "modules": [{name, fused: {...}, unfused: {...},
    ratio: {...}}]}`; ratio = unfused / fused per figure (None where either is missing)."""
    modules = []
    for a, b in _pairs(fused, unfused):
        fa, fb = _figures(fused, a), _figures(unfused, b)
        ratio = {k: (fb[k] / fa[k] if fa[k] and fb[k] is not None else None) for k in ROWS}  # type: ignore[operator]
        modules.append({"name": a.name, "fused": fa, "unfused": fb, "ratio": ratio})
    return {"fused": str(fused.run.path), "unfused": str(unfused.run.path), "modules": modules}


def unfused_table(fused: Inspection, unfused: Inspection) -> Table:
    """One table: a row per figure and module, fused | unfused | unfused/fused."""
    t = Table(title="fusion on vs off (XLA's fusion passes disabled)", title_justify="left")
    for col, just in (("module", "left"), ("", "left"), ("fused", "right"),
                      ("unfused", "right"), ("unfused/fused", "right")):  # fmt: skip
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for m in unfused_doc(fused, unfused)["modules"]:
        for i, key in enumerate(ROWS):
            a, b, r = m["fused"][key], m["unfused"][key], m["ratio"][key]
            t.add_row(
                short_name(m["name"], 28) if i == 0 else "", _LABELS[key],
                _fmt(key, a), _fmt(key, b), DASH if r is None else f"{r:.2f}×",
            )  # fmt: skip
    return t


def _fmt(key: str, value: float | None) -> str:
    if key in ("bytes_moved", "peak_memory"):
        return fmt_bytes(value)
    if key == "kernel_us":
        return fmt_us(value)
    return fmt_count(value)
