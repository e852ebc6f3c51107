"""Notebook display: what a run, a module and a kernel show in Jupyter.

Functions here take a `Run` or a `ModuleDump` (from `hloscope.load_run` or
`hloscope.inspect`) and return plain tables, lists of the analysis dataclasses, an SVG
diagram object, or HTML; they are attached as methods (`run.summary()`,
`module.graph()`, `_repr_html_`) by the objects that own them. The HTML is the report's
own page (`hloscope.render.html`) inside an iframe, so a notebook shows the same
components as `hloscope report --html`.
"""

from __future__ import annotations

import dataclasses
import html
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hloscope.analysis.fusion import Kernel
from hloscope.analysis.provenance import Placement, SourceOp
from hloscope.analysis.report import ModuleReport, RunReport, analyze_dump, analyze_run
from hloscope.errors import MissingDependencyError, UsageError
from hloscope.hlo.model import Instruction, Shape, SourceLocation
from hloscope.runs import ModuleDump, Run

__all__ = [
    "SVG",
    "graph",
    "kernel_html",
    "kernels",
    "module_html",
    "module_summary",
    "ops",
    "run_html",
    "summary",
    "to_dataframe",
]

RUN_FRAME_HEIGHT = 900
MODULE_FRAME_HEIGHT = 820


@dataclasses.dataclass(frozen=True)
class SVG:
    """An SVG picture that notebooks display inline.

    Attributes:
        data: The SVG document, sanitised (no scripts, no event handlers).
    """

    data: str

    def _repr_svg_(self) -> str:
        return self.data

    def __str__(self) -> str:
        return self.data

    def save(self, path: str | Path) -> Path:
        """Write the SVG to a file and return its path."""
        out = Path(path)
        out.write_text(self.data, encoding="utf-8")
        return out


def summary(run: Run) -> list[dict[str, Any]]:
    """One row per module of a run, biggest first, trivial helper modules last.

    Args:
        run: From `hloscope.load_run` or `hloscope.inspect`.

    Returns:
        Rows with `key`, `name`, `platform`, `trivial`, `instructions_before`,
        `instructions_after`, `ops`, `kernels`, `launches`, `ops_per_kernel`, `alone`
        and `error` (None where a side is missing). Pass them to `to_dataframe` for a
        DataFrame.
    """
    return [_summary_row(m) for m in analyze_run(run).modules]


def module_summary(dump: ModuleDump) -> list[dict[str, Any]]:
    """The one summary row of a module (see `summary`)."""
    return [_summary_row(analyze_dump(dump))]


def _summary_row(m: ModuleReport) -> dict[str, Any]:
    b, a = m.before, m.after
    return {
        "key": m.key,
        "name": m.name,
        "platform": m.platform,
        "trivial": m.trivial,
        "instructions_before": b.instructions if b else None,
        "instructions_after": a.instructions if a else None,
        "ops": b.ops if b else None,
        "kernels": a.kernel_count if a else None,
        "launches": a.launches if a else None,
        "ops_per_kernel": round(m.ops_per_kernel, 2) if m.ops_per_kernel else None,
        "alone": m.alone,
        "error": m.error or None,
    }


def kernels(dump: ModuleDump) -> list[Kernel]:
    """The kernels of a module after optimization, in program order.

    Args:
        dump: One module of a run (`run.module("jit_mlp")`).

    Returns:
        The `Kernel`s (empty without an after-optimization dump).
    """
    m = analyze_dump(dump)
    return list(m.after.kernels) if m.after else []


def ops(dump: ModuleDump) -> list[Placement]:
    """Where each source op of a module went: one `Placement` per op, first seen first.

    Args:
        dump: One module of a run.

    Returns:
        The placements (empty without an after-optimization dump).
    """
    m = analyze_dump(dump)
    return list(m.provenance.placements) if m.provenance else []


def graph(dump: ModuleDump, *, before: bool = False, **options: Any) -> SVG:
    """The module's Graphviz diagram as an SVG that displays inline.

    Args:
        dump: One module of a run.
        before: Draw the ops before optimization (coloured by the kernel each went to)
            instead of the kernels after optimization.
        **options: Passed to `hloscope.render.diagram.kernel_graph` (or `op_graph`):
            `max_nodes`, `expand`, `around`, `depth`, `scope`, `timings`.

    Returns:
        The picture.

    Raises:
        UsageError: The module lacks the dump that side needs, or an option names
            nothing in it.
        MissingDependencyError: The Graphviz `dot` binary is not installed.
    """
    from hloscope.render import diagram, dot
    from hloscope.render.html import sanitize_svg

    m = analyze_dump(dump)
    after = dump.load_after()
    if before:
        module = dump.load_before()
        if module is None:
            raise UsageError(f"{dump.key} has no before-optimization dump to draw")
        kernels_of = (
            diagram.kernels_of_before_ops(module, after, m.provenance, m.after)
            if after is not None and m.provenance is not None
            else {}
        )
        spec = diagram.op_graph(
            module,
            {op: ks[0] for op, ks in kernels_of.items()} or None,
            kernels_of=kernels_of or None,
            **options,
        )
    else:
        if after is None or m.after is None:
            raise UsageError(f"{dump.key} has no after-optimization dump to draw")
        spec = diagram.kernel_graph(after, m.after, m.provenance, **options)
    with tempfile.TemporaryDirectory(prefix="hloscope-graph-") as tmp:
        out = Path(tmp) / "graph.svg"
        dot.render(spec, out, "svg")
        return SVG(sanitize_svg(out.read_text(encoding="utf-8")))


