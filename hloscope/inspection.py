"""The assembled inspection of a run: everything a view needs, built once.

`inspect_run` is the one place where data is gathered: it loads the run folder
(`hloscope.runs`), parses and analyses each module (`hloscope.analysis.report`), reads
the run's measured timings from whichever timing source it holds
(`hloscope.timing.sources`) and joins each module to its timing, and reads the bench
results. Every renderer (terminal, JSON, diagrams, HTML, notebook) is a pure function of
the `Inspection` it returns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hloscope.analysis.compilations import Compilations, run_compilations
from hloscope.analysis.cost import ModuleCost, module_cost
from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.memory import MemoryReport, read_memory
from hloscope.analysis.report import (
    BeforeAhead,
    DrawAfter,
    Drawn,
    ModuleReport,
    RunReport,
    analyze_run,
)
from hloscope.analysis.torch_graphs import TorchXlaRun, torch_xla_run
from hloscope.errors import DocumentError, HloscopeError, UsageError
from hloscope.files import inside, read_regular
from hloscope.passes import pass_dumps
from hloscope.runs import Run, load_run
from hloscope.timing.helpers import weigh_helpers
from hloscope.timing.results import ModuleTiming, ProfileTimings, timing_key
from hloscope.timing.roofline import KernelRoof, Peaks, roofline
from hloscope.timing.sources import run_timings
from hloscope.timing.xla_coverage import XlaCoverage, xla_coverage

if TYPE_CHECKING:  # imported where used: a run without pass dumps or bench.json reads neither
    from hloscope.analysis.passes import PassStory
    from hloscope.timing.bench import BenchResult

__all__ = ["BENCH_FILE", "Inspection", "inspect_run", "read_bench"]

BENCH_FILE = "bench.json"
"""What `hloscope bench --save RUN` writes into a run folder."""

# bench.json is a few kilobytes.
_MAX_BENCH_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Inspection:
    """One run, analysed and timed: what every renderer takes.

    Attributes:
        report: The fusion report: every selected module before vs after, with
            provenance and the parsed modules.
        timings: The run's measured timings as the timing source read them, or None
            when the run holds none (or they could not be read: see `timing_error`).
        module_timings: Each module's timing, by module key (the one join of a module
            to its measurement).
        timing_error: Why the run's timings could not be read ("" when they could, or
            when there are none).
        bench: The run's `bench.json` (eager vs XLA), or None when it has none or it
            could not be read (see `bench_error`).
        bench_error: Why the run's `bench.json` could not be read ("" when it could, or
            when there is none).
        memory: Each module's planned memory (XLA's buffer-assignment files), by module
            key; a module whose dump lacks them, or whose files could not be read, is
            absent.
        memory_errors: Why a module's memory files could not be read, by module key.
        compilations: The run's modules grouped by the function they compile, with
            shapes and compile times (the functions of the selected modules).
        xla_coverage: For TensorFlow, which of its ops ran inside XLA and which outside
            (auto-clustering, or XLA functions among plain ops); None where that does
            not apply.
        torch_xla: PyTorch/XLA's graphs, their executions and its own records, for a
            torch_xla run.
        passes: Each module's pass story (`analysis.passes`), by module key, for the
            modules with per-pass dumps; filled only when asked for (the HTML page).

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> ins.module('0030.jit_mlp').after.kernel_count, len(ins.kernel_times('0030.jit_mlp'))
        (11, 11)
    """

    report: RunReport
    timings: ProfileTimings | None = None
    module_timings: Mapping[str, ModuleTiming] = field(default_factory=dict)
    timing_error: str = ""
    bench: BenchResult | None = None
    bench_error: str = ""
    memory: Mapping[str, MemoryReport] = field(default_factory=dict, repr=False)
    memory_errors: Mapping[str, str] = field(default_factory=dict, repr=False)
    compilations: Compilations = field(default_factory=Compilations)
    xla_coverage: XlaCoverage | None = None
    torch_xla: TorchXlaRun | None = None
    passes: Mapping[str, PassStory] = field(default_factory=dict, repr=False)
    # cost() results by module key, filled on first use
    _costs: dict[str, ModuleCost | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def run(self) -> Run:
        """The run folder the inspection read."""
        return self.report.run

    @property
    def modules(self) -> tuple[ModuleReport, ...]:
        """Every selected module, biggest first, trivial helpers last."""
        return self.report.modules

    @property
    def main(self) -> tuple[ModuleReport, ...]:
        """The modules that are not trivial helpers."""
        return self.report.main

    def module(self, key: str) -> ModuleReport:
        """The analysed module with this key.

        Raises:
            UsageError: No module of the inspection has that key.
        """
        for m in self.report.modules:
            if m.key == key:
                return m
        raise UsageError(f"no module {key!r} in this inspection of {self.run.path}")

    def select(self, keys: Iterable[str]) -> Inspection:
        """The same inspection narrowed to some of its modules (a notebook's module view),
        without analysing or reading anything again.

        Args:
            keys: Module keys of this inspection.

        Raises:
            UsageError: A key names no module of the inspection.
        """
        wanted = list(dict.fromkeys(keys))
        modules = tuple(self.module(k) for k in wanted)
        kept = set(wanted)
        return Inspection(
            report=RunReport(self.run, modules),
            timings=self.timings,
            module_timings={k: t for k, t in self.module_timings.items() if k in kept},
            timing_error=self.timing_error,
            bench=self.bench,
            bench_error=self.bench_error,
            memory={k: m for k, m in self.memory.items() if k in kept},
            memory_errors={k: e for k, e in self.memory_errors.items() if k in kept},
            compilations=run_compilations(self.run, modules, shapes_of=wanted),
            xla_coverage=self.xla_coverage,
            torch_xla=self.torch_xla,
            passes={k: s for k, s in self.passes.items() if k in kept},
        )

    def cost(self, key: str) -> ModuleCost | None:
        """A module's bytes and FLOPs per kernel (None without an after module);
        computed on first use and kept, since the text, JSON and roofline views all ask."""
        if key not in self._costs:
            m = self.module(key)
            cost = None
            if m.after_module is not None and m.after is not None:
                cost = module_cost(m.after_module, m.after)
            self._costs[key] = cost
        return self._costs[key]

    def roofline(self, key: str, peaks: Peaks | None) -> list[KernelRoof]:
        """A module's measured kernels placed against the device's roofs, furthest below
        first (`timing.roofline.roofline`); empty without times, peaks or cost."""
        times = self.kernel_times(key)
        if times is None or peaks is None:
            return []
        cost = self.cost(key)
        return roofline(cost, times, peaks) if cost is not None else []

    def timing(self, key: str) -> ModuleTiming | None:
        """A module's measured timing, by module key; None when it was not measured."""
        return self.module_timings.get(key)

    def kernel_times(self, key: str) -> dict[str, float] | None:
        """µs per steady-state execution of each kernel of a module on one device, or
        None when the module was not measured. Per execution, so that runs profiled for
        different numbers of steps compare."""
        t = self.module_timings.get(key)
        if t is None:
            return None
        per = t.device_executions or 1
        return {k.name: k.total_us / per for k in t.kernels if math.isfinite(k.total_us)}

    def all_kernel_times(self) -> dict[str, dict[str, float]]:
        """`kernel_times` of every measured module, by module key and, where no other
        module shares it, by HloModule name (how `hloscope diff` pairs runs)."""
        out: dict[str, dict[str, float]] = {}
        names = [m.name for m in self.modules if m.key in self.module_timings]
        for m in self.modules:
            times = self.kernel_times(m.key)
            if times is None:
                continue
            out[m.key] = times
            if names.count(m.name) == 1:
                out.setdefault(m.name, times)
        return out


def inspect_run(
    run: Run | str | Path,
    modules: Iterable[str] = (),
    *,
    timings: bool = True,
    bench: bool = True,
    passes: bool = False,
    drawn: Drawn | None = None,
    provenance: bool = True,
    cache: bool = False,
    draw_after: DrawAfter | None = None,
    before_ahead: BeforeAhead | None = None,
) -> Inspection:
    """Load, analyse and time a run: the one call every command and notebook view makes.

    Args:
        run: A run (from `hloscope.runs.load_run`), or the path of a run folder, a bare
            XLA dump folder or one HLO file.
        modules: Patterns selecting modules (see `Run.module`); all modules when empty.
        timings: Read the run's measured timings, when it holds any.
        bench: Read the run's `bench.json`, when it has one.
        passes: Tell the pass story of each module with per-pass dumps (for the HTML
            page); a story that cannot be read is left out.
        drawn: Only what `hloscope graph` reads to draw each module: "after" for the
            kernel graph alone, "both" for the op graph or both sides (see
            `hloscope.analysis.report.analyze_dump`).
        provenance: Join each module's source ops across its two sides; False leaves
            every `provenance` None, for what needs only the counts (`hloscope check`).
        cache: Read each module's analysis back from the user's cache folder
            (`~/.cache/hloscope/analyses`) while its files are unchanged, and keep
            those analysed there: what the CLI does unless `--no-cache`.
        draw_after: With `drawn="both"`, or for whole reports, what to draw of a big
            module's after side in the worker process that analyses it
            (`hloscope.analysis.report.drawn_after`; `render.html.page_after` for the
            page of a run without timings).
        before_ahead: For whole reports, what to find of a big module's before side
            while a worker process reads its after side
            (`hloscope.analysis.report.analyze_dump`; `render.diagram.walk_ops_ahead`
            for a page, whose op diagram then takes it).

    Returns:
        The inspection. A measurement that cannot be read does not fail it: its reason
        is in `timing_error`, and the fusion report stands.

    Raises:
        UsageError: The path holds no run, or a pattern matches no module (or several).

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> [m.key for m in ins.main], ins.timing_error
        (['0030.jit_mlp'], '')
    """
    loaded = run if isinstance(run, Run) else load_run(run)
    patterns = list(modules)
    report = analyze_run(
        loaded,
        patterns,
        drawn,
        provenance=provenance,
        cache=cache,
        draw_after=draw_after,
        before_ahead=before_ahead,
    )
    selected = [m.key for m in report.modules] if patterns else None
    profile, error = None, ""
    if timings:
        try:
            profile = run_timings(loaded, _static(report.modules))
        except HloscopeError as e:
            error = str(e)
    joined: dict[str, ModuleTiming] = {}
    if profile is not None:
        for m in report.modules:
            t = profile.for_dump(m.name, m.module_id)
            if t is not None:
                joined[m.key] = t
    report = weigh_helpers(report, joined)  # a costly helper is not folded away
    skip = loaded.manifest.profile.skip_first if loaded.manifest.profile else 1
    coverage = xla_coverage(loaded, report, joined, skip_first=skip, profiled=timings)
    memory, memory_errors = _memory(report.modules)
    bench_result, bench_error = None, ""
    if bench:
        try:
            bench_result = read_bench(loaded)
        except DocumentError as e:
            bench_error = str(e)
    return Inspection(
        report=report,
        timings=profile,
        module_timings=joined,
        timing_error=error,
        bench=bench_result,
        bench_error=bench_error,
        memory=memory,
        memory_errors=memory_errors,
        compilations=run_compilations(loaded, report.modules, shapes_of=selected),
        xla_coverage=coverage,
        torch_xla=torch_xla_run(loaded),
        passes=_passes(loaded, report.modules) if passes else {},
    )


def _passes(run: Run, modules: Iterable[ModuleReport]) -> dict[str, PassStory]:
    """The pass stories of the modules that have per-pass dumps."""
    found = pass_dumps(run)
    if not found:
        return {}
    from hloscope.analysis.passes import pass_story

    out: dict[str, PassStory] = {}
    for m in modules:
        if m.key not in found:
            continue
        try:
            out[m.key] = pass_story(run, run.module(m.key), dumps=found[m.key], report=m)
        except HloscopeError:
            continue  # the page shows the module without its story
    return out


def _memory(modules: Iterable[ModuleReport]) -> tuple[dict[str, MemoryReport], dict[str, str]]:
    """Each module's planned memory, and why a module's could not be read."""
    found: dict[str, MemoryReport] = {}
    errors: dict[str, str] = {}
    for m in modules:
        path = m.after_module.path if m.after_module is not None else None
        try:
            memory = read_memory(Path(path)) if path else None
        except HloscopeError as e:
            errors[m.key] = str(e)
            continue
        if memory is not None:
            found[m.key] = memory
    return found, errors


def read_bench(run: Run) -> BenchResult | None:
    """The run's `bench.json` (saved by `hloscope bench --save RUN`), or None.

    Raises:
        DocumentError: The file links out of the run folder, is not JSON, or is not a
            bench document (`inspect_run` shows the reason rather than fail).
    """
    path = run.path / BENCH_FILE if run.path.is_dir() else None
    if path is None or not path.is_file():
        return None
    if not inside(path, run.path):  # as run.json and dump/: nothing read from outside
        raise DocumentError("links out of the run folder; it was not read", where=BENCH_FILE)
    try:
        doc = json.loads(read_regular(path, _MAX_BENCH_BYTES))
    except RecursionError:
        raise DocumentError("nested too deep", where=BENCH_FILE) from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DocumentError(f"not readable: {e}", where=BENCH_FILE) from None
    from hloscope.timing.bench import BenchResult

    return BenchResult.from_json(doc, where=BENCH_FILE)


def _static(modules: Iterable[ModuleReport]) -> dict[str, ModuleAnalysis]:
    """After-optimization analyses keyed as profiles name modules."""
    out: dict[str, ModuleAnalysis] = {}
    for m in modules:
        if m.after is None:
            continue
        out.setdefault(m.name, m.after)
        if m.module_id is not None and m.module_id.isdigit():
            out[timing_key(m.name, int(m.module_id), True)] = m.after
    return out
