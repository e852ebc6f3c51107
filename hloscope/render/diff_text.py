"""Run diffs -> rich renderables for the terminal (`hloscope diff`, `hloscope check`).

Builds tables from `hloscope.analysis.diff` results (and `analysis.budget` lines): per matched module, the counts A
vs B with deltas, the kernels that split, merged, appeared, disappeared or changed kind
(matched by source ops, biggest impact first), and the source ops that stopped or
started fusing. Nothing here computes a result or prints.
"""

from __future__ import annotations

from collections import Counter

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis import diff as D
from hloscope.analysis.budget import Budget
from hloscope.analysis.diff import KernelChange, KernelRef, ModuleDiff, OpChange, RunDiff
from hloscope.analysis.match import normalise_module_name
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.render.format import fmt_bytes, readable_name, short_name
from hloscope.render.text import run_header

METRIC_LABELS = {
    # how the terminal and the HTML diff name each metric (`hloscope --help`'s words)
    D.INSTRUCTIONS_BEFORE: "instructions before opt.",
    D.INSTRUCTIONS: "instructions after opt.",
    D.KERNELS: "kernels",
    D.LAUNCHES: "launches per execution",
    D.OPS_PER_KERNEL: "HLO ops per kernel",
    D.ALONE_OPS: "ops alone",
    D.TIME_US: "kernel time per execution (µs)",
}

_CHANGE_STYLE = {
    D.SPLIT: "yellow",
    D.REGROUPED: "yellow",
    D.APPEARED: "yellow",
    D.MERGED: "green",
    D.DISAPPEARED: "green",
    D.KIND_CHANGED: "magenta",
    D.OPS_CHANGED: "magenta",
    D.SAME: "dim",
}


def fmt_value(value: float | None, metric: str = "") -> str:
    """A metric value for a table cell: `–` when missing, one decimal for ratios."""
    if value is None:
        return "–"
    if metric == D.OPS_PER_KERNEL:
        return f"{value:.1f}"
    if metric == D.TIME_US:
        return f"{value:,.1f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def fmt_delta(m: D.Metric) -> Text:
    """`+41 (+372.7%)`, red when B is worse, green when better, dim when equal."""
    delta = m.delta
    if delta is None:
        return Text("–", style="dim")
    if abs(delta) < 1e-9:
        return Text("=", style="dim")
    digits = ".1f" if m.name in (D.OPS_PER_KERNEL, D.TIME_US) else ",.0f"
    text = f"{delta:+{digits}}"
    if m.relative is not None:
        text += f" ({m.relative:+.1%})"
    style = ""
    if m.worse is not None:
        worse = (delta > 0) == (m.worse == "higher")
        style = "red" if worse else "green"
    return Text(text, style=style)


def source_ops_summary(names: tuple[str, ...], width: int | None = None) -> str:
    """`jit(f)/layer0/{add, mul}, jit(f)/layer1/{add, mul}`: op names with each common
    scope said once, cut to `width` characters when given."""
    if not names:
        return "(no source op)"
    scopes: dict[str, list[str]] = {}
    for n in names:
        head, _, leaf = n.rpartition("/")
        scopes.setdefault(head, []).append(leaf)
    parts = []
    for head, leaves in scopes.items():
        if not head:
            parts.extend(leaves)
        elif len(leaves) == 1:
            parts.append(f"{head}/{leaves[0]}")
        else:
            parts.append(f"{head}/{{{', '.join(leaves)}}}")
    text = ", ".join(parts)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def kernel_list(refs: tuple[KernelRef, ...], limit: int = 8) -> str:
    """`a, b, c, … +5 more`: kernel names, at most `limit` of them."""
    names = [r.name for r in refs[:limit]]
    more = f", … +{len(refs) - limit} more" if len(refs) > limit else ""
    return ", ".join(names) + more


def kernels_summary(refs: tuple[KernelRef, ...]) -> str:
    """`fusion.3 [kLoop]`, or `11 kernels [kLoop ×11]`; `–` for none."""
    if not refs:
        return "–"
    if len(refs) == 1:
        return f"{refs[0].name} [{refs[0].kind}]"
    kinds = sorted({r.kind for r in refs})
    kind = ", ".join(f"{k} ×{sum(1 for r in refs if r.kind == k)}" for k in kinds)
    return f"{len(refs)} kernels [{kind}]"


