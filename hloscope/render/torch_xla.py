"""A PyTorch/XLA run's graphs, their executions and torch_xla's own counters, as JSON,
as text and for the HTML page.

`torch_xla_doc` is the `torch_xla` object of `hloscope report --json`; `torch_xla_text`
the lines `hloscope report` prints under the modules table (and `hloscope dump` at the
end of the run); `torch_xla_page_doc` what the HTML page shows. They render a
`hloscope.analysis.torch_graphs.TorchXlaRun` and compute nothing of their own.

Recompiles are not said here: the compilations view (`hloscope.render.compilations`)
shows them for every framework, torch_xla's functions included (grouped by the line
whose sync compiled them, with torch_xla's compile times). This block keeps what only
torch_xla tells: how many times each graph ran, its execution time, the ops that fell
back to the CPU and the tensor values read back to Python; and torch_xla's compile count
and time where they could not be joined to the modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.text import Text

from hloscope.analysis.torch_graphs import TorchGraph, TorchXlaRun
from hloscope.analysis.torch_xla import LOCAL_SCALAR, TimedMetric
from hloscope.render.format import counted, fmt_seconds

__all__ = ["torch_xla_doc", "torch_xla_page_doc", "torch_xla_summary", "torch_xla_text"]

# Graphs `hloscope dump` lists at the end of a run (`report` lists them all).
_SUMMARY_GRAPHS = 8


def torch_xla_doc(view: TorchXlaRun) -> dict[str, Any]:
    """The `torch_xla` object of `report --json`.

    Keys: `compiles` (torch_xla modules in the dump), `executions` (graph executions
    torch_xla logged; null without its log), `distinct_graphs`; `graphs`: `[{key,
    function, modules, executions, trigger, inputs}]` in compile order (`key`: the
    structure hash; `function`: the function it compiles, as the modules' `function`
    and `compilations` name it, e.g. `SyncTensorsGraph@train.py:64`, the code between
    two syncs; `modules`: module keys; `executions`: of that graph, one per training
    step where a step is one graph; `trigger`: the user's line whose
    `torch_xla.sync()` or tensor read compiled it; `inputs`: the entry parameters'
    dimensions); `metrics`: torch_xla's `CompileTime`, `ExecuteTime`, ... as `{count,
    total_s}`; `counters`; `fallbacks` (`aten::` op -> times it ran on the CPU); `note`
    and `errors`. Recompiles and their varying dimensions are in the top-level
    `compilations`, as for every framework.
    """
    graphs = view.graphs
    records = view.records
    return {
        "compiles": graphs.compiles,
        "executions": graphs.executions,
        "distinct_graphs": graphs.distinct,
        "graphs": [_graph_doc(g) for g in graphs.graphs],
        "metrics": {
            name: {"count": m.count, "total_s": m.total_s}
            for name, m in (records.metrics.items() if records else ())
        },
        "counters": dict(records.counters) if records else {},
        "fallbacks": dict(records.fallbacks) if records else {},
        "note": graphs.note,
        "errors": list(records.errors) if records else [],
    }


def _graph_doc(g: TorchGraph) -> dict[str, Any]:
    return {
        "key": g.key,
        "function": g.function,
        "modules": list(g.modules),
        "executions": g.executions,
        "trigger": str(g.trigger) if g.trigger else None,
        "inputs": [list(d) for d in g.inputs],
    }


def torch_xla_headline(view: TorchXlaRun) -> Text:
    """`torch_xla: 2 distinct graphs ran 5 times · 5 executions 220.71 ms`, with
    torch_xla's compile count and time where the modules do not carry them."""
    graphs, records = view.graphs, view.records
    head = f"torch_xla: {counted(graphs.distinct, 'distinct graph')}"
    if graphs.executions is not None:
        head += f" ran {counted(graphs.executions, 'time')}"
    compile_metric = records.metric("CompileTime") if records and not graphs.timed else None
    times = [
        _timed(compile_metric, "compile"),
        _timed(records.metric("ExecuteTime") if records else None, "execution"),
    ]
    return Text.assemble((head, "bold"), *[f" · {t}" for t in times if t])


def _graph_line(g: TorchGraph) -> str:
    where = f", compiled at {g.trigger}" if g.trigger else ""
    return f"{g.executions:>5}× {', '.join(g.modules)}{where}"


def _record_lines(view: TorchXlaRun) -> list[Text]:
    """The note on a log that could not be joined, the ops that ran on the CPU, the
    tensor values read back, and what could not be read."""
    records = view.records
    lines: list[Text] = []
    if view.graphs.note:
        lines.append(Text(view.graphs.note, "dim"))
    if records is not None:
        ops = {k: v for k, v in records.fallbacks.items() if k != LOCAL_SCALAR}
        if ops:
            ran = ", ".join(f"{k} ×{v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1]))
            lines.append(Text(f"ran on the CPU, outside XLA: {ran}", "yellow"))
        if LOCAL_SCALAR in records.fallbacks:
            n = records.fallbacks[LOCAL_SCALAR]
            lines.append(
                Text(f"tensor values read back to Python (.item(), print, if): {n}×", "dim")
            )
        lines.extend(Text(e, "red") for e in records.errors)
    return lines


def torch_xla_text(view: TorchXlaRun, *, limit: int | None = None) -> list[Text]:
    """The lines `hloscope report` prints about a torch_xla run: executions per graph,
    torch_xla's execution time, the ops that fell back to the CPU. (Recompiles are the
    compilations view's, `hloscope.render.compilations`.)

    Args:
        view: The run's torch_xla view.
        limit: List at most this many graphs (`hloscope dump`'s summary); all when None.
    """
    graphs = [g for g in view.graphs.graphs if g.executions is not None]
    lines = [torch_xla_headline(view)]
    shown = graphs if limit is None else graphs[:limit]
    lines += [Text(f"  {_graph_line(g)}") for g in shown]
    if len(graphs) > len(shown):
        lines.append(Text(f"  … {len(graphs) - len(shown)} more graphs", "dim"))
    for line in _record_lines(view):
        lines.append(Text("  ") + line)
    return lines


def torch_xla_summary(view: TorchXlaRun) -> Group:
    """What `hloscope dump` prints of a torch_xla run at its end: the block of
    `torch_xla_text`, with at most a few graphs."""
    return Group(*torch_xla_text(view, limit=_SUMMARY_GRAPHS))


def torch_xla_page_doc(view: TorchXlaRun, indices: Mapping[str, int]) -> dict[str, Any]:
    """What the HTML overview shows of a torch_xla run: the headline, each graph with its
    executions, function, trigger and modules (`index`: its place in the page, null when
    not on it), and the lines on the records."""
    return {
        "headline": torch_xla_headline(view).plain,
        "graphs": [
            {
                "function": g.function,
                "executions": g.executions,
                "trigger": str(g.trigger) if g.trigger else None,
                "modules": [{"key": k, "index": indices.get(k)} for k in g.modules],
            }
            for g in view.graphs.graphs
        ],
        "notes": [line.plain for line in _record_lines(view)],
    }


def _timed(m: TimedMetric | None, noun: str) -> str:
    """`2 compiles 692.26 ms`: a count and total from torch_xla's own metric."""
    if m is None:
        return ""
    return f"{counted(m.count, noun)} {fmt_seconds(m.total_s)}"
