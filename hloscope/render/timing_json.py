"""Timing results -> JSON documents: the schemas of `hloscope profile --json`, `hloscope
bench --json`, the `bench.json` a run keeps, and each module's `timing` in `report --json`.

Builders return plain dicts; nothing here measures, computes beyond rounding, or
prints (the terminal tables are `render.timing`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from hloscope.timing.results import ModuleTiming, ProfileTimings

if TYPE_CHECKING:  # a bench result is read only where `bench.json` is
    from hloscope.timing.bench import BenchResult

__all__ = ["SCHEMA_VERSION", "bench_doc", "profile_doc", "timings_doc"]

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
    `kernel_us` (kernel time summed, per device), `kernel_us_per_execution` (kernel
    time in one execution on one device), `busy_us` (time when at least one
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
        "kernel_us_per_execution": _r(m.kernel_us_per_execution),
        "busy_us": _r(m.busy_us),
        "unattributed_us": _r(m.unattributed_us),
        "cold": m.cold,
        "compile_us": _r(m.compile_us),
        "launches_per_execution": _r(m.launches_per_execution),
        "launches_by_execution": m.launch_spread,
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
