"""DiagramSpec -> DOT -> the real Graphviz `dot` binary.

`to_dot` writes a `hloscope.render.diagram.spec.DiagramSpec` as DOT source through the
`graphviz` package, with every name escaped for DOT, HTML-like labels and SVG; `render`
always writes the `.dot` file, then lays it out with `dot` (SVG, PNG or PDF) and says
how to install Graphviz when `dot` is missing.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import graphviz

from hloscope.analysis.collapse import DOT_LIMITS_ABOVE
from hloscope.errors import HloscopeError, MissingDependencyError, UsageError
from hloscope.render.diagram.spec import (
    CONTROL,
    FORMATS,
    GROUP_NODE,
    KERNEL,
    OP,
    REPEAT,
    TOOLTIP_CHARS,
    Cluster,
    DiagramSpec,
    Edge,
    LegendEntry,
    Node,
)
from hloscope.render.diagram.style import HEAVY_COLOR
from hloscope.render.format import ellipsis
from hloscope.status import step


@dataclass(frozen=True)
class RenderResult:
    """What `render` wrote.

    Attributes:
        dot: The DOT source file (always written).
        out: The rendered picture, or None when only DOT was asked for.
        format: `svg`, `png`, `pdf` or `dot`.
        seconds: Time `dot` took.
        nodes: Nodes in the picture (counted in the DOT source).
    """

    dot: Path
    out: Path | None
    format: str
    seconds: float
    nodes: int


# --- DOT and rendering ------------------------------------------------------------------


def to_dot(spec: DiagramSpec) -> str:
    """DOT source for a diagram (HTML-like labels, everything escaped).

    Args:
        spec: The diagram.

    Returns:
        The DOT text.

    Example:
        >>> spec = hloscope.module_diagram(hloscope.inspect_run("tests/data/tf_dense_relu").main[0])
        >>> hloscope.to_dot(spec).startswith('digraph')
        True
    """
    # Iterations capped as `hloscope.analysis.collapse` budgets them (issue 14).
    big = len(spec.nodes) > DOT_LIMITS_ABOVE or spec.collapsed
    g = graphviz.Digraph(
        "hloscope",
        graph_attr={
            "rankdir": "TB",
            "labelloc": "t",
            "labeljust": "l",
            "fontname": "Helvetica",
            "fontsize": "16",
            "nodesep": "0.25",
            "ranksep": "0.4",
            "tooltip": _plain(spec.title),
            "label": _block_label([spec.title, *spec.notes], title_size=16, size=11),
            **({"mclimit": "0.5", "nslimit": "4", "nslimit1": "4"} if big else {}),
        },
        node_attr={"fontname": "Helvetica", "fontsize": "11", "margin": "0.12,0.05"},
        edge_attr={
            "fontname": "Helvetica",
            "fontsize": "9",
            "color": "#666666",
            "fontcolor": "#444444",
            "arrowsize": "0.6",
        },
    )
    children: dict[str | None, list[Cluster]] = {}
    for c in spec.clusters:
        children.setdefault(c.parent, []).append(c)
    by_cluster: dict[str | None, list[Node]] = {}
    for n in spec.nodes:
        by_cluster.setdefault(n.cluster, []).append(n)

    def emit(container: graphviz.Digraph, cluster: str | None) -> None:
        for c in children.get(cluster, []):
            with container.subgraph(name=f"cluster_{safe_id(c.id)}") as sub:
                sub.attr(
                    id=_plain(safe_id(c.id)),
                    label=_block_label(c.lines, title_size=12, size=10),
                    tooltip=_plain(c.tooltip or " ".join(c.lines)),
                    style="rounded,filled",
                    fillcolor=c.fill,
                    color="#888888",
                    fontname="Helvetica",
                    labeljust="l",
                )
                emit(sub, c.id)
        for n in by_cluster.get(cluster, []):
            _emit_node(container, n)

    emit(g, None)
    if spec.legend:
        g.node(
            "legend",
            label=_legend_label(spec.legend),
            shape="plaintext",
            id="legend",
            tooltip="legend",
        )
    widths = _edge_widths(spec.edges)
    for e, width in zip(spec.edges, widths, strict=True):
        attrs = {
            "tooltip": _plain(e.tooltip or e.label or f"{e.src} → {e.dst}"),
            "penwidth": f"{width:.2f}",
        }
        if e.label:
            # 30: "f32[1,14,14,1024] · 784.0 KiB" whole
            attrs["label"] = _plain(ellipsis(e.label, 30))
        if not e.constraint:
            attrs["constraint"] = "false"
            attrs["style"] = "dashed"
        g.edge(safe_id(e.src), safe_id(e.dst), **attrs)
    return str(g.source)


def render(
    spec_or_dot: DiagramSpec | str,
    out: Path,
    fmt: str = "svg",
    timeout: float = 60,
) -> RenderResult:
    """Write the DOT source next to `out`, then lay it out with Graphviz `dot`.

    The `.dot` file is written first, always, so a user can re-layout it by hand.

    Args:
        spec_or_dot: A diagram, or DOT source.
        out: The picture to write (`x.svg` also writes `x.dot`); for `fmt="dot"`, the
            DOT file itself.
        fmt: `svg`, `png`, `pdf` or `dot`.
        timeout: Seconds to give `dot`.

    Returns:
        What was written.

    Raises:
        UsageError: For an unknown format.
        MissingDependencyError: When the `dot` binary is not installed (the `.dot` file
            is written anyway).
        HloscopeError: When `dot` fails or runs past `timeout`.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown picture format {fmt!r}; use one of {', '.join(FORMATS)}")
    out = Path(out)
    text = spec_or_dot if isinstance(spec_or_dot, str) else to_dot(spec_or_dot)
    nodes = _count_nodes(spec_or_dot, text)
    dot_path = out if fmt == "dot" else out.with_name(out.name + ".dot")
    if fmt != "dot" and out.suffix.lower() == f".{fmt}":
        dot_path = out.with_suffix(".dot")
    dot_path.parent.mkdir(parents=True, exist_ok=True)
    dot_path.write_text(text, encoding="utf-8")
    if fmt == "dot":
        return RenderResult(dot_path, None, fmt, 0.0, nodes)
    started = time.perf_counter()
    _run_dot([f"-T{fmt}", "-o", str(out), str(dot_path)], None, timeout, nodes, dot_path)
    return RenderResult(dot_path, out, fmt, time.perf_counter() - started, nodes)


