"""Op events -> executions: how the events of one module are told apart by execution.

The middle step of `attribution`: an `OpEvent` is one executed HLO instruction;
`split` groups one module's op events into `Execution`s by the best evidence the profile
has (a run id, an enclosing execute event, the device's `XLA Modules` line, the host
launch a kernel came from, else the module's first op coming round again), and says
which it used and what an execution's wall time is.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hloscope.timing.trace import (
    DEVICE_PLANE_PREFIX,
    EXECUTE_EVENT_SUFFIXES,
    GPU_MODULE_SUFFIX,
    HOST_PLANE,
    XLA_MODULES_LINE,
    Trace,
)

__all__ = ["Context", "Execution", "OpEvent", "measured", "split"]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


_Run = TypeVar("_Run")


def measured(
    per_device: Sequence[Sequence[_Run]], skip_first: int, max_executions: int | None = None
) -> tuple[list[_Run], int, bool]:
    """The executions a module is timed from, given each device's in order.

    The first `skip_first` on each device are left out as warm-up (autotuning, lazy
    initialisation), and at most `max_executions` kept after them. A module that ran
    only as warm-up on every device is not dropped: it is timed from those first runs
    and marked cold, one-time costs included (every reader of a profile, XPlane or nsys,
    decides it here).

    Returns:
        (executions kept, how many were left out, whether they are cold first runs).
    """
    keep = None if max_executions is None else skip_first + max_executions
    kept = [run for runs in per_device for run in runs[skip_first:keep]]
    skipped = sum(min(skip_first, len(runs)) for runs in per_device)
    if kept or not skipped:
        return kept, skipped, False
    return [run for runs in per_device for run in runs[:skip_first]], 0, True


# How executions were told apart (ModuleTiming.split_by).
SPLIT_RUN_ID = "run_id"
SPLIT_EXECUTE_EVENT = "execute event"
SPLIT_MODULE_EVENT = "XLA Modules line"
SPLIT_LAUNCH = "launch correlation"
SPLIT_REPEAT = "first op repeats"
SPLIT_OCCURRENCE = "each op's n-th run"
# What an execution's wall time is (ModuleTiming.wall_from).
WALL_OPS = "first op start to last op end"
WALL_EXECUTE = "enclosing execute event"
WALL_MODULE = "XLA Modules event"


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One execution of one HLO instruction (a CPU thunk or one device kernel).

    Attributes:
        module: The HloModule name.
        program_id: XLA's program id of the compiled module (= the dump's module_NNNN),
            when the profile says.
        op: The HLO instruction (innermost one when the annotation nests ops).
        kernel: The event name: the op itself on the CPU, the kernel name on a device.
        device: The plane (`/host:CPU`, `/device:GPU:0`).
        line: The line (thread or stream) name.
        line_id: The line id.
        start_ps: Start, picoseconds.
        end_ps: End, picoseconds.
        run_id: The execution's run id when the profiler recorded one (not -1).
        correlation_id: CUPTI's launch correlation id (device kernels).
        on_device: Whether it is on a device plane.
        op_line: Whether it comes from an `XLA Ops` line (one event per op call, never
            merged with the next one).
        ordinal: The XLA device it ran for, where a host event says (`device_ordinal`:
            XLA's CPU devices, `--xla_force_host_platform_device_count`); None when not
            recorded (-1).
        device_ps: Its duration on the device's own clock, where the event records one
            (a TPU op's `device_duration_ps`); None on the CPU and GPU, whose events
            are timed on the profile's timeline alone.
    """

    module: str
    program_id: int | None
    op: str
    kernel: str
    device: str
    line: str
    line_id: int
    start_ps: int
    end_ps: int
    run_id: int | None = None
    correlation_id: int | None = None
    on_device: bool = False
    op_line: bool = False
    ordinal: int | None = None
    device_ps: int | None = None

    @property
    def duration_ps(self) -> int:
        """Duration on the timeline, picoseconds."""
        return self.end_ps - self.start_ps

    @property
    def device_name(self) -> str:
        """The device it ran on: its device plane, else the XLA CPU device its
        `device_ordinal` names (`/device:CPU:1`: every CPU device's thunks share the
        `/host:CPU` plane), else its plane."""
        if self.on_device or self.ordinal is None:
            return self.device
        if self.device == HOST_PLANE:
            return f"{DEVICE_PLANE_PREFIX}CPU:{self.ordinal}"
        return f"{self.device} device {self.ordinal}"

    @property
    def op_ps(self) -> int:
        """The op's time: on the device's clock where the event records it, else its
        length on the timeline (`device_ps`)."""
        return self.device_ps if self.device_ps is not None else self.end_ps - self.start_ps


