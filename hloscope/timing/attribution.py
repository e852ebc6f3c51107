"""Trace events -> per-module, per-kernel timings: the analysis stage of `timing`.

Every event that carries an `hlo_op` stat is one executed HLO instruction of the module
its `hlo_module` (or `program_id`) names: a thunk on the CPU (`/host:CPU`), a kernel on a
device plane (`/device:GPU:N`, where one HLO op may run several kernels). Events are
grouped into executions of their module, the first `skip_first` executions are left out
as warm-up, and the rest is summarised per module and per kernel (`hloscope.timing.results`).

An op's time is read on the device's own clock where its event records one (a TPU's
`device_duration_ps`, what XProf sums): the timeline the profiler aligns to the host
clock stretches and shrinks events where it re-synchronises the clocks. The timeline
places events in their executions and times those. A module whose executions the
device's `XLA Modules` line records but that ran no op event is listed with its wall
time.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hloscope.errors import UsageError
from hloscope.hlo.parser import paused_gc
from hloscope.timing.devices import DeviceTally
from hloscope.timing.executions import (
    SPLIT_MODULE_EVENT,
    WALL_MODULE,
    Context,
    Execution,
    OpEvent,
    _int,
    measured,
    split,
)
from hloscope.timing.intervals import PS_PER_US, ns_to_us, ps_to_us, union_length
from hloscope.timing.results import (
    CLOCK_DEVICE,
    CLOCK_MIXED,
    CLOCK_TIMELINE,
    KernelTiming,
    ModuleTiming,
    ProfileTimings,
    cold_problems,
    launches_differ,
    timing_key,
)
from hloscope.timing.trace import DEVICE_PLANE_PREFIX, XLA_OPS_LINE, Trace, TraceEvent

if TYPE_CHECKING:
    from hloscope.analysis.fusion import ModuleAnalysis

__all__ = ["DERIVED_LINES", "NO_XLA_OPS", "OpEvent", "attribute", "op_events"]

# Lines the profiler's post-processing derives from the kernel lines (xprof's
# derived_timeline); they repeat kernel time, so only "XLA Modules" is read (as
# execution boundaries) and none is counted as kernels.
DERIVED_LINES = (
    "XLA Ops",
    "XLA Modules",
    "Async XLA Ops",
    "Framework Ops",
    "Framework Name Scope",
    "Source code",
    "Steps",
    "Launch Stats",
    "Host Offload Ops",
    "Sparse Core",
    "_counters_",
)
# On a TPU the "XLA Ops" line is the only op source (no kernel lines carry `hlo_op`):
# it is read on planes where no other line names an HLO op.
# Said when a profile has no event of an XLA op at all.
NO_XLA_OPS = (
    "no XLA op events: no event carries an `hlo_op` stat or sits on an `XLA Ops` line, "
    "so the profiled program did not run through XLA (e.g. TensorFlow without jit_compile)"
)
# Nested annotations join op names with this (`while.1::fusion.2`).
ANNOTATION_DELIMITER = "::"

# Control-flow thunks (XLA names them so) enclose their body's ops instead of computing.
_CONTROL_NAME = re.compile(r"(?:while|conditional)(?:[._-]\d+)*")


# --------------------------------------------------------------------------------------
# Events -> op events


def _is_derived(line: str) -> bool:
    return line.startswith(DERIVED_LINES)


def _hlo_text_name(text: str) -> str:
    """`%fusion.3 = f32[8]{0} fusion(...)` -> `fusion.3` ('' when not HLO text)."""
    if not text.startswith("%"):
        return ""
    return text[1:].split(" ", 1)[0]


def _op_line_name(e: TraceEvent) -> str:
    """The HLO op of an `XLA Ops` line event: its display name or its HLO text's name."""
    return e.display_name or _hlo_text_name(e.name) or e.name


# The stat a device's op event carries with the op's duration on the device's own clock
# (TPU `XLA Ops` events; xprof's `StatType::kDeviceDurationPs`).
DEVICE_DURATION = "device_duration_ps"


