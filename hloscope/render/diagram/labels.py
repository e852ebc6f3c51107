"""The words on a diagram: label lines and tooltip lines, cut to fit.

Numbers, names and shapes go through `hloscope.render.format` so a diagram reads like
every other view; what is here is particular to diagrams: the kind of a kernel in short,
the source-op lines under a kernel's name (common scope left off), loop trip counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from hloscope.analysis.fusion import trip_count
from hloscope.hlo.model import Instruction
from hloscope.render.format import ellipsis, fmt_us, left_ellipsis

LINE = 40
"""Characters per label line."""


def kind_short(kind: str) -> str:
    """`unfused:dot` -> `dot`, `custom-call:TopK` -> `TopK`, `__cublas$gemm` -> `cublas$gemm`."""
    for prefix in ("unfused:", "custom-call:"):
        if kind.startswith(prefix):
            return kind[len(prefix) :]
    return kind.lstrip("_") if kind.startswith("__") else kind


def kinds_line(kinds: Counter[str]) -> str:
    """The three commonest kinds with their counts: `5 kLoop, 2 dot, 1 kInput, …`."""
    parts = [f"{n} {k}" for k, n in kinds.most_common(3)]
    if len(kinds) > 3:
        parts.append("…")
    return ellipsis(", ".join(parts), LINE)


def time_line(t: float, share: float | None) -> str:
    """`12.3 µs · 4.5%`: a time and its share of the module's."""
    return fmt_us(t) + (f" · {share:.1%}" if share is not None else "")


def trip_text(inst: Instruction) -> str:
    """` ×10` for a while loop with a known trip count; "" for anything else."""
    if inst.opcode != "while":
        return ""
    n = trip_count(inst)
    return f" ×{n}" if n is not None else " (trip count unknown)"


def op_line(inst: Instruction) -> str:
    """A tooltip line naming the instruction's source op and type, or ""."""
    md = inst.metadata
    if md is None or not md.op_name:
        return ""
    return f"\nsource op: {md.op_name}" + (f" ({md.op_type})" if md.op_type else "")


def split_path(name: str) -> list[str]:
    """A name scope path split at `/` outside brackets (`jit(a/b)/x` -> 2 parts)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(name):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append(name[start:i])
            start = i + 1
    parts.append(name[start:])
    return parts


def common_root(op_names: Iterable[str]) -> str:
    """The scope every op name shares (`resnet50_1/`, `jit(block)/`), to leave off labels.

    The parts before each name's last part (`split_path`) that all names share: read
    from the names' common prefix, whose `/`s outside brackets are at the same depth in
    every name, so the parts it ends with a `/` are parts of every name (a string
    comparison in C, not a split of each of a big module's names).
    """
    names = list(op_names)
    if not names:
        return ""
    # The common prefix of all names is that of the first and the last in sort order.
    first, last = min(names), max(names)
    n = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        n += 1
    parts = split_path(first[:n])[:-1]  # the last part may run on in some name
    return "/".join(parts) + "/" if parts else ""


def strip_root(name: str, root: str) -> str:
    """`name` without the common `root` scope."""
    if root and name.startswith(root):
        return name[len(root) :]
    if root and name + "/" == root:
        return ""
    return name


def ops_lines(op_names: Sequence[str], root: str) -> list[str]:
    """Up to two label lines naming a kernel's source ops, shortened."""
    names = [strip_root(n.split(";", 1)[0], root) for n in op_names]
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        return []
    if len(names) == 1:
        return [path_ellipsis(names[0], LINE)]
    paths = [split_path(n) for n in names]
    common: list[str] = paths[0][:-1]
    for p in paths[1:]:
        i = 0
        while i < min(len(common), len(p) - 1) and common[i] == p[i]:
            i += 1
        common = common[:i]
    leaves = list(dict.fromkeys("/".join(p[len(common) :]) for p in paths))
    shown: list[str] = []
    for leaf in leaves:
        candidate = ", ".join([*shown, leaf])
        if len(candidate) > LINE - 6 and shown:
            break
        shown.append(leaf)
    leaf_line = ", ".join(shown)
    if len(shown) < len(leaves):
        leaf_line += f" +{len(leaves) - len(shown)}"
    lines = [ellipsis(leaf_line, LINE)]
    if common:
        lines.insert(0, path_ellipsis("/".join(common) + "/", LINE))
    return lines


def path_ellipsis(path: str, limit: int) -> str:
    """Shorten a scope path in the middle, keeping its first and last parts."""
    if len(path) <= limit:
        return path
    parts = split_path(path.rstrip("/"))
    tail = "/" if path.endswith("/") else ""
    if len(parts) >= 3:
        short = f"{parts[0]}/…/{parts[-1]}{tail}"
        if len(short) <= limit:
            return short
    return left_ellipsis(path, limit)
