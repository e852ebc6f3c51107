"""A module's headline figures: each computed by one function, labelled and printed once.

The terminal report, the HTML page and the notebook (`RunView.summary`) take a module's
counts and times from `module_figures`, and `report --json` holds the same values at the
places `Figure.json` names, so no view can print its own rounding or its own word for a
figure. The words are those of `render.glossary`, which `--help` and the README print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.analysis.report import ModuleReport
from hloscope.render.format import DASH, fmt_us
from hloscope.timing.results import ModuleTiming

__all__ = [
    "FIGURES",
    "TABLE",
    "Figure",
    "figure_cells",
    "figure_line",
    "module_figures",
    "one_line",
]


@dataclass(frozen=True)
class Figure:
    """One headline figure of a module, as every view shows it.

    Attributes:
        name: Its key in `RunView.summary()` rows.
        label: The words every view labels it with.
        value: The number (None when the module has no such figure).
        text: How every view prints it (`–` when missing; `~12` for launches counted
            with a loop of unknown trip count).
        json: Where `report --json` holds `value` in the module's object.
    """

    name: str
    label: str
    value: int | float | None
    text: str
    json: tuple[str, ...]


# name -> (label, where report --json holds it)
FIGURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "instructions_before": ("instructions before", ("before", "instructions")),
    "instructions_after": ("instructions after", ("after", "instructions")),
    "hlo_ops": ("HLO ops before", ("before", "ops")),
    "kernels": ("kernels", ("after", "kernels")),
    "fusions": ("fusions", ("after", "fusions")),
    "launches": ("launches per execution", ("after", "launches")),
    "ops_per_kernel": ("HLO ops per kernel", ("ops_per_kernel",)),
    "source_ops": ("ops", ("source_ops",)),
    "alone": ("ops alone", ("alone",)),
    "executions": ("executions profiled", ("timing", "executions")),
    "wall_per_execution": ("wall per execution", ("timing", "mean_us")),
    "kernel_time_per_execution": (
        "kernel time per execution",
        ("timing", "kernel_us_per_execution"),
    ),
}
"""Every figure: its label and where `report --json` holds it."""

TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("instructions\nbefore→after", ("instructions_before", "instructions_after")),
    ("HLO ops→\nkernels", ("hlo_ops", "kernels")),
    ("fusions", ("fusions",)),
    ("launches", ("launches",)),
    ("HLO ops\nper kernel", ("ops_per_kernel",)),
    ("ops", ("source_ops",)),
    ("ops\nalone", ("alone",)),
)
"""The columns of the modules table (terminal and HTML): a header, with the line break a
terminal's narrow column takes, and the figures each cell shows (two joined by `→`).
Launches, unmarked, are per execution (`GLOSSARY`)."""


def one_line(header: str) -> str:
    """A `TABLE` header on one line: `HLO ops→kernels`, `launches per execution`."""
    return header.replace("→\n", "→").replace("\n", " ")


def _count(n: int | None) -> str:
    return DASH if n is None else str(n)


def module_figures(m: ModuleReport, timing: ModuleTiming | None = None) -> dict[str, Figure]:
    """Every headline figure of one module, by name (see `FIGURES`).

    Args:
        m: The module's report.
        timing: Its measured times, when the run was profiled; the timed figures
            (executions, wall and kernel time per execution) are left out without them.

    Returns:
        Figure name -> figure, in `FIGURES` order.
    """
    b, a = m.before, m.after
    ratio = m.ops_per_kernel
    values: dict[str, tuple[int | float | None, str]] = {
        "instructions_before": (b.instructions if b else None, ""),
        "instructions_after": (a.instructions if a else None, ""),
        "hlo_ops": (b.ops if b else None, ""),
        "kernels": (a.kernel_count if a else None, ""),
        "fusions": (a.fusions if a else None, ""),
        "launches": (
            a.launches if a else None,
            "" if a is None or a.launches_exact else f"~{a.launches}",
        ),
        "ops_per_kernel": (
            round(ratio, 3) if ratio else None,
            f"{ratio:.1f}" if ratio else DASH,
        ),
        "source_ops": (m.source_ops, ""),
        "alone": (m.alone, ""),
    }
    if timing is not None:
        values["executions"] = (timing.executions, "")
        values["wall_per_execution"] = (timing.mean_us, fmt_us(timing.mean_us))
        per = timing.kernel_us_per_execution
        values["kernel_time_per_execution"] = (per, fmt_us(per))
    several = timing is not None and timing.device_count > 1
    return {
        name: Figure(
            name,
            _label(name, several),
            value,
            text or (_count(value) if not isinstance(value, float) else str(value)),
            FIGURES[name][1],
        )
        for name, (value, text) in values.items()
    }


def _label(name: str, several: bool) -> str:
    """A figure's label; a timed one of a module on several devices says it is one
    device's (`GLOSSARY`: per device)."""
    label = FIGURES[name][0]
    if not several or name not in _TIMED:
        return label
    return label + " per device" if name == "executions" else label + " (per device)"


_TIMED = ("executions", "wall_per_execution", "kernel_time_per_execution")


def figure_cells(figures: dict[str, Figure]) -> list[tuple[str, str]]:
    """The modules table's cells of one module: `(header, text)` per `TABLE` column."""
    return [(one_line(h), "→".join(figures[n].text for n in names)) for h, names in TABLE]


def figure_line(figures: dict[str, Figure], names: Sequence[str]) -> str:
    """`label text · label text`: figures in a sentence-free line, in the order given."""
    return " · ".join(f"{figures[n].label} {figures[n].text}" for n in names if n in figures)
