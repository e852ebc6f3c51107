"""Timing results -> rich tables and lines for the terminal.

`module_detail` is one module's timing block (`hloscope report`, `hloscope profile`),
`profile_table` the `hloscope profile` output, `bench_table` the `hloscope bench` one.
They return renderables and never print; the JSON documents of the same results are
`render.timing_json`. Every time says whether it is per execution (one run of the
module, on one device) or a total over the profiled executions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.render.fit import fit_names, name_room
from hloscope.render.format import counted, fmt_bytes, fmt_count, fmt_seconds, fmt_us, short_name
from hloscope.render.holds import labelled
from hloscope.timing.results import CLOCK_DEVICE, ModuleTiming, ProfileTimings

if TYPE_CHECKING:  # a bench result is read only where `bench.json` is
    from hloscope.timing.bench import BenchResult

__all__ = ["STRAGGLER", "bench_table", "module_detail", "profile_table", "timing_lines"]


def _launches(m: ModuleTiming) -> Text:
    spread = m.launch_spread
    if spread is not None:  # e.g. a data-dependent conditional: say how it varies
        measured = f"{spread['min']:g} to {spread['max']:g} (median {fmt_count(spread['median'])})"
    else:
        measured = fmt_count(m.launches_per_execution)
    if m.kernel_launches_per_execution != m.launches_per_execution:
        measured += f" ({fmt_count(m.kernel_launches_per_execution)} device kernels)"
    if m.static_launches is None:
        return Text(measured)
    if spread is not None and spread["max"] <= m.static_launches:
        return Text.assemble(measured, (f" ≤ HLO {m.static_launches} (branches vary)", "green"))
    if m.launch_mismatch:
        return Text.assemble(measured, (f" ≠ HLO {m.static_launches}", "bold yellow"))
    return Text.assemble(measured, (f" = HLO {m.static_launches}", "green"))


def timing_heading(key: str, m: ModuleTiming) -> Text:
    """`── 0008.jit_mlp  [program 3]`: a module's heading where its timing stands alone
    (`hloscope profile`), in the style of the report's module headings."""
    pid = f"  [program {m.program_id}]" if m.program_id is not None else ""
    return Text.assemble(("── ", "dim"), (short_name(key, 64), "bold cyan"), (pid, "dim"))


def timing_lines(m: ModuleTiming) -> Text:
    """A module's measured times: where from and how many executions, then the wall and
    kernel time per execution, the time outside any kernel and the launches against the
    HLO's count; the totals over the devices where it ran on several."""
    warm = f", {m.skipped} warm-up left out" if m.skipped else ""
    source = f" ({m.source})" if m.source else ""
    runs = counted(m.executions, "execution")
    if m.device_count > 1:
        runs = f"{runs} per device on {m.device_count} devices"
        warm += "; times per device"
    ops = ""
    if m.device_ops_per_execution is not None:
        ops = f" · GPU operations per execution {fmt_count(m.device_ops_per_execution)}"
    return Text.assemble(
        ("timing", "bold"),
        f"{source}: {runs}{warm}",
        *_first_run(m),
        "; ops on the device's clock" if m.clock == CLOCK_DEVICE else "",
        f"\nwall per execution {fmt_us(m.mean_us)} (median {fmt_us(m.median_us)}) · ",
        _kernel_time(m),
        f"\nnot in any kernel {fmt_us(m.per_execution(m.unattributed_us))} per execution"
        " · launches per execution ",
        _launches(m),
        ops,
        *_devices_line(m),
    )


def _devices_line(m: ModuleTiming) -> list[str | tuple[str, str]]:
    """Where a module ran on several devices: the totals over all of them, and the
    slowest device against the median one (a straggler)."""
    if m.device_count < 2:
        return []
    total = sum(d.total_us for d in m.per_device)
    kernels = sum(d.kernel_us for d in m.per_device)
    line: list[str | tuple[str, str]] = [
        f"\ntotal over the {m.device_count} devices and their executions: "
        f"{fmt_us(total)} wall, {fmt_us(kernels)} in kernels"
    ]
    if m.spread is not None and m.slowest_device is not None:
        text = f"; slowest device {m.slowest_device} at {m.spread:.2f}× the median"
        line.append((text, "bold yellow") if m.spread >= STRAGGLER else text)
    return line


def _slowest(spread: float | None, device: str | None) -> str:
    """`1.29× CPU:1`: a kernel's slowest device against the median one."""
    if spread is None or device is None:
        return "–"
    return f"{spread:.2f}× {device.removeprefix('/device:')}"


STRAGGLER = 1.2
"""A device this much slower than the median one is shown as a straggler."""