def run_html(run: Run, *, height: int = RUN_FRAME_HEIGHT) -> str:
    """The run's HTML report in an iframe, for `Run._repr_html_`.

    Args:
        run: From `hloscope.load_run` or `hloscope.inspect`.
        height: Height of the frame in pixels (the frame can be resized).

    Returns:
        HTML for a notebook output cell.
    """
    from hloscope.render.html import iframe_html, report_html

    return iframe_html(report_html(analyze_run(run)), height=height)


def module_html(dump: ModuleDump, *, height: int = MODULE_FRAME_HEIGHT) -> str:
    """One module's section of the HTML report in an iframe, for `ModuleDump._repr_html_`.

    Args:
        dump: One module of a run.
        height: Height of the frame in pixels.

    Returns:
        HTML for a notebook output cell.
    """
    from hloscope.render.html import graphviz_diagrams, iframe_html, report_page

    where = dump.after or dump.before
    run = Run(
        path=where if where is not None else Path(dump.key),
        manifest={},
        modules=(dump,),
        dump_dir=where.parent if where is not None else None,
    )
    report = RunReport(run, (analyze_dump(dump),))
    page = report_page(report, diagrams=graphviz_diagrams, title=f"hloscope · {dump.name}")
    return iframe_html(page, height=height)


def kernel_html(kernel: Kernel) -> str:
    """A kernel as a small HTML table (no script), for `Kernel._repr_html_`.

    Args:
        kernel: One kernel from `kernels(dump)`.

    Returns:
        HTML with the kernel's kind, shape, launches, bytes and fused instructions,
        every value escaped.
    """
    e = html.escape
    rows = [
        ("kind", kernel.kind),
        ("class", kernel.cls),
        ("shape", kernel.shape.text),
        ("launches", "–" if kernel.launches is None else str(kernel.launches)),
        ("bytes in / out", f"{kernel.bytes_in:,} / {kernel.bytes_out:,}"),
        ("computation", kernel.computation),
    ]
    if kernel.fused_computation:
        rows.append(("fused computation", kernel.fused_computation))
    head = "".join(
        f'<tr><th style="text-align:left;padding-right:12px">{e(k)}</th>'
        f'<td style="text-align:left;font-family:monospace">{e(v)}</td></tr>'
        for k, v in rows
    )
    shown = kernel.ops[:50]
    fused = "".join(
        f"<tr><td>{e(i.opcode)}</td><td>{e(i.name)}</td><td>{e(i.shape.text)}</td></tr>"
        for i in shown
    )
    more = f"<p>… {len(kernel.ops) - len(shown)} more</p>" if len(kernel.ops) > len(shown) else ""
    return (
        f'<div class="hloscope-kernel"><b style="font-family:monospace">{e(kernel.name)}</b>'
        f"<table>{head}</table>"
        f"<details><summary>{len(kernel.ops)} instructions</summary>"
        f'<table style="font-family:monospace;font-size:12px">{fused}</table>{more}</details>'
        "</div>"
    )


def to_dataframe(rows: Iterable[Any]) -> Any:
    """A pandas DataFrame of rows from `summary`, `kernels` or `ops`.

    Dataclass rows become one column per field; shapes, instructions, source ops and
    locations become their text.

    Raises:
        MissingDependencyError: pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError(
            "to_dataframe needs pandas; install it with `pip install pandas` (the tables "
            "are plain lists of rows without it)"
        ) from None
    return pd.DataFrame([_row(r) for r in rows])


def _row(r: Any) -> dict[str, Any]:
    if isinstance(r, Mapping):
        return {str(k): _cell(v) for k, v in r.items()}
    if dataclasses.is_dataclass(r) and not isinstance(r, type):
        return {f.name: _cell(getattr(r, f.name)) for f in dataclasses.fields(r)}
    return {"value": _cell(r)}


def _cell(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, Shape):
        return v.text
    if isinstance(v, Instruction):
        return v.name
    if isinstance(v, SourceOp):
        return v.label
    if isinstance(v, SourceLocation):
        return str(v)
    if isinstance(v, tuple | list):
        return [_cell(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _cell(x) for k, x in v.items()}
    return str(v)
