"""The fusion story of one module, pass by pass: counts after each pass, who made each kernel.

`pass_story` reads a module's per-pass dumps (`hloscope.passes`) in XLA's step order,
parses them as one series (`hloscope.hlo.series`: what did not change is not parsed
again), counts instructions, fusions, kernels and launches after each pass with the
kernel analysis `report` uses (`analysis.fusion`), and follows every kernel from dump
to dump with `diff`'s kernel matching (`analysis.match`: kernels pair by the source ops
they hold). A kernel's history is the passes that created, grew, merged, split or
renamed it; an op that ends up alone gets the pass where it left a fusion, or none:
it never shared a kernel. XLA's own pass timings (`hloscope.pass_log`) give each
pass's time, where the run's log has them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hloscope.analysis import kernels as K
from hloscope.analysis.evidence import constant_like, is_work
from hloscope.analysis.fusion import (
    Kernel,
    KernelMemo,
    ModuleAnalysis,
    analyze_module,
    reanalyze,
    walk,
)
from hloscope.analysis.match import MatchedKernel, match_kernels, op_name_key
from hloscope.analysis.provenance import ALONE, Provenance, SourceOp, op_name, source_op
from hloscope.analysis.report import ModuleReport
from hloscope.errors import UsageError
from hloscope.hlo.model import HloModule, Instruction
from hloscope.hlo.series import ModuleSeries
from hloscope.hlo.text import read_text
from hloscope.pass_log import Compilation, PassRun, read_pass_log, run_log
from hloscope.passes import PassDump, dumped_pass_re, pass_dumps, sanitize
from hloscope.runs import ModuleDump, Run, is_trivial

__all__ = [
    "CHANGES",
    "CREATED",
    "GREW",
    "MERGED",
    "RENAMED",
    "SPLIT",
    "Counts",
    "KernelEvent",
    "KernelHistory",
    "OpHistory",
    "PassStep",
    "PassStory",
    "PassTime",
    "no_pass_dumps_hint",
    "pass_stories",
    "pass_story",
]

CREATED = "created"  # a kernel with no kernel before it, or an op wrapped into a fusion
GREW = "grew"  # took in more source ops
MERGED = "merged"  # made of several kernels
SPLIT = "split"  # made of part of one kernel
RENAMED = "renamed"  # the same kernel under a new name
CHANGES = (CREATED, GREW, MERGED, SPLIT, RENAMED)
# The changes that make a kernel what it is: its first pass is the last of these.
_MAKES = (CREATED, MERGED, SPLIT)
_SLOWEST = 10
# The optimized module, when it differs from the last per-pass dump.
_AFTER_LAST = "(after the last dumped pass)"


@dataclass(frozen=True)
class Counts:
    """What a module holds at one point of the pipeline, counted as `report` counts.

    Attributes:
        instructions: Every instruction, fused computations included.
        fusions: Fusions that launch (`ModuleAnalysis.fusions`).
        kernels: Kernels (before any fusion: the ops, one kernel each).
        launches: Kernel launches per execution.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> counts = hloscope.pass_story(run, run.main()).steps[-1].counts
        >>> counts.kernels, counts.fusions
        (2, 2)
    """

    instructions: int
    fusions: int
    kernels: int
    launches: int

    @classmethod
    def of(cls, analysis: ModuleAnalysis) -> Counts:
        """The counts of an analysed module."""
        return cls(
            analysis.instructions, analysis.fusions, analysis.kernel_count, analysis.launches
        )


@dataclass(frozen=True)
class PassStep:
    """One pass that changed the module, and the module after it.

    Attributes:
        index: XLA's step number of the dump (its place in the pipeline as it ran).
        pipeline: The pipeline it ran in, as XLA names it (None for a dump taken
            during a pass).
        name: The pass (`dot-library-rewriter`); `pipeline-start` for a change made
            between pipelines, outside any pass.
        counts: The module after it.
        seconds: How long the pass took, from XLA's timer (None where not logged).
        note: What else to know (`during copy-insertion: ...`), or "".
        path: The dump file.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> step = hloscope.pass_story(run, run.main()).steps[0]
        >>> step.name
        'call-inliner'
    """

    index: int
    pipeline: str | None
    name: str
    counts: Counts
    seconds: float | None = None
    note: str = ""
    path: Path | None = None


@dataclass(frozen=True)
class KernelEvent:
    """One change to a kernel's line, at one pass.

    Attributes:
        index: The step of the pass (`PassStep.index`).
        pass_name: The pass.
        change: One of `CHANGES`.
        kernels: The kernel names it was made from (before the pass), in order.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> event = hloscope.pass_story(run, run.main()).kernels[0].history[0]
        >>> isinstance(event, hloscope.KernelEvent), bool(event.pass_name)
        (True, True)
    """

    index: int
    pass_name: str
    change: str
    kernels: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelHistory:
    """How one kernel of the optimized module came to be.

    Attributes:
        name: The kernel (after optimization).
        kind: Its kind (`kLoop`, `__ynn_fusion`, `unfused:dot`, ...).
        first_pass: The pass that made it what it is (the last that created, merged or
            split it); None when it is an op that no pass made into another kernel.
        first_index: That pass's step, or None.
        history: Every change along its line, in order.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> history = hloscope.pass_story(run, run.main()).kernels[0]
        >>> isinstance(history, hloscope.KernelHistory), bool(history.first_pass)
        (True, True)
    """

    name: str
    kind: str
    first_pass: str | None
    first_index: int | None
    history: tuple[KernelEvent, ...]


@dataclass(frozen=True)
class OpHistory:
    """Where a source op that runs alone after optimization went out of a fusion.

    Attributes:
        op: The source op name.
        kernel: The kernel it runs alone in.
        left_pass: The pass after which it no longer shared a kernel with another op;
            None when it never did.
        left_index: That pass's step, or None.
        left_kernel: The kernel it shared before that pass, or None.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> story = hloscope.pass_story(run, run.main())
        >>> all(isinstance(o, hloscope.OpHistory) for o in story.ops)
        True
    """

    op: str
    kernel: str
    left_pass: str | None
    left_index: int | None
    left_kernel: str | None = None


@dataclass(frozen=True)
class PassTime:
    """Time spent in one pass, summed over its runs in one compilation.

    Attributes:
        name: The pass.
        seconds: Its runs summed (passes that run pipelines are left out: their time
            is their passes').
        runs: How many times it ran.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> story = hloscope.pass_story(run, run.main())
        >>> all(isinstance(t, hloscope.PassTime) for t in story.slowest)
        True
    """

    name: str
    seconds: float
    runs: int


@dataclass(frozen=True)
class PassStory:
    """One module's passes, counts and kernel histories.

    Attributes:
        key: The module's key in its run.
        name: The HloModule name.
        start: The module before the first pass (its before-optimization dump).
        steps: The passes that changed it, in the order they ran.
        kernels: Each kernel after optimization with its history, in program order.
        ops: Each source op that runs alone after optimization, with where it left a
            fusion.
        slowest: The passes that took longest, summed by name (empty without timings).
        seconds: Time in passes in all (None without timings).
        pass_re: The `--xla_dump_hlo_pass_re` the dumps were made with, if known.
        notes: What the reader should know (partial dumps, timings missing), one line
            each.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> story = hloscope.pass_story(run, run.main())
        >>> story.key, len(story.steps) > 1, story.seconds is not None
        ('0000.jit_f', True, True)
    """

    key: str
    name: str
    start: Counts | None
    steps: tuple[PassStep, ...]
    kernels: tuple[KernelHistory, ...]
    ops: tuple[OpHistory, ...] = ()
    slowest: tuple[PassTime, ...] = ()
    seconds: float | None = None
    pass_re: str | None = None
    notes: tuple[str, ...] = ()
    _by_kernel: dict[str, KernelHistory] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def end(self) -> Counts | None:
        """The module after the last pass."""
        return self.steps[-1].counts if self.steps else self.start

    def kernel(self, name: str) -> KernelHistory | None:
        """The history of one kernel, by name."""
        if not self._by_kernel:
            self._by_kernel.update((k.name, k) for k in self.kernels)
        return self._by_kernel.get(name)


def no_pass_dumps_hint(run: Run) -> str:
    """What to say when a run holds no per-pass dumps: how to make them."""
    return (
        f"{run.path} has no per-pass dumps; make them with `hloscope dump --passes SCRIPT.py` "
        "(or XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.*')"
    )


def pass_stories(
    run: Run,
    modules: Iterable[str] = (),
    *,
    reports: Mapping[str, ModuleReport] | None = None,
    include_trivial: bool = False,
) -> list[PassStory]:
    """The pass story of each module of a run that has per-pass dumps.

    Args:
        run: A loaded run.
        modules: Patterns selecting modules (see `Run.module`); when empty, every module
            with per-pass dumps that is not a trivial helper (all of them when each is).
        reports: Analysed modules by key, to take the optimized module's kernels and
            provenance from (`analyze_dump` runs for those missing).
        include_trivial: With no patterns, JAX's helper modules too.

    Returns:
        One story per module, in run order.

    Raises:
        UsageError: The run has no per-pass dumps, or a selected module has none.
    """
    found = pass_dumps(run)
    if not found:
        raise UsageError(no_pass_dumps_hint(run))
    patterns = list(modules)
    if patterns:
        chosen = [run.module(p) for p in patterns]
        missing = [m.key for m in chosen if m.key not in found]
        if missing:
            have = ", ".join(k for k in found)
            raise UsageError(f"{', '.join(missing)} has no per-pass dumps (modules with: {have})")
    else:
        chosen = [m for m in run.modules if m.key in found]
        if not include_trivial:
            chosen = [m for m in chosen if not is_trivial(m)] or chosen
    log = _log(run)
    return [
        pass_story(run, m, dumps=found[m.key], log=log, report=(reports or {}).get(m.key))
        for m in chosen
        if m.key in found
    ]


def _log(run: Run) -> list[Compilation]:
    path = run_log(run)
    return read_pass_log(path) if path is not None else []


def pass_story(
    run: Run,
    module: ModuleDump,
    *,
    dumps: Sequence[PassDump] | None = None,
    log: Sequence[Compilation] | None = None,
    report: ModuleReport | None = None,
) -> PassStory:
    """Tell one module's story from its per-pass dumps.

    Args:
        run: The run the module is in.
        module: The module.
        dumps: Its per-pass dumps (found in the run when None).
        log: The compilations the run's log times (read from the run when None).
        report: The module's analysis (`analyze_dump`), for the optimized kernels.

    Returns:
        The story.

    Raises:
        UsageError: The module has no per-pass dumps.
        HloParseError: A dump is not readable HLO.

    Example:
        >>> run = hloscope.load_run('tests/data/jax_passes')
        >>> story = hloscope.pass_story(run, run.main())
        >>> len(story.steps) > 1, story.steps[-1].counts.kernels
        (True, 2)
    """
    if dumps is None:
        dumps = pass_dumps(run).get(module.key, ())
    if not dumps:
        raise UsageError(no_pass_dumps_hint(run))
    if log is None:
        log = _log(run)
    if report is None:
        from hloscope.analysis.report import analyze_dump

        report = analyze_dump(module)
    pass_re = dumped_pass_re(run, module)
    reader = _Reader(report)
    notes: list[str] = []

    reader.read(module.before or dumps[0].path)
    start = reader.counts
    # a pipeline run as a pass is dumped after its own passes were: nothing new to show
    pipelines = {d.pipeline for d in dumps if d.pipeline is not None}
    steps: list[PassStep] = []
    # With `.*` (or an unknown regex: XLA writes it in debug_options, so a folder without
    # them is most likely hloscope's or a full dump) every pass that changed the module
    # was dumped; with another one only some were.
    everything = pass_re in (None, ".*")
    previous: PassDump | None = None
    for dump in dumps:
        changed = reader.read(dump.path)
        xla_changed = (
            everything
            and not dump.at_pipeline_start
            and dump.during is None
            and dump.after not in pipelines
        )
        if changed or xla_changed:
            name, note = _name_and_note(dump, changed)
            if changed and not everything and not _adjacent(previous, dump):
                if not dump.at_pipeline_start and dump.during is None:
                    name = f"(passes up to {dump.after})"
                note = _join(note, "the passes before it were not dumped: the change may be theirs")
            if changed:
                reader.follow(dump.step, name)
            assert reader.counts is not None
            steps.append(
                PassStep(dump.step, dump.pipeline, name, reader.counts, None, note, dump.path)
            )
        previous = dump
    if module.after is not None and reader.read(module.after, final=True):
        last = dumps[-1].step + 1
        reader.follow(last, _AFTER_LAST)
        assert reader.counts is not None
        why = "the optimized module: changed after the last dumped pass, outside any pass"
        steps.append(PassStep(last, None, _AFTER_LAST, reader.counts, None, why, module.after))
    if not everything:
        notes.append(
            f"only passes matching {pass_re!r} were dumped: a change made by passes that were "
            "not is shown at the first dump after it, as `(passes up to ...)`; matching "
            "passes that changed nothing are left out"
        )
    steps, slowest, total, timing_note = _timed(run, module, dumps, steps, log)
    if timing_note:
        notes.append(timing_note)
    return PassStory(
        key=module.key,
        name=module.name,
        start=start,
        steps=tuple(steps),
        kernels=reader.histories(),
        ops=reader.alone_ops(),
        slowest=slowest,
        seconds=total,
        pass_re=pass_re,
        notes=tuple(notes),
    )


def _name_and_note(dump: PassDump, changed: bool) -> tuple[str, str]:
    if dump.during is not None:
        return dump.after, f"during {dump.after}: {dump.during.replace('_', ' ')}"
    if dump.at_pipeline_start:
        return dump.after, "changed between pipelines, outside any pass"
    return dump.after, "" if changed else "XLA reports a change the HLO text does not show"


def _adjacent(previous: PassDump | None, dump: PassDump) -> bool:
    """Whether nothing ran between two dumps: the first was taken right before the
    pass the second was taken after, in the same pipeline."""
    return (
        previous is not None
        and previous.pipeline == dump.pipeline
        and previous.before == dump.after
    )


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


# ---------------------------------------------------------------------------------------
# Reading the dumps and following kernels


class _Snapshot:
    """One dump, analysed: its kernels, their source ops (found when asked), and the
    history of each kernel that has one."""

    def __init__(self, reader: _Reader, module: HloModule, analysis: ModuleAnalysis) -> None:
        self.reader = reader
        self.module = module
        self.analysis = analysis
        self.kernels = {k.name: k for k in analysis.kernels}
        self.history: dict[str, tuple[KernelEvent, ...]] = {}
        self._free: frozenset[int] | None = None
        self._keys: dict[str, frozenset[str]] = {}
        self._scopes: dict[str, str] | None = None

    @property
    def free(self) -> frozenset[int]:
        """What does no work although a kernel holds it: `constant_like(module)`, the
        constants XLA copies into fusions. Without fusions nothing: a broadcast of a
        constant there is a kernel of its own and does its op's work."""
        if self._free is None:
            self._free = constant_like(self.module) if self.analysis.fusions else frozenset()
        return self._free

    def keys(self, name: str) -> frozenset[str]:
        """A kernel's source op keys (`op_name_key`): of the instructions in it doing work."""
        found = self._keys.get(name)
        if found is None:
            kernel = self.kernels[name]
            found = self._keys[name] = self.reader.kernel_keys(
                kernel, self.free, self.scope(kernel.computation)
            )
        return found

    def scope(self, computation: str) -> str:
        """The op_name prefix of a computation's ops: what XLA's call inliner will give
        them (`fusion.walk`'s scope), so that an op keeps its name across inlining."""
        if self._scopes is None:
            entry = self.module.entry.name
            self._scopes = {}
            if any(k.computation != entry for k in self.analysis.kernels):
                for ex in walk(self.module, self.analysis.platform):
                    self._scopes.setdefault(ex.computation.name, ex.scope)
        return self._scopes.get(computation, "")

    def source_ops(self, name: str) -> tuple[SourceOp, ...]:
        """A kernel's source ops, as `provenance.trace` finds them."""
        found: dict[str, SourceOp] = {}
        kernel = self.kernels[name]
        scope = self.scope(kernel.computation)
        for inst in kernel.ops:
            if is_work(inst, self.free):
                op = self.reader.source_op(self.module, inst, scope)
                if op is not None:
                    found.setdefault(op.name, op)
        return tuple(found.values())

    def report(self, kernels: list[Kernel], like: ModuleReport) -> ModuleReport:
        """Some of its kernels as a module report, for `match_kernels`."""
        return ModuleReport(
            key=like.key,
            name=like.name,
            module_id=like.module_id,
            platform=like.platform,
            trivial=False,
            before=None,
            after=replace(self.analysis, kernels=tuple(kernels)),
            provenance=Provenance((), {k.name: self.source_ops(k.name) for k in kernels}, {}),
        )


class _Reader:
    """Reads one module's dumps in order and follows its kernels from dump to dump."""

    def __init__(self, report: ModuleReport) -> None:
        self.report = report
        self.series = ModuleSeries()
        self.memo = KernelMemo()
        self.platform = K.platform(report.after_module) if report.after_module else None
        self.text: str | None = None
        self.after_text: str | None = None
        if report.after_module is not None and report.after_module.path is not None:
            self.after_text = read_text(report.after_module.path)
            self.series.also(self.after_text, report.after_module)
        self.snapshot: _Snapshot | None = None
        self.counts: Counts | None = None
        self._pending: _Snapshot | None = None
        # a one-instruction kernel's source ops and keys, by its instruction (kept
        # alive here) and whether that is a constant's data movement
        self._lone: dict[tuple[int, bool, str], tuple[Instruction, frozenset[str]]] = {}
        self._sources: dict[tuple[int, int, str], tuple[Instruction, SourceOp | None]] = {}
        # op key -> (step, pass, kernel) of the last dump where it shared a kernel
        self.shared: dict[str, tuple[int, str, str]] = {}
        self.now_shared: set[str] = set()
        # op key -> (step, pass, kernel it shared) where it last stopped sharing one
        self.left: dict[str, tuple[int, str, str]] = {}

    def read(self, path: Path, *, final: bool = False) -> bool:
        """Read the next dump; False when its text is that of the one before."""
        text = read_text(path)
        if text == self.text:
            return False
        self.text = text
        report = self.report
        if (
            report.after_module is not None
            and report.after is not None
            and (final or text == self.after_text)
        ):
            # the optimized module, as `report` read and counted it
            module, analysis = report.after_module, report.after
        elif self.snapshot is None and report.before_module is not None and report.before:
            # the before-optimization module, as `report` read and counted it
            module, analysis = report.before_module, report.before
            self.series.seed(text, module)
        else:
            module = self.series.parse(text, path=str(path))
            last = self._pending
            analysis = (
                reanalyze(last.module, last.analysis, module, self.platform, self.memo)
                if last is not None
                else None
            ) or analyze_module(module, self.platform, memo=self.memo)
        self.counts = Counts.of(analysis)
        self._pending = _Snapshot(self, module, analysis)
        if self.snapshot is None:
            self.snapshot = self._pending
            self._note_shared(self.snapshot, -1, "")
        return True

    def kernel_keys(self, k: Kernel, free: frozenset[int], scope: str) -> frozenset[str]:
        """The op keys of the instructions in a kernel that do work (a one-instruction
        kernel's found once per instruction and scope)."""
        if len(k.ops) == 1:
            inst = k.ops[0]
            key = (id(inst), id(inst) in free, scope)
            cached = self._lone.get(key)
            if cached is None or cached[0] is not inst:
                cached = self._lone[key] = (inst, self._keys_of(k.ops, free, scope))
            return cached[1]
        return self._keys_of(k.ops, free, scope)

    @staticmethod
    def _keys_of(ops: Iterable[Instruction], free: frozenset[int], scope: str) -> frozenset[str]:
        names = (op_name(i, scope) for i in ops if is_work(i, free))
        return frozenset(op_name_key(n) for n in names if n is not None)

    def source_op(self, module: HloModule, inst: Instruction, scope: str) -> SourceOp | None:
        """`provenance.source_op`, once per instruction, scope and stack-frame table."""
        key = (id(inst), id(module.stack_frames), scope)
        cached = self._sources.get(key)
        if cached is None or cached[0] is not inst:
            cached = self._sources[key] = (inst, source_op(module, inst, scope))
        return cached[1]

    def follow(self, index: int, pass_name: str) -> None:
        """Carry each kernel's line from the previous dump to the one just read.

        A kernel of the same name and class holding the same instructions, or the same
        source ops, goes on as it was; the others are matched with `diff`'s kernel
        matching.
        """
        before, after = self.snapshot, self._pending
        assert before is not None and after is not None
        if before is after:
            return
        rest_a = dict(before.kernels)
        rest_b: list[Kernel] = []
        for name, kb in after.kernels.items():
            ka = rest_a.get(name)
            if (
                ka is not None
                and ka.cls == kb.cls
                and (ka.ops == kb.ops or before.keys(name) == after.keys(name))
            ):
                if name in before.history:
                    after.history[name] = before.history[name]
                del rest_a[name]
            else:
                rest_b.append(kb)
        if rest_b:
            a = before.report(list(rest_a.values()), self.report)
            b = after.report(rest_b, self.report)
            for group_a, group_b in match_kernels(a, b):
                _carry(group_a, group_b, before, after, index, pass_name)
        self._note_shared(after, index, pass_name)
        self.snapshot = after

    def _note_shared(self, snap: _Snapshot, index: int, pass_name: str) -> None:
        """Record which op keys share a kernel in this dump (only a kernel of several
        instructions can hold several ops), and where one stopped sharing."""
        now: set[str] = set()
        for name, k in snap.kernels.items():
            if len(k.ops) < 2:
                continue
            keys = snap.keys(name)
            if len(keys) > 1:
                now.update(keys)
                for key in keys:
                    self.shared[key] = (index, pass_name, name)
        # an op that shared a kernel before and does not now left it at this pass
        for key in self.now_shared - now:
            self.left[key] = (index, pass_name, self.shared[key][2])
        self.now_shared = now

    def histories(self) -> tuple[KernelHistory, ...]:
        snap = self.snapshot
        if snap is None:
            return ()
        out = []
        for k in snap.analysis.kernels:
            history = snap.history.get(k.name, ())
            makes = [e for e in history if e.change in _MAKES]
            first = makes[-1] if makes else None
            out.append(
                KernelHistory(
                    name=k.name,
                    kind=k.kind,
                    first_pass=first.pass_name if first else None,
                    first_index=first.index if first else None,
                    history=history,
                )
            )
        return tuple(out)

    def alone_ops(self) -> tuple[OpHistory, ...]:
        prov = self.report.provenance
        if prov is None:
            return ()
        out = []
        for p in prov.placements:
            if p.status != ALONE:
                continue
            key = op_name_key(p.op.name)
            left = self.left.get(key)
            kernels = list(p.kernels) or [k for k, _ in p.inferred]
            kernel = kernels[0] if kernels else ""
            if left is None:
                out.append(OpHistory(p.op.name, kernel, None, None))
            else:
                out.append(OpHistory(p.op.name, kernel, left[1], left[0], left[2]))
        return tuple(out)


def _carry(
    group_a: list[MatchedKernel],
    group_b: list[MatchedKernel],
    before: _Snapshot,
    after: _Snapshot,
    index: int,
    pass_name: str,
) -> None:
    """Give each kernel of B its line: from the kernels of A it holds ops of."""
    keys_a = {a.kernel.name: before.keys(a.kernel.name) for a in group_a}
    keys_b = {b.kernel.name: after.keys(b.kernel.name) for b in group_b}
    holding: dict[str, list[MatchedKernel]] = {}  # op key -> kernels of A holding it
    for a in group_a:
        for key in keys_a[a.kernel.name]:
            holding.setdefault(key, []).append(a)
    keepers: dict[str, MatchedKernel | None] = {}
    for b in group_b:
        name_b = b.kernel.name
        kb = keys_b[name_b]
        if kb:
            found = {id(a): a for key in kb for a in holding.get(key, ())}
            sources = [a for a in group_a if id(a) in found]  # in A's order
        else:
            sources = list(group_a)  # paired by what they compute (no source ops)
        names = tuple(a.kernel.name for a in sources)
        if not sources:
            after.history[name_b] = (KernelEvent(index, pass_name, CREATED),)
            continue
        if len(sources) > 1:
            if b.kernel.cls == K.FUSION:
                grown = _grown_fusion(sources)
                if grown is not None:
                    old = before.history.get(grown.kernel.name, ())
                    after.history[name_b] = (*old, KernelEvent(index, pass_name, GREW, names))
                else:
                    after.history[name_b] = (KernelEvent(index, pass_name, MERGED, names),)
                continue
            # several instructions became one that is not a fusion (a simplification):
            # it goes on from the one of its name, else the first
            sources = [next((a for a in sources if a.kernel.name == name_b), sources[0])]
            names = (sources[0].kernel.name,)
        a = sources[0]
        old = before.history.get(a.kernel.name, ())
        ka = keys_a[a.kernel.name]
        if a.kernel.name not in keepers:
            keepers[a.kernel.name] = _keeper(a, group_b, keys_b, ka)
        change = None
        if a.kernel.cls != K.FUSION and b.kernel.cls == K.FUSION:
            change = CREATED  # an op wrapped into a fusion of its own
        elif keepers[a.kernel.name] is not b:
            change = SPLIT  # A's ops went to several kernels, and B is not A going on
        elif kb > ka:
            change = GREW
        elif a.kernel.name != name_b:
            change = RENAMED
        history = (*old, KernelEvent(index, pass_name, change, names)) if change else old
        if history:
            after.history[name_b] = history


def _keeper(
    a: MatchedKernel,
    group_b: list[MatchedKernel],
    keys_b: dict[str, frozenset[str]],
    keys_a: frozenset[str],
) -> MatchedKernel | None:
    """Of the kernels of B holding A's ops, the one that is A going on: the one of A's
    name, else the one holding most of them (the first of those)."""
    holders = [x for x in group_b if keys_b[x.kernel.name] & keys_a or not keys_a]
    if not holders:
        return None
    for x in holders:
        if x.kernel.name == a.kernel.name:
            return x
    return max(holders, key=lambda x: len(keys_b[x.kernel.name] & keys_a))


def _grown_fusion(sources: list[MatchedKernel]) -> MatchedKernel | None:
    """The one fusion among several sources that a fusion continues (it took the
    others in), or None when it is a merge of equals."""
    fusions = [a for a in sources if a.kernel.cls == K.FUSION]
    return fusions[0] if len(fusions) == 1 else None


# ---------------------------------------------------------------------------------------
# Timings


def _timed(
    run: Run,
    module: ModuleDump,
    dumps: Sequence[PassDump],
    steps: list[PassStep],
    log: Sequence[Compilation],
) -> tuple[list[PassStep], tuple[PassTime, ...], float | None, str]:
    """Steps with XLA's times, the slowest passes, the time in passes, and a note."""
    compilation = _compilation_of(run, module, log)
    if compilation is None:
        why = (
            "no pass timings: the run's log holds none (`hloscope dump --passes` logs them)"
            if not log
            else f"no pass timings for {module.name} in the run's log"
        )
        return steps, (), None, why
    times = _align(compilation.passes, dumps)
    names = {sanitize(p): p for p in compilation.pipelines}
    out = []
    for s in steps:
        pipeline = names.get(s.pipeline, s.pipeline) if s.pipeline else None
        # a step standing for passes that were not dumped has no one time
        seconds = times.get(s.index) if times is not None and s.name[:1] != "(" else None
        out.append(PassStep(s.index, pipeline, s.name, s.counts, seconds, s.note, s.path))
    note = "" if times is not None else "the log's pass timings do not line up with the dumps"
    totals: dict[str, list[float]] = defaultdict(list)
    for run_ in compilation.passes:
        if not run_.nested:
            totals[run_.name].append(run_.seconds)
    slowest = sorted(
        (PassTime(n, sum(t), len(t)) for n, t in totals.items()), key=lambda p: -p.seconds
    )
    return out, tuple(slowest[:_SLOWEST]), compilation.seconds, note


def _compilation_of(run: Run, module: ModuleDump, log: Sequence[Compilation]) -> Compilation | None:
    """The log's compilation of this module: the k-th of its name for the k-th module
    of that name in the run (XLA numbers modules as it creates them)."""
    same = [m for m in run.modules if m.name == module.name]
    mine = [c for c in log if c.module == module.name]
    if len(mine) != len(same):
        return None
    return mine[same.index(module)]


def _align(runs: Sequence[PassRun], dumps: Sequence[PassDump]) -> dict[int, float] | None:
    """Each pass dump's time: the timer line of that pass, in that pipeline, found in
    order after the previous one's. None when a dumped pass has no such line."""
    out: dict[int, float] = {}
    at = 0
    for dump in dumps:
        if dump.at_pipeline_start or dump.during is not None or dump.pipeline is None:
            continue
        for i in range(at, len(runs)):
            r = runs[i]
            if sanitize(r.name) == dump.after and sanitize(r.pipeline) == dump.pipeline:
                out[dump.step] = r.seconds
                at = i + 1
                break
        else:
            return None
    return out
