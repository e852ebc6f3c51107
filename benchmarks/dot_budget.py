"""How long Graphviz `dot` takes by node and edge count: the measurements behind the
diagram budget (`DEFAULT_MAX_NODES`, `MAX_EDGES` in hloscope/render/diagram/build.py).

Synthetic DAGs drawn in hloscope's own style (graph, node and edge attributes taken from
a real `hloscope graph` DOT file; HTML labels of three lines; tooltips) are laid out with
`dot -Tsvg`, each capped at `--cap` seconds. Two edge patterns:
  - local: each edge joins a node to one of the next 8 (what a collapsed chain of layers
    looks like), and
  - long: edges join random earlier and later nodes (what a collapsed scope with many
    cross edges looks like; the worst case for dot's crossing minimisation).
A real module (`--real FILE`, an HLO text file) is drawn as `hloscope graph` would draw
it at several budgets, and its node/edge counts and `dot` time are printed too.

    python benchmarks/dot_budget.py [--nodes 100,200,300] [--ratios 1,2,4,8] [--cap 60]
                                    [--real FILE]

Target (issue 14): the default budget holds `dot` under 10 s whatever the input.

Figures (2026-12-03, the 2-core shared VM, graphviz 2.42, other jobs running; `cost`
is `hloscope.analysis.collapse.layout_cost`), with hloscope's iteration limits:

    pattern nodes edges      cost   dot      pattern nodes edges    cost   dot
    local     300   900    18,161  1.2 s     long    300   900   617,385  1.7 s
    local     200   800    26,327  2.0 s     long    200   800   750,360  4.0 s
    local     300  1200    37,742  3.6 s     long    300  1200 1,849,032 10.6 s
    mirror    100   200   344,774  1.6 s     long    200   600   337,811  1.8 s
    mirror    200   300   703,594  1.7 s     mirror  100   300 1,360,675  7.6 s
    mirror    300   450 2,123,637 19.6 s     mirror  200   400 2,843,087  > 30 s

and without them (`--no-limits`, what a small uncollapsed diagram gets):

    mirror     60   120    77,384  0.6 s     mirror  100   150    93,504  1.6 s
    mirror    140   210   240,580  9.3 s     mirror  100   200   344,774 17.4 s

Hence the budget in hloscope/analysis/collapse.py: at most 800 edges (edges alone cost
2 s at 800, 3.6 s at 1200), a layout cost of at most 400,000 with the limits (worst
seen 1.8 s) or 50,000 without (well under 1 s), and at most 8,000 nodes laid out
(`size`: real plus virtual; network simplex and spline routing grow with it); node
count alone is cheap (300 nodes of local edges: 0.4 s). Collapsed groups often form
cycles, which dot breaks by reversing an edge of each: `layout_cost` does the same,
or it counts a 163-node cycle as one rank. Edge labels double dot's ranks and add a
box per edge to route, so `build.py` labels edges only below 1,000 laid-out nodes.

Real generated training steps (benchmarks/big_module.py, `--real`, before
optimization): 10 MB, the old 300-node diagram (297 nodes, 564 edges, cost 7.1
million) took dot 44 s (18.8 s of CPU); now about 100 nodes and 200 edges, 0.5 s.
105 MB: the old budget drew 297 nodes past 60 s; with edges and layout cost bounded
but cycles counted as one rank, 176 nodes and 447 edges (dot's layout 13,000 nodes)
took 11.5 s; with cycles broken as dot breaks them, 75 nodes and 215 edges took 7.6 s,
all of it routing the edge labels (0.44 s without them); with labels bounded, the same
75 nodes and 215 edges take 0.38 s.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

import networkx as nx

from hloscope.analysis.collapse import layout_cost, layout_size

LIMITS = "mclimit=0.5 nslimit=4 nslimit1=4"
HEADER = """digraph hloscope {
  graph [fontname=Helvetica fontsize=16 labeljust=l labelloc=t nodesep=0.25
         rankdir=TB ranksep=0.4 LIMITS]
  node [fontname=Helvetica fontsize=11 margin="0.12,0.05"]
  edge [arrowsize=0.6 color="#666666" fontcolor="#444444" fontname=Helvetica fontsize=9]
"""


def synthetic_edges(nodes: int, edges: int, pattern: str, seed: int = 0) -> set[tuple[int, int]]:
    """About `edges` distinct edges `a -> b` (a < b) over `nodes` nodes.

    local: each edge joins a node to one of the next 8; long: random pairs; mirror: a
    chain, plus edges from forward node i to its mirror node n-1-i (a training step's
    backward pass reading forward activations: long edges over many ranks).
    """
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    if pattern == "mirror":
        seen.update((i, i + 1) for i in range(nodes - 1))
    tries = 0
    while len(seen) < edges and tries < edges * 20:
        tries += 1
        a = rng.randrange(nodes - 1)
        if pattern == "local":
            b = a + rng.randint(1, 8)
        elif pattern == "long":
            b = rng.randrange(a + 1, nodes)
        else:
            a = rng.randrange(nodes // 2)
            b = nodes - 1 - a + rng.randint(-2, 2)
        if a < b < nodes:
            seen.add((a, b))
    return seen


def synthetic(nodes: int, edges: set[tuple[int, int]], limits: bool = True) -> str:
    """DOT source of the DAG, in hloscope's style (with the iteration limits
    `hloscope.render.dot` sets, or without)."""
    lines = [HEADER.replace("LIMITS", LIMITS if limits else "")]
    for i in range(nodes):
        label = (
            f'<<font point-size="11"><b>fusion.{i}</b></font><br/>'
            f'<font point-size="9" color="#333333">kLoop &#183; f32[8,{i % 97},64]</font><br/>'
            f'<font point-size="9" color="#333333">layer_{i // 7}/mlp/dense_{i % 5}</font>>'
        )
        lines.append(
            f'  "n{i}" [label={label} shape=box style="rounded,filled" '
            f'fillcolor="#cfe2f3" tooltip="fusion.{i}"]'
        )
    for a, b in sorted(edges):
        lines.append(f'  "n{a}" -> "n{b}" [tooltip="f32[8,64,64] 16.0 KiB"]')
    lines.append("}")
    return "\n".join(lines) + "\n"


def time_dot(source: str, cap: float) -> float | None:
    """Seconds `dot -Tsvg` took on the source, or None past `cap`."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "g.dot"
        src.write_text(source, encoding="utf-8")
        started = time.perf_counter()
        try:
            subprocess.run(
                ["dot", "-Tsvg", "-o", str(Path(d) / "g.svg"), str(src)],
                check=True,
                timeout=cap,
                capture_output=True,
            )
        except subprocess.TimeoutExpired:
            return None
        return time.perf_counter() - started