def _module_title(d: ModuleDiff, note: str = "") -> Text:
    how = "" if d.matched_by == "name" else f"  (matched by {d.matched_by})"
    name = short_name(d.a.name, 60)
    if normalise_module_name(d.a.name) != normalise_module_name(d.b.name):
        name += f" ↔ {short_name(d.b.name, 40)}"
    label = " -> ".join(short_name(k, 40) for k in dict.fromkeys((d.a.key, d.b.key)))
    title = Text.assemble(("\n── ", "dim"), (name, "bold cyan"), (f"  [{label}]{how}", "dim"))
    if note:
        title.append(f"  {note}", style="green")
    return title


def metrics_table(d: ModuleDiff) -> Table:
    """Counts A vs B with deltas, then kernels per kind."""
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    t.add_column("")
    t.add_column("A", justify="right")
    t.add_column("B", justify="right")
    t.add_column("B − A", justify="right")
    for m in d.metrics:
        if m.name == D.TIME_US and not d.profiled:
            continue
        t.add_row(
            METRIC_LABELS.get(m.name, m.name),
            fmt_value(m.a, m.name),
            fmt_value(m.b, m.name),
            fmt_delta(m),
        )
    for kind, a, b in d.kinds:
        delta = Text("=", style="dim") if a == b else Text(f"{b - a:+d}")
        t.add_row(Text(f"  {kind}", style="dim"), str(a), str(b), delta)
    return t


def kernel_change_row(k: KernelChange, profiled: bool) -> tuple[Text, Text]:
    """One kernel group as `(change, details)`: A → B with their cost, the source ops,
    and the kernel names of a side with several."""
    details = Text.assemble(
        kernels_summary(k.a), " → ", kernels_summary(k.b), (f"   {_cost(k, profiled)}", "dim")
    )
    details.append(f"\nsource ops: {_ops_text(k)}", style="dim")
    for side, refs in (("A", k.a), ("B", k.b)):
        if len(refs) > 1:
            details.append(f"\n{side}: {kernel_list(refs)}", style="dim")
    return Text(k.change, style=_CHANGE_STYLE.get(k.change, "")), details


def kernel_changes_view(d: ModuleDiff, *, top: int = 12) -> RenderableType:
    """Changed kernel groups, biggest impact first (and, when profiled, the matched
    kernels whose time moved most)."""
    changed = list(d.changed_kernels)
    same = [k for k in d.kernels if not k.changed]
    if not changed and not (d.profiled and any(k.impact > 0 for k in same)):
        return Text(f"kernels: no change ({len(same)} matched by source ops)", style="green")
    basis = "time" if d.profiled else "bytes moved"
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=11)
    grid.add_column(ratio=1)
    for k in changed[:top]:
        grid.add_row(*kernel_change_row(k, d.profiled))
    if d.profiled:
        moved = [k for k in sorted(same, key=lambda k: -k.impact) if k.impact > 0][:5]
        for k in moved:
            grid.add_row(Text(k.change, style="dim"), _same_details(k))
    parts: list[RenderableType] = [
        Text.assemble(
            ("kernel changes", "bold"),
            f" by {basis}: {len(changed)} changed, {len(same)} matched unchanged",
        ),
        grid,
    ]
    if len(changed) > top:
        parts.append(Text(f"… {len(changed) - top} more changed groups (--json)", style="dim"))
    return Group(*parts)


def _same_details(k: KernelChange) -> Text:
    a, b = kernels_summary(k.a), kernels_summary(k.b)
    return Text.assemble(a if a == b else f"{a} → {b}", (f"   {_cost(k, True)}", "dim"))


def _cost(k: KernelChange, profiled: bool) -> str:
    if profiled and k.time_delta is not None:
        ta = (k.time_a or 0.0) if k.a else 0.0
        tb = (k.time_b or 0.0) if k.b else 0.0
        return f"{ta:,.1f} → {tb:,.1f} µs ({k.time_delta:+,.1f})"
    return f"{fmt_bytes(k.bytes_a)} → {fmt_bytes(k.bytes_b)}"


def _ops_text(k: KernelChange) -> str:
    text = source_ops_summary(k.source_ops)
    if not k.source_ops and (k.a or k.b):
        ref = (k.b or k.a)[0]
        text = f"none ({', '.join(dict.fromkeys(ref.ops)) or '?'} {ref.shape})"
    if k.ops_only_a:
        text += f"; A only: {', '.join(k.ops_only_a)}"
    if k.ops_only_b:
        text += f"; B only: {', '.join(k.ops_only_b)}"
    return text


