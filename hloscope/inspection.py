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
from typing import Any

from hloscope.analysis.compilations import Compilations, run_compilations
from hloscope.analysis.cost import ModuleCost, module_cost
from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.memory import MemoryReport, read_memory
from hloscope.analysis.passes import PassStory, pass_story
from hloscope.analysis.report import ModuleReport, RunReport, analyze_run
from hloscope.analysis.torch_graphs import TorchXlaRun, torch_xla_run
from hloscope.errors import HloscopeError, UsageError
from hloscope.files import inside, read_regular
from hloscope.hlo.text import split_lines
from hloscope.passes import pass_dumps
from hloscope.runs import Run, load_run
from hloscope.timing.helpers import weigh_helpers
from hloscope.timing.results import ModuleTiming, ProfileTimings, timing_key
from hloscope.timing.roofline import KernelRoof, Peaks, roofline
from hloscope.timing.sources import run_timings
from hloscope.timing.xla_coverage import XlaCoverage, xla_coverage

__all__ = ["BENCH_FILE", "Inspection", "inspect_run"]

BENCH_FILE = "bench.json"
"""What `hloscope bench --save RUN` writes into a run folder."""

# bench.json is a few kilobytes; HLO text read for display is capped per module.
_MAX_BENCH_BYTES = 1024 * 1024
_MAX_SOURCE_BYTES = 256 * 1024 * 1024


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
        bench: The run's `bench.json` document (eager vs XLA), or None; an unreadable
            file is `{"error": ...}`.
        sources: The after-optimization HLO text of each module, as lines, by module key;
            filled only when asked for (the HTML page shows kernels' HLO).
        memory: Each module's planned memory (XLA's buffer-assignment files), by module
            key; a module whose dump lacks them is absent, an unreadable one is its error.
        compilations: The run's modules grouped by the function they compile, with
            shapes and compile times (the functions of the selected modules).
        xla_coverage: For TensorFlow, which of its ops ran inside XLA and which outside
            (auto-clustering, or XLA functions among plain ops); None where that does
            not apply.
        torch_xla: PyTorch/XLA's graphs, their executions and its own records, for a
            torch_xla run.
        passes: Each module's pass story (`analysis.passes`), by module key, for the
            modules with per-pass dumps; filled only when asked for (the HTML page).
    """

    report: RunReport
    timings: ProfileTimings | None = None
    module_timings: Mapping[str, ModuleTiming] = field(default_factory=dict)
    timing_error: str = ""
    bench: Mapping[str, Any] | None = None
    sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    memory: Mapping[str, MemoryReport | str] = field(default_factory=dict, repr=False)
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
    sources: bool = False,
    passes: bool = False,
) -> Inspection:
    """Load, analyse and time a run: the one call every command and notebook view makes.

    Args:
        run: A run (from `hloscope.runs.load_run`), or the path of a run folder, a bare
            XLA dump folder or one HLO file.
        modules: Patterns selecting modules (see `Run.module`); all modules when empty.
        timings: Read the run's measured timings, when it holds any.
        bench: Read the run's `bench.json`, when it has one.
        sources: Keep each module's after-optimization HLO text (for the HTML page).
        passes: Tell the pass story of each module with per-pass dumps (for the HTML
            page); a story that cannot be read is left out.

    Returns:
        The inspection. A measurement that cannot be read does not fail it: its reason
        is in `timing_error`, and the fusion report stands.

    Raises:
        UsageError: The path holds no run, or a pattern matches no module (or several).
    """
    loaded = run if isinstance(run, Run) else load_run(run)
    patterns = list(modules)
    report = analyze_run(loaded, patterns)
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
    skip = (loaded.manifest.profile or {}).get("skip_first", 1)
    skip = skip if isinstance(skip, int) else 1
    coverage = xla_coverage(loaded, report, joined, skip_first=skip, profiled=timings)
    return Inspection(
        report=report,
        timings=profile,
        module_timings=joined,
        timing_error=error,
        bench=read_bench(loaded) if bench else None,
        sources=_sources(report.modules) if sources else {},
        memory=_memory(report.modules),
        compilations=run_compilations(loaded, report.modules, shapes_of=selected),
        xla_coverage=coverage,
        torch_xla=torch_xla_run(loaded),
        passes=_passes(loaded, report.modules) if passes else {},
    )


def _passes(run: Run, modules: Iterable[ModuleReport]) -> dict[str, PassStory]:
    """The pass stories of the modules that have per-pass dumps."""
    found = pass_dumps(run)
    out: dict[str, PassStory] = {}
    for m in modules:
        if m.key not in found:
            continue
        try:
            out[m.key] = pass_story(run, run.module(m.key), dumps=found[m.key], report=m)
        except HloscopeError:
            continue  # the page shows the module without its story
    return out


def _memory(modules: Iterable[ModuleReport]) -> dict[str, MemoryReport | str]:
    out: dict[str, MemoryReport | str] = {}
    for m in modules:
        path = m.after_module.path if m.after_module is not None else None
        try:
            found = read_memory(Path(path)) if path else None
        except HloscopeError as e:
            out[m.key] = str(e)
            continue
        if found is not None:
            out[m.key] = found
    return out


def read_bench(run: Run) -> dict[str, Any] | None:
    """The run's `bench.json` (saved by `hloscope bench --save RUN`), or None.

    An unreadable file comes back as `{"error": ...}`, to be shown rather than fail.
    """
    path = run.path / BENCH_FILE if run.path.is_dir() else None
    if path is None or not path.is_file():
        return None
    if not inside(path, run.path):  # as run.json and dump/: nothing read from outside
        return {"error": f"{BENCH_FILE} links out of the run folder; it was not read"}
    try:
        doc = json.loads(read_regular(path, _MAX_BENCH_BYTES))
    except RecursionError:
        return {"error": f"{BENCH_FILE} is nested too deep"}
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return {"error": f"{BENCH_FILE} is not readable: {e}"}
    return doc if isinstance(doc, dict) else {"error": f"{BENCH_FILE} is not a JSON object"}


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


def _sources(modules: Iterable[ModuleReport]) -> dict[str, tuple[str, ...]]:
    out = {}
    for m in modules:
        module = m.after_module
        if module is None or module.path is None:
            continue
        try:
            text = read_regular(Path(module.path), _MAX_SOURCE_BYTES)
        except OSError:
            continue
        # split as the parser counts lines, so Instruction.line indexes them
        out[m.key] = tuple(split_lines(text.decode("utf-8", "replace")))
    return out