def real(path: Path, budgets: list[int], cap: float) -> None:
    """Draw a real module as `hloscope graph` does, at each node budget."""
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import module_diagram
    from hloscope.render.dot import to_dot

    inspection = inspect_run(path, bench=False, timings=False)
    analysed = inspection.modules[0]
    for budget in budgets:
        stage = "after" if analysed.after_module is not None else "before"
        spec = module_diagram(analysed, stage=stage, max_nodes=budget)
        g = nx.DiGraph()
        g.add_nodes_from(n.id for n in spec.nodes)
        g.add_edges_from((e.src, e.dst) for e in spec.edges)
        seconds = time_dot(to_dot(spec), cap)
        shown = f"{seconds:6.2f} s" if seconds is not None else f"> {cap:.0f} s"
        print(
            f"real  max_nodes={budget:4d}  nodes={len(spec.nodes):4d} "
            f"edges={len(spec.edges):5d} cost={layout_cost(g)} size={layout_size(g)}  dot {shown}",
            flush=True,
        )


def main() -> None:
    """Print `dot` seconds per (pattern, nodes, edges)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="100,200,300")
    ap.add_argument("--patterns", default="local,long,mirror")
    ap.add_argument("--ratios", default="1,2,4,8", help="edges per node")
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--real", type=Path, default=None)
    ap.add_argument("--budgets", default="100,200,300")
    ap.add_argument("--no-limits", action="store_true", help="without mclimit/nslimit")
    args = ap.parse_args()
    print(
        f"{'pattern':6s} {'nodes':>5s} {'edges':>6s} {'cost':>9s} {'size':>6s}  dot -Tsvg",
        flush=True,
    )
    for pattern in args.patterns.split(","):
        for n in (int(x) for x in args.nodes.split(",") if x):
            for r in (float(x) for x in args.ratios.split(",")):
                edges = synthetic_edges(n, int(n * r), pattern)
                g = nx.DiGraph(list(edges))
                cost, size = layout_cost(g), layout_size(g)
                seconds = time_dot(synthetic(n, edges, not args.no_limits), args.cap)
                shown = f"{seconds:6.2f} s" if seconds is not None else f"> {args.cap:.0f} s"
                print(
                    f"{pattern:6s} {n:5d} {len(edges):6d} {cost:9d} {size:6d}  {shown}", flush=True
                )
    if args.real is not None:
        real(args.real, [int(x) for x in args.budgets.split(",")], args.cap)


if __name__ == "__main__":
    main()