def op_changes_view(d: ModuleDiff) -> RenderableType | None:
    """Source ops whose placement changed, grouped by change: fused → alone first."""
    if not d.ops:
        return None
    groups: dict[tuple[str, str], list[OpChange]] = {}
    for o in d.ops:
        groups.setdefault((o.status_a or "absent", o.status_b or "absent"), []).append(o)
    parts: list[RenderableType] = [Text("source ops whose placement changed", style="bold")]
    for (sa, sb), ops in groups.items():
        style = _op_style(ops[0])
        parts.append(
            Text.assemble(
                (f"{sa} → {sb}", style),
                f" ({len(ops)}): ",
                source_ops_summary(tuple(o.op for o in ops)),
            )
        )
    return Group(*parts)


def _op_style(o: OpChange) -> str:
    if o.unfused:
        return "red"
    if o.fused:
        return "green"
    return "magenta"


def module_diff_view(d: ModuleDiff) -> RenderableType:
    """Everything `hloscope diff` shows for one matched module."""
    errors = [
        Text(f"{side}: could not read: {m.error}", style="red")
        for side, m in (("A", d.a), ("B", d.b))
        if m.error
    ]
    time = d.metric(D.TIME_US)
    if not d.changed and not time.delta and not errors:
        return _module_title(d, "no change")
    parts: list[RenderableType] = [_module_title(d), *errors]
    parts.append(metrics_table(d))
    parts.append(kernel_changes_view(d))
    ops = op_changes_view(d)
    if ops is not None:
        parts.append(ops)
    return Group(*parts)


def _run_line(label: str, report: RunReport) -> Text:
    return Text.assemble((f"{label} ", "bold"), run_header(report).plain.removeprefix("run "))


def _module_names(modules: tuple[ModuleReport, ...], limit: int = 4) -> str:
    """`jit__normal ×4, jit_sqrt, … +15`: up to `limit` names, each said once (a
    framework compiles many helper modules of one name)."""
    counts = Counter(short_name(m.name, 30) for m in modules)
    names = [f"{n} ×{c}" if c > 1 else n for n, c in list(counts.items())[:limit]]
    rest = sum(list(counts.values())[limit:])
    return ", ".join(names) + (f", … +{rest}" if rest else "")


def diff_view(
    diff: RunDiff, *, show_all: bool = False, modules: tuple[ModuleDiff, ...] | None = None
) -> RenderableType:
    """The whole `hloscope diff` terminal output.

    Args:
        diff: From `diff_runs`.
        show_all: Also show trivial helper modules.
        modules: The module diffs to show (default: non-trivial ones, or all with
            `show_all`).
    """
    parts: list[RenderableType] = [_run_line("A", diff.a), _run_line("B", diff.b)]
    shown = modules if modules is not None else (diff.modules if show_all else diff.main)
    if modules is None and not show_all:
        hidden = [m for m in diff.modules if m.trivial]
        if hidden:
            changed = sum(1 for m in hidden if m.changed)
            parts.append(
                Text(
                    f"{len(hidden)} trivial helper modules matched ({changed} changed); "
                    "--all shows them",
                    style="dim",
                )
            )
    if modules is None:
        if diff.only_a:
            parts.append(Text(f"only in A: {_module_names(diff.only_a)}", style="yellow"))
        if diff.only_b:
            parts.append(Text(f"only in B: {_module_names(diff.only_b)}", style="yellow"))
    if not shown:
        parts.append(Text("no module to compare", style="yellow"))
    if not diff.changed and modules is None:
        parts.append(Text("no change: same modules, kernels and op placements", style="green"))
    for d in shown:
        parts.append(module_diff_view(d))
    return Group(*parts)


def check_line(m: ModuleReport, budget: Budget) -> Text:
    """`hloscope check`: one line per module within budget."""
    a = m.after
    bits = []
    if a is not None:
        if budget.max_kernels is not None:
            bits.append(f"kernels {a.kernel_count} ≤ {budget.max_kernels}")
        if budget.max_launches is not None:
            bits.append(f"launches per execution {a.launches} ≤ {budget.max_launches}")
    if budget.min_ops_per_kernel is not None:
        opk = m.ops_per_kernel
        bits.append(
            f"HLO ops per kernel {opk:.2f} ≥ {budget.min_ops_per_kernel:g}"
            if opk is not None
            else "HLO ops per kernel unknown (no before/after pair)"
        )
    return Text.assemble(("ok ", "green"), (readable_name(m.key), "bold"), "  ", ", ".join(bits))