def render_svg(spec_or_dot: DiagramSpec | str, timeout: float = 60) -> str:
    """Lay a diagram out with Graphviz `dot` in memory: DOT in, SVG text out, no file.

    Args:
        spec_or_dot: A diagram, or DOT source.
        timeout: Seconds to give `dot`.

    Returns:
        The SVG document, as `dot` wrote it (the HTML page and notebooks sanitise it).

    Raises:
        MissingDependencyError: When the `dot` binary is not installed.
        HloscopeError: When `dot` fails or runs past `timeout`.

    Example:
        >>> svg = render_svg(kernel_graph(report.after_module, report.after))  # doctest: +SKIP
    """
    text = spec_or_dot if isinstance(spec_or_dot, str) else to_dot(spec_or_dot)
    return _run_dot(["-Tsvg"], text, timeout, _count_nodes(spec_or_dot, text), None)


def _run_dot(
    args: list[str], stdin: str | None, timeout: float, nodes: int, dot_path: Path | None
) -> str:
    """Run `dot` with these arguments (and the DOT text on its stdin, if given).

    Returns:
        What `dot` wrote to its stdout.
    """
    where = f" (the DOT source is in {dot_path})" if dot_path else ""
    exe = shutil.which("dot")
    if exe is None:
        raise MissingDependencyError(
            "the Graphviz `dot` binary is not installed; install it (Debian/Ubuntu: "
            f"`apt-get install graphviz`, macOS: `brew install graphviz`){where}"
        )
    step(f"laying out {nodes:,} nodes with Graphviz's dot")
    try:
        done = subprocess.run(
            [exe, *args],
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise HloscopeError(
            f"`dot` did not finish in {timeout:g} s on {nodes} nodes; draw less with "
            f"--max-nodes, --around or --scope{where}"
        ) from None
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise HloscopeError(f"`dot` failed{' on ' + str(dot_path) if dot_path else ''}: {msg}")
    return done.stdout


# --- escaping ---------------------------------------------------------------------------

_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.\-/()\[\]#~,+=]")


def safe_id(text: str) -> str:
    """A node id with nothing DOT, SVG or `graphviz` treat specially (`:` is a port)."""
    return _SAFE_ID.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def _html(text: str) -> str:
    """Text for an HTML-like label: entities for markup, backslashes and non-ASCII."""
    out = []
    for ch in _CONTROL_CHARS.sub(" ", text):
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == '"':
            out.append("&quot;")
        elif ch == "'":
            out.append("&#39;")
        elif ch == "\\":
            out.append("&#10741;")  # ⧵: `dot` expands \N, \G, ... even in HTML labels
        elif ch == "\n":
            out.append(" ")
        elif ord(ch) > 126:
            out.append(f"&#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)


def _plain(text: str, limit: int = TOOLTIP_CHARS) -> str:
    """A quoted-string attribute (tooltip, edge label), with lines joined by `\\n`.

    `dot` expands `\\N`, `\\G`, ... in these strings, and how many backslashes before
    them stop it differs between tooltips, labels and Graphviz versions; so a backslash
    goes in as the look-alike `⧵` (U+29F5). `&` goes in as an entity, which `dot` keeps
    (SVG) or turns back into the character. The `graphviz` package escapes the quotes.
    """
    text = ellipsis(_CONTROL_CHARS.sub(" ", text), limit)
    text = text.replace("&", "&amp;").replace("\\", "\u29f5")
    return str(graphviz.nohtml("\\n".join(text.split("\n"))))


def _html_label(
    lines: Sequence[str], *, title_size: int = 11, size: int = 9, color: str = "#333333"
) -> str:
    if not lines:
        return "<>"
    head = f'<font point-size="{title_size}"><b>{_html(lines[0])}</b></font>'
    rest = "".join(
        f'<br/><font point-size="{size}" color="{color}">{_html(line)}</font>' for line in lines[1:]
    )
    return f"<{head}{rest}>"


def _block_label(
    lines: Sequence[str], *, title_size: int = 12, size: int = 10, color: str = "#555555"
) -> str:
    """A left-aligned label (graph title, cluster): a borderless one-column table."""
    if not lines:
        return "<>"
    rows = [
        f'<tr><td align="left"><font point-size="{title_size}"><b>{_html(lines[0])}</b></font></td></tr>'
    ]
    rows.extend(
        f'<tr><td align="left"><font point-size="{size}" color="{color}">{_html(line)}</font></td></tr>'
        for line in lines[1:]
    )
    return f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1">{"".join(rows)}</table>>'


def _legend_label(rows: Sequence[LegendEntry]) -> str:
    cells = "".join(
        f'<tr><td bgcolor="{r.fill}" width="16"> </td>'
        f'<td align="left"><font point-size="9">{_html(r.label)}'
        + (f" ({r.count})" if r.count else "")
        + "</font></td></tr>"
        for r in rows
    )
    return (
        '<<table border="0" cellborder="1" cellspacing="0" cellpadding="3">'
        '<tr><td colspan="2"><font point-size="10"><b>legend</b></font></td></tr>'
        f"{cells}</table>>"
    )


def _emit_node(container: graphviz.Digraph, n: Node) -> None:
    style = ["filled"]
    shape = "box"
    if n.role in (KERNEL, OP):
        style.insert(0, "rounded")
    if n.role == GROUP_NODE:
        shape = "folder"
    elif n.role == REPEAT:
        shape = "box3d"
    elif n.role == CONTROL:
        shape = "hexagon"
    if n.role == OP and n.kernel is None and n.cluster is None:
        style.append("dashed")
    lines = list(n.lines)
    attrs = {
        "id": _plain(safe_id(n.id)),
        "label": _html_label(lines, size=9),
        "tooltip": _plain(n.tooltip),
        "shape": shape,
        "style": ",".join(style),
        "fillcolor": n.fill,
    }
    if n.time_us is not None:
        attrs["penwidth"] = f"{1 + 3 * (n.share or 0) ** 0.5:.2f}"
    if n.heavy:
        attrs["color"] = HEAVY_COLOR
        attrs["penwidth"] = f"{max(2.5, float(attrs.get('penwidth', '1'))):.2f}"
        style.append("bold")
        attrs["style"] = ",".join(style)
    container.node(safe_id(n.id), **attrs)


def _edge_widths(edges: Sequence[Edge]) -> list[float]:
    sizes = [e.bytes for e in edges if e.bytes > 0]
    if not sizes:
        return [1.0] * len(edges)
    lo, hi = math.log(min(sizes)), math.log(max(sizes))
    span = hi - lo or 1.0
    return [1.0 + 2.0 * ((math.log(e.bytes) - lo) / span) if e.bytes > 0 else 1.0 for e in edges]


def _count_nodes(spec_or_dot: DiagramSpec | str, text: str) -> int:
    if isinstance(spec_or_dot, DiagramSpec):
        return len(spec_or_dot.nodes)
    return sum(1 for line in text.splitlines() if "[" in line and "->" not in line)
