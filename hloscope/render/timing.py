"""Timing results -> JSON documents and rich tables.

The JSON builders fix the schemas of `hloscope profile --json`, `hloscope bench --json`
and the `bench.json` a run keeps; the table builders return rich renderables and never
print. Nothing here measures or computes beyond formatting.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.render.format import counted, fmt_bytes, fmt_count, fmt_seconds, fmt_us
from hloscope.timing.bench import BenchResult
from hloscope.timing.results import CLOCK_DEVICE, ModuleTiming, ProfileTimings

__all__ = [
    "SCHEMA_VERSION",
    "bench_doc",
    "bench_table",
    "profile_doc",
    "profile_table",
    "timings_doc",
]

SCHEMA_VERSION = 1


def _r(x: float | None, digits: int = 3) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(x, digits)


def _count(x: float | None) -> int | float | None:
    """A count that is a mean over devices: an integer where it is whole."""
    if x is None:
        return None
    return int(x) if float(x).is_integer() else round(x, 3)


def _spread_doc(ratio: float | None, slowest: str | None) -> dict[str, Any] | None:
    if ratio is None or slowest is None:
        return None
    return {"slowest": slowest, "ratio": round(ratio, 3)}


def timings_doc(m: ModuleTiming) -> dict[str, Any]:
    """The JSON object of one module's timings.

    A module that ran on several devices is shown per device: counts and sums are the
    mean over the `device_count` devices that ran it, per-execution figures are per
    execution on one device, and `per_device` holds each device's own totals.

    Schema: `source` (`nsys`, `xplane`, `trace.json`), `executions` (steady-state, per
    device), `skipped_executions` (warm-up left out, per device), `total_us` (wall of
    those executions, summed, per device), `mean_us`/`median_us` (per execution),
    `kernel_us` (kernel time summed, per device), `busy_us` (time when at least one
    kernel or loop of it ran, the union of their intervals: below `kernel_us` when
    kernels overlap, e.g. async collectives beside compute; `busy_us +
    unattributed_us = total_us`), `unattributed_us` (wall when no kernel of it ran),
    `cold` (true when it ran only as warm-up and these figures are of those first
    runs), `compile_us` (XLA's compile before its first run, where the capture recorded
    it: JAX; else null), `launches_per_execution` (thunks or op calls per execution on
    one device, mean), `launches_by_execution` (`{min, median, max}` over executions;
    null when every execution launched the same), `control` (`[{name, calls,
    total_us}]`: the own time of each loop or conditional, beside its body's kernels),
    `kernel_launches_per_execution` (device kernels), `device_ops_per_execution` (GPU
    operations the trace counted, or null), `static_launches` (from the HLO, or null),
    `launch_mismatch` (bool, or null without HLO), `missing_kernels`, `unknown_ops`,
    `devices` (the planes or threads its events came from), `device_count` (devices
    that ran it), `per_device` (`[{device, executions, total_us, kernel_us}]`, each
    device's sums; `[]` on one device), `spread` (`{slowest, ratio}`: the device whose
    executions took longest and its wall over the median device's; null on one
    device), `split_by`, `wall_from`, `clock` (what op times were read on: `device`,
    the device's own duration of each op as a TPU records it and XProf sums it;
    `timeline`, each event's length on the profile's timeline; `device+timeline`),
    `program_id`, and `kernels`: `[{name (the top-level HLO instruction), calls (per
    device), total_us (per device), mean_us, median_us, min_us, max_us (per call),
    share, calls_per_execution, kernels_per_op, device_kernels, device_ops (per device,
    or null), hlo_ops (every name the runtime reported for it), device_count, spread
    (`{slowest, ratio}` or null)}]`, most total time first. Times are microseconds,
    rounded to nanoseconds.
    """
    return {
        "name": m.name,
        "program_id": m.program_id,
        "source": m.source or None,
        "executions": m.executions,
        "skipped_executions": m.skipped,
        "total_us": _r(m.total_us),
        "mean_us": _r(m.mean_us),
        "median_us": _r(m.median_us),
        "kernel_us": _r(m.kernel_us),
        "busy_us": _r(m.busy_us),
        "unattributed_us": _r(m.unattributed_us),
        "cold": m.cold,
        "compile_us": _r(m.compile_us),
        "launches_per_execution": _r(m.launches_per_execution),
        "launches_by_execution": _spread(m.launches_by_execution),
        "kernel_launches_per_execution": _r(m.kernel_launches_per_execution),
        "device_ops_per_execution": _r(m.device_ops_per_execution),
        "static_launches": m.static_launches,
        "launch_mismatch": m.launch_mismatch,
        "missing_kernels": list(m.missing_kernels),
        "unknown_ops": list(m.unknown_ops),
        "devices": list(m.devices),
        "device_count": m.device_count,
        "per_device": [
            {
                "device": d.device,
                "executions": d.executions,
                "total_us": _r(d.total_us),
                "kernel_us": _r(d.kernel_us),
            }
            for d in m.per_device
        ],
        "spread": _spread_doc(m.spread, m.slowest_device),
        "split_by": m.split_by,
        "wall_from": m.wall_from,
        "clock": m.clock,
        "control": [
            {"name": k.name, "calls": _count(k.calls), "total_us": _r(k.total_us)}
            for k in m.control
        ],
        "kernels": [
            {
                "name": k.name,
                "calls": _count(k.calls),
                "total_us": _r(k.total_us),
                "mean_us": _r(k.mean_us),
                "median_us": _r(k.median_us),
                "min_us": _r(k.min_us),
                "max_us": _r(k.max_us),
                "share": _r(k.share, 4),
                "calls_per_execution": _r(k.calls_per_execution),
                "kernels_per_op": k.kernels_per_op,
                "device_kernels": list(k.device_kernels),
                "device_ops": _count(k.device_ops),
                "hlo_ops": list(k.hlo_ops) or [k.name],
                "device_count": k.device_count,
                "spread": _spread_doc(k.spread, k.slowest_device),
            }
            for k in m.kernels
        ],
    }


def profile_doc(p: ProfileTimings) -> dict[str, Any]:
    """The `hloscope profile --json` document.

    Schema: `schema_version`, `path`, `format` (`xplane`/`trace.json`), `skip_first`,
    `op_events`, `duration_us`, `hostnames`, `problems`, and `modules`: module key ->
    `timings_doc` object.
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "path": p.path,
        "format": p.format,
        "skip_first": p.skip_first,
        "op_events": p.op_events,
        "duration_us": _r(p.duration_us),
        "hostnames": list(p.hostnames),
        "problems": list(p.problems),
        "modules": {key: timings_doc(m) for key, m in p.modules.items()},
    }


