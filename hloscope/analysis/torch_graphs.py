"""PyTorch/XLA's graphs: which dumped modules are the same graph, and how many times
each ran.

torch_xla names every graph it compiles `SyncTensorsGraph.<n>`, whatever it computes, and
compiles a graph once per shape and structure (its cache is keyed on the IR's hash); the
dump holds one module per compile. The modules group two ways:

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
steps that ran it, where a step is one graph).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.analysis.torch_xla import TorchXlaRecords, read_records
from hloscope.errors import HloscopeError
from hloscope.hlo.model import HloModule, SourceLocation
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES
from hloscope.runs import Run

__all__ = [
    "GRAPH_NAME",
    "GraphFunction",
    "TorchGraph",
    "TorchGraphs",
    "TorchXlaRun",
    "Varying",
    "function_key",
    "function_name",
    "graph_key",
    "group_graphs",
    "is_torch_graph",
    "torch_xla_run",
]

GRAPH_NAME = "SyncTensorsGraph"
"""What torch_xla names every graph it compiles (`SyncTensorsGraph.<n>`)."""
# Attributes that name things (computations, the source) rather than say what is done.
_NAMING = frozenset(CALLED_COMPUTATION_ATTRIBUTES) | {"metadata", "frontend_attributes"}
# Attributes that hold sizes of dimensions, masked in the function key.
_SIZED = frozenset({"slice", "dynamic_slice_sizes", "padding", "window"})
_DIMS = re.compile(r"\[([^\]]*)\]")
_DIGITS = re.compile(r"\d+")


def is_torch_graph(name: str) -> bool:
    """Whether an HloModule name is one torch_xla gives (`SyncTensorsGraph.364`)."""
    return name == GRAPH_NAME or name.startswith(GRAPH_NAME + ".")


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
        (the start of `function_key`: the modules of one structure up to sizes).
    """
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
        >>> function = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs.functions[0]
        >>> isinstance(function.graphs[0], hloscope.TorchGraph)
        True
    """

    key: str
    function: str
    modules: tuple[str, ...]
    executions: int | None = None
    trigger: SourceLocation | None = None
    inputs: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class Varying:
    """A dimension of an input that differs between graphs of one function.

    Attributes:
        arg: The parameter number in the entry computation.
        dim: The dimension.
        values: Its size in each of `modules`, in compile order.
        modules: The modules compared: the function's graphs whose entry parameters
            have the same ranks (AdamW's first step, with fewer inputs, is left out).
    """

    arg: int
    dim: int
    values: tuple[int, ...]
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphFunction:
    """The graphs of one function (`function_name`): one step compiled at several sizes.

    Attributes:
        name: Its `function_name`.
        graphs: Its distinct graphs, in compile order.
        varying: The input dimensions whose sizes differ between them.

    Example:
        >>> function = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs.functions[0]
        >>> isinstance(function, hloscope.GraphFunction), len(function.graphs) >= 1
        (True, True)
    """

    name: str
    graphs: tuple[TorchGraph, ...]
    varying: tuple[Varying, ...] = ()

    @property
    def compiles(self) -> int:
        """Modules compiled for it."""
        return sum(len(g.modules) for g in self.graphs)


@dataclass(frozen=True)
class TorchGraphs:
    """A run's torch_xla graphs.

    Attributes:
        graphs: The distinct graphs, in compile order.
        functions: The graphs grouped by structure up to sizes, in compile order.
        compiles: Modules compiled (torch_xla graphs in the dump).
        executions: Executions torch_xla logged, in all; None without a log.
        note: Why executions are not known per graph ("" when they are).

    Example:
        >>> graphs = hloscope.inspect_run('tests/data/torch_mlp').torch_xla.graphs
        >>> isinstance(graphs, hloscope.TorchGraphs), len(graphs.functions)
        (True, 1)
    """

    graphs: tuple[TorchGraph, ...]
    functions: tuple[GraphFunction, ...]
    compiles: int
    executions: int | None = None
    note: str = ""

    @property
    def distinct(self) -> int:
        """How many distinct graphs ran."""
        return len(self.graphs)

    @property
    def recompiled(self) -> tuple[GraphFunction, ...]:
        """The functions compiled more than once."""
        return tuple(f for f in self.functions if f.compiles > 1)


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
        (a `--module` filter dumps fewer); else `note` says why they are missing.
    """
    hashes: list[str | None] = [None] * len(modules)
    triggers: list[SourceLocation | None] = [None] * len(modules)
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
    functions: dict[str, list[TorchGraph]] = {}
    for g in graphs:
        functions.setdefault(g.function, []).append(g)
    return TorchGraphs(
        graphs=tuple(graphs),
        functions=tuple(
            GraphFunction(name, tuple(gs), _varying(gs)) for name, gs in functions.items()
        ),
        compiles=len(modules),
        executions=_total(records),
        note=note,
    )


def _total(records: TorchXlaRecords | None) -> int | None:
    """Executions torch_xla logged in all; None where it logged none of them (no log, or
    one of compiles only)."""
    if records is None or not records.logged or (records.compiles and not records.executions):
        return None
    return len(records.executions)


def _inputs(module: HloModule) -> tuple[tuple[int, ...], ...]:
    return tuple(p.shape.dimensions for p in module.entry.parameters)


def _varying(graphs: Sequence[TorchGraph]) -> tuple[Varying, ...]:
    """Parameter dimensions whose sizes differ between graphs of one function, compared
    among the graphs whose parameters have the same ranks (the most of them; the later
    ones on a tie)."""
    by_ranks: dict[tuple[int, ...], list[TorchGraph]] = {}
    for g in graphs:
        by_ranks.setdefault(tuple(len(d) for d in g.inputs), []).append(g)
    same = max(reversed(list(by_ranks.values())), key=len)
    if len(same) < 2:
        return ()
    modules = tuple(g.modules[0] for g in same)
    out = []
    for arg, dims in enumerate(same[0].inputs):
        for dim in range(len(dims)):
            values = tuple(g.inputs[arg][dim] for g in same)
            if len(set(values)) > 1:
                out.append(Varying(arg, dim, values, modules))
    return tuple(out)


@dataclass(frozen=True)
class TorchXlaRun:
    """What a run tells of PyTorch/XLA beyond its modules.

    Attributes:
        records: torch_xla's own counters, metrics and log, when the run holds them.
        graphs: Its torch_xla modules grouped into graphs and functions.

    Example:
        >>> torch = hloscope.inspect_run('tests/data/torch_mlp').torch_xla
        >>> isinstance(torch, hloscope.TorchXlaRun), len(torch.graphs.functions) > 0
        (True, True)
    """

    records: TorchXlaRecords | None
    graphs: TorchGraphs


def torch_xla_run(run: Run) -> TorchXlaRun | None:
    """The torch_xla view of a run; None when it holds neither torch_xla modules nor
    torch_xla's records. Every torch_xla module of the run counts, selected or not."""
    found = [m for m in run.modules if is_torch_graph(m.name)]
    records = read_records(run.path) if run.path.is_dir() else None
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
