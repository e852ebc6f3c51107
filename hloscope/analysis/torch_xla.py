"""PyTorch/XLA's own records of a run: what torch_xla counted and logged, read back.

`hloscope dump` keeps two files in `<run>/torch_xla/` when the script used torch_xla
(`hloscope.capture.torch_xla_hooks`): torch_xla's debug analysis (`debug.txt`, written
by torch_xla itself with `PT_XLA_DEBUG_LEVEL=2`: one record per graph compile and per
graph execution, with the graph's hash, the cause and the Python frames that triggered
it) and its metrics (`metrics.json`: `CompileTime`, `ExecuteTime`, the compile and
execution counters, and the `aten::` counters of ops that fell back to the CPU).
`read_records` reads both, as untrusted files; `torch_graphs` joins them to the dumped
modules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.analysis.evidence import is_framework_file
from hloscope.capture.torch_xla_hooks import DEBUG_FILE, FOLDER, METRICS_FILE
from hloscope.files import inside, read_regular
from hloscope.hlo.model import SourceLocation

__all__ = [
    "DEBUG_FILE",
    "FOLDER",
    "METRICS_FILE",
    "GraphEvent",
    "TimedMetric",
    "TorchXlaRecords",
    "parse_debug",
    "read_records",
]

# The log grows by about 1 KB per step: 64 MB is some 60,000 steps.
_MAX_DEBUG_BYTES = 64 << 20
_MAX_METRICS_BYTES = 4 << 20

_KINDS = {"Compilation Analysis": "compile", "Execution Analysis": "execute"}
_FRAME = re.compile(r"\s+(?P<function>.+?) \((?P<file>.+):(?P<line>\d+)\)\s*")
# Python's own library (contextlib, functools): frames between torch_xla and the user's
# code when the step is wrapped (`torch_xla.compile` as a decorator or context manager).
_STDLIB = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)[^/]+\.py$")
# What torch_xla's `.item()`/`print()`-style reads show as: not an op without a lowering.
LOCAL_SCALAR = "aten::_local_scalar_dense"


@dataclass(frozen=True, slots=True)
class GraphEvent:
    """One compile or execution of a graph, as torch_xla's debug analysis logged it.

    Attributes:
        kind: `compile` or `execute`.
        graph_hash: torch_xla's hash of the graph (the key of its compile cache).
        cause: Why it ran, in torch_xla's words (`user torch_xla.sync`, `most likely
            user code trying to access tensor value before torch_xla.sync`, ...).
        frame: The first frame of the user's code that triggered it, else the innermost
            frame logged; None when none was.
        inputs: Graph inputs, as logged.
        outputs: Graph outputs, as logged.
        name: The graph's name where the user gave one (`torch_xla.compile(f,
            name=...)`, else the function's `__name__`): its modules are named after it
            (`train_step.245`) instead of `SyncTensorsGraph.<n>`; "" when none was logged.

    Example:
        >>> records = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.records
        >>> event = records.compiles[0]
        >>> isinstance(event, hloscope.GraphEvent), event.kind
        (True, 'compile')
    """

    kind: str
    graph_hash: str
    cause: str = ""
    frame: SourceLocation | None = None
    inputs: int | None = None
    outputs: int | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class TimedMetric:
    """One of torch_xla's timed metrics (`CompileTime`, `ExecuteTime`).

    Attributes:
        count: Samples posted (one per compile, per execution).
        total_s: Their sum, seconds.
        samples_s: The last samples torch_xla keeps, seconds, in order.

    Example:
        >>> records = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.records
        >>> all(isinstance(m, hloscope.TimedMetric) for m in records.metrics.values())
        True
    """

    count: int
    total_s: float
    samples_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class TorchXlaRecords:
    """What torch_xla recorded about a run.

    Attributes:
        compiles: Each graph compile, in order (from the debug analysis).
        executions: Each graph execution, in order.
        metrics: Timed metrics by name (`CompileTime`, `ExecuteTime`, ...).
        counters: `UncachedCompile`, `CachedCompile`, `ExecuteComputation`, `MarkStep`.
        fallbacks: Each `aten::` op torch_xla ran on the CPU, outside XLA, and how many
            times (`aten::_local_scalar_dense` is a tensor read: `.item()`, `print`).
        logged: Whether the run has the debug analysis (else `compiles` and
            `executions` are empty because nothing was logged, not because nothing ran).
        errors: What could not be read, one line each.

    Example:
        >>> records = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.records
        >>> isinstance(records, hloscope.TorchXlaRecords)
        True
    """

    compiles: tuple[GraphEvent, ...] = ()
    executions: tuple[GraphEvent, ...] = ()
    metrics: Mapping[str, TimedMetric] = field(default_factory=dict)
    counters: Mapping[str, int] = field(default_factory=dict)
    fallbacks: Mapping[str, int] = field(default_factory=dict)
    logged: bool = False
    errors: tuple[str, ...] = ()

    def metric(self, name: str) -> TimedMetric | None:
        """A timed metric by name, or None when torch_xla posted none."""
        return self.metrics.get(name)


def read_records(run_dir: Path | str) -> TorchXlaRecords | None:
    """The torch_xla records a run folder holds, or None when it holds none.

    Files that link out of the run folder, are too big or malformed are not read; each
    is one line in `errors`.
    """
    folder = Path(run_dir) / FOLDER
    if not folder.is_dir():
        return None
    errors: list[str] = []
    compiles: tuple[GraphEvent, ...] = ()
    executions: tuple[GraphEvent, ...] = ()
    debug = _read_text(folder / DEBUG_FILE, Path(run_dir), _MAX_DEBUG_BYTES, errors)
    if debug is not None:
        compiles, executions = parse_debug(debug)
    metrics_text = _read_text(folder / METRICS_FILE, Path(run_dir), _MAX_METRICS_BYTES, errors)
    doc: Any = {}
    if metrics_text is not None:
        try:
            doc = json.loads(metrics_text)
        except (ValueError, RecursionError) as e:
            errors.append(f"{FOLDER}/{METRICS_FILE} is not JSON ({e})")
    metrics, counters, fallbacks = _metrics(doc if isinstance(doc, dict) else {})
    return TorchXlaRecords(
        compiles=compiles,
        executions=executions,
        metrics=metrics,
        counters=counters,
        fallbacks=fallbacks,
        logged=debug is not None,
        errors=tuple(errors),
    )


def parse_debug(text: str) -> tuple[tuple[GraphEvent, ...], tuple[GraphEvent, ...]]:
    """torch_xla's debug analysis (`PT_XLA_DEBUG_LEVEL=2`) -> (compiles, executions).

    Each record is a block of lines prefixed `Compilation Analysis: ` or `Execution
    Analysis: `, starting at its `... Cause` line; other blocks (`Post Compilation
    Analysis`, the dynamo ones) are skipped. Lines that do not parse are skipped.
    """
    compiles: list[GraphEvent] = []
    executions: list[GraphEvent] = []
    for kind, lines in _blocks(text):
        event = _event(kind, lines)
        if event is not None:
            (compiles if kind == "compile" else executions).append(event)
    return tuple(compiles), tuple(executions)


def _blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    kind: str | None = None
    lines: list[str] = []
    for raw in text.splitlines():
        prefix, sep, rest = raw.partition(": ")
        if not sep or prefix not in _KINDS:
            continue
        if rest.strip().endswith("Cause") and not rest.startswith(" "):
            if kind is not None:
                yield kind, lines
            kind, lines = _KINDS[prefix], []
        elif kind is not None and _KINDS[prefix] == kind:
            lines.append(rest)
    if kind is not None:
        yield kind, lines


def _event(kind: str, lines: list[str]) -> GraphEvent | None:
    graph_hash = name = ""
    cause = lines[0].strip() if lines and lines[0].startswith("  ") else ""
    inputs = outputs = None
    frames: list[SourceLocation] = []
    in_frames = False
    for line in lines:
        text = line.strip()
        if text.startswith("Graph Hash:"):
            graph_hash = text.split(":", 1)[1].strip()
        elif text.startswith("Graph Name:"):
            name = text.split(":", 1)[1].strip()
        elif text.startswith("Number of Graph Inputs:"):
            inputs = _int(text)
        elif text.startswith("Number of Graph Outputs:"):
            outputs = _int(text)
        elif text.startswith("Python Frame Triggered"):
            in_frames = True
        elif text.startswith("---") or text.startswith("==="):
            in_frames = False
        elif in_frames and (m := _FRAME.fullmatch(line)):
            frames.append(SourceLocation(m["file"], int(m["line"]), m["function"]))
    if not graph_hash:
        return None
    user = next(
        (f for f in frames if not is_framework_file(f.file) and not _STDLIB.search(f.file)), None
    )
    return GraphEvent(
        kind, graph_hash, cause, user or (frames[0] if frames else None), inputs, outputs, name
    )


def _int(text: str) -> int | None:
    try:
        return int(text.rsplit(":", 1)[1])
    except ValueError:
        return None


def _read_text(path: Path, root: Path, limit: int, errors: list[str]) -> str | None:
    name = f"{FOLDER}/{path.name}"
    if not path.exists():
        return None
    if not inside(path, root):
        errors.append(f"{name} links out of the run folder; it was not read")
        return None
    try:
        return read_regular(path, limit).decode("utf-8", "replace")
    except (OSError, ValueError) as e:
        errors.append(f"{name} is not readable: {e}")
        return None


def _metrics(
    doc: Mapping[str, Any],
) -> tuple[dict[str, TimedMetric], dict[str, int], dict[str, int]]:
    metrics: dict[str, TimedMetric] = {}
    raw = doc.get("metrics")
    for name, m in raw.items() if isinstance(raw, dict) else ():
        if not isinstance(m, dict):
            continue
        count, total = m.get("count"), m.get("total_ns")
        samples = m.get("samples_ns")
        if isinstance(count, int) and isinstance(total, (int, float)):
            kept = (
                [s / 1e9 for s in samples if isinstance(s, (int, float))]
                if isinstance(samples, list)
                else []
            )
            metrics[str(name)] = TimedMetric(count, total / 1e9, tuple(kept))
    return metrics, _counts(doc.get("counters")), _counts(doc.get("fallbacks"))


def _counts(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
