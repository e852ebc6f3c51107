"""A run's fusion report: before vs after for every module, with provenance.

`analyze_run` is what `hloscope report`, `hloscope ops` and the HTML report call: it
takes each module's parsed before- and after-optimization sides from the run (the run
layer, `hloscope.runs`, reads and parses the files; nothing here opens one), analyses
both with `analyze_module`, and joins them with `provenance.join` (`trace` in two
halves). A module whose two sides are big has its after side read and analysed in a
worker process while this one reads the before side (`pool.beside`); for a drawing of
the before side, its report does not even wait for the worker until the after side is
read (`_Awaited`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Literal, cast

from hloscope.analysis.compilations import find_modules, run_functions
from hloscope.analysis.fusion import ModuleAnalysis, analyze_module
from hloscope.analysis.provenance import (
    ALONE,
    AfterOps,
    BeforeFacts,
    KernelIndex,
    Placement,
    Provenance,
    before_facts,
    expect_index,
    join,
    ops_to_place_ahead,
)
from hloscope.errors import HloscopeError
from hloscope.hlo.model import HloModule
from hloscope.hlo.parser import paused_gc
from hloscope.runs import ModuleDump, Run, is_trivial
from hloscope.status import step

if TYPE_CHECKING:
    from hloscope.analysis.pool import Derived


@dataclass(frozen=True)
class ModuleReport:
    """Before vs after for one module.

    Attributes:
        key: The module's key in its run (`0008.jit_mlp`).
        name: The HloModule name.
        module_id: XLA's module number from the dump file name (`"0008"`), if any.
        platform: What it was compiled for (`cpu`, `sm_90`, ...), if known.
        trivial: One of the tiny helper modules frameworks compile on the side.
        before: Analysis of the before-optimization module, if dumped.
        after: Analysis of the after-optimization module, if dumped.
        provenance: Source op -> kernel join (needs the after module).
        error: Why a side could not be read, when it could not ("" otherwise).
        before_module: The parsed before-optimization module, if dumped and readable.
        after_module: The parsed after-optimization module, if dumped and readable.

    Example:
        >>> m = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp')
        >>> m.before.ops, m.after.kernel_count, round(m.ops_per_kernel, 1), m.alone
        (70, 11, 6.4, 4)
    """

    key: str
    name: str
    module_id: str | None
    platform: str | None
    trivial: bool
    before: ModuleAnalysis | None
    after: ModuleAnalysis | None
    provenance: Provenance | None
    error: str = ""
    before_module: HloModule | None = field(default=None, compare=False, repr=False)
    after_module: HloModule | None = field(default=None, compare=False, repr=False)

    @property
    def ops_per_kernel(self) -> float | None:
        """Ops before optimization per kernel after (how much XLA fused)."""
        if self.before is None or self.after is None or not self.after.kernel_count:
            return None
        return self.before.ops / self.after.kernel_count

    @property
    def alone(self) -> int | None:
        """Source ops that share no kernel with another op: each runs in a kernel of its
        own, or in several where XLA split it (None without provenance)."""
        if self.provenance is None:
            return None
        return self.provenance.count(ALONE)

    @property
    def source_ops(self) -> int | None:
        """Source ops (framework ops named by the HLO's metadata) in the module: one per
        line of `hloscope ops` (None without provenance)."""
        return None if self.provenance is None else self.provenance.count()

    def placements(
        self, op: str | None = None, *, unfused: bool = False, kernel: str | None = None
    ) -> list[Placement]:
        """Where the source ops went, as `hloscope ops` lists them.

        Args:
            op: Only ops whose name, TF op type or source location contains this.
            unfused: Only ops that run as a kernel of their own, most bytes first.
            kernel: Only the ops this kernel holds (`Provenance.holding`).

        Returns:
            The placements, first seen first (or by bytes with `unfused`); empty without
            an after-optimization module.
        """
        if self.provenance is None:
            return []
        found = self.provenance.holding(kernel) if kernel else list(self.provenance.placements)
        if op:
            chosen = {id(p) for p in self.provenance.find(op)}
            found = [p for p in found if id(p) in chosen]
        if unfused:
            found = sorted((p for p in found if p.status == ALONE), key=lambda p: -p.bytes)
        return found

    @property
    def size(self) -> int:
        """Instructions after (else before) optimization: the sort key of reports."""
        side = self.after or self.before
        return side.instructions if side else 0


@dataclass(frozen=True)
class RunReport:
    """Every selected module of a run, biggest first.

    Attributes:
        run: The run that was analysed.
        modules: Reports, biggest first (trivial modules last); the compilations of one
            function together, in compile order.

    Example:
        >>> report = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> len(report.modules), [m.key for m in report.main]
        (21, ['0030.jit_mlp'])
    """

    run: Run
    modules: tuple[ModuleReport, ...]

    @property
    def main(self) -> tuple[ModuleReport, ...]:
        """The modules that are not trivial helpers."""
        return tuple(m for m in self.modules if not m.trivial)

    @property
    def trivial(self) -> tuple[ModuleReport, ...]:
        """The trivial helper modules (folded in terminal output unless asked for)."""
        return tuple(m for m in self.modules if m.trivial)


Drawn = Literal["after", "both"]
"""What a diagram reads of a module (`analyze_dump`'s `drawn`)."""

DrawAfter = Callable[["ModuleReport"], object]
"""What to draw of a module's after side alone, where it was analysed (`analyze_dump`)."""

BeforeAhead = Callable[[HloModule], object]
"""What to find of a module's before side alone while its after side is read in another
process (`analyze_dump`)."""


def analyze_dump(
    dump: ModuleDump,
    drawn: Drawn | None = None,
    *,
    provenance: bool = True,
    draw_after: DrawAfter | None = None,
    before_ahead: BeforeAhead | None = None,
) -> ModuleReport:
    """Analyse one module of a run: both sides, and the provenance join.

    A side that cannot be parsed does not stop the report: its error is recorded.

    Args:
        dump: The module.
        drawn: Only what `hloscope graph` reads to draw this side ("both": the two
            sides and the op -> kernel join): the before side is parsed but not
            analysed, and for "after" not even parsed; `trivial` is then left False.
            None: the whole report.
        provenance: Join the two sides' source ops. False: the sides' analyses alone,
            what `hloscope check` holds to a budget (`provenance` is None).
        draw_after: With `drawn="both"`, or a whole report: what to draw of the after
            side alone (a report whose before side is None) in the worker process that
            analyses it, when one does; `drawn_after` of the report gives it. For a
            whole report the worker draws it after the costs, and first sends the
            kernel index that colours a drawing of the before side here
            (`provenance.kernel_index`): the page of `hloscope report --html`.
        before_ahead: For a whole report: what to find of the before side alone here
            while a worker process reads the after side, when one does (the page's op
            diagram walked, `render.diagram.walk_ops_ahead`): time this process would
            otherwise spend waiting.
    """
    with paused_gc():
        return _analyze_dump(dump, drawn, provenance, draw_after, before_ahead)


def _analyze_dump(
    dump: ModuleDump,
    drawn: Drawn | None,
    provenance: bool,
    draw_after: DrawAfter | None = None,
    before_ahead: BeforeAhead | None = None,
) -> ModuleReport:
    from hloscope.analysis.pool import Pending, beside, beside_pays, side_sizes  # it runs this

    # Two big sides are read at once: the after side in a worker process, the before
    # side here (a diagram of it is drawn here). For a report, the worker then finds
    # the kernels' costs and the devices while the two sides are joined here; with
    # `draw_after`, then the kernel index and the drawing, while the caller goes on.
    pending: Pending[_AfterSide, object] | None = None
    more: list[Callable[[_AfterSide], object]] = []
    if drawn != "after" and beside_pays(side_sizes(dump)):
        loaders = {str(dump.after): dump.load_after}
        then: Callable[[_AfterSide], object] | None = None
        if drawn is None and provenance:
            then = _derived
            if draw_after is not None:  # then what colours the op diagram, then the drawing
                more = [_index, partial(_drawn, dump, draw_after)]
        elif drawn == "both" and draw_after is not None:
            then = partial(_drawn, dump, draw_after)
        task = partial(_after_side, dump, drawn, sent=True, ops=provenance)
        pending = beside(task, loaders, then, more)
    try:
        errors: list[str] = []
        before = before_module = facts = None
        try:
            if drawn != "after":  # the kernel graph alone never reads the before side
                before_module = dump.load_before()
        except HloscopeError as e:
            errors = [str(e)]
        if pending is not None and drawn == "both" and before_module is not None:
            # the picture of the before side is drawn while the worker runs
            waiting, pending = pending, None

            def finish() -> ModuleReport:  # the worker is done with once its side is in
                side = waiting.result()  # (or once it has drawn, with `draw_after`)
                return _joined(dump, drawn, None, before_module, None, errors, side)

            drawing = waiting.then if draw_after is not None else None
            return _Awaited.of(dump, before_module, finish, drawing)
        if before_module is not None and drawn is None:  # no diagram reads its kernels
            step(f"counting the ops of {dump.key}")
            before = analyze_module(before_module)
            if pending is not None and provenance:  # joined below, once the after side is back
                step(f"finding the source ops of {dump.key}")
                facts = before_facts(before_module)
                if draw_after is not None:  # a page: found while the worker sends its side
                    ops_to_place_ahead(before_module)  # for the op diagram
                if before_ahead is not None:
                    before_ahead(before_module)
        side = None
        if pending is not None:
            step(f"waiting for the after side of {dump.key}, read in another process")
            side = pending.result()
        report = _joined(dump, drawn, before, before_module, facts, errors, side, provenance)
        if pending is not None and side is not None and drawn is None and provenance:
            if report.provenance is not None:
                step(f"placing the source ops of {dump.key} in its kernels")
                report.provenance.placements  # noqa: B018  # while the worker costs
            derived = cast("Derived | None", pending.then())  # `_derived`'s
            if derived is not None:  # else found here when asked (its file parsed again)
                derived.keep(report.after_module, report.after)
            if more and report.provenance is not None:  # the worker goes on: read later
                working, pending = pending, None
                index = partial(working.more, 0)
                expect_index(report.provenance, cast("Callable[[], KernelIndex | None]", index))
                report = _Drawing.of(report, partial(working.more, 1))
    finally:
        if pending is not None:
            pending.close()
    return report


def _joined(
    dump: ModuleDump,
    drawn: Drawn | None,
    before: ModuleAnalysis | None,
    before_module: HloModule | None,
    facts: BeforeFacts | None,
    errors: list[str],
    side: _AfterSide | None,
    ops: bool = True,
) -> ModuleReport:
    """The report of `dump`: its before side (read here) joined with its after side
    (`side`, from a worker process; read here when None), by their source ops unless
    not `ops`."""
    if side is None:
        side = _after_side(dump, drawn, ops=ops)
    errors = errors + side.errors
    after_module, after, provenance = side.module, side.analysis, None
    if after_module is not None and after is not None and side.ops is not None:
        decisions = None
        try:
            decisions = dump.load_fusion_decisions()
        except HloscopeError as e:
            errors.append(str(e))
        provenance = join(side.ops, after, before_module, decisions, facts, side.index)
    return ModuleReport(
        key=dump.key,
        name=dump.name,
        module_id=dump.module_id,
        platform=dump.platform,
        trivial=is_trivial(dump) if drawn is None else False,
        before=before,
        after=after,
        provenance=provenance,
        error="; ".join(errors),
        before_module=before_module,
        after_module=after_module,
    )


class _Awaited(ModuleReport):
    """A module's report for a drawing of its before side, whose after side a worker
    process still analyses: waited for the first time something reads it. `hloscope
    graph` walks and folds the before module meanwhile, and reads the kernels (the
    colours) last. Only `analyze_dump(drawn="both")` makes one; like any dataclass of
    its own class, it equals only another `_Awaited`."""

    @classmethod
    def of(
        cls,
        dump: ModuleDump,
        before_module: HloModule,
        finish: Callable[[], ModuleReport],
        drawing: Callable[[], object] | None = None,
    ) -> _Awaited:
        report = object.__new__(cls)
        fields = {
            "key": dump.key,
            "name": dump.name,
            "module_id": dump.module_id,
            "platform": dump.platform,
            "trivial": False,
            "before": None,
            "before_module": before_module,
        }
        report.__dict__.update(fields, _finish=finish, _drawing=drawing)
        return report

    def drawn_after(self) -> object | None:
        """What `analyze_dump`'s `draw_after` drew in the worker (waited for), or None:
        not asked, or the worker died first."""
        drawing = self.__dict__.pop("_drawing", None)
        if drawing is None:
            return None
        self._done()  # the worker's side first: it was sent first
        found: object = drawing()
        return found

    def _done(self) -> ModuleReport:
        kept = self.__dict__
        if "_report" not in kept:
            kept["_report"] = kept.pop("_finish")()
        done: ModuleReport = kept["_report"]
        return done

    @property
    def after(self) -> ModuleAnalysis | None:
        return self._done().after

    @property
    def after_module(self) -> HloModule | None:
        return self._done().after_module

    @property
    def provenance(self) -> Provenance | None:
        return self._done().provenance

    @property
    def error(self) -> str:
        return self._done().error


class _Drawing(ModuleReport):
    """A module's report whose after side a worker process still draws (`analyze_dump`'s
    `draw_after`, for a whole report): `drawn_after` waits for it. It pickles, and so
    is kept, as the plain report; like any dataclass of its own class, it equals only
    another `_Drawing`."""

    @classmethod
    def of(cls, report: ModuleReport, drawing: Callable[[], object]) -> _Drawing:
        found = object.__new__(cls)
        found.__dict__.update(vars(report), _drawing=drawing)
        return found

    def drawn_after(self) -> object | None:
        """What the worker drew (waited for), or None: asked before, or the worker died
        first."""
        drawing = self.__dict__.pop("_drawing", None)
        return None if drawing is None else drawing()

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        fields = dataclasses.fields(ModuleReport)
        return (ModuleReport, tuple(getattr(self, f.name) for f in fields))


@dataclass
class _AfterSide:
    """A module's after side, analysed: what `_analyze_dump` joins with the before side
    (here, or sent back by a worker process, `pool.beside`)."""

    module: HloModule | None
    analysis: ModuleAnalysis | None
    ops: AfterOps | None
    errors: list[str]
    index: KernelIndex | None = None  # with a worker drawing: the before ops' kernels


def _after_side(
    dump: ModuleDump, drawn: Drawn | None, sent: bool = False, ops: bool = True
) -> _AfterSide:
    """Parse and analyse the after side of `dump`.

    Args:
        dump: The module.
        drawn: As for `analyze_dump`.
        sent: In a worker process: also find what the other process will need of the
            after module (which it has only as its file), for the report or the drawing.
        ops: Find its source ops, for the provenance join (`analyze_dump`'s
            `provenance`).
    """
    try:
        module = dump.load_after()
    except HloscopeError as e:
        return _AfterSide(None, None, None, [str(e)])
    if module is None:
        return _AfterSide(None, None, None, [])
    analysis = analyze_module(module)
    if not ops:
        return _AfterSide(module, analysis, None, [])
    if drawn is not None:
        # A drawing reads the source ops of the after side only to label its kernels,
        # and a drawing of the before side only the kernels of each before op (its
        # colours: their index, found without the source ops): found when asked.
        later = AfterOps.later(module, analysis)
        index = later.index() if drawn == "both" else None
        return _AfterSide(module, analysis, later, [], index=index)
    found = AfterOps.of(module, analysis)
    if sent:
        found.free  # noqa: B018  # the placements' after side, found here
    return _AfterSide(module, analysis, found, [])


def drawn_after(report: ModuleReport) -> object | None:
    """What `analyze_dump`'s `draw_after` drew of `report`'s after side in the worker
    process that analysed it, or None where none did (a small module, one process, a
    report read back from the cache, or the worker died): the caller draws it from
    `report` then. Given once: a second call gives None."""
    return report.drawn_after() if isinstance(report, _Awaited | _Drawing) else None


def draws_after(report: ModuleReport) -> bool:
    """Whether a worker process draws `report`'s after side (`drawn_after` waits for
    it), so that the caller draws the rest meanwhile."""
    return isinstance(report, _Awaited | _Drawing) and vars(report).get("_drawing") is not None


def _index(side: _AfterSide) -> KernelIndex | None:
    """The kernel index of an after side (in the worker that analysed it), which
    colours a drawing of the before side."""
    return side.ops.index() if side.ops is not None else None


def _drawn(dump: ModuleDump, draw: DrawAfter, side: _AfterSide) -> object:
    """`draw` of the after side alone (in the worker that analysed it)."""
    return draw(_joined(dump, "both", None, None, None, [], side))


def _derived(side: _AfterSide) -> Derived | None:
    """The costs and devices of an after side (in the worker that analysed it)."""
    from hloscope.analysis.pool import Derived  # the process that sends it

    return Derived.of(side.module, side.analysis)


def analyze_run(
    run: Run,
    modules: Iterable[str] = (),
    drawn: Drawn | None = None,
    *,
    provenance: bool = True,
    cache: bool = False,
    draw_after: DrawAfter | None = None,
    before_ahead: BeforeAhead | None = None,
) -> RunReport:
    """Analyse a run's modules.

    Args:
        run: From `hloscope.runs.load_run`.
        modules: Patterns selecting modules (see `compilations.find_modules`: a key,
            name or id, a function compiled several times, or one of its compilations as
            `jit_attend#3` or `jit_attend(f32[24,32])`); all modules when empty.
        drawn: Only what a diagram of each module reads (see `analyze_dump`).
        provenance: Join each module's source ops (see `analyze_dump`).
        cache: Read each module's report back from the user's cache folder where it
            was kept, and keep those analysed (`hloscope.analysis.kept`); not for a
            drawing, which reads every instruction of what it draws.
        draw_after: With `drawn="both"`, or for whole reports, what to draw of each
            after side in the worker that analyses it (see `analyze_dump`,
            `drawn_after`).
        before_ahead: For whole reports, what to find of each before side while a
            worker reads its after side (see `analyze_dump`).

    Returns:
        The report, biggest modules first, trivial ones last.

    Raises:
        UsageError: A pattern matches no module, or several that are not one function's
            compilations.
    """
    from hloscope.analysis.pool import analyze_dumps  # it runs analyze_dump

    patterns = list(modules)
    found = {d.key: d for p in patterns for d in find_modules(run, p)}
    dumps = list(found.values()) if patterns else list(run.modules)
    analyze = partial(
        analyze_dump,
        drawn=drawn,
        provenance=provenance,
        draw_after=draw_after,
        before_ahead=before_ahead,
    )
    if cache and drawn is None:
        from hloscope.analysis.kept import analyses

        # a report with its source ops joined serves one without (`check`), less them
        serves = [{"provenance": True}] if not provenance else []
        reports = analyses(dumps, analyze, {"provenance": provenance}, serves)
        if not provenance:
            reports = [r if r.provenance is None else replace(r, provenance=None) for r in reports]
    else:
        reports = analyze_dumps(dumps, analyze)  # in parallel when it pays
    if len(reports) == 1:  # nothing to order (a drawing's report is not waited for)
        return RunReport(run, tuple(reports))
    # a function's compilations stay together, in compile order, where its biggest is
    ids = {d.key: (d.id_number is None, d.id_number or 0, d.key) for d in dumps}
    functions = run_functions(run)
    biggest: dict[str, int] = {}
    first: dict[str, tuple[bool, int, str]] = {}
    for r in reports:
        f = functions[r.key][1]
        biggest[f] = max(biggest.get(f, 0), r.size)
        first[f] = min(first.get(f, ids[r.key]), ids[r.key])

    def order(r: ModuleReport) -> tuple[bool, int, str, tuple[bool, int, str]]:
        f = functions[r.key][1]
        return (r.trivial, -biggest[f], first[f][2], ids[r.key])

    reports.sort(key=order)
    return RunReport(run, tuple(reports))
