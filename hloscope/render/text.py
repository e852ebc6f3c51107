"""Result objects -> rich renderables for the terminal.

Functions here build `rich` tables and text from analysis results; they never compute
anything the analyses did not, and never print: the CLI prints what they return.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Span, Text

from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.provenance import Placement
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.analysis.stats import ModuleStats
from hloscope.inspection import Inspection
from hloscope.render.compilations import compilations_view, run_status_line
from hloscope.render.coverage import cluster_line, coverage_view
from hloscope.render.figures import TABLE, figure_cells, module_figures
from hloscope.render.format import (
    counted,
    fmt_bytes,
    fmt_us,
    printable,
    readable_name,
    short_name,
    short_names,
)
from hloscope.render.holds import KernelHolds
from hloscope.render.json import run_doc
from hloscope.render.parallel import parallel_lines
from hloscope.render.roofline import cost_part
from hloscope.render.timing import module_detail
from hloscope.render.torch_xla import torch_xla_text
from hloscope.timing.helpers import folded_time
from hloscope.timing.results import ModuleTiming
from hloscope.timing.roofline import Peaks


def parse_summary(stats: ModuleStats, *, top_opcodes: int = 12) -> RenderableType:
    """The `hloscope parse` summary: counts, fusions by kind, opcode histogram."""
    fused = sum(1 for c in stats.computations if c.is_fused)
    head = Text.assemble(
        ("HloModule ", "bold"),
        (stats.name, "bold cyan"),
        f"  ({'scheduled, after optimization' if stats.is_scheduled else 'not scheduled'})\n",
        f"{counted(len(stats.computations), 'computation')} ({fused} fused), "
        f"{counted(stats.instructions, 'instruction')}",
    )
    parts: list[RenderableType] = [head]
    if stats.not_understood:
        parts.append(
            Text(
                f"{counted(stats.not_understood, 'piece')} kept verbatim, not understood "
                "(see --strict)",
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


def run_header(report: RunReport) -> Text:
    """One line about the run: path, script, framework and versions, platform, time."""
    doc = run_doc(report.run)
    bits = [str(report.run.path)]
    if doc["script"]:
        bits.append(str(doc["script"]))
    versions = doc["versions"] if isinstance(doc["versions"], dict) else {}
    if doc["framework"]:
        v = versions.get(doc["framework"])
        bits.append(f"{doc['framework']} {v}" if v else str(doc["framework"]))
    if doc["platform"]:
        bits.append(str(doc["platform"]))
    if isinstance(doc["wall_time_s"], int | float):
        bits.append(f"{doc['wall_time_s']:.1f} s")
    return Text.assemble(("run ", "bold"), " · ".join(bits))


# Below this, a terminal's module names are not cut further (the table may then wrap).
_MIN_NAME = 12


def modules_table(
    report: RunReport,
    *,
    show_all: bool = False,
    full_names: bool = False,
    timings: Mapping[str, ModuleTiming] | None = None,
    width: int | None = None,
) -> RenderableType:
    """One row per module, biggest first, with the figures of `render.figures.TABLE`:
    instructions before → after, HLO ops before → kernels after, fusions, launches per
    execution, HLO ops per kernel, ops and ops alone.

    The same table ends `hloscope dump` and starts `hloscope report`. Trivial helper
    modules are folded into one line unless `show_all`; with `timings` (by module key)
    the line says how much of the measured time they hold. Names lose TensorFlow's
    mangling (`readable_name`); on a terminal `width` columns wide they are cut to fit
    the table in it, different names kept different, unless `full_names` (a pipe).
    """
    shown = report.modules if show_all else report.main
    rows = {m.key: figure_cells(module_figures(m)) for m in shown}
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
    table.add_column("module", no_wrap=True, overflow="ellipsis")
    for header, _ in TABLE:
        table.add_column(header, justify="right", no_wrap=True)
    keys = [m.key for m in shown]
    if full_names or width is None:
        names = {k: readable_name(k) for k in keys}
    else:
        used = sum(  # each column: its widest line of header or cell, and the gap before it
            2 + max([*map(len, h.split("\n")), *(len(r[i][1]) for r in rows.values())])
            for i, (h, _) in enumerate(TABLE)
        )
        names = _cut(keys, max(_MIN_NAME, width - used - 1))
    for m in shown:
        label = Text(names[m.key], style="dim" if m.trivial else "")
        if m.error and m.after is None and m.before is None:
            table.add_row(label, "[red]unreadable[/red]", *["–"] * (len(TABLE) - 1))
            continue
        table.add_row(label, *(text for _, text in rows[m.key]))
    hidden = () if show_all else report.trivial
    if not hidden:
        return table
    helpers = Counter(short_name(m.name, 30) for m in hidden)
    listed = ", ".join(f"{n} ×{c}" if c > 1 else n for n, c in helpers.most_common(4))
    more = "" if len(helpers) <= 4 else ", …"
    held = folded_time(report, timings or {})
    measured = f", {fmt_us(held[0])} measured ({100 * held[1]:.1f}% of the time)" if held else ""
    kernels = sum(m.after.kernel_count for m in hidden if m.after)
    note = Text(
        f"+ {counted(len(hidden), 'trivial helper module')}: {listed}{more}\n  "
        f"{counted(sum(m.size for m in hidden), 'instruction')}, "
        f"{counted(kernels, 'kernel')}{measured}; --all lists them",
        style="dim",
    )
    return Group(table, note)


def _cut(names: Iterable[str], width: int) -> dict[str, str]:
    """`short_names` of names as the terminal shows them (control characters escaped,
    `printable`), so that what is cut to `width` takes `width` cells."""
    shown = {n: printable(n) for n in names}
    cut = short_names(shown.values(), width)
    return {n: cut[s] for n, s in shown.items()}


def module_heading(m: ModuleReport) -> Text:
    """`name  [module 0030]`: a module's name (TensorFlow's mangling dropped) and where
    it is in the run."""
    where = f"module {m.module_id}" if m.module_id is not None else "module"
    return Text.assemble((short_name(m.name, 64), "bold cyan"), (f"  [{where}]", "dim"))


def _label(word: str) -> tuple[str, str]:
    """The start of each block of a module's section: one style for all."""
    return (word, "bold")


