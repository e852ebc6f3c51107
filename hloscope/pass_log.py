"""XLA's own pass timings, read from the log of a run: where compile time goes.

`HloPassPipeline::RunPassesInternal` (xla/hlo/pass/hlo_pass_pipeline.cc) times every
pass it runs with `XLA_SCOPED_LOGGING_TIMER("HLO pass: <name>")` and, at verbosity 1 of
that file (`TF_CPP_VMODULE=hlo_pass_pipeline=1` with `TF_CPP_MIN_LOG_LEVEL=0`, as
`hloscope dump --passes` sets), logs

    I1203 18:11:32.528041   12288 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module jit_f: simplification
    I1203 18:11:32.528045   12288 hlo_pass_pipeline.cc:181]   HLO pass algsimp
    I1203 18:11:32.528047   12288 hlo_pass_pipeline.cc:176] HLO pass: algsimp time: 2 us (2 us) (cumulative: ...)

for every pass that runs, changed the module or not, on every backend. A pipeline can
run as a pass of another (`simplification` inside `HLO passes through layout
assignment`): its time holds its passes'. The timer prints
`tsl::strings::HumanReadableElapsedTime` (three significant digits). Lines of one thread
belong to one compilation at a time; a compilation ends where the same module's first
pipeline starts again on that thread. On the CPU this log is the only record:
`--xla_dump_module_metadata` (HloPassMetadata) is written by the GPU compiler only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hloscope.runs import Run

__all__ = ["Compilation", "PassRun", "read_pass_log", "run_log"]

_LINE = re.compile(r"[IWEF]\d{4} [\d:.]+\s+(\d+) hlo_pass_pipeline\.cc:\d+\] (.*)")
_PIPELINE = re.compile(r"Running HLO pass pipeline on module (\S+): (.+)")
_START = re.compile(r"  HLO pass (.+)")
_END = re.compile(r"HLO pass: (.+) time: ([0-9.e+\-]+) (us|ms|s|min|h|days|months|years) ")
# Seconds per unit, as a fraction (what to divide by, what to multiply by): `91 us` is
# 91 / 1e6 s, the double nearest 9.1e-05, where 91 * 1e-6 is not.
_UNIT = {
    "us": (1e6, 1.0), "ms": (1e3, 1.0), "s": (1.0, 1.0), "min": (1.0, 60.0),
    "h": (1.0, 3600.0), "days": (1.0, 86400.0), "months": (1.0, 30 * 86400.0),
    "years": (1.0, 365.2425 * 86400.0),
}  # fmt: skip
_MARK = "hlo_pass_pipeline.cc:"


@dataclass(frozen=True)
class PassRun:
    """One run of one pass, as XLA's timer logged it.

    Attributes:
        name: The pass name (`algsimp`); for a pipeline run as a pass, its name.
        pipeline: The pipeline it ran in (`simplification`), as XLA names it.
        seconds: How long it took (three significant digits).
        depth: 0 in a pipeline the compiler ran, 1 in a pipeline run as a pass, ...
        nested: Whether it ran a pipeline of its own: its time holds those passes'.
    """

    name: str
    pipeline: str
    seconds: float
    depth: int = 0
    nested: bool = False


@dataclass(frozen=True)
class Compilation:
    """The passes of one compilation of one module, in the order they ended.

    Attributes:
        module: The HloModule name.
        thread: The thread id the log gives.
        passes: The pass runs.
        pipelines: The pipelines run, in order, as XLA names them.
    """

    module: str
    thread: str
    passes: tuple[PassRun, ...]
    pipelines: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        """Time in passes: the top-level pipelines' passes summed."""
        return sum(p.seconds for p in self.passes if p.depth == 0)


@dataclass
class _Open:
    """A compilation being read on one thread."""

    module: str
    first: str  # its first top-level pipeline
    passes: list[PassRun] = field(default_factory=list)
    pipelines: list[str] = field(default_factory=list)
    # open frames: [pipeline, pass or None, nested]
    stack: list[list[object]] = field(default_factory=list)
    order: int = 0


def run_log(run: Run) -> Path | None:
    """The run's stderr log (where XLA logs), if it has one."""
    name = run.manifest.logs.get("stderr") or "stderr.log"
    path = run.path / name if run.path.is_dir() else None
    return path if path is not None and path.is_file() else None


def read_pass_log(path: Path) -> list[Compilation]:
    """Every compilation whose passes a log times, in the order they started.

    Args:
        path: A log holding XLA's `hlo_pass_pipeline.cc` lines (other lines are skipped).

    Returns:
        The compilations; empty when the log has no pass timings.
    """
    done: list[tuple[int, Compilation]] = []
    current: dict[str, _Open] = {}  # by thread
    order = 0
    try:
        f = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        return []
    with f:
        for raw in f:
            if _MARK not in raw:
                continue
            m = _LINE.match(raw)
            if m is None:
                continue
            thread, message = m[1], m[2].rstrip("\n")
            state = current.get(thread)
            p = _PIPELINE.fullmatch(message)
            if p is not None:
                module, pipeline = p[1], p[2]
                inside = _innermost_open(state) if state and state.module == module else None
                if inside is not None and state is not None:
                    # a pipeline run as a pass (again, for a fixed-point pipeline)
                    del state.stack[inside + 1 :]
                    state.stack[inside][2] = True
                else:
                    if state is None or state.module != module or state.first == pipeline:
                        if state is not None:
                            done.append((state.order, _close(state, thread)))
                        order += 1
                        state = current[thread] = _Open(module, pipeline, order=order)
                    state.stack.clear()
                state.stack.append([pipeline, None, False])
                state.pipelines.append(pipeline)
                continue
            if state is None:
                continue
            start = _START.fullmatch(message)
            if start is not None:
                if state.stack and state.stack[-1][1] is None:
                    state.stack[-1][1] = start[1]
                elif state.stack:
                    state.stack.append([state.stack[-1][0], start[1], False])
                continue
            end = _END.match(message)
            if end is not None:
                per, times = _UNIT[end[3]]
                _end_pass(state, end[1], float(end[2]) / per * times)
    for thread, state in current.items():
        done.append((state.order, _close(state, thread)))
    return [c for _, c in sorted(done, key=lambda t: t[0])]


def _innermost_open(state: _Open) -> int | None:
    """The innermost frame with a pass running, if any."""
    for i in range(len(state.stack) - 1, -1, -1):
        if state.stack[i][1] is not None:
            return i
    return None


def _end_pass(state: _Open, name: str, seconds: float) -> None:
    """Close the innermost open pass of that name, and the pipelines it ran."""
    for i in range(len(state.stack) - 1, -1, -1):
        pipeline, open_pass, nested = state.stack[i]
        if open_pass != name:
            continue
        depth = sum(1 for frame in state.stack[:i] if frame[1] is not None)
        state.passes.append(PassRun(name, str(pipeline), seconds, depth, bool(nested)))
        del state.stack[i + 1 :]
        state.stack[i][1] = None
        state.stack[i][2] = False
        return


def _close(state: _Open, thread: str) -> Compilation:
    return Compilation(state.module, thread, tuple(state.passes), tuple(state.pipelines))