def _calls(x: float) -> str:
    """A count per device: whole, or a mean with two decimals."""
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def _first_run(m: ModuleTiming) -> list[str | tuple[str, str]]:
    """The compile before the first run, and the mark of a module shown from its cold
    first run (it ran only as warm-up)."""
    compiled = f"compiled in {fmt_us(m.compile_us)} before its first run" if m.compile_us else ""
    if not m.cold:
        return [f", {compiled}"] if compiled else []
    return [
        (
            ", a cold first run: it ran only as warm-up, one-time costs included"
            + (f", {compiled}" if compiled else "")
            + " (--skip-first 0 counts first runs in every module)",
            "yellow",
        )
    ]


def _kernel_time(m: ModuleTiming) -> str:
    """Kernel time per execution and the share of the wall it kept busy; where kernels
    overlap on several threads or streams (their sum exceeds the time they took) or
    loops spend time of their own between their kernels, the busy time too."""
    busy = m.busy_us if m.busy_us is not None else m.kernel_us
    pct = f" ({100 * busy / m.total_us:.0f}%)" if m.total_us else ""
    loops = sum(k.total_us for k in m.control)
    text = f"kernel time per execution {fmt_us(m.kernel_us_per_execution)}"
    if math.isclose(busy, m.kernel_us, rel_tol=1e-9, abs_tol=1e-6):
        return text + pct
    if not math.isclose(busy, m.kernel_us + loops, rel_tol=1e-9, abs_tol=1e-6):
        text += " (summed over threads)"
    text += f" · busy {fmt_us(m.per_execution(busy))}{pct}"
    if loops:
        text += f" (loop control {fmt_us(m.per_execution(loops))})"
    return text


def _unit(values: list[float]) -> tuple[str, float]:
    """A unit that keeps a column's numbers short: (name, microseconds per unit)."""
    top = max(values, default=0.0)
    return ("s", 1e6) if top >= 1e7 else ("ms", 1e3) if top >= 1e4 else ("µs", 1.0)


def _kernel_table(
    m: ModuleTiming, limit: int, holds: Mapping[str, str] | None, width: int | None
) -> Table:
    """Each kernel's calls and time over the profiled executions (totals), its time per
    call, and its share of the module's kernel time, heaviest first; names cut to fit
    `width` columns (None: a pipe, whole)."""
    unit, scale = _unit([k.total_us for k in m.kernels])
    over = f"over {counted(m.executions, 'execution')}" + (
        " per device" if m.device_count > 1 else ""
    )
    table = Table(
        box=None,
        pad_edge=False,
        collapse_padding=True,
        title=f"kernels: calls and total {over}; mean, median, min and max per call",
        title_justify="left",
        title_style="",
    )
    headers = ["kernel · ops", "calls", f"total {unit}", "mean", "median", "min", "max", "share"]
    many = any(k.kernels_per_op > 1 for k in m.kernels)
    devices = m.device_count > 1
    headers += ["kernels/op"] * many + ["slowest device"] * devices

    def num(x: float) -> str:
        return f"{x / scale:.1f}" if scale == 1.0 else f"{x / scale:.3f}"

    rows = []
    for k in m.kernels[:limit]:
        row = [
            labelled(k.name, holds),
            _calls(k.calls),
            *(num(x) for x in (k.total_us, k.mean_us, k.median_us, k.min_us, k.max_us)),
            f"{100 * k.share:.1f}%",
        ]
        if many:
            row.append(str(k.kernels_per_op))
        if devices:
            row.append(_slowest(k.spread, k.slowest_device))
        rows.append(row)
    rest = m.kernels[limit:]
    if rest:
        rows.append(
            [
                f"… {len(rest)} more",
                _calls(sum(k.calls for k in rest)),
                num(sum(k.total_us for k in rest)),
                *[""] * 4,
                f"{100 * sum(k.share for k in rest):.1f}%",
                *([""] if many else []),
                *([""] if devices else []),
            ]
        )
    for i, header in enumerate(headers):
        if i == 0:
            table.add_column(header, no_wrap=True, overflow="ellipsis")
        else:
            right = header != "slowest device"
            table.add_column(header, justify="right" if right else "left", no_wrap=True)
    for i, row in enumerate(fit_names(rows, name_room(headers, rows, width))):
        table.add_row(*row, style="dim" if rest and i == len(rows) - 1 else None)
    return table


def module_detail(
    key: str,
    m: ModuleTiming,
    *,
    limit: int = 25,
    holds: Mapping[str, str] | None = None,
    heading: bool = True,
    width: int | None = None,
) -> RenderableType:
    """One module's timing: its lines and per-kernel table.

    Args:
        key: The module's key (for the heading).
        m: Its timings.
        limit: Kernel rows shown (the rest summed in one row).
        holds: Kernel name -> what it holds (`render.holds.kernel_holds`), printed
            beside each kernel's name.
        heading: Start with the module's heading (`hloscope profile`); `report` prints
            the timing inside the module's own section, under its heading.
        width: The terminal's width, which the kernel names are cut to fit (None: a
            pipe, whole names).
    """
    parts: list[RenderableType] = [timing_heading(key, m)] if heading else []
    parts.append(timing_lines(m))
    if m.executions:
        parts.append(_kernel_table(m, limit, holds, width))
    for what, names in (
        ("in the HLO but never seen running", m.missing_kernels),
        ("seen running but not kernels of the HLO", m.unknown_ops),
    ):
        if names:
            more = " …" if len(names) > 10 else ""
            parts.append(Text(f"{what}: {', '.join(names[:10])}{more}", style="yellow"))
    return Group(*parts)


