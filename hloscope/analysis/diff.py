"""Run A vs run B: what changed in XLA's fusion decisions, and whether B is worse.

Takes the per-module reports of `analysis.report` and the pairings of `analysis.match`:
`diff_runs` compares each pair of modules (counts, kernel groups matched by the source ops
they hold, op placements) and `regressions` turns the diffs into `Violation`s for CI;
`select_diffs` picks module diffs by pattern. Nothing here prints or reads files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hloscope.analysis.budget import (
    KERNELS,
    LAUNCHES,
    OPS_PER_KERNEL,
    Violation,
)
from hloscope.analysis.match import (
    KernelTimes,
    MatchedKernel,
    kernel_times_for,
    match_kernels,
    match_modules,
    op_name_key,
)
from hloscope.analysis.provenance import ALONE, FUSED, Placement
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.errors import UsageError
from hloscope.hlo.parser import paused_gc
from hloscope.status import step

__all__ = [
    "ALONE_OPS",
    "APPEARED",
    "CHANGES",
    "DISAPPEARED",
    "INSTRUCTIONS",
    "INSTRUCTIONS_BEFORE",
    "KERNELS",
    "KIND_CHANGED",
    "LAUNCHES",
    "MERGED",
    "OPS_CHANGED",
    "OPS_PER_KERNEL",
    "REGROUPED",
    "SAME",
    "SPLIT",
    "TIME_US",
    "KernelChange",
    "KernelRef",
    "Metric",
    "ModuleDiff",
    "OpChange",
    "RunDiff",
    "Violation",
    "diff_modules",
    "diff_runs",
    "parse_tolerance",
    "regressions",
    "select_diffs",
]

# Kinds of kernel change, from A to B.
SPLIT = "split"  # one kernel in A, several in B
MERGED = "merged"  # several kernels in A, one in B
REGROUPED = "regrouped"  # several in A, several (other) in B
APPEARED = "appeared"  # only in B
DISAPPEARED = "disappeared"  # only in A
KIND_CHANGED = "kind changed"  # one to one, other kind (kLoop -> kInput, fusion -> unfused)
OPS_CHANGED = "ops changed"  # one to one, same kind, other source ops
SAME = "same"  # one to one, same kind and source ops (the name may differ)

CHANGES = (SPLIT, MERGED, REGROUPED, APPEARED, DISAPPEARED, KIND_CHANGED, OPS_CHANGED, SAME)

# Metric names, as `Metric.name`, JSON keys and `Violation.metric` (KERNELS, LAUNCHES and
# OPS_PER_KERNEL come from `analysis.budget`, which limits them too).
INSTRUCTIONS_BEFORE = "instructions_before"
INSTRUCTIONS = "instructions"
ALONE_OPS = "ops_alone"
TIME_US = "time_us"

# Metrics `regressions` compares, and which direction is worse.
_GUARDED = {KERNELS: "higher", LAUNCHES: "higher", OPS_PER_KERNEL: "lower", TIME_US: "higher"}


@dataclass(frozen=True)
class Metric:
    """One module-level number in A and in B.

    Attributes:
        name: `instructions`, `kernels`, `launches`, `ops_per_kernel`, `time_us`, ...
        a: The value in run A, or None when A does not have it.
        b: The value in run B, or None.
        worse: `"higher"` or `"lower"`: which direction is a regression; None when
            neither is (instruction counts).

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').module('0030.jit_mlp')
        >>> kernels = next(m for m in hloscope.diff_modules(a, b).metrics if m.name == 'kernels')
        >>> kernels.a, kernels.b
        (11, 52)
    """

    name: str
    a: float | None
    b: float | None
    worse: str | None = None

    @property
    def delta(self) -> float | None:
        """`b - a`, or None when a side is missing."""
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def relative(self) -> float | None:
        """`(b - a) / a`; None when a side is missing or a is zero."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return (self.b - self.a) / abs(self.a)

    def is_worse(self, tolerance: float = 0.0) -> bool:
        """Whether B is worse than A by more than `tolerance` (a fraction of A)."""
        if self.worse is None or self.a is None or self.b is None:
            return False
        if self.worse == "higher":
            return self.b > self.a * (1 + tolerance) + 1e-9
        return self.b < self.a * (1 - tolerance) - 1e-9


