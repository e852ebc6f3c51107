"""Timing sources: where a run's measured kernel times come from, behind one interface.

A `TimingSource` says whether a run holds its kind of measurement and reads it into
`ProfileTimings`. The framework profiler's XPlane or trace.json (`hloscope dump
--profile`) is one source; GPU traces are another. `run_timings` asks each registered
source in turn, so the assembled inspection and every renderer see one kind of result,
whatever measured it. This is the only module of `timing` that finds files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from hloscope.analysis.fusion import ModuleAnalysis, analyze_module
from hloscope.errors import HloscopeError, ProfileReadError
from hloscope.files import inside, walk
from hloscope.hlo.parser import parse_file
from hloscope.manifest import ProfileSettings
from hloscope.runs import NSYS_SOURCE, XSPACE_SOURCE, Run, scan_dump_dir
from hloscope.timing import nsys
from hloscope.timing.attribution import attribute, op_events
from hloscope.timing.cache import cached_timings, dump_fingerprint, profile_timings, run_folder_of
from hloscope.timing.compiles import read_compiles, with_compile_times
from hloscope.timing.results import ProfileTimings, launches_differ, merge_timings, timing_key
from hloscope.timing.xplane import find_profiles, is_profile_name, read_trace

__all__ = [
    "SOURCES",
    "NsysSource",
    "ProfilerSource",
    "TimingSource",
    "XSpaceSource",
    "has_profile",
    "load_profile",
    "profile_folder",
    "run_timings",
    "static_analyses",
]


class TimingSource(Protocol):
    """One kind of measurement a run can hold.

    Attributes:
        name: What the JSON calls it (`timing.source`): `xplane`, `trace.json`, ...
    """

    name: str

    def found(self, run: Run) -> bool:
        """Whether the run holds this kind of measurement (cheap: no parsing)."""
        ...

    def read(self, run: Run, static: Mapping[str, ModuleAnalysis]) -> ProfileTimings:
        """Read and attribute it.

        Args:
            run: The run.
            static: The after-optimization analysis of each module, by HloModule name
                and by `name(program_id)`, to compare measured launches with.

        Raises:
            HloscopeError: The measurement is there but cannot be read.
        """
        ...


class ProfilerSource:
    """The framework profiler's output (`hloscope dump --profile`): the `*.xplane.pb` (or
    `*.trace.json.gz`) of each profiler in the profile folder run.json names, or
    anywhere in a folder hloscope did not make, read with the warm-up and step settings
    run.json recorded. Read once; later reads come from the run's cache
    (`timing.cache`)."""

    name = "profile"

    def found(self, run: Run) -> bool:
        folder = _profile_folder(run)
        return folder is not None and has_profile(folder)

    def read(self, run: Run, static: Mapping[str, ModuleAnalysis]) -> ProfileTimings:
        settings = run.manifest.profile or ProfileSettings()
        return profile_timings(  # computed once, then kept in the run folder
            _profile_folder(run) or run.path,
            skip_first=settings.skip_first,
            max_executions=settings.max_executions,
            static=static or None,
        )


def _profile_folder(run: Run) -> Path | None:
    """Where a run's profile is: the folder run.json names when `hloscope dump
    --profile` made it (one log dir per profiler below it), else anywhere in the run
    folder (a profile recorded another way and put there, a bare profiler log dir)."""
    if not run.path.is_dir():
        return None
    settings = run.manifest.profile
    if run.manifest.source == "dump" and settings is not None:
        folder = run.path / settings.dir
        if not inside(folder, run.path):  # run.json keeps it relative; a link may not be
            raise ProfileReadError(
                f"the profile folder {settings.dir!r} leads out of the run folder; "
                "hloscope reads only inside it",
                path=str(run.path),
            )
        return folder
    return run.path


class NsysSource:
    """A GPU trace made by nsys-jax: the NVTX ranges XLA's GPU runtime emits (one per
    module execution, one per thunk), projected onto the GPU. Each `hlo_op` the trace
    names is booked to the kernel whose runtime names hold it (`Kernel.hlo_ops`: the
    wrapped op of an async pair, the library call of a custom fusion)."""

    name = nsys.SOURCE

    def found(self, run: Run) -> bool:
        return run.manifest.source == NSYS_SOURCE  # what load_run found the path to be

    def read(self, run: Run, static: Mapping[str, ModuleAnalysis]) -> ProfileTimings:
        kernel_of = {key: analysis.kernel_of for key, analysis in static.items()}
        timings = nsys.nsys_timings(run.path, kernel_of=kernel_of)
        return _compare_launches(timings, static)


class XSpaceSource:
    """A profile file loaded as a run (`runs.load_run` of an `*.xplane.pb`): its modules
    are the HLO it carries, its timings its own events, with the first execution of each
    module left out as warm-up (modules that ran once are shown from that cold run)."""

    name = "xspace"

    def found(self, run: Run) -> bool:
        return run.manifest.source == XSPACE_SOURCE

    def read(self, run: Run, static: Mapping[str, ModuleAnalysis]) -> ProfileTimings:
        return profile_timings(run.path, skip_first=1, static=static or None)


def _compare_launches(
    timings: ProfileTimings, static: Mapping[str, ModuleAnalysis]
) -> ProfileTimings:
    """Set each module's static launches (from the HLO) beside the measured thunks."""
    modules = {}
    for key, m in timings.modules.items():
        analysis = static.get(key) or static.get(m.name)
        if analysis is not None and m.executions:
            m = replace(
                m,
                static_launches=analysis.launches,
                launch_mismatch=launches_differ(m.launches_per_execution, analysis.launches),
            )
        modules[key] = m
    return replace(timings, modules=modules)


SOURCES: tuple[TimingSource, ...] = (NsysSource(), XSpaceSource(), ProfilerSource())
"""The sources `run_timings` asks, in order; the first that finds something wins."""


def run_timings(
    run: Run, static: Mapping[str, ModuleAnalysis] | None = None
) -> ProfileTimings | None:
    """The measured timings of a run, from the first source that finds any.

    Args:
        run: The run.
        static: After-optimization analyses by module name (see `TimingSource.read`);
            None to have none compared.

    Returns:
        The timings, or None when the run holds no measurement.

    Raises:
        HloscopeError: A measurement is there but cannot be read.

    Example:
        >>> run = hloscope.load_run("tests/data/jax_mlp_profile")
        >>> timings = hloscope.run_timings(run)
        >>> timings.format, sorted(timings.modules)[:1]
        ('xplane', ['jit_mlp'])
    """
    for source in SOURCES:
        if source.found(run):
            return source.read(run, static or {})
    return None


def measured(run: Run) -> bool:
    """Whether the run holds a measurement `run_timings` would read (cheap: nothing is
    parsed)."""
    return any(source.found(run) for source in SOURCES)


def has_profile(folder: Path) -> bool:
    """Whether a folder holds a profile (`*.xplane.pb` or `*.trace.json.gz`) anywhere
    (no deeper than `files.MAX_DEPTH`, never through a link out of it)."""
    try:
        found = walk(folder, select=is_profile_name)
    except OSError:
        return True  # too big to search: reading it says so
    return bool(found.files)


def load_profile(
    run_or_dir: Path | str,
    *,
    skip_first: int = 1,
    with_hlo: bool = True,
    max_executions: int | None = None,
) -> ProfileTimings:
    """Read a profile on its own (`hloscope profile`): in a run folder, a profiler log
    dir, or one file, and time it. Inside a run folder the result is kept there and
    later calls read it back (`timing.cache`); each profiler's profile is read and the
    results merged; JAX compile times recorded beside the profile are set.

    Args:
        run_or_dir: A run folder, a profiler log dir, or one `*.xplane.pb` /
            `*.trace.json.gz` file. Folders are searched recursively; an `*.xplane.pb`
            is preferred to a `*.trace.json.gz`.
        skip_first: Executions of each module left out as warm-up.
        with_hlo: Compare with the after-optimization HLO dump found in the same
            folder or run (launch counts, kernel names).
        max_executions: Keep at most this many steady-state executions per module.

    Raises:
        ProfileReadError: No profile found, or the file is not a profile.

    Example:
        >>> timings = hloscope.load_profile("tests/data/jax_mlp_profile")
        >>> timings.format, timings.skip_first
        ('xplane', 1)
    """
    files = find_profiles(run_or_dir)

    def compute() -> ProfileTimings:
        traces = [read_trace(f, xla_only=True) for f in files]
        static = None
        if with_hlo:
            modules = {(o.module, o.program_id) for t in traces for o in op_events(t)}
            static = static_analyses(Path(run_or_dir), sorted(modules, key=str)) or None
        return merge_timings(
            [
                attribute(t, skip_first=skip_first, static=static, max_executions=max_executions)
                for t in traces
            ]
        )

    run = run_folder_of(files[0])
    settings = {
        "skip_first": skip_first,
        "max_executions": max_executions,
        "hlo": dump_fingerprint(run) if with_hlo else None,
    }
    timings = cached_timings(files, settings, compute, run=run)
    return with_compile_times(timings, read_compiles(files))


def _dump_roots(start: Path) -> list[Path]:
    """Where to look for the HLO dump of a profile: the folder given, the profiler's log
    dir it is in (the parent of `plugins/profile/<time>/`), and the run folder (the
    nearest parent holding a `run.json`)."""
    folder = start if start.is_dir() else start.parent
    roots = [folder]
    for parent in list(folder.parents)[:5]:
        if parent.name == "plugins" and parent.parent not in roots:
            roots.append(parent.parent)
        if (parent / "run.json").is_file():
            roots.append(parent)
            break
    return roots


def static_analyses(
    folder: Path | str, modules: Iterable[tuple[str, int | None]]
) -> dict[str, ModuleAnalysis]:
    """`analyze_module` of the after-optimization dump of each profiled module.

    Dumps are found in `folder` or below it (or in the run folder it is in) and matched
    by name and, where the profile gives one, by XLA's program id (the dump's module
    number); without a program id the name must match one dump only. Files that do not
    parse are left out.

    Args:
        folder: A run folder, a dump folder, or a folder inside a run.
        modules: (HloModule name, program id) pairs, as the profile names them.

    Returns:
        Analyses by module key (the name, or `name(program_id)` for shared names).
    """
    wanted = list(dict.fromkeys(modules))
    dumps = []
    for root in _dump_roots(Path(folder)):
        try:
            folders = [root, *walk(root).folders]
        except OSError:
            folders = [root]
        dumps = [m for d in folders for m in scan_dump_dir(d) if m.after is not None]
        if dumps:
            break
    shared = {name for name, _ in wanted if sum(n == name for n, _ in wanted) > 1}
    out: dict[str, ModuleAnalysis] = {}
    for name, program_id in wanted:
        candidates = [
            m
            for m in dumps
            if m.name == name
            and (program_id is None or m.id_number is None or m.id_number == program_id)
        ]
        if len(candidates) != 1 or candidates[0].after is None:
            continue
        try:
            analysis = analyze_module(parse_file(candidates[0].after))
        except HloscopeError:
            continue
        out[timing_key(name, program_id, name in shared)] = analysis
    return out


def profile_folder(run: Run) -> Path | None:
    """Where a run's profile is (see `ProfilerSource`): the folder run.json names, else
    the run folder; None for a run that is not a folder."""
    return _profile_folder(run)