def bench_doc(r: BenchResult) -> dict[str, Any]:
    """The `hloscope bench --json` document, also saved as a run's `bench.json`: the
    result's own document (`BenchResult.to_json`, which fixes the schema)."""
    return r.to_json()


# --------------------------------------------------------------------------------------
# Tables


def _spread(counts: Sequence[int]) -> dict[str, float] | None:
    """`{min, median, max}` of per-execution counts; None when they never vary."""
    if not counts or min(counts) == max(counts):
        return None
    return {"min": min(counts), "median": statistics.median(counts), "max": max(counts)}


def _launches(m: ModuleTiming) -> Text:
    spread = _spread(m.launches_by_execution)
    if spread is not None:  # e.g. a data-dependent conditional: say how it varies
        measured = f"{spread['min']} to {spread['max']} (median {fmt_count(spread['median'])})"
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


def _module_header(key: str, m: ModuleTiming) -> Text:
    pid = f"  program {m.program_id}" if m.program_id is not None else ""
    warm = f", {m.skipped} warm-up left out" if m.skipped else ""
    source = f"{m.source}: " if m.source else ""
    ops = ""
    if m.device_ops_per_execution is not None:
        ops = f"; GPU operations per execution {fmt_count(m.device_ops_per_execution)}"
    runs = counted(m.executions, "execution")
    if m.device_count > 1:
        runs = f"{runs} per device on {m.device_count} devices"
    return Text.assemble(
        ("HloModule ", "bold"),
        (key, "bold cyan"),
        pid,
        f"\n{source}{runs}{warm}",
        *_first_run(m),
        f" (split by {m.split_by}); ",
        f"{fmt_us(m.mean_us)} per execution (median {fmt_us(m.median_us)}, {m.wall_from})",
        "; ops on the device's clock" if m.clock == CLOCK_DEVICE else "",
        "\n",
        "per device: " if m.device_count > 1 else "",
        _kernel_time(m),
        f"not in any kernel {fmt_us(m.unattributed_us)}; launches per execution ",
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
        f"\ntotals over the {m.device_count} devices: {fmt_us(total)} wall, "
        f"{fmt_us(kernels)} in kernels"
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


# A device this much slower than the median one is shown as a straggler.
STRAGGLER = 1.2


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
    """Kernel time as the share of the wall it kept busy, beside the summed time where
    they differ: kernels overlapping on several threads or streams are summed above
    the time they took, and loops spend time of their own between their kernels."""
    busy = m.busy_us if m.busy_us is not None else m.kernel_us
    pct = f" ({100 * busy / m.total_us:.0f}%)" if m.total_us else ""
    loops = sum(k.total_us for k in m.control)
    if math.isclose(busy, m.kernel_us, rel_tol=1e-9, abs_tol=1e-6):
        return f"kernels {fmt_us(m.kernel_us)}{pct}, "
    text = f"kernels busy {fmt_us(busy)}{pct}"
    if loops:
        text += f" (loop control {fmt_us(loops)})"
    if not math.isclose(busy, m.kernel_us + loops, rel_tol=1e-9, abs_tol=1e-6):
        text += f", kernel time summed over threads {fmt_us(m.kernel_us)}"
    return text + ", "


def _unit(values: list[float]) -> tuple[str, float]:
    """A unit that keeps a column's numbers short: (name, microseconds per unit)."""
    top = max(values, default=0.0)
    return ("s", 1e6) if top >= 1e7 else ("ms", 1e3) if top >= 1e4 else ("µs", 1.0)


def _kernel_table(m: ModuleTiming, limit: int) -> Table:
    unit, scale = _unit([k.total_us for k in m.kernels])
    table = Table(box=None, pad_edge=False, collapse_padding=True)
    table.add_column("kernel (HLO op)", no_wrap=True, overflow="ellipsis", min_width=20)
    table.add_column("calls", justify="right", no_wrap=True)
    for name in ("total", "mean", "median", "min", "max"):
        header = f"{name} {unit}" if name == "total" else name
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    many = any(k.kernels_per_op > 1 for k in m.kernels)
    if many:
        table.add_column("kernels/op", justify="right", no_wrap=True)
    devices = m.device_count > 1
    if devices:
        table.add_column("slowest device", no_wrap=True)

    def num(x: float) -> str:
        return f"{x / scale:.1f}" if scale == 1.0 else f"{x / scale:.3f}"

    for k in m.kernels[:limit]:
        row = [
            k.name,
            _calls(k.calls),
            *(num(x) for x in (k.total_us, k.mean_us, k.median_us, k.min_us, k.max_us)),
            f"{100 * k.share:.1f}%",
        ]
        if many:
            row.append(str(k.kernels_per_op))
        if devices:
            row.append(_slowest(k.spread, k.slowest_device))
        table.add_row(*row)
    if len(m.kernels) > limit:
        rest = m.kernels[limit:]
        table.add_row(
            f"… {len(rest)} more",
            _calls(sum(k.calls for k in rest)),
            num(sum(k.total_us for k in rest)),
            *[""] * 4,
            f"{100 * sum(k.share for k in rest):.1f}%",
            *([""] if many else []),
            *([""] if devices else []),
            style="dim",
        )
    return table


def module_detail(key: str, m: ModuleTiming, *, limit: int = 25) -> RenderableType:
    """One module: its header line and per-kernel table."""
    parts: list[RenderableType] = [_module_header(key, m)]
    if m.executions:
        parts.append(_kernel_table(m, limit))
    for what, names in (
        ("in the HLO but never seen running", m.missing_kernels),
        ("seen running but not kernels of the HLO", m.unknown_ops),
    ):
        if names:
            more = " …" if len(names) > 10 else ""
            parts.append(Text(f"{what}: {', '.join(names[:10])}{more}", style="yellow"))
    return Group(*parts)


def profile_table(
    p: ProfileTimings, *, module: str | None = None, top: int = 3, limit: int = 25
) -> RenderableType:
    """The `hloscope profile` output: a module summary, then kernel tables.

    Args:
        p: The timings.
        module: Show only this module (a key of `p.modules`).
        top: Without `module`, how many modules (most total time first) get a table.
        limit: Kernel rows per table.
    """
    if module is not None:
        return module_detail(module, p.modules[module], limit=limit)
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
        summary = Table(box=None, pad_edge=False, title="modules", title_justify="left")
        summary.add_column("module", overflow="fold")
        summary.add_column("runs", justify="right", no_wrap=True)
        summary.add_column("per run", justify="right", no_wrap=True)
        summary.add_column("total", justify="right", no_wrap=True)
        summary.add_column("in kernels", justify="right", no_wrap=True)
        summary.add_column("kernels", justify="right", no_wrap=True)
        summary.add_column("launches/run")
        several = any(m.device_count > 1 for _, m in measured)
        if several:  # figures per device; the device count beside them
            summary.add_column("devices", justify="right", no_wrap=True)
        for key, m in measured:
            busy = m.busy_us if m.busy_us is not None else m.kernel_us
            summary.add_row(
                key,
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
            parts.append(module_detail(key, m, limit=limit))
        if len(measured) > top:
            parts.append(Text(f"\n{len(measured) - top} more module(s): --module NAME", "dim"))
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
