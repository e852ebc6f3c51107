"""How numbers, names and shapes read, for every renderer.

Terminal text, JSON-backed HTML, diagrams and notebooks all print bytes, times, names
and shapes through these functions, so one value reads the same everywhere. They only
format: no renderer-specific markup, no I/O.
"""

from __future__ import annotations

import math
import re

from hloscope.hlo.model import Shape

__all__ = [
    "ellipsis",
    "fmt_bytes",
    "fmt_count",
    "fmt_seconds",
    "fmt_shape",
    "fmt_share",
    "fmt_us",
    "json_printable",
    "left_ellipsis",
    "printable",
    "short_name",
]

DASH = "–"
"""What a missing value prints as."""

_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")
# TensorFlow's `__XlaMustCompile_true_config_proto_<hash>_executor_type_<hash>_` middle.
_TF_HASH = re.compile(r"__XlaMustCompile_(?:true|false)_config_proto_\d+_executor_type_\d+_")


# Characters that act on a terminal instead of showing: C0 controls but tab and newline,
# DEL, the C1 controls (0x9b is a one-byte CSI on some terminals), the Unicode line and
# paragraph separators, the bidirectional overrides that reorder what a line shows, and
# lone surrogates (no encoder writes them: a raw one would end the command with a
# UnicodeEncodeError).
_CONTROLS = (
    [c for c in range(0x20) if c not in (0x09, 0x0A)]
    + list(range(0x7F, 0xA0))
    + [0x2028, 0x2029, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    + list(range(0xD800, 0xE000))
)
_PRINTABLE = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS}
# JSON escapes C0 itself; the rest must become `\uXXXX` escapes to stay valid JSON.
_JSON_PRINTABLE = {c: f"\\u{c:04x}" for c in _CONTROLS if c >= 0x7F}
_HAS_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def printable(text: str) -> str:
    """`text` safe to print on a terminal: control characters shown escaped.

    Names, paths and messages come from dumps, scripts and run folders hloscope did not
    write; an `ESC [2J` in an op name must show as `\\x1b[2J`, not clear the screen.
    Newlines and tabs are kept.
    """
    return text.translate(_PRINTABLE) if _HAS_CONTROL.search(text) else text


def json_printable(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with the controls JSON
    lets through raw (DEL, C1, U+2028/9, bidirectional overrides) as `\\uXXXX` escapes.

    Those characters can only stand inside JSON strings, so the result is the same JSON.
    """
    return text.translate(_JSON_PRINTABLE) if _HAS_CONTROL.search(text) else text


def fmt_bytes(n: float | None) -> str:
    """`1536` -> `1.5 KiB`; whole bytes below 1 KiB; None -> `–`.

    Args:
        n: A byte count.
    """
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return DASH
    if abs(n) < 1024:
        return f"{n:.0f} B"
    size = float(n)
    for unit in _BYTE_UNITS:
        size /= 1024
        if abs(size) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")


def fmt_us(us: float | None) -> str:
    """A duration given in microseconds: `12.3 µs`, `4.56 ms`, `1.20 s`; None -> `–`."""
    if us is None or not math.isfinite(us):
        return DASH
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def fmt_seconds(seconds: float | None) -> str:
    """A duration given in seconds, printed as `fmt_us` prints it."""
    return DASH if seconds is None else fmt_us(seconds * 1e6)


def fmt_share(part: float | None, whole: float | None) -> str:
    """`part` as a percentage of `whole` (`37%`, `<1%`), or `–` when either is missing."""
    if part is None or not whole:
        return DASH
    share = part / whole
    if 0 < share < 0.005:
        return "<1%"
    return f"{share:.0%}"


def fmt_count(x: float | None) -> str:
    """A count that may be a mean: `12`, `6.29`; None -> `–`."""
    if x is None or not math.isfinite(x):
        return DASH
    return f"{x:g}" if float(x).is_integer() else f"{x:.3g}"


def ellipsis(text: str, limit: int) -> str:
    """`text` cut at the end to at most `limit` characters, marked with `…`."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def left_ellipsis(text: str, limit: int) -> str:
    """`text` cut at the start to at most `limit` characters, marked with `…`."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def short_name(name: str, width: int = 48) -> str:
    """A module or op name fit for a table cell.

    TensorFlow's `_XlaMustCompile_..._config_proto_<hash>_executor_type_<hash>_` middle
    is dropped; what is still too long is cut in the middle with an ellipsis.
    """
    name = _TF_HASH.sub("", name)
    if len(name) <= width:
        return name
    half = (width - 1) // 2
    return name[:half] + "…" + name[-(width - 1 - half) :]


def fmt_shape(shape: Shape, limit: int = 60) -> str:
    """`f32[64,128]` without the layout; tuples as `(f32[10], s32[10])`; dynamic
    dimensions as `<=N`."""
    if shape.is_tuple:
        text = "(" + ", ".join(fmt_shape(s, limit) for s in shape.tuple_shapes) + ")"
    elif shape.is_token:
        text = "token"
    else:
        dims = ",".join(
            f"<={d}" if i < len(shape.dynamic) and shape.dynamic[i] else str(d)
            for i, d in enumerate(shape.dimensions)
        )
        text = f"{shape.element_type}[{dims}]"
    return ellipsis(text, limit)
