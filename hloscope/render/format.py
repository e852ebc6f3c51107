"""How numbers, names and shapes read, for every renderer.

Terminal text, JSON-backed HTML, diagrams and notebooks all print bytes, times, names
and shapes through these functions, so one value reads the same everywhere. They only
format: no renderer-specific markup, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from hloscope.hlo.model import Shape

__all__ = [
    "ellipsis",
    "fmt_bytes",
    "fmt_count",
    "fmt_seconds",
    "fmt_shape",
    "fmt_share",
    "fmt_us",
    "left_ellipsis",
    "short_name",
    "short_names",
]

DASH = "–"
"""What a missing value prints as."""

_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")
# TensorFlow's `__XlaMustCompile_true_config_proto_<hash>_executor_type_<hash>_` middle.
_TF_HASH = re.compile(r"__XlaMustCompile_(?:true|false)_config_proto_\d+_executor_type_\d+_")


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


def short_names(names: Iterable[str], width: int = 48) -> dict[str, str]:
    """Each name fit to `width` as `short_name` does, keeping different names different.

    Names that would print alike (two BERT layers' `…/intermediate_dense_1/Gelu/Pow`) keep
    the part where they first differ instead of their middle: `bert…layer_1/…Gelu/Pow`.
    A name that still cannot be told apart at that width prints in full.

    Args:
        names: The names of one list or table.
        width: The most characters a name may take.

    Returns:
        Every given name -> what to print.
    """
    unique = list(dict.fromkeys(names))
    shown = {n: short_name(n, width) for n in unique}
    groups: dict[str, list[str]] = {}
    for n in unique:
        groups.setdefault(shown[n], []).append(n)
    for group in groups.values():
        if len(group) < 2:
            continue
        for n in group:
            shown[n] = _around_difference(
                _TF_HASH.sub("", n), [_TF_HASH.sub("", o) for o in group if o != n], width
            )
    seen: dict[str, int] = {}
    for text in shown.values():
        seen[text] = seen.get(text, 0) + 1
    return {n: (text if seen[text] == 1 else n) for n, text in shown.items()}


def _around_difference(name: str, others: list[str], width: int) -> str:
    """`name` cut to `width` around where it first differs from each of `others`."""
    first = min(_common_prefix(name, o) for o in others)
    last = min(_common_suffix(name, o) for o in others)
    lo, hi = first, max(first + 1, len(name) - last)  # the differing span
    # Widen it to the path component it is in (`layer_0`), when that still fits.
    wide_lo = max(name.rfind("/", 0, lo) + 1, name.rfind("_", 0, max(lo - 1, 0)) + 1, lo - 12)
    end = name.find("/", hi)
    wide_hi = len(name) if end < 0 else end
    if wide_hi - wide_lo <= width - 12:
        lo, hi = min(lo, wide_lo), max(hi, wide_hi)
    if len(name) <= width or hi - lo > width - 4:
        return name
    tail = min(len(name) - hi, (width - (hi - lo)) // 2)
    head = width - (hi - lo) - tail - 2
    start = max(head, lo - (width - (hi - lo) - tail - head - 2))
    start = min(start, lo)
    mid = name[start:hi]
    head = max(0, width - len(mid) - tail - 2)
    left = name[:head] + "…" if start > head else name[:start]
    right = "…" + name[-tail:] if tail and hi < len(name) - tail else name[hi:]
    return left + mid + right


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _common_suffix(a: str, b: str) -> int:
    return _common_prefix(a[::-1], b[::-1])


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
