"""Result objects -> rich renderables for the terminal.

Functions here build `rich` tables and text from analysis results; they never compute
anything the analyses did not, and never print: the CLI prints what they return.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.provenance import Placement
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.analysis.stats import ModuleStats
from hloscope.inspection import Inspection
from hloscope.render.compilations import compilations_view, run_status_line
from hloscope.render.coverage import cluster_line, coverage_view
from hloscope.render.format import fmt_bytes, fmt_us, short_name, short_names
from hloscope.render.json import run_doc
from hloscope.render.parallel import parallel_lines
from hloscope.render.timing import module_detail
from hloscope.render.torch_xla import torch_xla_text
from hloscope.timing.helpers import folded_time
from hloscope.timing.results import ModuleTiming


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


def _arrow(a: int | None, b: int | None) -> str:
    left = "–" if a is None else str(a)
    right = "–" if b is None else str(b)
    return f"{left}→{right}"


def _launches(a: ModuleAnalysis | None) -> str:
    if a is None:
        return "–"
    return str(a.launches) if a.launches_exact else f"~{a.launches}"


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


def modules_table(
    report: RunReport,
    *,
    show_all: bool = False,
    full_names: bool = False,
    timings: Mapping[str, ModuleTiming] | None = None,
) -> RenderableType:
    """One row per module, biggest first: instructions before → after, ops before →
    kernels after, fusion kernels, launches per execution, and ops per kernel.

    The same table ends `hloscope dump` and starts `hloscope report`. Trivial helper
    modules are folded into one line unless `show_all`; with `timings` (by module key)
    the line says how much of the measured time they hold. Module keys are cut to fit a
    terminal, different keys kept different, unless `full_names` (output to a pipe).
    """
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
    table.add_column(
        "module", no_wrap=True, overflow="ellipsis", max_width=None if full_names else 24
    )
    table.add_column("instructions\nbefore→after", justify="right", no_wrap=True)
    table.add_column("ops→\nkernels", justify="right", no_wrap=True)
    table.add_column("fusions", justify="right", no_wrap=True)
    table.add_column("launches", justify="right", no_wrap=True)
    table.add_column("ops per\nkernel", justify="right", no_wrap=True)
    shown = report.modules if show_all else report.main
    keys = {m.key: m.key for m in shown} if full_names else short_names((m.key for m in shown), 24)
    for m in shown:
        b, a = m.before, m.after
        label = Text(keys[m.key], style="dim" if m.trivial else "")
        if m.error and a is None and b is None:
            table.add_row(label, "[red]unreadable[/red]", "–", "–", "–", "–")
            continue
        table.add_row(
            label,
            _arrow(b.instructions if b else None, a.instructions if a else None),
            _arrow(b.ops if b else None, a.kernel_count if a else None),
            "–" if a is None else str(a.fusions),
            _launches(a),
            f"{m.ops_per_kernel:.1f}" if m.ops_per_kernel else "–",
        )
    hidden = () if show_all else report.trivial
    if not hidden:
        return table
    names = Counter(short_name(m.name, 30) for m in hidden)
    listed = ", ".join(f"{n} ×{c}" if c > 1 else n for n, c in names.most_common(4))
    more = "" if len(names) <= 4 else ", …"
    held = folded_time(report, timings or {})
    measured = f", {fmt_us(held[0])} measured ({100 * held[1]:.1f}% of the time)" if held else ""
    note = Text(
        f"+ {len(hidden)} trivial helper modules ({listed}{more}), "
        f"{sum(m.size for m in hidden)} instructions, "
        f"{sum(m.after.kernel_count for m in hidden if m.after)} kernels{measured}; "
        "--all lists them",
        style="dim",
    )
    return Group(table, note)


def module_heading(m: ModuleReport) -> Text:
    """`name  [module 0030]`: a module's short name and where it is in the run."""
    where = f"module {m.module_id}" if m.module_id is not None else "module"
    return Text.assemble((short_name(m.name, 64), "bold cyan"), (f"  [{where}]", "dim"))


def module_details(m: ModuleReport, *, top: int = 8, full_names: bool = False) -> RenderableType:
    """Kernels by kind, launches, the biggest unfused ops and the busiest source lines;
    names cut to fit a terminal unless `full_names`."""
    parts: list[RenderableType] = [Text.assemble(("\n── ", "dim"), module_heading(m))]
    if m.error:
        parts.append(Text(f"could not read: {m.error}", style="red"))
    a = m.after
    if a is not None:
        kinds = " · ".join(f"{k} {n}" for k, n in a.kernels_by_kind.items())
        parts.append(Text.assemble(("kernels by kind: ", "bold"), kinds or "none"))
        line = f"launches per execution: {_launches(a)}"
        unknown = [lp.name for lp in a.loops if lp.trip_count is None]
        if unknown:
            line += f" (trip count unknown for {', '.join(unknown)}: counted once)"
        if a.branches:
            line += " (conditional: costliest branch counted)"
        parts.append(Text(line))
        parts.extend(parallel_lines(m))
    if m.provenance is not None:
        unfused = m.provenance.unfused()[:top]
        if unfused:
            t = Table(title="biggest unfused ops", title_justify="left", box=None, pad_edge=False)
            t.add_column("source op")
            t.add_column("bytes", justify="right")
            t.add_column("kernel")
            t.add_column("evidence", style="dim")
            labels = (
                {p.op.label: p.op.label for p in unfused}
                if full_names
                else short_names((p.op.label for p in unfused), 50)
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
                title="source lines with the most kernels",
                title_justify="left",
                box=None,
                pad_edge=False,
            )
            t.add_column("line")
            t.add_column("kernels", justify="right")
            for loc, n in lines:
                t.add_row(loc if full_names else short_name(loc, 70), str(n))
            parts.append(t)
    return Group(*parts)


def report_view(
    inspection: Inspection, *, show_all: bool = False, full_names: bool = False
) -> RenderableType:
    """The whole `hloscope report` terminal output.

    Args:
        inspection: The analysed (and, when profiled, timed) run.
        show_all: List the trivial helper modules too.
        full_names: Print names in full (for a pipe) instead of cut to fit a terminal.
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
            )
        )
    parts.append(coverage_view(inspection.xla_coverage, report.modules))
    compiled = compilations_view(inspection.compilations, show_all=show_all)
    if compiled is not None:
        parts.append(compiled)
    if inspection.torch_xla is not None:
        parts.extend(torch_xla_text(inspection.torch_xla))
    for m in report.modules if show_all else report.main:
        parts.append(module_details(m, full_names=full_names))
        cluster = cluster_line(inspection.xla_coverage, m)
        if cluster is not None:
            parts.append(cluster)
        timing = inspection.timing(m.key)
        if timing is not None:
            parts.append(module_detail(short_name(m.key, 60), timing, limit=10))
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


def placement_line(
    p: Placement,
    kinds: dict[str, str],
    width: int = 0,
    names: Mapping[str, str] | None = None,
) -> Text:
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
    status = Text(f"{p.status:<7}", style=_STATUS_STYLE.get(p.status, ""))
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
        rest = f"→ {where}, alone ({fmt_bytes(p.bytes)}): {p.evidence or 'XLA gave no reason'}"
    else:
        rest = p.evidence or "gone after optimization; XLA gave no reason"
    line = Text.assemble((label, "bold"), "  ", status, " ", rest)
    if p.op.location is not None and p.op.user_frame:
        line.append(f"  [{p.op.location}]", style="dim")
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