@dataclass(frozen=True)
class KernelRef:
    """One kernel of one side, as a diff shows it.

    Attributes:
        name: The instruction name in that side's module.
        kind: Its kind (`kLoop`, `__ynn_fusion`, `unfused:dot`, ...).
        launches: Launches per execution (None when a loop trip count is unknown).
        bytes: Bytes it reads and writes per execution (times its launches).
        ops: The HLO opcodes it computes (`add`, `multiply`, ...), in order.
        shape: Its result shape, as text.
        time_us: Its total time in the profile, when the side was profiled.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').module('0030.jit_mlp')
        >>> ref = next(c for c in hloscope.diff_modules(a, b).kernels if c.b).b[0]
        >>> isinstance(ref, hloscope.KernelRef), bool(ref.name)
        (True, True)
    """

    name: str
    kind: str
    launches: int | None
    bytes: int
    ops: tuple[str, ...]
    shape: str
    time_us: float | None = None


@dataclass(frozen=True)
class KernelChange:
    """Kernels of A and B that hold the same source ops, and how they differ.

    Attributes:
        change: SPLIT, MERGED, REGROUPED, APPEARED, DISAPPEARED, KIND_CHANGED,
            OPS_CHANGED or SAME.
        a: The kernels in A (empty for APPEARED).
        b: The kernels in B (empty for DISAPPEARED).
        source_ops: The source op names the kernels hold, on either side.
        ops_only_a: Source ops the A kernels hold and the B kernels do not.
        ops_only_b: Source ops the B kernels hold and the A kernels do not.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').module('0030.jit_mlp')
        >>> change = hloscope.diff_modules(a, b).kernels[0]
        >>> change.change
        'split'
    """

    change: str
    a: tuple[KernelRef, ...]
    b: tuple[KernelRef, ...]
    source_ops: tuple[str, ...]
    ops_only_a: tuple[str, ...] = ()
    ops_only_b: tuple[str, ...] = ()

    @property
    def bytes_a(self) -> int:
        """Bytes the A kernels move per execution."""
        return sum(k.bytes for k in self.a)

    @property
    def bytes_b(self) -> int:
        """Bytes the B kernels move per execution."""
        return sum(k.bytes for k in self.b)

    @property
    def time_a(self) -> float | None:
        """Total time of the A kernels (µs), when A was profiled."""
        return _total(k.time_us for k in self.a)

    @property
    def time_b(self) -> float | None:
        """Total time of the B kernels (µs), when B was profiled."""
        return _total(k.time_us for k in self.b)

    @property
    def time_delta(self) -> float | None:
        """B minus A time (µs), when both sides were profiled."""
        ta, tb = self.time_a, self.time_b
        if not self.a:
            ta = 0.0 if tb is not None else None
        if not self.b:
            tb = 0.0 if ta is not None else None
        return None if ta is None or tb is None else tb - ta

    @property
    def impact(self) -> float:
        """The sort key of diffs: |time delta| (µs) where profiled, else |bytes delta|."""
        delta = self.time_delta
        if delta is not None:
            return abs(delta)
        return float(abs(self.bytes_b - self.bytes_a))

    @property
    def changed(self) -> bool:
        """Whether anything but the names differs."""
        return self.change != SAME