def profile_table(
    p: ProfileTimings,
    *,
    module: str | None = None,
    top: int = 3,
    limit: int = 25,
    holds: Mapping[str, Mapping[str, str]] | None = None,
    width: int | None = None,
) -> RenderableType:
    """The `hloscope profile` output: a module summary, then kernel tables.

    Args:
        p: The timings.
        module: Show only this module (a key of `p.modules`).
        top: Without `module`, how many modules (most total time first) get a table.
        limit: Kernel rows per table.
        holds: Module key -> kernel name -> what the kernel holds, where the HLO is
            known.
        width: The terminal's width (None: a pipe, whole names).
    """
    holds = holds or {}
    if module is not None:
        return module_detail(
            module, p.modules[module], limit=limit, holds=holds.get(module), width=width
        )
    head = Text.assemble(
        ("profile ", "bold"),
        str(p.path),
        f"  ({p.format}, {p.op_events} op events"
        + (f", {fmt_us(p.duration_us)} profiled" if p.duration_us else "")
        + ")",
    )
    parts: list[RenderableType] = [head]
    measured = [(k, m) for k, m in p.modules.items() if m.executions]
    if not measured:
        if p.modules:
            parts.append(Text("no module ran more than the warm-up execution", style="yellow"))
    else:
        summary = Table(
            box=None,
            pad_edge=False,
            title="modules: wall per execution, and total over the profiled executions",
            title_justify="left",
        )
        summary.add_column("module", no_wrap=True, overflow="ellipsis")
        summary.add_column("executions", justify="right", no_wrap=True)
        summary.add_column("wall per execution", justify="right", no_wrap=True)
        summary.add_column("total", justify="right", no_wrap=True)
        summary.add_column("in kernels", justify="right", no_wrap=True)
        summary.add_column("kernels", justify="right", no_wrap=True)
        summary.add_column("launches per execution", no_wrap=True)
        several = any(m.device_count > 1 for _, m in measured)
        if several:  # figures per device; the device count beside them
            summary.add_column("devices", justify="right", no_wrap=True)
        for key, m in measured:
            busy = m.busy_us if m.busy_us is not None else m.kernel_us
            summary.add_row(
                short_name(key, 10_000),
                f"{m.executions} cold" if m.cold else str(m.executions),
                fmt_us(m.mean_us),
                fmt_us(m.total_us),
                f"{100 * busy / m.total_us:.0f}%" if m.total_us else "–",
                str(len(m.kernels)),
                _launches(m),
                *([str(m.device_count)] if several else []),
            )
        parts.append(summary)
        for key, m in measured[:top]:
            parts.append(Text(""))
            parts.append(module_detail(key, m, limit=limit, holds=holds.get(key), width=width))
        if len(measured) > top:
            more = counted(len(measured) - top, "more module")
            parts.append(Text(f"\n{more}: --module NAME", "dim"))
    for problem in p.problems:
        parts.append(Text(problem, style="dim"))
    return Group(*parts)


def bench_table(r: BenchResult) -> RenderableType:
    """The `hloscope bench` output: one row per mode, speed-ups against the baseline."""
    head = Text.assemble(
        ("eager vs XLA", "bold"),
        f"  {r.framework} on {r.device}",
        f"  ({r.target})" if r.target else "",
        f"\nfirst: the cold first call; compile: the part of it the framework says was "
        f"compiling; speed-up: median of {r.baseline} / median of the mode",
    )
    table = Table(box=None, pad_edge=False)
    table.add_column("mode", overflow="fold")
    for name in ("first", "compile", "median", "p10", "p90", "runs", "speed-up", "peak mem"):
        table.add_column(name, justify="right", no_wrap=True)
    for m in r.modes:
        if m.error:
            table.add_row(m.label, Text(f"failed: {m.error}", style="red"), *[""] * 7)
            continue
        speed = Text("–")
        if m.speedup is not None:
            style = "bold green" if m.speedup > 1.05 else ("red" if m.speedup < 0.95 else "")
            speed = Text(f"{m.speedup:.2f}x", style=style)
        table.add_row(
            m.label,
            fmt_seconds(m.first_call_s),
            fmt_seconds(m.compile_s),
            fmt_seconds(m.median_s),
            fmt_seconds(m.p10_s),
            fmt_seconds(m.p90_s),
            str(m.repeats),
            speed,
            fmt_bytes(m.peak_memory_bytes),
        )
    parts: list[RenderableType] = [head, table]
    parts += [Text(n, style="dim") for n in r.notes]
    return Group(*parts)