@dataclass
class Execution:
    ops: list[OpEvent]
    wall_ps: int | None = None  # None: from the ops' span

    @property
    def start_ps(self) -> int:
        return min(o.start_ps for o in self.ops)

    @property
    def span_ps(self) -> int:
        return max(o.end_ps for o in self.ops) - self.start_ps


@dataclass(frozen=True)
class _Span:
    start_ps: int
    end_ps: int
    plane: str
    line_id: int
    module: str | None = None
    program_id: int | None = None


class Context:
    """Indexes over the whole trace that the execution splitters look things up in."""

    def __init__(self, trace: Trace) -> None:
        self.execute: dict[str, list[_Span]] = defaultdict(list)  # plane -> spans
        self.module_events: dict[str, list[_Span]] = defaultdict(list)  # plane -> spans
        self.gpu_modules: dict[str, list[_Span]] = defaultdict(list)  # module -> spans
        self.launch_ps: dict[int, int] = {}  # correlation id -> host launch time
        for e in trace.events:
            name = e.name
            if name.endswith(EXECUTE_EVENT_SUFFIXES):
                self.execute[e.plane].append(_Span(e.start_ps, e.end_ps, e.plane, e.line_id))
            elif e.line.startswith(XLA_MODULES_LINE):
                module = e.stats.get("hlo_module")
                parsed = _split_program(name)
                program_id = _int(e.stats.get("program_id"))
                if parsed is not None and program_id is None:
                    program_id = parsed[1]
                if not isinstance(module, str):
                    module = parsed[0] if parsed else name
                self.module_events[e.plane].append(
                    _Span(e.start_ps, e.end_ps, e.plane, e.line_id, module, program_id)
                )
            elif name.endswith(GPU_MODULE_SUFFIX):
                module = name[: -len(GPU_MODULE_SUFFIX)]
                self.gpu_modules[module].append(_Span(e.start_ps, e.end_ps, e.plane, e.line_id))
            if not e.plane.startswith(DEVICE_PLANE_PREFIX) and "correlation_id" in e.stats:
                cid = _int(e.stats["correlation_id"])
                if cid is not None:
                    self.launch_ps[cid] = e.start_ps
        for table in (self.execute, self.module_events, self.gpu_modules):
            for spans in table.values():
                spans.sort(key=lambda s: (s.start_ps, -s.end_ps))


def _split_program(name: str) -> tuple[str, int] | None:
    """`jit_f(12)` -> (`jit_f`, 12)."""
    m = re.fullmatch(r"(.*)\((-?\d+)\)", name)
    return (m.group(1), int(m.group(2))) if m else None


def _containing(spans: Sequence[_Span], t: int, line_id: int | None = None) -> _Span | None:
    """The innermost span that contains time t (on line_id, when given and possible)."""
    i = bisect.bisect_right(spans, t, key=lambda s: s.start_ps)
    best: _Span | None = None
    # Spans of different threads can overlap: look back over the ones that started
    # before t and take the latest-starting one that still contains t.
    for s in reversed(spans[max(0, i - 64) : i]):
        if s.end_ps < t:
            continue
        if line_id is None or s.line_id == line_id:
            return s
        if best is None:
            best = s
    return best