def _counts(m: ModuleReport, width: int) -> list[Text]:
    """A module's headline figures (`render.figures`), as `label value` cells on lines
    no wider than `width`."""
    figures = module_figures(m)
    cells = [  # a cell of one figure reads with that figure's label
        f"{figures[names[0]].label if len(names) == 1 else header} {text}"
        for (header, text), (_, names) in zip(figure_cells(figures), TABLE, strict=True)
    ]
    lines: list[str] = []
    for cell in cells:
        if lines and len(lines[-1]) + 3 + len(cell) <= width:
            lines[-1] += " · " + cell
        else:
            lines.append(cell)
    return [Text(line) for line in lines]


def _loops(a: ModuleAnalysis) -> list[Text]:
    """The while loops the walk met, with their trip counts, and the conditionals."""
    out = []
    if a.loops:
        loops = ", ".join(
            f"{lp.name} ×{lp.trip_count}"
            if lp.trip_count is not None
            else f"{lp.name} (trip count unknown: its body counted once)"
            for lp in a.loops
        )
        out.append(Text.assemble(_label("loops"), f" (body runs × trip count): {loops}"))
    if a.branches:
        conds = Counter(b.conditional for b in a.branches)
        listed = ", ".join(f"{c} ({counted(n, 'branch')})" for c, n in conds.items())
        out.append(Text.assemble(_label("conditionals"), f": {listed}; the costliest counted"))
    return out


