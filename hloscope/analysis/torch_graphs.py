"""PyTorch/XLA's graphs: which dumped modules are the same graph, how many times each
ran, and which function each compiles.

torch_xla names every graph it compiles `SyncTensorsGraph.<n>`, whatever it computes (or
after the name the user gave `torch_xla.compile`), and compiles a graph once per shape
and structure (its cache is keyed on the IR's hash); the dump holds one module per
compile. The modules group two ways:

- by graph (`graph_key`): the same before-optimization HLO up to instruction and
  computation names, constants' values and metadata; the same graph, had it been
  compiled twice;
- by function (`function_name`): the code that ran between two syncs, named by the line
  of the user's code whose `torch_xla.sync()` (or tensor read) compiled it, as torch_xla
  logs it: `SyncTensorsGraph@train.py:64`. One training step run at several batch sizes
  is one function compiled once per size; its graphs need not have the same structure
  (autograd may transpose differently at another size), and AdamW's first step, which
  creates the optimizer's state, is a graph of the same function too. Without torch_xla's
  log the function is the structure up to dimension sizes (`function_key`).

`group_graphs` joins the modules to torch_xla's own log of compiles and executions
(`hloscope.analysis.torch_xla`): the n-th compile logged is the n-th module dumped, and
each execution names its graph's hash, so each graph gets its executions (the training
steps that ran it, where a step is one graph), and each module its compile time (the
n-th sample of torch_xla's `CompileTime`). `torch_xla_functions` is how the compilations
view (`hloscope.analysis.compilations`, one view of recompiles for every framework)
groups a torch_xla run: by function, with torch_xla's compile times and causes.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hloscope.analysis.torch_xla import (
    DEBUG_FILE,
    FOLDER,
    METRICS_FILE,
    TorchXlaRecords,
    read_records,
)
from hloscope.errors import HloscopeError
from hloscope.frameworks import Framework
from hloscope.hlo.model import HloModule, SourceLocation
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES
from hloscope.runs import ModuleDump, Run

__all__ = [
    "FRAMEWORK",
    "GRAPH_NAME",
    "ModuleCompile",
    "TorchGraph",
    "TorchGraphs",
    "TorchXlaRun",
    "function_key",
    "function_name",
    "graph_key",
    "group_graphs",
    "is_torch_graph",
    "torch_xla_functions",
    "torch_xla_run",
]

FRAMEWORK = Framework.TORCH_XLA
"""The framework's name, as run.json and the compilations view say it."""
GRAPH_NAME = "SyncTensorsGraph"
"""What torch_xla names every graph it compiles (`SyncTensorsGraph.<n>`), unless the
user named it (`torch_xla.compile(step, name="train_step")`: `train_step.<n>`)."""
# Attributes that name things (computations, the source) rather than say what is done.
_NAMING = frozenset(CALLED_COMPUTATION_ATTRIBUTES) | {"metadata", "frontend_attributes"}
# Attributes that hold sizes of dimensions, masked in the function key.
_SIZED = frozenset({"slice", "dynamic_slice_sizes", "padding", "window"})
_DIMS = re.compile(r"\[([^\]]*)\]")
_DIGITS = re.compile(r"\d+")
_SUFFIX = re.compile(r"(\.\d+)+$")


