"""A PyTorch/XLA run's graphs, their executions and torch_xla's own counters, as JSON and
as text.

`torch_xla_doc` is the `torch_xla` object of `hloscope report --json`; `torch_xla_text`
the lines `hloscope report` prints under the modules table. Both render a
`hloscope.analysis.torch_graphs.TorchXlaRun` and compute nothing of their own.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from hloscope.analysis.torch_graphs import TorchGraph, TorchXlaRun
from hloscope.analysis.torch_xla import LOCAL_SCALAR, TimedMetric
from hloscope.render.format import counted, fmt_seconds

__all__ = ["torch_xla_doc", "torch_xla_text"]


def torch_xla_doc(view: TorchXlaRun) -> dict[str, Any]:
    """The `torch_xla` object of `report --json`.

    Keys: `compiles` (torch_xla modules in the dump), `executions` (graph executions
    torch_xla logged; null without its log), `distinct_graphs`; `graphs`: `[{key,
    function, modules, executions, trigger, inputs}]` in compile order (`key`: the
    structure hash; `modules`: module keys; `executions`: of that graph, one per training
    step where a step is one graph; `trigger`: the user's
    line whose `torch_xla.sync()` or tensor read compiled it; `inputs`: the entry
    parameters' dimensions); `functions`: `[{name, modules, varying: [{arg, dim,
    values, modules}]}]`, the graphs of one function (the code between two syncs,
    `SyncTensorsGraph@train.py:64`) and the input dimensions whose sizes differ between
    those of its graphs with inputs of the same ranks (`modules`); `metrics`: torch_xla's
    `CompileTime`, `ExecuteTime`, ... as `{count, total_s}`; `counters`; `fallbacks`
    (`aten::` op -> times it ran on the CPU); `note` and `errors`.
    """
    graphs = view.graphs
    records = view.records
    return {
        "compiles": graphs.compiles,
        "executions": graphs.executions,
        "distinct_graphs": graphs.distinct,
        "graphs": [_graph_doc(g) for g in graphs.graphs],
        "functions": [
            {
                "name": f.name,
                "modules": [k for g in f.graphs for k in g.modules],
                "varying": [
                    {
                        "arg": v.arg,
                        "dim": v.dim,
                        "values": list(v.values),
                        "modules": list(v.modules),
                    }
                    for v in f.varying
                ],
            }
            for f in graphs.functions
        ],
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


def torch_xla_text(view: TorchXlaRun) -> list[Text]:
    """The lines `hloscope report` prints about a torch_xla run: executions per graph,
    torch_xla's compile and execute times, and the ops that fell back to the CPU.
    (Recompiles are the compilations view's, `hloscope.render.compilations`.)"""
    graphs, records = view.graphs, view.records
    lines: list[Text] = []
    head = f"torch_xla: {counted(graphs.distinct, 'distinct graph')}"
    if graphs.executions is not None:
        head += f" ran {counted(graphs.executions, 'time')}"
    times = [
        _timed(records.metric("CompileTime") if records else None, "compile"),
        _timed(records.metric("ExecuteTime") if records else None, "execution"),
    ]
    lines.append(Text.assemble((head, "bold"), *[f" · {t}" for t in times if t]))
    for g in graphs.graphs:
        if g.executions is None:
            continue
        where = f", compiled at {g.trigger}" if g.trigger else ""
        modules = ", ".join(g.modules)
        lines.append(Text(f"  {g.executions:>5}× {modules}{where}"))
    if graphs.note:
        lines.append(Text(f"  {graphs.note}", "dim"))
    if records is not None:
        ops = {k: v for k, v in records.fallbacks.items() if k != LOCAL_SCALAR}
        if ops:
            ran = ", ".join(f"{k} ×{v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1]))
            lines.append(Text(f"  ran on the CPU, outside XLA: {ran}", "yellow"))
        if LOCAL_SCALAR in records.fallbacks:
            n = records.fallbacks[LOCAL_SCALAR]
            lines.append(
                Text(f"  tensor values read back to Python (.item(), print, if): {n}×", "dim")
            )
        lines.extend(Text(f"  {e}", "red") for e in records.errors)
    return lines


def _timed(m: TimedMetric | None, noun: str) -> str:
    """`2 compiles 692.26 ms`: a count and total from torch_xla's own metric."""
    if m is None:
        return ""
    return f"{counted(m.count, noun)} {fmt_seconds(m.total_s)}"