def module_details(
    m: ModuleReport, *, top: int = 8, full_names: bool = False, width: int = 100
) -> RenderableType:
    """The fusion part of a module's section: its heading, counts, kernels by kind,
    loops, devices, the biggest unfused ops and the busiest source lines; names cut to
    fit a terminal unless `full_names`."""
    parts: list[RenderableType] = [Text.assemble(("\n── ", "dim"), module_heading(m))]
    if m.error:
        parts.append(Text(f"could not read: {m.error}", style="red"))
    parts.extend(_counts(m, width))
    a = m.after
    if a is not None:
        kinds = " · ".join(f"{k} {n}" for k, n in a.kernels_by_kind.items())
        parts.append(Text.assemble(_label("kernels by kind"), ": ", kinds or "none"))
        parts.extend(_loops(a))
        parts.extend(parallel_lines(m))
    if m.provenance is not None:
        unfused = m.provenance.unfused()[:top]
        if unfused:
            t = Table(
                title=Text.assemble(_label("biggest unfused ops"), " (ops alone, by bytes moved)"),
                title_justify="left",
                title_style="",
                box=None,
                pad_edge=False,
            )
            t.add_column("op", no_wrap=True, overflow="ellipsis")
            t.add_column("bytes", justify="right", no_wrap=True)
            t.add_column("kernel")
            t.add_column("evidence", style="dim")
            labels = (
                {p.op.label: p.op.label for p in unfused}
                if full_names
                else _cut((p.op.label for p in unfused), min(50, width * 2 // 5))
            )
            for p in unfused:
                t.add_row(
                    labels[p.op.label],
                    fmt_bytes(p.bytes),
                    ", ".join(p.kernels),
                    p.evidence or "XLA gave no reason",
                )
            parts.append(t)
        lines = list(m.provenance.kernels_by_line.items())[:5]
        if lines:
            t = Table(
                title=Text.assemble(_label("source lines with the most kernels")),
                title_justify="left",
                title_style="",
                box=None,
                pad_edge=False,
            )
            t.add_column("line")
            t.add_column("kernels", justify="right")
            for loc, n in lines:
                t.add_row(loc if full_names else short_name(loc, 70), str(n))
            parts.append(t)
    return Group(*parts)


def module_section(
    inspection: Inspection,
    m: ModuleReport,
    *,
    peaks: Peaks | None = None,
    full_names: bool = False,
    width: int = 100,
) -> RenderableType:
    """One module of `hloscope report`, in a fixed order under one heading: counts,
    kernels by kind, loops, devices, unfused ops, source lines, XLA clustering, timing,
    cost, memory and roofline."""
    holds = KernelHolds(m)  # each kernel's words found as it is printed
    parts: list[RenderableType] = [module_details(m, full_names=full_names, width=width)]
    cluster = cluster_line(inspection.xla_coverage, m)
    if cluster is not None:
        parts.append(cluster)
    timing = inspection.timing(m.key)
    fit = None if full_names else width  # piped: whole names
    if timing is not None:
        parts.append(module_detail(m.key, timing, limit=10, holds=holds, heading=False, width=fit))
    parts.extend(
        cost_part(
            inspection.cost(m.key),
            inspection.memory.get(m.key),
            inspection.roofline(m.key, peaks),
            peaks,
            holds=holds,
            width=fit,
            memory_error=inspection.memory_errors.get(m.key),
        )
    )
    return Group(*parts)


def report_view(
    inspection: Inspection,
    *,
    show_all: bool = False,
    full_names: bool = False,
    peaks: Peaks | None = None,
    width: int = 100,
) -> RenderableType:
    """The whole `hloscope report` terminal output: the run, the modules table, XLA's
    coverage of TensorFlow's ops, the recompiled functions, then one section per module.

    Args:
        inspection: The analysed (and, when profiled, timed) run.
        show_all: List the trivial helper modules too.
        full_names: Print names in full (for a pipe) instead of cut to fit a terminal.
        peaks: The device's roofs, for each module's roofline (None: no roofline).
        width: The terminal's width, which tables and lines are fitted to.
    """
    report = inspection.report
    parts: list[RenderableType] = [run_header(report)]
    status = run_status_line(report.run.manifest, len(report.run.modules))
    if status is not None:  # a failed run says so before whatever it dumped
        parts.append(status)
    if report.modules:
        parts.append(
            modules_table(
                report,
                show_all=show_all,
                full_names=full_names,
                timings=inspection.module_timings,
                width=width,
            )
        )
    parts.append(coverage_view(inspection.xla_coverage, report.modules))
    compiled = compilations_view(inspection.compilations, show_all=show_all)
    if compiled is not None:
        parts.append(compiled)
    if inspection.torch_xla is not None:
        parts.extend(torch_xla_text(inspection.torch_xla))
    for m in report.modules if show_all else report.main:
        parts.append(module_section(inspection, m, peaks=peaks, full_names=full_names, width=width))
    return Group(*parts)


_STATUS_STYLE = {
    "fused": "green",
    "alone": "yellow",
    "folded": "cyan",
    "dead": "cyan",
    "free": "cyan",
    "merged": "cyan",
    "removed": "magenta",
}


class Line(NamedTuple):
    """A line of styled pieces, `(text, style)` as `Text.assemble` takes them, made into
    a rich `Text` only where it is laid out (`text()`): piped, a line's `plain`
    characters are what prints, and `hloscope ops` prints 300k of them."""

    pieces: list[tuple[str, str]]

    @property
    def plain(self) -> str:
        """The line's characters, as its `Text` holds them when `strippable` is False."""
        return "".join([text for text, _ in self.pieces])

    def text(self) -> Text:
        """`Text.assemble(*pieces)`, the same text and styles, made at once: rich's own
        strips control codes from each piece; here the whole line is checked once, and
        a line holding one is left to rich."""
        plain = self.plain
        if strippable(plain):
            return Text.assemble(*self.pieces)
        spans, at = [], 0
        for text, style in self.pieces:
            if style and text:
                spans.append(Span(at, at + len(text), style))
            at += len(text)
        return Text(plain, spans=spans)

    def append(self, text: str, style: str = "") -> None:
        """Add a piece at the end, as `Text.append` does."""
        self.pieces.append((text, style))


def strippable(text: str) -> bool:
    """Whether rich's `Text` would remove characters of `text`
    (`rich.control.strip_control_codes`)."""
    return _RICH_STRIPS.search(text) is not None


_RICH_STRIPS = re.compile("[\x07\x08\x0b\x0c\x0d]")


def as_printed(line: Text | Line, width: int) -> str | None:
    """A line's characters, if a console `width` wide prints them as they are and a
    newline: no controls its `Text` strips, no tab to expand, no end, justification or
    overflow of its own, narrower than `width`. Else None."""
    if type(line) is Line:
        plain = line.plain
        if strippable(plain):
            return None
    elif type(line) is Text:
        plain = line.plain
        if line.end != "\n" or line.justify or line.overflow or line.no_wrap:
            return None
    else:
        return None
    return plain if "\t" not in plain and len(plain) < width else None


def placement_line(
    p: Placement,
    kinds: dict[str, str],
    width: int = 0,
    names: Mapping[str, str] | None = None,
) -> Line:
    """`hloscope ops`: one line per source op saying where it went.

    Args:
        p: The source op's placement.
        kinds: Kernel name -> kind, for the kernels it names.
        width: Pad the op's label to this many characters (to line up a list).
        names: Full name -> name to print (`format.short_names`); absent names print in
            full (what `hloscope ops` does when its output is not a terminal).
    """
    names = names or {}
    label = names.get(p.op.label, p.op.label).ljust(width)
    status = f"{p.status:<7}"
    where = ", ".join(
        [f"{k} [{kinds.get(k, '?')}]" for k in p.kernels]
        + [f"{k} [{kinds.get(k, '?')}, inferred]" for k, _ in p.inferred]
    )
    if p.status == "fused":
        others = ", ".join(names.get(o, o) for o in p.shares_with[:4])
        more = f" +{len(p.shares_with) - 4} more" if len(p.shares_with) > 4 else ""
        rest = f"→ {where} with {others}{more}"
        if not p.kernels:
            rest += f" ({p.evidence})"
    elif p.status == "alone":
        into = f" in {len(p.kernels)} kernels" if len(p.kernels) > 1 else ""
        why = p.evidence or "XLA gave no reason"
        rest = f"→ {where}, alone{into} ({fmt_bytes(p.bytes)}): {why}"
    else:
        rest = p.evidence or "gone after optimization; XLA gave no reason"
    style = _STATUS_STYLE.get(p.status, "")
    pieces = [(label, "bold"), ("  ", ""), (status, style), (" ", ""), (rest, "")]
    if p.op.location is not None and p.op.user_frame:
        pieces.append((f"  [{p.op.location}]", "dim"))
    return Line(pieces)


def kernel_line(m: ModuleReport, name: str) -> Text:
    """`hloscope ops --kernel`: a kernel's kind and launches, its HLO ops by opcode, and
    the source ops whose work it does (or those inferred for it)."""
    assert m.after is not None
    k = next(k for k in m.after.kernels if k.name == name)
    opcodes = Counter(k.opcodes)
    listed = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in opcodes.most_common(8))
    more = ", …" if len(opcodes) > 8 else ""
    launches = "?" if k.launches is None else str(k.launches)
    prov = m.provenance
    held = len(prov.kernel_ops.get(name, ())) if prov is not None else 0
    line = Text.assemble(
        (k.name, "bold"),
        f" [{k.kind}]: {counted(held, 'op')}, {counted(k.instruction_count, 'HLO op')}",
        f" ({listed}{more})" if listed else "",
        f"; launches per execution {launches}",
    )
    inferred = prov.inferred.get(name) if prov is not None else None
    if not held and inferred is not None:
        line.append(f"\nit does no op's work; the ops below are inferred from {inferred.how}")
    return line


def no_user_frames(placements: Iterable[Placement]) -> Text | None:
    """A note when none of the ops has a source line in the user's code, saying what the
    dump records instead (TensorFlow: its own `ops.py` for every op); else None."""
    placements = list(placements)
    if not placements or any(p.op.user_frame for p in placements):
        return None
    recorded = sorted({str(p.op.location) for p in placements if p.op.location})
    where = f" (only {', '.join(recorded[:2])})" if recorded else ""
    return Text(f"the dump records no source line in your code for these ops{where}", style="dim")


PLACEMENT_COLUMNS = (
    "module",
    "op",
    "type",
    "status",
    "kernels",
    "inferred_kernels",
    "shares_with",
    "bytes",
    "location",
    "user_frame",
    "evidence",
)
"""The columns of `hloscope ops --format tsv`, in order."""


def placement_row(module: str, p: Placement, kinds: dict[str, str]) -> list[str]:
    """One `hloscope ops --format tsv` row (see `PLACEMENT_COLUMNS`); lists are
    comma-separated, kernels as `name[kind]`."""
    return [
        module,
        p.op.name,
        p.op.type or "",
        p.status,
        ",".join(f"{k}[{kinds.get(k, '?')}]" for k in p.kernels),
        ",".join(f"{k}[{kinds.get(k, '?')}]" for k, _ in p.inferred),
        ",".join(p.shares_with),
        str(p.bytes),
        str(p.op.location) if p.op.location else "",
        "yes" if p.op.user_frame else "no",
        p.evidence,
    ]


MODULE_COLUMNS = (
    "module",
    "name",
    "instructions_before",
    "instructions_after",
    "ops_before",
    "kernels_after",
    "fusions",
    "launches",
    "launches_exact",
    "ops_per_kernel",
    "trivial",
)
"""The columns of `hloscope report --format tsv`, in order."""


def module_row(m: ModuleReport) -> list[str]:
    """One `hloscope report --format tsv` row (see `MODULE_COLUMNS`); missing values
    are empty."""
    b, a = m.before, m.after

    def num(x: object) -> str:
        return "" if x is None else str(x)

    return [
        m.key,
        m.name,
        num(b.instructions if b else None),
        num(a.instructions if a else None),
        num(b.ops if b else None),
        num(a.kernel_count if a else None),
        num(a.fusions if a else None),
        num(a.launches if a else None),
        num(a.launches_exact if a else None).lower(),
        f"{m.ops_per_kernel:.3f}" if m.ops_per_kernel else "",
        str(m.trivial).lower(),
    ]


def tsv(header: Iterable[str], rows: Iterable[list[str]]) -> str:
    """Tab-separated lines with a header line: one record per line, for grep, cut and
    spreadsheets. Tabs and line breaks inside a value become spaces."""

    def clean(value: str) -> str:
        return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")

    lines = ["\t".join(header)]
    lines.extend("\t".join(clean(v) for v in row) for row in rows)
    return "\n".join(lines) + "\n"