def _group_by(ops: Iterable[OpEvent], key: Callable[[OpEvent], Any]) -> list[list[OpEvent]] | None:
    groups: dict[Any, list[OpEvent]] = {}
    for o in ops:
        k = key(o)
        if k is None:
            return None
        groups.setdefault(k, []).append(o)
    return list(groups.values())


def split(ops: list[OpEvent], module: str, ctx: Context) -> tuple[list[Execution], str, str]:
    """Tell the executions of one module (on one device) apart.

    In order: the run id XLA records per execution (JAX); the execute event the ops
    nest in (TensorFlow, run_id -1); the device's "XLA Modules" line; the host-side
    `<module>:XLA GPU module` event the kernel's launch (by correlation id) falls in;
    else a new execution starts each time the module's first op comes round again.
    """
    if all(o.run_id is not None for o in ops):
        groups = _group_by(ops, lambda o: o.run_id)
        assert groups is not None
        return [Execution(g) for g in groups], SPLIT_RUN_ID, WALL_OPS

    device = ops[0].device
    spans = ctx.module_events.get(device)
    if spans:
        mine = [s for s in spans if s.module == module] or spans
        found = {id(o): _containing(mine, o.start_ps) for o in ops}
        if all(found.values()):
            return _by_span(ops, found), SPLIT_MODULE_EVENT, WALL_MODULE

    spans = ctx.execute.get(device)
    if spans and not ops[0].on_device:
        found = {id(o): _containing(spans, o.start_ps, o.line_id) for o in ops}
        if all(found.values()):
            return _by_span(ops, found), SPLIT_EXECUTE_EVENT, WALL_EXECUTE

    spans = ctx.gpu_modules.get(module)
    if spans and all(o.correlation_id in ctx.launch_ps for o in ops):
        found = {id(o): _containing(spans, ctx.launch_ps[o.correlation_id or 0]) for o in ops}
        if all(found.values()):
            launched = _by_span(ops, found)
            for ex in launched:
                ex.wall_ps = None  # the host span times the launch, not the kernels
            return launched, SPLIT_LAUNCH, WALL_OPS

    ordered = sorted(ops, key=lambda o: o.start_ps)
    first = ordered[0].op
    execs: list[Execution] = []
    previous: str | None = None
    for o in ordered:
        if (o.op == first and previous != first) or not execs:
            execs.append(Execution([]))
        execs[-1].ops.append(o)
        previous = o.op
    by_run = _by_occurrence(ordered, execs)
    if by_run is not None:
        return by_run, SPLIT_OCCURRENCE, WALL_OPS
    return execs, SPLIT_REPEAT, WALL_OPS


def _by_occurrence(ordered: list[OpEvent], execs: list[Execution]) -> list[Execution] | None:
    """The executions when every op ran the same n > 1 times but the first-op split
    disagrees (its executions differ in size): the k-th run of each op is in the k-th.

    Ops of one execution that run on several threads can start before its first op
    (the PJRT CPU client's thunks, as PyTorch/XLA runs them): sorted by start, they fall
    into the execution before. Executions of one module do not overlap, so counting
    each op's runs tells them apart.
    """
    counts = Counter(o.op for o in ordered)
    n = counts[ordered[0].op]
    if n < 2 or any(c != n for c in counts.values()):
        return None
    if len({len(ex.ops) for ex in execs}) == 1 and len(execs) == n:
        return None  # the first-op split is consistent: keep it
    out = [Execution([]) for _ in range(n)]
    seen: Counter[str] = Counter()
    for o in ordered:
        out[seen[o.op]].ops.append(o)
        seen[o.op] += 1
    return out


def _by_span(ops: list[OpEvent], found: Mapping[int, _Span | None]) -> list[Execution]:
    groups: dict[int, Execution] = {}
    for o in ops:
        span = found[id(o)]
        assert span is not None
        ex = groups.get(id(span))
        if ex is None:
            ex = groups[id(span)] = Execution([], span.end_ps - span.start_ps)
        ex.ops.append(o)
    return list(groups.values())
