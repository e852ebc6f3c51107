"""XLA's per-pass dumps in a run folder: which files, for which module, in which order.

With `--xla_dump_hlo_pass_re=REGEX` XLA prints the module between passes
(`DumpHloModuleBetweenPassesIfEnabled`, xla/service/dump.cc) as
`module_<id>.<name>.<step>.<pipeline>.after_<pass>.before_<next pass>.txt`, and a pass
may dump steps of its own work (`DumpHloModuleDuringPassIfEnabled`:
`module_<id>.<name>.<step>.<pass>.<step name>.txt`, as copy-insertion does). `<step>` is a
per-module counter (`StepNumberForModule`), so it orders the dumps, however many
pipelines ran and however often. With the regex `.*` a pass is dumped only when it
changed the module, and every pipeline is dumped as it starts
(`HloPassPipeline::RunPassesInternal`, xla/hlo/pass/hlo_pass_pipeline.cc); with any other
regex, every matching pass is dumped, changed or not. File names went through
`SanitizeFileName`: spaces, slashes and brackets are underscores.

`pass_dumps` finds them for every module of a run; `dumped_pass_re` reads which regex
made them from XLA's `*.debug_options` file. Reading the HLO is the parser's job.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from hloscope.files import inside
from hloscope.runs import ModuleDump, Run

__all__ = [
    "PIPELINE_END",
    "PIPELINE_START",
    "PassDump",
    "dumped_pass_re",
    "pass_dumps",
    "sanitize",
]

PIPELINE_START = "pipeline-start"
"""The `after_` of a dump taken as a pipeline starts (no pass has run in it yet)."""
PIPELINE_END = "pipeline-end"
"""The `before_` of a dump taken after a pipeline's last pass."""

_FILE = re.compile(r"(?:(?P<stamp>\d{10,})\.)?module_(?P<id>\d+)\.(?P<rest>.+)\.txt")
_STEP = re.compile(r"(?P<step>\d{4,})\.(?P<what>.+)")
_BETWEEN = re.compile(r"(?P<pipeline>.+?)\.after_(?P<after>.+)\.before_(?P<before>.+)")
_DURING = re.compile(r"(?P<pass>[^.]+)\.(?P<step>.+)")
_DEBUG_OPTIONS_RE = re.compile(r'^xla_dump_hlo_pass_re:\s*"((?:[^"\\]|\\.)*)"', re.M)
_MAX_DEBUG_OPTIONS = 1 << 20


@dataclass(frozen=True)
class PassDump:
    """One dump of a module taken between (or during) passes.

    Attributes:
        step: XLA's step number for the module (`0016`): the order of the dumps.
        pipeline: The pipeline it was taken in, as in the file name (spaces as
            underscores: `HLO_passes_through_layout_assignment`); None for a dump taken
            during a pass.
        after: The pass that had just run (`dot-library-rewriter`), or `pipeline-start`;
            for a dump taken during a pass, that pass.
        before: The pass about to run, or `pipeline-end`; None during a pass.
        during: For a dump taken during a pass, its step name
            (`after_adding_copies_to_resolve_interference`); None otherwise.
        path: The file.

    Example:
        >>> from hloscope.passes import pass_dumps
        >>> dumps = pass_dumps(hloscope.load_run('tests/data/jax_passes'))
        >>> first = next(iter(dumps.values()))[0]
        >>> isinstance(first, hloscope.PassDump), first.step
        (True, 0)
    """

    step: int
    pipeline: str | None
    after: str
    before: str | None
    during: str | None
    path: Path

    @property
    def at_pipeline_start(self) -> bool:
        """Taken as a pipeline started: no pass of that pipeline had run yet."""
        return self.after == PIPELINE_START

    @property
    def label(self) -> str:
        """How the text names it: `pipeline / pass`, with a step taken during a pass."""
        if self.during is not None:
            return f"{self.after} ({self.during.replace('_', ' ')})"
        return f"{self.pipeline} / {self.after}"


def sanitize(name: str) -> str:
    """A pipeline or pass name as XLA writes it into file names (`SanitizeFileName`,
    xla/util.cc): `/`, `\\`, `[`, `]` and spaces become `_`."""
    return re.sub(r"[/\\\[\] ]", "_", name)