@dataclass(frozen=True)
class OpChange:
    """A source op whose placement differs between A and B.

    Attributes:
        op: The source op name (as in A when both have it; the outer `jit(...)` of
            JAX names is ignored when matching).
        type: TensorFlow op type, when known.
        status_a: Its status in A (fused, alone, folded, dead, free, removed), or None
            when A does not have the op.
        status_b: Its status in B, or None.
        kernels_a: The A kernels it is in.
        kernels_b: The B kernels it is in.
        bytes_a: Bytes its A kernels move.
        bytes_b: Bytes its B kernels move.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').module('0030.jit_mlp')
        >>> change = hloscope.diff_modules(a, b).ops[0]
        >>> change.status_a, change.status_b
        ('fused', 'alone')
    """

    op: str
    type: str | None
    status_a: str | None
    status_b: str | None
    kernels_a: tuple[str, ...]
    kernels_b: tuple[str, ...]
    bytes_a: int
    bytes_b: int

    @property
    def unfused(self) -> bool:
        """Fused in A, running alone in B: a regression."""
        return self.status_a == FUSED and self.status_b == ALONE

    @property
    def fused(self) -> bool:
        """Alone in A, fused in B: an improvement."""
        return self.status_a == ALONE and self.status_b == FUSED


@dataclass(frozen=True)
class ModuleDiff:
    """One module of A against its counterpart in B.

    Attributes:
        a: The module's report in A.
        b: The module's report in B.
        matched_by: `"name"` (normalised name) or `"structure"` (names differ).
        metrics: Module-level numbers, A vs B (see the metric names in this module).
        kinds: `(kind, kernels in A, kernels in B)` for every kind on either side.
        kernels: Every kernel group, changed ones first, biggest impact first.
        ops: Source ops whose placement changed, regressions (fused -> alone) first.
        profiled: Whether both sides have kernel timings.

    Example:
        >>> m = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> d = hloscope.diff_modules(m, m)
        >>> {c.change for c in d.kernels}, d.ops  # nothing changed
        ({'same'}, ())
    """

    a: ModuleReport
    b: ModuleReport
    matched_by: str
    metrics: tuple[Metric, ...]
    kinds: tuple[tuple[str, int, int], ...]
    kernels: tuple[KernelChange, ...]
    ops: tuple[OpChange, ...]
    profiled: bool = False

    @property
    def trivial(self) -> bool:
        """Both sides are trivial helper modules."""
        return self.a.trivial and self.b.trivial

    @property
    def label(self) -> str:
        """`0030.jit_mlp`, or `0030.jit_mlp -> 0031.jit_mlp` when the keys differ."""
        return self.a.key if self.a.key == self.b.key else f"{self.a.key} -> {self.b.key}"

    @property
    def changed_kernels(self) -> tuple[KernelChange, ...]:
        """Kernel groups that changed (not SAME)."""
        return tuple(k for k in self.kernels if k.changed)

    @property
    def changed(self) -> bool:
        """Whether any count, kernel or op placement differs."""
        return bool(
            self.changed_kernels
            or self.ops
            or any(m.delta for m in self.metrics if m.name != TIME_US)
            or any(a != b for _, a, b in self.kinds)
        )

    def metric(self, name: str) -> Metric:
        """The metric called `name`.

        Raises:
            KeyError: No such metric.
        """
        return {m.name: m for m in self.metrics}[name]


@dataclass(frozen=True)
class RunDiff:
    """Two runs compared module by module.

    Attributes:
        a: The report of run A (the baseline).
        b: The report of run B.
        modules: Matched modules, in A's report order (biggest first, trivial last).
        only_a: Modules of A without a counterpart in B.
        only_b: Modules of B without a counterpart in A.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> diff = hloscope.diff_runs(a, a)
        >>> isinstance(diff, hloscope.RunDiff), len(diff.modules) == len(a.modules)
        (True, True)
    """

    a: RunReport
    b: RunReport
    modules: tuple[ModuleDiff, ...]
    only_a: tuple[ModuleReport, ...] = ()
    only_b: tuple[ModuleReport, ...] = ()

    @property
    def main(self) -> tuple[ModuleDiff, ...]:
        """Matched modules that are not trivial helpers."""
        return tuple(m for m in self.modules if not m.trivial)

    @property
    def changed(self) -> bool:
        """Whether anything differs."""
        return bool(self.only_a or self.only_b or any(m.changed for m in self.modules))


