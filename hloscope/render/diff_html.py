"""A `diff_doc` JSON document -> one self-contained HTML page (`hloscope diff --html`).

A minimal page of the diff tables (counts A vs B, changed kernels, op placement
changes), built from the same document `hloscope diff --json` prints, so the full HTML
report can embed that document instead. All text is escaped; no script, no network.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from hloscope.render.diff_text import METRIC_LABELS

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .6em; text-align: left;
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.worse { color: #b00020; } .better { color: #1b7f3b; } .muted { color: #888; }
tr.split, tr.regrouped, tr.appeared { background: #fff4e0; }
tr.merged, tr.disappeared { background: #e8f6ec; }
tr.kind-changed, tr.ops-changed { background: #f3e8fb; }
code { font-size: .95em; }
"""


def _e(value: Any) -> str:
    return html.escape("–" if value is None else str(value))


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.{max(digits, 2)}f}"
    return f"{value:,.0f}" if isinstance(value, int | float) else str(value)


def _delta_cell(metric: Mapping[str, Any]) -> str:
    delta = metric.get("delta")
    if delta is None:
        return '<td class="num muted">–</td>'
    if abs(delta) < 1e-9:
        return '<td class="num muted">=</td>'
    worse_when = metric.get("worse_when")
    css = "num"
    if worse_when:
        css += " worse" if (delta > 0) == (worse_when == "higher") else " better"
    rel = metric.get("relative")
    text = (
        f"{delta:+,.2f}"
        if isinstance(delta, float) and not delta.is_integer()
        else (f"{delta:+,.0f}")
    )
    if rel is not None:
        text += f" ({rel:+.1%})"
    return f'<td class="{css}">{_e(text)}</td>'


def _kernels(refs: Sequence[Mapping[str, Any]]) -> str:
    if not refs:
        return '<span class="muted">–</span>'
    return "<br>".join(
        f"<code>{_e(r['name'])}</code> <span class=muted>[{_e(r['kind'])}]</span>" for r in refs
    )


def _module_section(m: Mapping[str, Any]) -> list[str]:
    a, b = m["a"], m["b"]
    title = a["key"] if a["key"] == b["key"] else f"{a['key']} ↔ {b['key']}"
    out = [f"<h2>{_e(title)}</h2>"]
    if m["matched_by"] != "name":
        out.append(f"<p class=muted>matched by {_e(m['matched_by'])}</p>")
    out.append("<table><tr><th></th><th>A</th><th>B</th><th>B − A</th></tr>")
    for name, metric in m["metrics"].items():
        if name == "time_us" and not m["profiled"]:
            continue
        out.append(
            f"<tr><td>{_e(METRIC_LABELS.get(name, name.replace('_', ' ')))}</td>"
            f'<td class="num">{_e(_num(metric["a"], 2))}</td>'
            f'<td class="num">{_e(_num(metric["b"], 2))}</td>{_delta_cell(metric)}</tr>'
        )
    for kind, counts in m["kernels_by_kind"].items():
        out.append(
            f"<tr><td class=muted>&nbsp;&nbsp;{_e(kind)}</td>"
            f'<td class="num">{counts["a"]}</td><td class="num">{counts["b"]}</td>'
            f"{_delta_cell(counts)}</tr>"
        )
    out.append("</table>")
    changes = m["kernel_changes"]
    if changes:
        basis = "time" if m["profiled"] else "bytes"
        out.append(f"<h3>changed kernels (by {basis})</h3>")
        out.append(
            "<table><tr><th>change</th><th>A</th><th>B</th><th>bytes A → B</th>"
            "<th>time A → B (µs)</th><th>source ops</th></tr>"
        )
        for k in changes:
            css = str(k["change"]).replace(" ", "-")
            out.append(
                f'<tr class="{_e(css)}"><td>{_e(k["change"])}</td><td>{_kernels(k["a"])}</td>'
                f"<td>{_kernels(k['b'])}</td>"
                f'<td class="num">{_e(_num(k["bytes_a"]))} → {_e(_num(k["bytes_b"]))}</td>'
                f'<td class="num">{_e(_num(k["time_a_us"], 1))} → '
                f"{_e(_num(k['time_b_us'], 1))}</td>"
                f"<td>{'<br>'.join(_e(o) for o in k['source_ops']) or '–'}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append(f"<p class=better>no kernel changed ({len(m['matched_kernels'])} matched)</p>")
    if m["op_changes"]:
        out.append("<h3>source ops whose placement changed</h3>")
        out.append("<table><tr><th>source op</th><th>A</th><th>B</th><th>B kernels</th></tr>")
        for o in m["op_changes"]:
            css = "worse" if o["unfused"] else "better" if o["fused"] else ""
            out.append(
                f"<tr><td><code>{_e(o['op'])}</code></td><td>{_e(o['a']['status'])}</td>"
                f'<td class="{css}">{_e(o["b"]["status"])}</td>'
                f"<td>{_e(', '.join(o['b']['kernels']) or '–')}</td></tr>"
            )
        out.append("</table>")
    return out


def diff_page(doc: Mapping[str, Any], *, title: str = "hloscope diff") -> str:
    """A self-contained HTML page of a `diff_doc` document.

    Args:
        doc: From `hloscope.render.json.diff_doc`.
        title: The page title.

    Returns:
        The HTML text.
    """
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p><b>A</b> {_e(doc['a']['path'])}<br><b>B</b> {_e(doc['b']['path'])}</p>",
    ]
    regressions = doc.get("regressions")
    if regressions:
        out.append("<ul class=worse>")
        out.extend(f"<li>{_e(v['message'])}</li>" for v in regressions)
        out.append("</ul>")
    if not doc["changed"]:
        out.append("<p class=better>no change</p>")
    for side in ("only_a", "only_b"):
        if doc[side]:
            names = ", ".join(m["key"] for m in doc[side])
            out.append(f"<p>only in {side[-1].upper()}: {_e(names)}</p>")
    for m in doc["modules"]:
        out.extend(_module_section(m))
    out.append("</body></html>")
    return "\n".join(out) + "\n"