def pass_dumps(run: Run) -> dict[str, tuple[PassDump, ...]]:
    """The per-pass dumps of every module of a run, each module's in step order.

    Args:
        run: A loaded run (a run folder or a bare dump folder).

    Returns:
        Module key -> its dumps (text dumps only; `--xla_dump_hlo_as_proto` pass dumps
        are not read). Modules without any are absent.
    """
    folder = run.dump_dir
    if folder is None:
        return {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    by_id: dict[tuple[str | None, int], list[ModuleDump]] = {}
    for m in run.modules:
        if m.id_number is not None:
            by_id.setdefault((m.stamp, m.id_number), []).append(m)
    out: dict[str, list[PassDump]] = {}
    for name in names:
        found = _read_name(name, by_id)
        if found is None:
            continue
        module, dump = found
        path = folder / name
        if path.is_symlink() and not inside(path, run.path):
            continue  # as for the module dumps: nothing read from outside the run
        out.setdefault(module.key, []).append(PassDump(*dump, path=path))
    return {key: tuple(sorted(dumps, key=lambda d: d.step)) for key, dumps in out.items()}


_Parts = tuple[int, str | None, str, str | None, str | None]
"""What a pass dump's name says: step, pipeline, after, before, during."""


def _read_name(
    name: str, by_id: dict[tuple[str | None, int], list[ModuleDump]]
) -> tuple[ModuleDump, _Parts] | None:
    """The module a pass dump's file name belongs to, and what the name says."""
    m = _FILE.fullmatch(name)
    if m is None:
        return None
    candidates = by_id.get((m["stamp"], int(m["id"])), [])
    rest = m["rest"]
    # The longest module name that prefixes the rest; XLA leaves the name out of file
    # names over 255 characters (FilenameFor, xla/service/dump.cc).
    for module in sorted(candidates, key=lambda c: -len(c.name)):
        if rest.startswith(module.name + "."):
            parsed = _read_rest(rest[len(module.name) + 1 :])
            if parsed is not None:
                return module, parsed
    if len(candidates) == 1:
        parsed = _read_rest(rest)
        if parsed is not None:
            return candidates[0], parsed
    return None


def _read_rest(rest: str) -> _Parts | None:
    m = _STEP.fullmatch(rest)
    if m is None:
        return None
    step, what = int(m["step"]), m["what"]
    between = _BETWEEN.fullmatch(what)
    if between is not None:
        return step, between["pipeline"], between["after"], between["before"], None
    during = _DURING.fullmatch(what)
    if during is None or not during["step"].startswith(("after_", "before_")):
        return None
    return step, None, during["pass"], None, during["step"]


def dumped_pass_re(run: Run, module: ModuleDump) -> str | None:
    """The `--xla_dump_hlo_pass_re` the module was dumped with, from the
    `module_<id>.<name>.debug_options` file XLA writes beside the dumps (its non-default
    debug options), else from the XLA_FLAGS `hloscope dump` set; None when neither says.
    """
    path = _debug_options(run, module)
    if path is not None:
        try:
            with path.open("rb") as f:
                text = f.read(_MAX_DEBUG_OPTIONS).decode("utf-8", "replace")
        except OSError:
            text = ""
        m = _DEBUG_OPTIONS_RE.search(text)
        if m is not None:
            return re.sub(r"\\(.)", r"\1", m[1])
    for token in run.manifest.env.get("XLA_FLAGS", "").split():
        if token.startswith("--xla_dump_hlo_pass_re="):
            return token.split("=", 1)[1].strip("'\"")
    return None


def _debug_options(run: Run, module: ModuleDump) -> Path | None:
    for side in (module.before, module.after):
        if side is None:
            continue
        prefix = f"module_{module.module_id}.{module.name}." if module.module_id else None
        if prefix is None:
            return None
        stamp = f"{module.stamp}." if module.stamp else ""
        path = side.parent / f"{stamp}{prefix}debug_options"
        if path.is_file() and inside(path, run.path):
            return path
    return None
