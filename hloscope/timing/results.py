"""What a profile says about time: per-kernel, per-module and per-profile timings.

These are the results of the timing stage, whoever read them: `attribution` builds them
from XPlane and trace.json events, `nsys` from an nsys-jax trace, `cache` keeps them in
the run folder; analyses of time (`roofline`, the renderers) only read them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hloscope.errors import UsageError
from hloscope.timing.executions import SPLIT_RUN_ID, WALL_OPS

__all__ = [
    "CLOCK_DEVICE",
    "CLOCK_MIXED",
    "CLOCK_TIMELINE",
    "DeviceTiming",
    "KernelTiming",
    "ModuleTiming",
    "ProfileTimings",
    "cold_problems",
    "device_spread",
    "launches_differ",
    "merge_timings",
    "timing_key",
]


# Which clock an op's time was read on (`ModuleTiming.clock`): the device's own (a TPU
# op event's `device_duration_ps`), the profile's timeline (the event's length: CPU
# thunks, GPU kernels, nsys ranges), or both (some events record the device's, some not).
CLOCK_DEVICE = "device"
CLOCK_TIMELINE = "timeline"
CLOCK_MIXED = "device+timeline"


@dataclass(frozen=True)
class KernelTiming:
    """Measured time of one HLO instruction of a module, over the steady-state executions.

    A module that ran on several devices (SPMD partitions, replicas, `pmap`) runs each
    kernel once per device: `calls`, `total_us` and `device_ops` are per device (the
    sum over every device divided by the devices that ran the module, as
    `ModuleTiming.device_count` counts them); the per-call figures are over every call.

    Attributes:
        name: The HLO instruction name (as `analyze_module(...).kernels[].name`).
        calls: How many times it ran, per device.
        total_us: Sum of its durations, per device.
        mean_us: Mean per call.
        median_us: Median per call.
        min_us: Fastest call.
        max_us: Slowest call.
        share: Its part of the module's kernel time (0..1).
        calls_per_execution: Calls divided by executions.
        kernels_per_op: Most device kernels one call ran (1 on the CPU; 2 or more for
            e.g. a cuBLAS GEMM with a split-K reduction).
        device_kernels: Names of the device kernels it ran, when they differ from the op.
        device_ops: Device operations (kernels, memcpys) its calls launched, per device,
            where the profile counts them (nsys: NumGPUOps of its thunk ranges); else None.
        hlo_ops: Every name the runtime reported for it (the wrapped `all-to-all.3` of an
            async pair, the `custom-call.220` inside a `__custom_fusion`); () when not
            recorded.
        device_count: Devices it ran on.
        spread: Its time on the slowest device over its median device's (1.0 when they
            match); None on one device.
        slowest_device: The device it took longest on, when it ran on several.

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> k = ins.timing('0030.jit_mlp').kernels[0]
        >>> k.name, k.calls
        ('ynn_fusion.1', 2.0)
    """

    name: str
    calls: float
    total_us: float
    mean_us: float
    median_us: float
    min_us: float
    max_us: float
    share: float
    calls_per_execution: float
    kernels_per_op: int = 1
    device_kernels: tuple[str, ...] = ()
    device_ops: float | None = None
    hlo_ops: tuple[str, ...] = ()
    device_count: int = 1
    spread: float | None = None
    slowest_device: str | None = None

    @classmethod
    def of(
        cls,
        name: str,
        durations: Sequence[int],
        *,
        per_us: float,
        kernels_total: int,
        executions: int,
        devices: int = 1,
        **measured: Any,
    ) -> KernelTiming:
        """Summarise one instruction's call durations, as the profile's clock counts them.

        Args:
            name: The instruction.
            durations: Each call's duration in the source's unit (at least one call), on
                every device.
            per_us: Units per microsecond (1e6 for picoseconds, 1e3 for nanoseconds);
                sums stay exact integers until this one division.
            kernels_total: All kernels' time in the same executions and unit (`share`).
            executions: Steady-state executions the calls came from, on every device.
            devices: Devices that ran the module: `calls` and `total_us` are divided by
                it (and `device_ops` in `measured`, by the caller).
            **measured: The optional fields a source measures (`kernels_per_op`,
                `device_kernels`, `device_ops`, `hlo_ops`, `device_count`, `spread`,
                `slowest_device`).
        """
        total = sum(durations)
        return cls(
            name=name,
            calls=len(durations) / devices,
            total_us=total / per_us / devices,
            mean_us=total / len(durations) / per_us,
            median_us=statistics.median(durations) / per_us,
            min_us=min(durations) / per_us,
            max_us=max(durations) / per_us,
            share=total / kernels_total if kernels_total else 0.0,
            calls_per_execution=len(durations) / executions if executions else 0.0,
            **measured,
        )


@dataclass(frozen=True)
class DeviceTiming:
    """One device's part of a module's timing.

    Attributes:
        device: The device: a device plane (`/device:GPU:0`), an XLA CPU device
            (`/device:CPU:1`, from the thunks' `device_ordinal`), or the host thread
            that drives a GPU (nsys: `pid P tid T`).
        executions: Steady-state executions on it.
        total_us: Wall time of those executions, summed.
        kernel_us: Time inside the module's kernels on it, summed.

    Example:
        >>> ins = hloscope.inspect_run('tests/data/jax_four_devices_profile')
        >>> t = next(t for t in ins.module_timings.values() if t.per_device)
        >>> t.device_count, [d.device for d in t.per_device][:2]
        (4, ['/device:CPU:0', '/device:CPU:1'])
    """

    device: str
    executions: int
    total_us: float
    kernel_us: float


@dataclass(frozen=True)
class ModuleTiming:
    """Measured time of one compiled module.

    A module that ran on several devices (SPMD partitions, replicas, `pmap`) is timed
    per device: counts and sums are the mean over the `device_count` devices that ran
    it (executions, calls, total, kernel and busy time), `per_device` holds each
    device's own, and figures per execution are per execution on one device.

    Attributes:
        name: The HloModule name.
        program_id: XLA's program id, when known.
        executions: Steady-state executions measured per device (warm-up left out).
        skipped: Executions left out as warm-up, per device.
        total_us: Wall time of the steady-state executions, summed, per device (see
            `wall_from`).
        kernel_us: Time inside its kernels, summed, per device.
        unattributed_us: Wall time when none of its kernels ran: gaps between kernels,
            host overhead inside the execution (per device).
        execution_us: Wall time of each steady-state execution on every device, in order.
        launches_per_execution: HLO-level kernel launches (op calls) per execution on one
            device, as `analyze_module(...).launches` counts them.
        kernel_launches_per_execution: Device kernels per execution (differs from the
            above where an op runs several kernels).
        static_launches: `analyze_module(after).launches` when the HLO was given.
        launch_mismatch: Whether measured and static launches differ (None: no HLO).
        kernels: Per-instruction timings, slowest total first.
        missing_kernels: Kernels of the HLO never seen in the profile (HLO given).
        unknown_ops: Ops seen in the profile that are not kernels of the HLO.
        devices: Planes (or nsys threads) its events came from.
        split_by: How executions were told apart (`run_id`, `execute event`, ...).
        wall_from: How an execution's wall time was measured.
        source: Where the timings come from: `xplane`, `trace.json` or `nsys`.
        busy_us: Time when at least one of its kernels ran (the union of their
            intervals), summed over executions, per device; below `kernel_us` where
            kernels overlap (async collectives beside compute). None when not measured.
        device_ops_per_execution: Device operations per execution, where the profile
            counts them (nsys: the module range's NumGPUOps); else None.
        launches_by_execution: Kernel calls in each steady-state execution, in order
            (for a median or a spread); () when not recorded.
        device_ops_by_execution: Device operations in each execution; () when not measured.
        cold: Whether the module ran only as warm-up (no more than `skip_first` times),
            so that its figures come from those cold first runs: one-time costs (first
            touches of memory, thread pools starting) are in them. `--skip-first 0`
            counts first runs in every module.
        control: Self time of each loop or conditional that holds kernels (`while.1`):
            its length less the time its body's ops ran inside it. It counts as busy,
            not as time outside any kernel, and not in `kernel_us`.
        compile_us: How long XLA compiled it before its first run, where the capture
            recorded it (JAX, `timing.compiles`); else None.
        device_count: Devices that ran it (1 where the profile does not tell devices
            apart).
        per_device: Each device's executions and times, by device name; () for one
            device.
        clock: Which clock its ops' times were read on: `device` (the device's own
            duration of each op, as a TPU records it and XProf sums it), `timeline`
            (each event's length on the profile's timeline), or `device+timeline`.
            Executions are always placed, and their wall time measured, on the timeline.

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> t = ins.timing('0030.jit_mlp')
        >>> t.executions, len(t.kernels)
        (2, 11)
    """

    name: str
    program_id: int | None
    executions: int
    skipped: int
    total_us: float
    kernel_us: float
    unattributed_us: float
    execution_us: tuple[float, ...]
    launches_per_execution: float
    kernel_launches_per_execution: float
    static_launches: int | None
    launch_mismatch: bool | None
    kernels: tuple[KernelTiming, ...]
    missing_kernels: tuple[str, ...] = ()
    unknown_ops: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    split_by: str = SPLIT_RUN_ID
    wall_from: str = WALL_OPS
    source: str = ""
    busy_us: float | None = None
    device_ops_per_execution: float | None = None
    launches_by_execution: tuple[int, ...] = ()
    device_ops_by_execution: tuple[int, ...] = ()
    cold: bool = False
    control: tuple[KernelTiming, ...] = ()
    compile_us: float | None = None
    device_count: int = 1
    per_device: tuple[DeviceTiming, ...] = ()
    clock: str = CLOCK_TIMELINE

    @property
    def mean_us(self) -> float:
        """Mean wall time of one execution on one device (0 without executions)."""
        if self.execution_us:
            return statistics.fmean(self.execution_us)
        return self.total_us / self.executions if self.executions else 0.0

    @property
    def device_executions(self) -> float:
        """Executions per device, exactly: the mean over the devices (`executions` is it
        rounded); what per-execution figures divide by."""
        if self.execution_us and self.device_count:
            return len(self.execution_us) / self.device_count
        return float(self.executions)

    def per_execution(self, us: float) -> float:
        """A time summed over the steady-state executions (`kernel_us`, `busy_us`, ...)
        as the time of one execution on one device (0 without executions)."""
        runs = self.device_executions
        return us / runs if runs else 0.0

    @property
    def kernel_us_per_execution(self) -> float:
        """Time inside its kernels in one execution on one device."""
        return self.per_execution(self.kernel_us)

    @property
    def launch_spread(self) -> dict[str, float] | None:
        """`{min, median, max}` of the kernel calls per execution; None when every
        execution made the same (it varies with a data-dependent conditional)."""
        counts = self.launches_by_execution
        if not counts or min(counts) == max(counts):
            return None
        return {"min": min(counts), "median": statistics.median(counts), "max": max(counts)}

    @property
    def spread(self) -> float | None:
        """The slowest device's wall time over the median device's (1.0 when even);
        None on one device."""
        return device_spread({d.device: d.total_us for d in self.per_device})[0]

    @property
    def slowest_device(self) -> str | None:
        """The device whose executions took longest, when it ran on several."""
        return device_spread({d.device: d.total_us for d in self.per_device})[1]

    @property
    def median_us(self) -> float:
        """Median wall time of one execution (0 without executions)."""
        return statistics.median(self.execution_us) if self.execution_us else 0.0

    def kernel(self, name: str) -> KernelTiming | None:
        """The timing of one instruction, or None when it never ran."""
        for k in self.kernels:
            if k.name == name:
                return k
        return None


@dataclass(frozen=True)
class ProfileTimings:
    """Per-module timings of one profile.

    Attributes:
        path: The profile file.
        format: `xplane` or `trace.json`.
        modules: Timings by module key: the HloModule name, or `name(program_id)` when
            the profile holds several programs of that name. Most total time first.
        skip_first: Executions left out per module as warm-up.
        op_events: Events attributed to an HLO op.
        hostnames: Hosts the profile came from.
        duration_us: Length of the profiling session, when recorded.
        problems: What was skipped or looked wrong, one line each.
        source: Where the timings come from: `xplane`, `trace.json` or `nsys`.
        platform: The target the profile records (`sm_90`, `TPU`), or None.
        device: The device model it records (`NVIDIA H100 80GB HBM3`), or None.

    Example:
        >>> timings = hloscope.inspect_run("tests/data/jax_mlp_profile").timings
        >>> timings.format, timings.op_events > 0
        ('xplane', True)
    """

    path: str | None
    format: str
    modules: Mapping[str, ModuleTiming]
    skip_first: int = 1
    op_events: int = 0
    hostnames: tuple[str, ...] = ()
    duration_us: float | None = None
    problems: tuple[str, ...] = ()
    source: str = ""
    platform: str | None = None
    device: str | None = None

    def for_dump(self, name: str, module_id: str | None) -> ModuleTiming | None:
        """The timing of a dumped module: by name, or by `name(program_id)` when several
        programs share the name (XLA's program id is the dump's module number)."""
        found = self.modules.get(name)
        if found is None and module_id is not None and module_id.isdigit():
            found = self.modules.get(timing_key(name, int(module_id), True))
        return found

    def module(self, query: str) -> ModuleTiming:
        """One module by key, by name, or by a part of its name found in one module only.

        Raises:
            UsageError: No module, or several, match.
        """
        if query in self.modules:
            return self.modules[query]
        named = [m for m in self.modules.values() if m.name == query]
        if len(named) == 1:
            return named[0]
        part = named or [m for k, m in self.modules.items() if query in k]
        if len(part) == 1:
            return part[0]
        keys = ", ".join(list(self.modules)[:12]) or "none"
        if not part:
            raise UsageError(f"no profiled module matches {query!r}; profiled: {keys}")
        found = ", ".join(timing_key(m.name, m.program_id, True) for m in part[:12])
        raise UsageError(f"{query!r} matches several modules ({found}); give a full name")


def device_spread(by_device: Mapping[str, float]) -> tuple[float | None, str | None]:
    """(the largest value over the median, the device holding it) of a figure measured
    on each device; (None, None) for fewer than two devices or a zero median."""
    if len(by_device) < 2:
        return None, None
    median = statistics.median(by_device.values())
    slowest = max(sorted(by_device), key=lambda d: by_device[d])
    if median <= 0:
        return None, None
    return by_device[slowest] / median, slowest


def launches_differ(per_execution: float, static_launches: int) -> bool:
    """Whether a module's measured launches per execution differ from the count its HLO
    gives (`ModuleTiming.launch_mismatch`), whichever trace measured them."""
    return not math.isclose(per_execution, static_launches)


def timing_key(name: str, program_id: int | None, ambiguous: bool) -> str:
    """A module's key in `ProfileTimings.modules`: its name, or `name(program_id)` when
    the profile holds several programs of that name."""
    return f"{name}({program_id})" if ambiguous and program_id is not None else name


def merge_timings(parts: Sequence[ProfileTimings]) -> ProfileTimings:
    """One `ProfileTimings` from the profiles of several profilers of one run (JAX's and
    TensorFlow's, when a script compiled with both): modules side by side, most total
    time first; figures of the profile with the most op events where they are single.

    Raises:
        ValueError: No parts.
    """
    if len(parts) == 1:
        return parts[0]
    if not parts:
        raise ValueError("no timings to merge")
    main = max(parts, key=lambda p: p.op_events)
    modules: dict[str, ModuleTiming] = {}
    for p in parts:
        for key, m in p.modules.items():
            modules.setdefault(key, m)
    problems = [line for p in parts if p.op_events for line in p.problems]
    if not main.op_events:
        problems = list(main.problems)
    return replace(
        main,
        modules=dict(sorted(modules.items(), key=lambda kv: (-kv[1].total_us, kv[0]))),
        op_events=sum(p.op_events for p in parts),
        problems=tuple(dict.fromkeys(problems)),
        hostnames=tuple(dict.fromkeys(h for p in parts for h in p.hostnames)),
    )


def cold_problems(timings: Iterable[tuple[str, ModuleTiming]], skip_first: int) -> list[str]:
    """The line that names the modules shown from their cold first runs, if any."""
    cold = [k for k, t in timings if t.cold]
    if not cold:
        return []
    return [
        f"{len(cold)} module(s) ran only {skip_first} time(s) or less, all warm-up: shown "
        "from their cold first run, one-time costs included (--skip-first 0 counts "
        "first runs in every module): " + ", ".join(cold[:8]) + (" ..." if len(cold) > 8 else "")
    ]