# ---------------------------------------------------------------------------------------
# Kernels


def _ref(s: MatchedKernel, timing: Mapping[str, float] | None) -> KernelRef:
    k = s.kernel
    launches = k.launches if k.launches is not None else 1
    return KernelRef(
        name=k.name,
        kind=k.kind,
        launches=k.launches,
        bytes=(k.bytes_in + k.bytes_out) * launches,
        ops=s.ops,
        shape=k.shape.text,
        time_us=None if timing is None else float(timing.get(k.name, 0.0)),
    )


def _change_kind(xs: list[MatchedKernel], ys: list[MatchedKernel]) -> str:
    if not xs:
        return APPEARED
    if not ys:
        return DISAPPEARED
    if len(xs) == 1 and len(ys) == 1:
        if xs[0].kernel.kind != ys[0].kernel.kind:
            return KIND_CHANGED
        return SAME if xs[0].keys == ys[0].keys else OPS_CHANGED
    if len(xs) == 1:
        return SPLIT
    return MERGED if len(ys) == 1 else REGROUPED


def _classify(
    xs: list[MatchedKernel],
    ys: list[MatchedKernel],
    time_a: Mapping[str, float] | None,
    time_b: Mapping[str, float] | None,
) -> KernelChange:
    ops_a = {k for s in xs for k in s.keys}
    ops_b = {k for s in ys for k in s.keys}
    names = tuple(dict.fromkeys(n for s in (*xs, *ys) for n in s.names))
    shown = {k: n for s in (*ys, *xs) for k, n in s.shown.items()}
    only_a = tuple(sorted({shown[k] for k in ops_a - ops_b})) if xs and ys else ()
    only_b = tuple(sorted({shown[k] for k in ops_b - ops_a})) if xs and ys else ()
    return KernelChange(
        _change_kind(xs, ys),
        tuple(_ref(s, time_a) for s in xs),
        tuple(_ref(s, time_b) for s in ys),
        names,
        only_a,
        only_b,
    )


# ---------------------------------------------------------------------------------------
# Ops and metrics


def _op_changes(a: ModuleReport, b: ModuleReport) -> list[OpChange]:
    if a.provenance is None or b.provenance is None:
        return []

    def index(placements: Iterable[Placement]) -> dict[str, Placement]:
        return {op_name_key(p.op.name): p for p in placements}

    pa = index(a.provenance.placements)
    pb = pa if b is a else index(b.provenance.placements)
    out = []
    for key in [*pa, *(k for k in pb if k not in pa)]:
        x, y = pa.get(key), pb.get(key)
        if x is not None and y is not None and x.status == y.status:
            continue
        some = x or y
        assert some is not None
        out.append(
            OpChange(
                op=some.op.name,
                type=some.op.type,
                status_a=x.status if x else None,
                status_b=y.status if y else None,
                kernels_a=x.kernels if x else (),
                kernels_b=y.kernels if y else (),
                bytes_a=x.bytes if x else 0,
                bytes_b=y.bytes if y else 0,
            )
        )
    out.sort(key=lambda c: (not c.unfused, not c.fused, -max(c.bytes_a, c.bytes_b), c.op))
    return out