def is_torch_graph(name: str, named: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether an HloModule name is one torch_xla gives: `SyncTensorsGraph.364`, or a
    graph named by the user (`train_step.245`) where `named` holds the names torch_xla
    logged (`GraphEvent.name`)."""
    base = _SUFFIX.sub("", name)
    return base == GRAPH_NAME or base in named


def graph_key(module: HloModule) -> str:
    """A hash of the module's structure: opcodes, shapes, operands, calls and
    attributes, with names, constants' values and metadata left out."""
    return _digest(module, sizes=True)


def function_key(module: HloModule) -> str:
    """`graph_key` with the sizes of dimensions left out too: the graphs of one step
    compiled at several batch sizes share it."""
    return _digest(module, sizes=False)


def function_name(module: HloModule, trigger: SourceLocation | None = None) -> str:
    """The function a torch_xla module compiles, as `group_graphs` names it.

    Args:
        module: The module (before optimization where the dump has it).
        trigger: The user's line whose sync or tensor read compiled it (torch_xla's log,
            `GraphEvent.frame`), when known.

    Returns:
        `SyncTensorsGraph@train.py:64` with a trigger; else `SyncTensorsGraph~1f2e3d4c`
        (the start of `function_key`: the modules of one structure up to sizes). A graph
        the user named (`torch_xla.compile(step, name="train_step")`) is that function
        whatever line called it: `train_step`.
    """
    base = _SUFFIX.sub("", module.name)
    if base != GRAPH_NAME:
        return base
    if trigger is not None and trigger.line is not None:
        return f"{GRAPH_NAME}@{os.path.basename(trigger.file)}:{trigger.line}"
    return f"{GRAPH_NAME}~{function_key(module)[:8]}"


def _digest(module: HloModule, *, sizes: bool) -> str:
    computations = {c.name: i for i, c in enumerate(module.computations)}
    h = hashlib.sha256()
    for i, comp in enumerate(module.computations):
        index = {inst.name: j for j, inst in enumerate(comp.instructions)}
        h.update(f"computation {i} {comp.is_entry}\n".encode())
        for inst in comp.instructions:
            shape = inst.shape.text if sizes else _DIMS.sub(_masked_dims, inst.shape.text)
            operands = ",".join(str(index.get(o, "?")) for o in inst.operands)
            called = ",".join(f"{c.role}={computations.get(c.name, '?')}" for c in inst.called)
            attrs = ",".join(
                f"{k}={v if sizes or k not in _SIZED else _DIGITS.sub('_', v)}"
                for k, v in inst.attributes.items()
                if k not in _NAMING
            )
            literal = inst.literal if inst.opcode == "parameter" else ""
            h.update(
                f"{inst.opcode}|{shape}|{operands}|{called}|{attrs}|{literal}|{inst.is_root}\n".encode()
            )
    return h.hexdigest()


def _masked_dims(m: re.Match[str]) -> str:
    dims = m[1].strip()
    return "[" + ",".join("_" for _ in dims.split(",")) + "]" if dims else "[]"


@dataclass(frozen=True)
class TorchGraph:
    """One distinct graph: the modules of one `graph_key`.

    Attributes:
        key: The `graph_key`.
        function: The `function_name` of what it compiles.
        modules: Keys of the modules compiled for it, in compile order (one, unless
            torch_xla compiled the same HLO again: a cache miss for a graph that only
            differed in constants).
        executions: Executions torch_xla logged for it; None when the run has no log or the
            log could not be joined to the dump.
        trigger: Where the user's code triggered its first compile (`torch_xla.sync()`,
            a tensor read), from torch_xla's log.
        inputs: The entry computation's parameter shapes (of its first module).

    Example:
        >>> graph = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs.graphs[0]
        >>> graph.function, graph.modules, graph.executions
        ('SyncTensorsGraph@torch_mlp.py:76', ('0000.SyncTensorsGraph.212',), 3)
    """

    key: str
    function: str
    modules: tuple[str, ...]
    executions: int | None = None
    trigger: SourceLocation | None = None
    inputs: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class ModuleCompile:
    """One torch_xla module as the compilations view groups it (what
    `hloscope.analysis.compilations` reads of a framework's claim on a module).

    Attributes:
        function: Its function (`TorchGraph.function`).
        compile_s: Seconds torch_xla took to compile it (its `CompileTime` sample),
            None where the samples cannot be paired with the modules.
        reason: Why torch_xla compiled it, in its words (`user torch_xla.sync`, `most
            likely user code trying to access tensor value before torch_xla.sync`).
        framework: `torch_xla`.

    Example:
        >>> graphs = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs
        >>> graphs.modules['0000.SyncTensorsGraph.212'].reason
        'user torch_xla.sync'
    """

    function: str
    compile_s: float | None = None
    reason: str | None = None
    framework: Framework = FRAMEWORK


@dataclass(frozen=True)
class TorchGraphs:
    """A run's torch_xla graphs.

    Attributes:
        graphs: The distinct graphs, in compile order.
        compiles: Modules compiled (torch_xla graphs in the dump).
        executions: Executions torch_xla logged, in all; None without a log.
        note: Why executions are not known per graph ("" when they are).
        modules: Each module's function, compile time and cause, by module key, in
            compile order: what the compilations view groups.

    Example:
        >>> graphs = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs
        >>> graphs.distinct, graphs.compiles, graphs.executions
        (2, 2, 4)
    """

    graphs: tuple[TorchGraph, ...]
    compiles: int
    executions: int | None = None
    note: str = ""
    modules: Mapping[str, ModuleCompile] = field(default_factory=dict)

    @property
    def distinct(self) -> int:
        """How many distinct graphs ran."""
        return len(self.graphs)

    @property
    def timed(self) -> bool:
        """Whether each module has its compile time (torch_xla's samples paired)."""
        return bool(self.modules) and all(m.compile_s is not None for m in self.modules.values())


def group_graphs(
    modules: Sequence[tuple[str, HloModule]], records: TorchXlaRecords | None = None
) -> TorchGraphs:
    """Group a run's torch_xla modules into graphs and functions, with their executions.

    Args:
        modules: `(module key, module)` of each torch_xla module in compile order (the
            dump's module ids), before optimization where the dump has it.
        records: torch_xla's log of the run; without it executions are unknown.

    Returns:
        The graphs. Executions are joined only when the log holds one compile per module
        (a `--module` filter dumps fewer); else `note` says why they are missing. Compile
        times are joined when torch_xla kept one `CompileTime` sample per module.
    """
    hashes: list[str | None] = [None] * len(modules)
    triggers: list[SourceLocation | None] = [None] * len(modules)
    causes: list[str | None] = [None] * len(modules)
    runs: Counter[str] | None = None
    note = ""
    if records is None or not records.logged:
        note = "torch_xla's log of executions is not in the run (made without hloscope dump?)"
    elif len(records.compiles) != len(modules):
        note = (
            f"torch_xla logged {len(records.compiles)} compiles and the dump holds "
            f"{len(modules)} of its modules, so they cannot be paired"
        )
    else:
        hashes = [c.graph_hash for c in records.compiles]
        triggers = [c.frame for c in records.compiles]
        causes = [c.cause or None for c in records.compiles]
        if records.executions or not records.compiles:
            runs = Counter(e.graph_hash for e in records.executions)
        else:  # PT_XLA_DEBUG_LEVEL=1 (the user's) logs compiles only
            note = "torch_xla logged its compiles but not its executions (PT_XLA_DEBUG_LEVEL < 2)"
    by_key: dict[str, list[int]] = {}
    for i, (_, module) in enumerate(modules):
        by_key.setdefault(graph_key(module), []).append(i)
    graphs = []
    for key, members in by_key.items():
        first = modules[members[0]][1]
        executions = None
        if runs is not None:
            executions = sum(runs[h] for h in {hashes[i] for i in members} if h is not None)
        graphs.append(
            TorchGraph(
                key=key,
                function=function_name(first, triggers[members[0]]),
                modules=tuple(modules[i][0] for i in members),
                executions=executions,
                trigger=triggers[members[0]],
                inputs=_inputs(first),
            )
        )
    function = {k: g.function for g in graphs for k in g.modules}
    seconds = _compile_seconds(records, len(modules))
    return TorchGraphs(
        graphs=tuple(graphs),
        compiles=len(modules),
        executions=_total(records),
        note=note,
        modules={
            key: ModuleCompile(function[key], seconds[i], causes[i])
            for i, (key, _) in enumerate(modules)
        },
    )


def _compile_seconds(records: TorchXlaRecords | None, modules: int) -> list[float | None]:
    """Each module's compile time: the n-th `CompileTime` sample is the n-th compile,
    where torch_xla posted one sample per module and kept them all (it keeps only the
    last ones of a long run)."""
    timed = records.metric("CompileTime") if records is not None else None
    if timed is None or not modules or not timed.count == len(timed.samples_s) == modules:
        return [None] * modules
    return list(timed.samples_s)


def _total(records: TorchXlaRecords | None) -> int | None:
    """Executions torch_xla logged in all; None where it logged none of them (no log, or
    one of compiles only)."""
    if records is None or not records.logged or (records.compiles and not records.executions):
        return None
    return len(records.executions)


def _inputs(module: HloModule) -> tuple[tuple[int, ...], ...]:
    return tuple(p.shape.dimensions for p in module.entry.parameters)


@dataclass(frozen=True)
class TorchXlaRun:
    """What a run tells of PyTorch/XLA beyond its modules.

    Attributes:
        records: torch_xla's own counters, metrics and log, when the run holds them.
        graphs: Its torch_xla modules grouped into graphs and functions.

    Example:
        >>> torch = hloscope.inspect_run('tests/data/torch_mlp').torch_xla
        >>> isinstance(torch, hloscope.TorchXlaRun), torch.graphs.distinct
        (True, 2)
    """

    records: TorchXlaRecords | None
    graphs: TorchGraphs


def torch_xla_run(run: Run) -> TorchXlaRun | None:
    """The torch_xla view of a run; None when it holds neither torch_xla modules nor
    torch_xla's records. Every torch_xla module of the run counts, selected or not.

    The view is kept for the run's files as they are (the report, the compilations view
    and `--module` all ask for it): it is computed again only when a file changed."""
    key = _fingerprint(run)
    if key in _VIEWS:
        _VIEWS.move_to_end(key)
        return _VIEWS[key]
    view = _view(run)
    _VIEWS[key] = view
    while len(_VIEWS) > _VIEWS_KEPT:
        _VIEWS.popitem(last=False)
    return view


def torch_xla_functions(run: Run) -> Mapping[str, ModuleCompile]:
    """How the compilations view groups a torch_xla run: each torch_xla module's function,
    compile time and cause, by module key; empty for a run without torch_xla modules.

    This is torch_xla's hook in `hloscope.analysis.compilations.RUN_RULES`: a module's
    name (`SyncTensorsGraph.364`) does not say which code it compiles; torch_xla's log
    of the run does."""
    view = torch_xla_run(run)
    return view.graphs.modules if view is not None else {}


_VIEWS: OrderedDict[tuple[object, ...], TorchXlaRun | None] = OrderedDict()
_VIEWS_KEPT = 4


def _fingerprint(run: Run) -> tuple[object, ...]:
    """The run's folder, its modules' files and torch_xla's records, as they are now."""
    files = [p for m in run.modules for p in (m.before, m.after)]
    if run.path.is_dir():
        files += [run.path / FOLDER / DEBUG_FILE, run.path / FOLDER / METRICS_FILE]
    return (str(run.path), tuple(m.key for m in run.modules), *map(_stamp, files))


def _stamp(path: Path | None) -> tuple[str, int, int] | None:
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), st.st_mtime_ns, st.st_size)


def _view(run: Run) -> TorchXlaRun | None:
    records = read_records(run.path) if run.path.is_dir() else None
    named = {c.name for c in records.compiles if c.name} if records is not None else set()
    found: list[ModuleDump] = sorted(
        (m for m in run.modules if is_torch_graph(m.name, named)),
        key=lambda m: (m.id_number is None, m.id_number or 0, m.key),
    )
    if not found and records is None:
        return None
    parsed = []
    for m in found:
        try:
            module = m.load_before() or m.load_after()
        except HloscopeError:  # unreadable: shown as such by the report; not grouped
            continue
        if module is not None:
            parsed.append((m.key, module))
    return TorchXlaRun(records, group_graphs(parsed, records))
