"""Rich display in notebooks: the one way lower layers reach a renderer.

Analysis objects such as `Kernel` display themselves in Jupyter through `_repr_html_`.
They call `repr_html` here, the single function below `render` that the package's import
rules allow them to reach (tests/test_layers.py), and get escaped HTML back.
"""

from __future__ import annotations

import html
from typing import Any

from hloscope.analysis.fusion import Kernel

__all__ = ["kernel_html", "repr_html"]


def repr_html(obj: Any) -> str:
    """HTML for a notebook output cell showing `obj` (a `Kernel`).

    Raises:
        TypeError: hloscope has no HTML view of that type.
    """
    if isinstance(obj, Kernel):
        return kernel_html(obj)
    raise TypeError(f"no HTML view of {type(obj).__name__}")


def kernel_html(kernel: Kernel) -> str:
    """A kernel as a small HTML table (no script).

    Args:
        kernel: One kernel of an analysed module.

    Returns:
        HTML with the kernel's kind, shape, launches, bytes and fused instructions,
        every value escaped.
    """
    e = html.escape
    rows = [
        ("kind", kernel.kind),
        ("class", kernel.cls),
        ("shape", kernel.shape.text),
        ("launches", "–" if kernel.launches is None else str(kernel.launches)),
        ("bytes in / out", f"{kernel.bytes_in:,} / {kernel.bytes_out:,}"),
        ("computation", kernel.computation),
    ]
    if kernel.fused_computation:
        rows.append(("fused computation", kernel.fused_computation))
    head = "".join(
        f'<tr><th style="text-align:left;padding-right:12px">{e(k)}</th>'
        f'<td style="text-align:left;font-family:monospace">{e(v)}</td></tr>'
        for k, v in rows
    )
    shown = kernel.ops[:50]
    fused = "".join(
        f"<tr><td>{e(i.opcode)}</td><td>{e(i.name)}</td><td>{e(i.shape.text)}</td></tr>"
        for i in shown
    )
    more = f"<p>… {len(kernel.ops) - len(shown)} more</p>" if len(kernel.ops) > len(shown) else ""
    return (
        f'<div class="hloscope-kernel"><b style="font-family:monospace">{e(kernel.name)}</b>'
        f"<table>{head}</table>"
        f"<details><summary>{len(kernel.ops)} instructions</summary>"
        f'<table style="font-family:monospace;font-size:12px">{fused}</table>{more}</details>'
        "</div>"
    )