def _metrics(
    a: ModuleReport,
    b: ModuleReport,
    time_a: Mapping[str, float] | None,
    time_b: Mapping[str, float] | None,
) -> tuple[Metric, ...]:
    def get(m: ModuleReport, what: str) -> float | None:
        if what == INSTRUCTIONS_BEFORE:
            return m.before.instructions if m.before else None
        if what == INSTRUCTIONS:
            return m.after.instructions if m.after else None
        if what == KERNELS:
            return m.after.kernel_count if m.after else None
        if what == LAUNCHES:
            return m.after.launches if m.after else None
        if what == OPS_PER_KERNEL:
            return m.ops_per_kernel
        return m.alone

    out = [
        Metric(name, get(a, name), get(b, name), _GUARDED.get(name))
        for name in (INSTRUCTIONS_BEFORE, INSTRUCTIONS, KERNELS, LAUNCHES, OPS_PER_KERNEL)
    ]
    out.append(Metric(ALONE_OPS, get(a, ALONE_OPS), get(b, ALONE_OPS), "higher"))
    out.append(
        Metric(
            TIME_US,
            sum(time_a.values()) if time_a is not None else None,
            sum(time_b.values()) if time_b is not None else None,
            "higher",
        )
    )
    return tuple(out)


def diff_modules(
    a: ModuleReport,
    b: ModuleReport,
    *,
    time_a: Mapping[str, float] | None = None,
    time_b: Mapping[str, float] | None = None,
    matched_by: str = "name",
) -> ModuleDiff:
    """Compare one module of run A with its counterpart in run B.

    Args:
        a: The module in A (from `analyze_run` or `analyze_dump`).
        b: The module in B.
        time_a: Kernel name -> µs in A's profile (per execution, as `diff_runs` passes
            them: see `kernel_times_for`), when A was profiled.
        time_b: The same for B.
        matched_by: How the pair was found (`"name"` or `"structure"`).

    Returns:
        Counts A vs B, kernel groups matched by provenance (biggest impact first:
        time where both sides are profiled, else bytes moved), op placement changes.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').module('0030.jit_mlp')
        >>> d = hloscope.diff_modules(a, b)
        >>> len(d.kernels) > 0, d.matched_by
        (True, 'name')
    """
    profiled = time_a is not None and time_b is not None
    if not profiled:
        time_a = time_b = None
    groups = match_kernels(a, b)
    order = {name: i for i, name in enumerate(CHANGES)}
    ranked = []
    for xs, ys in groups:
        c = _classify(xs, ys, time_a, time_b)
        # Ties keep program order: A's kernel order, then B's.
        position = (0, min(s.index for s in xs)) if xs else (1, min(s.index for s in ys))
        ranked.append(((not c.changed, -c.impact, order[c.change], position), c))
    ranked.sort(key=lambda t: t[0])
    changes = [c for _, c in ranked]
    kinds_a = a.after.kernels_by_kind if a.after else {}
    kinds_b = b.after.kernels_by_kind if b.after else {}
    kinds = tuple(
        (kind, kinds_a.get(kind, 0), kinds_b.get(kind, 0))
        for kind in dict.fromkeys([*kinds_a, *kinds_b])
    )
    return ModuleDiff(
        a=a,
        b=b,
        matched_by=matched_by,
        metrics=_metrics(a, b, time_a, time_b),
        kinds=kinds,
        kernels=tuple(changes),
        ops=tuple(_op_changes(a, b)),
        profiled=profiled,
    )


def diff_runs(
    a: RunReport,
    b: RunReport,
    *,
    timings_a: KernelTimes | None = None,
    timings_b: KernelTimes | None = None,
) -> RunDiff:
    """Compare two runs module by module.

    Args:
        a: `analyze_run` of run A (the baseline).
        b: `analyze_run` of run B.
        timings_a: Module key, `name(program_id)` or name -> (kernel name -> µs per
            execution), when A was profiled (see `Inspection.all_kernel_times`
            and `kernel_times_for`).
        timings_b: The same for B.

    Returns:
        The matched module diffs and the modules only one run has.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').report
        >>> diff = hloscope.diff_runs(a, b)
        >>> m = hloscope.select_diffs(diff, ['jit_mlp'])[0]
        >>> m.a.after.kernel_count, m.b.after.kernel_count
        (11, 52)
    """
    # Millions of new objects on big runs, and no cycle: with the collector running, its
    # full collections over them (and over both runs, unless frozen) took 2 s of the 4.6 s
    # diff of two 260 MB modules (issue 27).
    with paused_gc():
        pairs, only_a, only_b = match_modules(a.modules, b.modules)
        modules = []
        for x, y, how in pairs:
            step(f"matching the kernels of {x.key}" + (f" and {y.key}" if y.key != x.key else ""))
            time_a = kernel_times_for(timings_a, x.key, x.name)
            time_b = kernel_times_for(timings_b, y.key, y.name)
            modules.append(diff_modules(x, y, time_a=time_a, time_b=time_b, matched_by=how))
    return RunDiff(a, b, tuple(modules), tuple(only_a), tuple(only_b))


