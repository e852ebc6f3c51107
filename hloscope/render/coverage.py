"""Which TensorFlow ops ran in XLA (`hloscope.timing.xla_coverage`) -> JSON and text.

`coverage_doc` fixes the run-level `xla_coverage` object of `hloscope report --json`;
`coverage_view` and `cluster_line` give the terminal report's lines. Nothing here
computes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.report import ModuleReport
from hloscope.analysis.tf_graphs import function_label
from hloscope.render.format import counted, fmt_us, short_name
from hloscope.timing.xla_coverage import XlaCoverage

__all__ = ["cluster_line", "coverage_doc", "coverage_view"]

# Ops outside XLA listed in the terminal, most time first.
SHOWN = 8


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def coverage_doc(c: XlaCoverage | None, modules: tuple[ModuleReport, ...] = ()) -> Any:
    """The run's `xla_coverage` object: `source` (`graph dumps`: TensorFlow's function
    graphs after clustering; `profile`: its op events), `ops_in_xla`, `ops_outside`
    (TensorFlow ops; graph plumbing, constants and launch ops left out),
    `time_outside_share` (the part of the profiled op time outside XLA: the ops
    outside against the `_XlaRun`/`XlaLaunch` launches; null when not profiled),
    `time_outside_us`, `time_in_xla_us`, `outside` (`[{op, type, function, time_us,
    calls}]`, most time first; times summed over the calls after each op's warm-up
    ones), `functions` (`[{name, label, ops_in_xla, ops_outside, clusters: [{name,
    module (the key of its HLO module, or null), ops, layers}]}]`); null when it does
    not apply (not TensorFlow, or nothing ran outside XLA)."""
    if c is None:
        return None
    keys = {m.name.split("__", 1)[0]: m.key for m in modules if m.name.startswith("cluster_")}
    return {
        "source": c.source,
        "ops_in_xla": c.ops_in_xla,
        "ops_outside": c.ops_outside,
        "time_outside_share": _r(c.time_outside_share, 4),
        "time_outside_us": _r(c.time_outside_us),
        "time_in_xla_us": _r(c.time_in_xla_us),
        "outside": [
            {
                "op": o.op,
                "type": o.type,
                "function": o.function,
                "time_us": _r(o.time_us),
                "calls": o.calls,
            }
            for o in c.outside
        ],
        "functions": [
            {
                "name": f.name,
                "label": f.label,
                "ops_in_xla": f.ops_in_xla,
                "ops_outside": len(f.outside),
                "clusters": [
                    {
                        "name": cl.name,
                        "module": keys.get(cl.name),
                        "ops": len(cl.ops),
                        "layers": list(cl.layers),
                    }
                    for cl in f.clusters
                ],
            }
            for f in c.functions
        ],
    }


def _headline(c: XlaCoverage) -> Text:
    total = c.ops_in_xla + c.ops_outside
    where = ""
    if c.functions:
        labels = ", ".join(f.label for f in c.functions[:3])
        more = f" +{len(c.functions) - 3}" if len(c.functions) > 3 else ""
        where = f" of {labels}{more}"
    clusters = sum(len(f.clusters) for f in c.functions)
    into = f" in {counted(clusters, 'XLA cluster')}" if clusters else " in XLA"
    text = f"{c.ops_in_xla} of {total} TensorFlow ops{where} ran{into}; {c.ops_outside} outside XLA"
    share = c.time_outside_share
    if share is not None:
        text += f", {100 * share:.0f}% of the profiled op time"
    style = "bold yellow" if c.ops_outside > c.ops_in_xla else "bold"
    return Text.assemble(("XLA coverage: ", "bold"), (text, style), (f"  (from {c.source})", "dim"))


def coverage_view(c: XlaCoverage | None, modules: tuple[ModuleReport, ...] = ()) -> RenderableType:
    """The report's coverage section: the counts, each cluster with its function and
    layers, and the ops outside XLA, most time first."""
    if c is None:
        return Group()
    parts: list[RenderableType] = [_headline(c)]
    keys = {m.name.split("__", 1)[0]: m.key for m in modules if m.name.startswith("cluster_")}
    for f in c.functions:
        for cl in f.clusters:
            layers = ", ".join(cl.layers[:4]) + (" …" if len(cl.layers) > 4 else "")
            module = f" = module {short_name(keys[cl.name], 40)}" if cl.name in keys else ""
            parts.append(
                Text(
                    f"  {cl.name}{module}: {len(cl.ops)} ops of {f.label} ({layers or 'no scope'})"
                )
            )
    if c.outside:
        table = Table(box=None, pad_edge=False, title="  outside XLA", title_justify="left")
        table.add_column("  op", no_wrap=True, overflow="ellipsis", max_width=60)
        table.add_column("type", no_wrap=True)
        timed = c.time_outside_us is not None
        if timed:
            table.add_column("time", justify="right", no_wrap=True)
            table.add_column("calls", justify="right", no_wrap=True)
        for o in c.outside[:SHOWN]:
            row = ["  " + o.op, o.type]
            if timed:
                row += [fmt_us(o.time_us), str(o.calls)]
            table.add_row(*row)
        rest = c.outside[SHOWN:]
        if rest:
            kinds = Counter(o.type for o in rest)
            listed = ", ".join(f"{t} ×{n}" if n > 1 else t for t, n in kinds.most_common(4))
            row = [f"  +{len(rest)} more", listed]
            if timed:
                row += [fmt_us(sum(o.time_us or 0.0 for o in rest)), ""]
            table.add_row(*row, style="dim")
        parts.append(table)
    return Group(*parts)


def cluster_line(c: XlaCoverage | None, m: ModuleReport) -> Text | None:
    """For a module TensorFlow auto-clustered: which function and layers it holds."""
    found = c.cluster_of(m.name) if c is not None else None
    if found is None:
        return None
    f, cl = found
    layers = ", ".join(cl.layers[:4]) + (" …" if len(cl.layers) > 4 else "")
    return Text(
        f"TensorFlow {cl.name} of {function_label(f.name)}: {len(cl.ops)} ops"
        + (f" of {layers}" if layers else ""),
        style="bold",
    )