def _device_ps(value: object) -> int | None:
    """A `device_duration_ps` stat as whole picoseconds; None where it is missing or not
    a finite, non-negative number (then the event's timeline length is used)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return round(value) if 0 <= value < 2**63 else None


def op_events(trace: Trace) -> list[OpEvent]:
    """Every event of the trace that executed an HLO op, in trace order.

    An event counts when it has an `hlo_op` stat and its module is known (an
    `hlo_module` stat, or a `program_id` the metadata plane names). Lines derived by
    the profiler's post-processing are skipped, except the `XLA Ops` line of a plane
    where no other line names an op: on a TPU that line is the only record of the ops
    (its events name the op in their display name and carry the `program_id`). When a
    module has events on a device plane, its host-side events (launch annotations) are
    dropped.
    """
    direct = {
        e.plane
        for e in trace.events
        if isinstance(e.stats.get("hlo_op"), str) and not _is_derived(e.line)
    }
    out: list[OpEvent] = []
    for e in trace.events:
        stats = e.stats
        op = stats.get("hlo_op")
        op_line = e.line == XLA_OPS_LINE and e.plane not in direct
        if op_line:
            op = _op_line_name(e)
        elif not op or not isinstance(op, str) or _is_derived(e.line):
            continue
        program_id = _int(stats.get("program_id"))
        module = stats.get("hlo_module")
        if not isinstance(module, str) or not module:
            module = trace.programs.get(program_id) if program_id is not None else None
        if not module:
            continue
        run_id = _int(stats.get("run_id"))
        ordinal = _int(stats.get("device_ordinal"))
        on_device = e.plane.startswith(DEVICE_PLANE_PREFIX)
        device_ps = _device_ps(stats.get(DEVICE_DURATION)) if on_device else None
        out.append(
            OpEvent(
                module=module,
                program_id=program_id,
                op=op.rsplit(ANNOTATION_DELIMITER, 1)[-1],
                kernel=e.name,
                device=e.plane,
                line=e.line,
                line_id=e.line_id,
                start_ps=e.start_ps,
                end_ps=e.end_ps,
                run_id=None if run_id is None or run_id == -1 else run_id,
                correlation_id=_int(stats.get("correlation_id")),
                on_device=on_device,
                op_line=op_line,
                ordinal=None if ordinal is None or ordinal < 0 else ordinal,
                device_ps=device_ps,
            )
        )
    on_device_modules = {(o.module, o.program_id) for o in out if o.on_device}
    if on_device_modules:
        out = [o for o in out if o.on_device or (o.module, o.program_id) not in on_device_modules]
    return out


# --------------------------------------------------------------------------------------
# Executions -> timings


def _control_ops(ops: Sequence[OpEvent], names: frozenset[str] = frozenset()) -> set[int]:
    """Ids of the op events that are control flow, not kernels: those that contain
    another op event on their line (a `while`, `conditional` or `call` thunk around its
    body's ops; the body may also continue on another thread), those named in `names`
    (the module's loops and conditionals, from the HLO), and `while.N`/`conditional.N`.
    An event of zero duration is evidence of nothing: a TPU's `XLA Ops` line records ops
    of zero length at the very start of an async `copy-done` wait, which is no loop."""
    control: set[int] = {
        id(o) for o in ops if o.op in names or _CONTROL_NAME.fullmatch(o.op) is not None
    }
    by_line: dict[tuple[str, int], list[OpEvent]] = defaultdict(list)
    for o in ops:
        by_line[(o.device, o.line_id)].append(o)
    for line_ops in by_line.values():
        line_ops.sort(key=lambda o: (o.start_ps, -o.end_ps))
        stack: list[OpEvent] = []
        for o in line_ops:
            while stack and stack[-1].end_ps <= o.start_ps:
                stack.pop()
            if stack and o.end_ps <= stack[-1].end_ps and o.end_ps > o.start_ps:
                control.add(id(stack[-1]))
            stack.append(o)
    return control


@dataclass
class _Call:
    op: str
    kernels: list[OpEvent]

    @property
    def duration_ps(self) -> int:
        """The call's time: its kernels' on the device's clock where recorded."""
        return sum(k.op_ps for k in self.kernels)


def _calls(ops: Sequence[OpEvent]) -> list[_Call]:
    """Op calls of one execution: on a device, back-to-back kernels of the same op are
    one call of that op; on the host every event is one call."""
    calls: list[_Call] = []
    for o in sorted(ops, key=lambda o: o.start_ps):
        if o.on_device and not o.op_line and calls and calls[-1].op == o.op:
            calls[-1].kernels.append(o)
        else:
            calls.append(_Call(o.op, [o]))
    return calls


def _busy_ps(ops: Sequence[OpEvent]) -> int:
    """Time when at least one of the ops ran (the union of their intervals). Ops timed on
    the device's clock are a TPU core's, which runs its ops one after another: their
    sum is that union, and the timeline's stretched events are not used."""
    if ops and all(o.device_ps is not None for o in ops):
        return sum(o.op_ps for o in ops)
    return union_length((o.start_ps, o.end_ps) for o in ops)


def _module_timing(
    name: str,
    program_id: int | None,
    ops: list[OpEvent],
    ctx: Context,
    skip_first: int,
    static: ModuleAnalysis | None,
    max_executions: int | None = None,
) -> ModuleTiming:
    names: frozenset[str] = frozenset()
    if static is not None:
        names = frozenset(
            [loop.name for loop in static.loops] + [b.conditional for b in static.branches]
        )
    control = _control_ops(ops, names)
    # The runtime reports some kernels under another instruction's name (an async pair
    # under the op it wraps, a `__custom_fusion` under its library call: `Kernel.hlo_ops`);
    # their events are booked to the kernel, as the nsys source books its thunks.
    kernel_of = static.kernel_of if static is not None else {}
    hlo_ops: dict[str, set[str]] = defaultdict(set)
    per_device: dict[str, list[OpEvent]] = defaultdict(list)
    for o in ops:
        per_device[o.device_name].append(o)
    executions, skipped, cold, split_by, wall_from = _steady(
        per_device, name, ctx, skip_first, max_executions
    )

    durations: dict[str, list[int]] = defaultdict(list)
    kernels_per_call: dict[str, int] = defaultdict(int)
    # Device kernels each op launched in all; only device kernel events count them (a
    # host thunk or a TPU `XLA Ops` event is one op call, not a count of launches).
    op_kernels: dict[str, int] = defaultdict(int)
    device_kernels: dict[str, set[str]] = defaultdict(set)
    walls: list[int] = []
    per_execution_calls: list[int] = []
    kernel_ps = unattributed_ps = busy_ps = 0
    launches = kernel_launches = 0
    timed = on_device_clock = 0  # op events counted, and those timed on the device's clock
    control_self: dict[str, list[int]] = defaultdict(list)
    tally = DeviceTally(PS_PER_US)
    for ex in executions:
        device = ex.ops[0].device_name
        kernels = [o for o in ex.ops if id(o) not in control]
        timed += len(kernels)
        on_device_clock += sum(o.device_ps is not None for o in kernels)
        for op, self_ps in _control_self(ex.ops, control):
            control_self[op].append(self_ps)
        calls = _calls(kernels)
        for c in calls:
            kernel = kernel_of.get(c.op, c.op)
            hlo_ops[kernel].add(c.op)
            durations[kernel].append(c.duration_ps)
            tally.call(kernel, device, c.duration_ps)
            kernels_per_call[kernel] = max(kernels_per_call[kernel], len(c.kernels))
            if c.kernels[0].on_device and not c.kernels[0].op_line:
                op_kernels[kernel] += len(c.kernels)
            for k in c.kernels:
                if k.kernel != c.op:
                    device_kernels[kernel].add(k.kernel)
        wall = ex.wall_ps if ex.wall_ps is not None else ex.span_ps
        walls.append(wall)
        ex_kernel_ps = sum(c.duration_ps for c in calls)
        kernel_ps += ex_kernel_ps
        tally.execution(device, wall, ex_kernel_ps)
        busy = _busy_ps(ex.ops)  # loop control counts as busy: it is the loop's own work
        busy_ps += busy
        unattributed_ps += max(0, wall - busy)
        launches += len(calls)
        per_execution_calls.append(len(calls))
        kernel_launches += len(kernels)

    if on_device_clock:
        # the walls are on the timeline, the ops on the device's clock, which the timeline
        # stretches here and shrinks there: compared over all executions, not each one
        unattributed_ps = max(0, sum(walls) - busy_ps)
    n = len(executions)
    devices = tally.count
    timings = []
    for op, ds in durations.items():
        device_ops = op_kernels.get(op)
        timings.append(
            KernelTiming.of(
                op,
                ds,
                per_us=PS_PER_US,
                kernels_total=kernel_ps,
                executions=n,
                devices=devices,
                kernels_per_op=kernels_per_call[op],
                device_kernels=tuple(sorted(device_kernels[op])),
                device_ops=None if device_ops is None else device_ops / devices,
                hlo_ops=tuple(sorted(hlo_ops[op])),
                **tally.kernel_fields(op),
            )
        )
    timings.sort(key=lambda k: (-k.total_us, k.name))

    per_execution = launches / n if n else 0.0
    static_launches = mismatch = None
    missing: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    if static is not None:
        static_launches = static.launches
        if n:
            mismatch = launches_differ(per_execution, static.launches)
        seen = {o.op for o in ops if id(o) not in control}
        booked = {kernel_of[op] for op in seen if op in kernel_of}
        missing = tuple(k.name for k in static.kernels if k.name not in booked)
        unknown = tuple(sorted(seen - kernel_of.keys()))
    return ModuleTiming(
        name=name,
        program_id=program_id,
        executions=tally.mean_count(n),
        skipped=round(skipped / max(1, len(per_device))),
        total_us=ps_to_us(tally.mean(sum(walls))),
        kernel_us=ps_to_us(tally.mean(kernel_ps)),
        unattributed_us=ps_to_us(tally.mean(unattributed_ps)),
        execution_us=tuple(ps_to_us(w) for w in walls),
        launches_per_execution=per_execution,
        kernel_launches_per_execution=kernel_launches / n if n else 0.0,
        static_launches=static_launches,
        launch_mismatch=mismatch,
        kernels=tuple(timings),
        missing_kernels=missing,
        unknown_ops=unknown,
        devices=tuple(sorted({o.device for o in ops})),
        split_by=split_by,
        wall_from=wall_from,
        busy_us=ps_to_us(tally.mean(busy_ps)),
        launches_by_execution=tuple(per_execution_calls),
        cold=cold,
        control=tuple(
            KernelTiming.of(
                op,
                ds,
                per_us=PS_PER_US,
                kernels_total=kernel_ps,
                executions=n,
                devices=devices,
            )
            for op, ds in sorted(control_self.items())
        ),
        device_count=devices,
        per_device=tally.per_device(),
        clock=_clock(timed, on_device_clock),
    )


def _clock(events: int, on_device_clock: int) -> str:
    """`ModuleTiming.clock` from how many of its op events were timed on the device's
    own clock."""
    if on_device_clock and on_device_clock == events:
        return CLOCK_DEVICE
    return CLOCK_MIXED if on_device_clock else CLOCK_TIMELINE


def _without_ops(
    key: tuple[str, int | None],
    spans: Mapping[str, list[tuple[int, int]]],
    skip_first: int,
    static: ModuleAnalysis | None,
    max_executions: int | None,
) -> ModuleTiming:
    """A module the device's `XLA Modules` line shows executing but that ran no op event
    (a TPU program of scalar work alone): its executions and their wall time, no kernel.

    Args:
        key: (module name, program id).
        spans: Per device plane, (start, end) of each of its `XLA Modules` events.
        skip_first: Executions left out per device as warm-up.
        static: Its after-optimization analysis, if known (static launches).
        max_executions: Executions kept per device after the warm-up ones.
    """
    per_device = [sorted((a, b, plane) for a, b in s) for plane, s in sorted(spans.items())]
    kept, skipped, cold = measured(per_device, skip_first, max_executions)
    kept.sort()
    walls = [end - start for start, end, _ in kept]
    tally = DeviceTally(PS_PER_US)
    for start, end, plane in kept:
        tally.execution(plane, end - start, 0)
    n = len(walls)
    static_launches = static.launches if static is not None else None
    return ModuleTiming(
        name=key[0],
        program_id=key[1],
        executions=tally.mean_count(n),
        skipped=round(skipped / max(1, len(per_device))),
        total_us=ps_to_us(tally.mean(sum(walls))),
        kernel_us=0.0,
        unattributed_us=ps_to_us(tally.mean(sum(walls))),
        execution_us=tuple(ps_to_us(w) for w in walls),
        launches_per_execution=0.0,
        kernel_launches_per_execution=0.0,
        static_launches=static_launches,
        launch_mismatch=(
            launches_differ(0.0, static_launches) if static_launches is not None and n else None
        ),
        kernels=(),
        missing_kernels=tuple(k.name for k in static.kernels) if static is not None else (),
        devices=tuple(sorted(spans)),
        split_by=SPLIT_MODULE_EVENT,
        wall_from=WALL_MODULE,
        busy_us=0.0,
        launches_by_execution=(0,) * n,
        cold=cold,
        device_count=tally.count,
        per_device=tally.per_device(),
    )


def _has_ops(key: tuple[str, int | None], programs: Mapping[str, set[int | None]]) -> bool:
    """Whether a module of the `XLA Modules` line ran op events: the same name and
    program id, or the same name where either side does not know its program id.
    `programs` holds the program ids that ran ops, by module name."""
    name, program_id = key
    ran = programs.get(name)
    return ran is not None and (program_id is None or program_id in ran or None in ran)


def _module_events(ctx: Context) -> dict[tuple[str, int | None], dict[str, list[tuple[int, int]]]]:
    """Every `XLA Modules` event, by (module, program id) and device plane."""
    out: dict[tuple[str, int | None], dict[str, list[tuple[int, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for plane, spans in ctx.module_events.items():
        for s in spans:
            if s.module:
                out[(s.module, s.program_id)][plane].append((s.start_ps, s.end_ps))
    return out


def _steady(
    per_device: Mapping[str, list[OpEvent]],
    name: str,
    ctx: Context,
    skip_first: int,
    max_executions: int | None,
) -> tuple[list[Execution], int, bool, str, str]:
    """The executions measured on every device (`measured`), how many were left out,
    whether they are cold first runs, how they were told apart and where their wall
    time comes from."""
    by_device: list[list[Execution]] = []
    split_by = wall_from = ""
    for device_ops in per_device.values():
        execs, split_by, wall_from = split(device_ops, name, ctx)
        by_device.append(sorted(execs, key=lambda ex: ex.start_ps))
    executions, skipped, cold = measured(by_device, skip_first, max_executions)
    executions.sort(key=lambda ex: ex.start_ps)
    return executions, skipped, cold, split_by, wall_from


def _control_self(ops: Sequence[OpEvent], control: set[int]) -> list[tuple[str, int]]:
    """Self time of each control-flow event of one execution: its length less the time
    any other op of the execution ran inside it (its body's kernels and nested loops,
    on any thread). What remains is the loop's own work: evaluating its condition on
    the host, starting each iteration.

    Inside a loop's span the loop itself always runs, so another op runs exactly where
    two or more ops do: one sweep over the execution's timeline answers every loop in
    O(log n), not a pass over all ops per loop (quadratic in a loop-heavy profile)."""
    loops = [o for o in ops if id(o) in control]
    if not loops:
        return []
    overlap = _Overlap(ops)
    return [(c.op, max(0, c.duration_ps - overlap.within(c.start_ps, c.end_ps))) for c in loops]


class _Overlap:
    """How long two or more of a set of intervals overlap, within any window."""

    def __init__(self, ops: Sequence[OpEvent]) -> None:
        edges: dict[int, int] = defaultdict(int)
        for o in ops:
            if o.end_ps > o.start_ps:
                edges[o.start_ps] += 1
                edges[o.end_ps] -= 1
        self.at = sorted(edges)  # boundaries; depth[i] holds on [at[i], at[i + 1])
        self.deep = [False] * len(self.at)
        self.before = [0] * len(self.at)  # overlap time before at[i]
        depth = total = 0
        for i, t in enumerate(self.at):
            if i:
                total += (t - self.at[i - 1]) if self.deep[i - 1] else 0
            self.before[i] = total
            depth += edges[t]
            self.deep[i] = depth >= 2

    def _until(self, t: int) -> int:
        i = bisect.bisect_right(self.at, t) - 1
        if i < 0:
            return 0
        return self.before[i] + ((t - self.at[i]) if self.deep[i] else 0)

    def within(self, start: int, end: int) -> int:
        """Overlap time (two or more intervals) inside [start, end)."""
        return self._until(end) - self._until(start) if end > start else 0


@paused_gc()  # millions of acyclic events: see hlo.parser.paused_gc
def attribute(
    trace: Trace,
    *,
    skip_first: int = 1,
    static: Mapping[str, ModuleAnalysis] | None = None,
    max_executions: int | None = None,
) -> ProfileTimings:
    """Attribute a profile's op events to modules and kernels and time them.

    Args:
        trace: A profile read with `read_trace`.
        skip_first: Executions of each module (per device) left out as warm-up.
        max_executions: Keep at most this many executions per module after the
            warm-up ones (`hloscope dump --profile-steps`); all when None.
        static: `analyze_module(after_optimizations)` per module key or name; when a
            module has one, measured launches and kernel names are compared with it.

    Returns:
        The timings, modules with the most total time first.

    Example:
        >>> from pathlib import Path
        >>> path = next(Path('tests/data/jax_mlp_profile').rglob('*.xplane.pb'))
        >>> trace = hloscope.read_trace(path)
        >>> timings = hloscope.attribute(trace, skip_first=1)
        >>> sorted(timings.modules)[:1]
        ['jit_mlp']
    """
    if skip_first < 0:
        raise UsageError("skip_first must be 0 or more")
    ops = op_events(trace)
    by_module: dict[tuple[str, int | None], list[OpEvent]] = defaultdict(list)
    for o in ops:
        by_module[(o.module, o.program_id)].append(o)
    names: dict[str, int] = defaultdict(int)
    for name, _ in by_module:
        names[name] += 1
    ctx = Context(trace)
    programs: dict[str, set[int | None]] = defaultdict(set)
    for name, program_id in by_module:
        programs[name].add(program_id)
    idle = {k: v for k, v in _module_events(ctx).items() if not _has_ops(k, programs)}
    for name, _ in idle:
        names[name] += 1
    timings: list[tuple[str, ModuleTiming]] = []
    for (name, program_id), module_ops in by_module.items():
        key = timing_key(name, program_id, names[name] > 1)
        analysis = None
        if static is not None:
            analysis = static.get(key) or (static.get(name) if names[name] == 1 else None)
        timing = _module_timing(
            name, program_id, module_ops, ctx, skip_first, analysis, max_executions
        )
        timings.append((key, replace(timing, source=trace.format)))
    for (name, program_id), spans in idle.items():
        key = timing_key(name, program_id, names[name] > 1)
        analysis = None
        if static is not None:
            analysis = static.get(key) or (static.get(name) if names[name] == 1 else None)
        timing = _without_ops((name, program_id), spans, skip_first, analysis, max_executions)
        timings.append((key, replace(timing, source=trace.format)))
    timings.sort(key=lambda kv: (-kv[1].total_us, kv[0]))
    problems = list(trace.problems)
    if not ops:
        problems.append(NO_XLA_OPS)
    problems.extend(cold_problems(timings, skip_first))
    duration = None
    if trace.start_ns is not None and trace.stop_ns is not None:
        duration = ns_to_us(trace.stop_ns - trace.start_ns)
    return ProfileTimings(
        path=trace.path,
        format=trace.format,
        modules=dict(timings),
        skip_first=skip_first,
        op_events=len(ops),
        hostnames=trace.hostnames,
        duration_us=duration,
        problems=tuple(problems),
        source=trace.format,
        platform=_one(trace.platforms.values()),
        device=_one(trace.devices.values()),
    )


def _one(values: Iterable[str]) -> str | None:
    """The value when all are the same, else the distinct ones joined (None: none)."""
    distinct = sorted(set(values))
    return ", ".join(distinct) if distinct else None