def select_diffs(result: RunDiff, patterns: Sequence[str]) -> tuple[ModuleDiff, ...]:
    """The module diffs `hloscope diff --module` picks.

    A pattern picks every matched module whose key or name on either side equals it,
    whose module number on either side it is (`30` picks `0030.jit_mlp`), or whose key on
    either side contains it.

    Args:
        result: From `diff_runs`.
        patterns: The patterns, in the order to show what they pick; no pattern picks
            nothing.

    Returns:
        The picked module diffs, each once, in pattern order, then in `result` order.

    Raises:
        UsageError: A pattern picks no module (the message lists the matched ones).

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').report
        >>> diff = hloscope.diff_runs(a, b)
        >>> [m.a.key for m in hloscope.select_diffs(diff, ['30'])]
        ['0030.jit_mlp']
    """
    picked: list[ModuleDiff] = []
    for pattern in patterns:
        found = [d for d in result.modules if _picks(pattern, d)]
        if not found:
            keys = ", ".join(d.label for d in result.modules[:12]) or "none"
            raise UsageError(f"no module of both runs matches {pattern!r}; matched: {keys}")
        picked += [d for d in found if d not in picked]
    return tuple(picked)


def _picks(pattern: str, d: ModuleDiff) -> bool:
    keys = (d.a.key, d.b.key)
    if pattern in (*keys, d.a.name, d.b.name) or any(pattern in k for k in keys):
        return True
    numbers = {k.split(".", 1)[0] for k in keys}
    return pattern.isdigit() and int(pattern) in {int(n) for n in numbers if n.isdigit()}


# ---------------------------------------------------------------------------------------
# CI guards


def parse_tolerance(text: str | float) -> float:
    """`"5%"`, `"5"` or `5` -> 0.05 (a plain number is a percentage too).

    Raises:
        UsageError: Not a non-negative percentage.
    """
    raw = str(text).strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--tolerance {raw!r}: give a percentage such as 5% or 0.5%")
    return value / 100


def regressions(modules: Iterable[ModuleDiff], tolerance: float = 0.0) -> tuple[Violation, ...]:
    """Where B is worse than A beyond a tolerance.

    Worse means more kernels, more launches, fewer ops per kernel, or more total kernel
    time (only when both sides were profiled).

    Args:
        modules: The module diffs to judge (the CLI passes the non-trivial ones).
        tolerance: Allowed relative change, as a fraction of A (0.05 for 5%).

    Returns:
        One violation per module and metric that got worse, in module order.

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> b = hloscope.inspect_run('tests/data/jax_mlp_no_fusion_pass').report
        >>> diff = hloscope.diff_runs(a, b)
        >>> [v.metric for v in hloscope.regressions(hloscope.select_diffs(diff, ['jit_mlp']))]
        ['kernels', 'launches', 'ops_per_kernel']
    """
    out = []
    for d in modules:
        for metric in d.metrics:
            if metric.name not in _GUARDED or not metric.is_worse(tolerance):
                continue
            assert metric.a is not None and metric.b is not None
            out.append(Violation(d.label, metric.name, metric.b, metric.a, tolerance))
    return tuple(out)


def _total(values: Iterable[float | None]) -> float | None:
    vs = list(values)
    if not vs or any(v is None for v in vs):
        return None
    return float(sum(v for v in vs if v is not None))
