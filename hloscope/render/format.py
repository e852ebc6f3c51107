"""How numbers, names and shapes read, for every renderer.

Terminal text, JSON-backed HTML, diagrams and notebooks all print bytes, times, names
and shapes through these functions, so one value reads the same everywhere. They only
format: no renderer-specific markup, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache

from hloscope.hlo.model import Shape
from hloscope.hlo.names import readable_name

__all__ = [
    "counted",
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
    "readable_name",
    "short_name",
    "short_names",
]

DASH = "–"
"""What a missing value prints as."""

_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")


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
    if text.isascii():  # of those, only DEL can be there: found without a regex scan
        return text.replace("\x7f", _JSON_PRINTABLE[0x7F]) if "\x7f" in text else text
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


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 module`, `3 modules`, `2 launches`: a count and its noun, plural unless it is
    one (`-es` after s, x, ch and sh; else `plural` where English has its own)."""
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        plural = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{n} {plural}"


def ellipsis(text: str, limit: int) -> str:
    """`text` cut at the end to at most `limit` characters, marked with `…`."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def left_ellipsis(text: str, limit: int) -> str:
    """`text` cut at the start to at most `limit` characters, marked with `…`."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def short_name(name: str, width: int = 48) -> str:
    """A module or op name fit for a table cell.

    TensorFlow's mangling (`__XlaMustCompile_..._config_proto_<hash>_...`) is dropped
    (`readable_name`); what is still too long is cut in the middle with an ellipsis.
    """
    name = readable_name(name)
    if len(name) <= width:
        return name
    half = (width - 1) // 2
    return name[:half] + "…" + name[-(width - 1 - half) :]


def short_names(names: Iterable[str], width: int = 48) -> dict[str, str]:
    """Each name fit to `width` as `short_name` does, keeping different names different.

    Names that would print alike keep their end instead of their middle
    (`resnet50_1/…/conv4_block5_2_bn_1/Reshape`), and where that is not enough the part
    where they first differ (`bert_ba…layer_0…Gelu/Pow`). A name that still cannot be
    told apart at that width prints in full.

    Args:
        names: The names of one list or table.
        width: The most characters a name may take.

    Returns:
        Every given name -> what to print.
    """
    unique = list(dict.fromkeys(names))
    shown = {n: short_name(n, width) for n in unique}
    for strategy in (_keep_tail, _around_difference):
        groups = _collisions(shown)
        if not groups:
            break
        for group in groups:
            clean = {n: readable_name(n) for n in group}
            for n in group:
                shown[n] = strategy(clean[n], [clean[o] for o in group if o != n], width)
    stuck = {n for group in _collisions(shown) for n in group}
    return {n: (n if n in stuck else text) for n, text in shown.items()}


def _collisions(shown: dict[str, str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for name, text in shown.items():
        groups.setdefault(text, []).append(name)
    return [g for g in groups.values() if len(g) > 1]


def _keep_tail(name: str, others: list[str], width: int) -> str:
    """`first/…/last components` in `width`: op paths differ most at their end."""
    del others
    if len(name) <= width:
        return name
    parts = name.split("/")
    head = parts[0] + "/…/" if len(parts) > 2 else "…"
    tail = parts[-1]
    for part in reversed(parts[1:-1]):
        if len(head) + len(part) + 1 + len(tail) > width:
            break
        tail = f"{part}/{tail}"
    if len(head) + len(tail) <= width:
        return head + tail
    return left_ellipsis(name, width)


def _around_difference(name: str, others: list[str], width: int) -> str:
    """`name` cut to `width` keeping where it first differs from each of `others` (the
    path component it is in, when that fits) and its last component (the op itself)."""
    first = min(_common_prefix(name, o) for o in others)
    same_end = min(_common_suffix(name, o) for o in others)
    lo, hi = first, max(first + 1, len(name) - same_end)  # the differing span
    wide_lo = max(name.rfind("/", 0, lo) + 1, lo - 12)
    wide_hi = name.find("/", hi)
    wide_hi = len(name) if wide_hi < 0 else wide_hi
    last = name.rfind("/") + 1  # where the op's own name starts
    for a, b in ((min(lo, wide_lo), max(hi, wide_hi)), (lo, hi)):
        end = name[b:] if b >= last else "…" + name[last:]
        mid = name[a:b]
        room = width - len(mid) - len(end) - (1 if a > 0 else 0)
        if room < 0:
            continue
        head = name[: min(room, a)]
        text = head + ("" if len(head) == a else "…") + mid + end
        if len(text) <= width:
            return text
    return name


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
    return _fmt_shape(shape, limit)


@lru_cache(maxsize=1 << 14)  # a module's instructions share a few hundred shapes
def _fmt_shape(shape: Shape, limit: int) -> str:
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


def fmt_flops(n: float | None, unit: str = "FLOP") -> str:
    """`4.2e9` -> `4.20 GFLOP` (or `GFLOP/s`, `GB/s` with `unit`); None -> `–`."""
    if n is None or not math.isfinite(n):
        return DASH
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.3g} {unit}"
