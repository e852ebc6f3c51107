"""Pieces of HLO text: the regexes, shapes, layouts, integers, metadata and brackets.

The module parser (`hloscope.hlo.parser`) reads statements; the small parsers here read
the pieces inside them, memoised, since real modules repeat the same shapes and
metadata. Every regex is possessive or anchored so that it runs in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from sys import intern

from hloscope.hlo.model import (
    INT64_MAX,
    Layout,
    Metadata,
    Shape,
    metadata_fields,
)

# ---------------------------------------------------------------------------------------
# Regular expressions. Every one of them runs in time linear in its input: quantifiers
# are possessive (`*+`, `++`) wherever what follows could also match what they consume,
# so a failed match never backtracks, and the ones used with `findall`/`sub` cannot
# start a long failing attempt at every position of a long run (issue 14).

_STR = r'"(?:[^"\\]++|\\.)*+"'
# A string, or an unterminated one running to the end of the text: once a string fails
# to close at one quote it fails at every later quote too, so this consumes the rest at
# once instead of re-scanning from each quote (quadratic).
_STR_OR_REST = re.compile(r'"(?:[^"\\]++|\\.)*+(?:(")|\\?\Z)', re.S)
_NAME = r"[%@]?([\w.\-]++)"


def _nested(depth: int) -> str:
    """A value: text without top-level `,`, with strings and brackets nested `depth` deep."""
    inner = rf'(?:[^{{}}\[\]()",]++|{_STR})*+'
    free = rf'(?:[^{{}}\[\]()"]++|{_STR})*+'  # inside brackets commas are fine
    for _ in range(depth):
        group = rf"\{{{free}\}}|\[{free}\]|\({free}\)"
        free = rf'(?:[^{{}}\[\]()"]++|{_STR}|{group})*+'
        inner = rf'(?:[^{{}}\[\]()",]++|{_STR}|{group})*+'
    return inner


_VALUE = _nested(5)
_PARENS = r"\((?:[^()]++|\((?:[^()]++|\((?:[^()]++|\([^()]*+\))*+\))*+\))*+\)"
_SHAPE = rf"(?:{_PARENS}|[a-z][a-z0-9]*\[[^\]]*+\](?:\{{[^}}]*+\}})?)"

_WS = r"\s*+"
_HEAD = rf"{_WS}(ROOT\s++)?{_NAME}{_WS}={_WS}(?:({_SHAPE}){_WS})?([a-z][\w\-]*+)\("
INSTRUCTION = re.compile(_HEAD)
# One whole instruction on one line: the fast path taken by nearly every line XLA prints.
FULL_INSTRUCTION = re.compile(
    rf"{_HEAD}((?:[^()]++|{_PARENS})*+)\)"
    rf"((?:{_WS},{_WS}[\w\-]++{_WS}={_WS}{_VALUE})*+){_WS}"
)
OPERAND_NAMES = re.compile(r"[%@]?([^\s,%@]++)")
ATTRIBUTES = re.compile(rf"(?:{_WS},{_WS}[\w\-]++{_WS}={_WS}{_VALUE})*+{_WS}")
ATTRIBUTE = re.compile(rf"{_WS},{_WS}([\w\-]++){_WS}={_WS}({_VALUE})")
COMPUTATION = re.compile(
    rf"(ENTRY\s++)?{_NAME}{_WS}(?:(\((?:[^()]++|{_PARENS})*+\)){_WS}->{_WS}({_SHAPE}))?"
    rf"{_WS}\{{{_WS}"
)
COMPUTATION_END = re.compile(rf'\}}{_WS}(?:,{_WS}execution_thread{_WS}={_WS}"([^"]*+)")?{_WS}')
MODULE = re.compile(rf"HloModule\s++{_NAME}")
TABLE_ROW = re.compile(r"([0-9]++)\s++(.*)")
CALLED_NAME = re.compile(r"[%@]?([\w.\-]++)")
_DIM = re.compile(rf"{_WS}(<=)?{_WS}([0-9]++|\?){_WS}")
_TILE = re.compile(r"T\(([^()]*+)\)")
_MEMORY_SPACE = re.compile(r"S\(([0-9]++)\)")
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT = re.compile(r"-?[0-9]{1,19}")

TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


# ---------------------------------------------------------------------------------------
# Small parsers for pieces, memoised: real modules repeat the same shapes and metadata.

shape_cache: dict[str, Shape] = {}


def parse_shape(text: str) -> Shape:
    """Parse a shape such as `f32[8,<=16]{1,0:T(8,128)S(1)}` or `(f32[2], token[])`.

    The shape's `text` is as printed, less XLA's `/*index=N*/` comments in long tuples.

    Raises:
        ValueError: The text is not a shape, a number in it is not a 64-bit integer, or
            the array would not fit in 2^63 bytes (`ValidateShapeSize` in xla/shape_util.cc
            rejects those).
    """
    shape = shape_cache.get(text)
    if shape is None:
        shape = _parse_shape(text.strip(), 0)
        if len(shape_cache) < 100_000:
            shape_cache[text] = shape
    return shape


# Tuples nested deeper than this are rejected: the instruction regexes already stop at
# five levels, and it bounds the recursion of `_parse_shape` and `Shape.leaves`.
_MAX_TUPLE_DEPTH = 32


def _parse_shape(text: str, depth: int) -> Shape:
    if text.startswith("("):
        if depth >= _MAX_TUPLE_DEPTH or not text.endswith(")"):
            raise ValueError(f"not a shape: {text!r}")
        if "/*" in text:
            text = strip_comments(text)
        parts = split_top(text[1:-1])
        elements = tuple(_parse_shape(p.strip(), depth + 1) for p in parts if p.strip())
        return Shape("tuple", tuple_shapes=elements, text=text)
    bracket = text.find("[")
    if bracket <= 0 or "]" not in text:
        raise ValueError(f"not a shape: {text!r}")
    close = text.index("]", bracket)
    element_type = text[:bracket]
    dims_text = text[bracket + 1 : close]
    dims: list[int] = []
    dynamic: list[bool] = []
    if dims_text.strip():
        for d in dims_text.split(","):
            m = _DIM.fullmatch(d)
            if m is None:
                raise ValueError(f"bad dimension {d.strip()!r} in shape {text!r}")
            size = m.group(2)
            dims.append(-1 if size == "?" else to_int(size))
            dynamic.append(bool(m.group(1)) or size == "?")
    rest = text[close + 1 :].strip()
    layout = None
    if rest:
        if not (rest.startswith("{") and rest.endswith("}")):
            raise ValueError(f"bad layout in shape {text!r}")
        layout = _parse_layout(rest[1:-1])
    shape = Shape(element_type, tuple(dims), tuple(dynamic), layout, (), text)
    if shape.byte_size > INT64_MAX:
        raise ValueError(f"shape {text!r} does not fit in 2^63 bytes")
    return shape


def _parse_layout(text: str) -> Layout:
    order, _, extras = text.partition(":")
    minor_to_major = tuple(to_int(d) for d in order.split(",") if d.strip())
    tiles = tuple(
        tuple(-1 if t.strip() == "*" else to_int(t) for t in m.split(",") if t.strip())
        for m in _TILE.findall(extras)
    )
    space = _MEMORY_SPACE.search(extras)
    return Layout(minor_to_major, tiles, to_int(space.group(1)) if space else None, text)


def to_int(text: str) -> int:
    """An integer as XLA's lexer reads one: ASCII digits, optional minus, within int64.

    Python's `int` also takes `1_000`, blanks, and digits of other scripts (`٣`), and
    fails past 4,300 digits; XLA takes none of those.

    Raises:
        ValueError: The text is not such an integer.
    """
    if len(text) < 19 and text.isdigit() and text.isascii():
        return int(text)  # the usual case, without the regex
    s = text.strip()
    if _INT.fullmatch(s) is None or not -INT64_MAX - 1 <= (value := int(s)) <= INT64_MAX:
        raise ValueError(f"expected a 64-bit integer, not {s[:40]!r}")
    return value


def small_int(text: str | None) -> int | None:
    """`to_int` for optional fields the tolerant parser keeps as text when they are not
    integers (`source_line=`, `stack_frame_id=`)."""
    if text is None:
        return None
    try:
        return to_int(text)
    except ValueError:
        return None


def parse_metadata(raw: str) -> Metadata:
    """The `Metadata` of a `metadata={...}` value (braces included), kept as its `text`.

    Op types and source files are interned: a big module repeats a few of them on every
    instruction.
    """
    fields = metadata_fields(raw)
    op_type, source_file = fields.get("op_type"), fields.get("source_file")
    return Metadata(
        op_type=None if op_type is None else intern(op_type),
        op_name=fields.get("op_name"),
        source_file=None if source_file is None else intern(source_file),
        source_line=small_int(fields.get("source_line")),
        stack_frame_id=small_int(fields.get("stack_frame_id")),
        text=raw,
    )


def strip_comments(text: str) -> str:
    """Remove `/* ... */` comments; an unclosed `/*` is kept with what follows it.

    A loop over `str.find` rather than a lazy regex: `/\\*.*?\\*/` re-scans to the end of
    the text from every unclosed `/*` (quadratic).
    """
    out: list[str] = []
    i = 0
    while (start := text.find("/*", i)) >= 0:
        end = text.find("*/", start + 2)
        if end < 0:
            break
        out.append(text[i:start])
        i = end + 2
    out.append(text[i:])
    return "".join(out)


def brackets(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """Yield `(index, char, depth)` for each bracket and comma outside strings.

    `depth` is the nesting after an opening bracket and before a closing one, so the
    closing bracket of what opened at depth d is yielded with depth d.
    """
    depth = 0
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
            yield i, c, depth
        elif c in ")]}":
            yield i, c, depth
            depth -= 1
        elif c == ",":
            yield i, c, depth
        i += 1


def split_top(text: str) -> list[str]:
    """Split on commas outside brackets and strings (the slow, general path)."""
    parts: list[str] = []
    start = 0
    for i, c, depth in brackets(text):
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def bracket_error(text: str) -> tuple[int, str] | None:
    """Find the first unbalanced bracket outside strings: (offset, message) or None."""
    stack: list[tuple[str, int]] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return i, "unterminated string"
            i = j
        elif c in "([{":
            stack.append((c, i))
        elif c in pairs:
            if not stack or stack[-1][0] != pairs[c]:
                return i, f"unbalanced {c!r}"
            stack.pop()
        i += 1
    if stack:
        c, at = stack[-1]
        return at, f"unclosed {c!r}"
    return None


def _blank_string(m: re.Match[str]) -> str:
    """A closed string's brackets do not count; an unclosed quote is left as it was."""
    return '""' if m.group(1) else m.group(0)


def open_count(line: str) -> int:
    """Net number of brackets a line opens, ignoring strings and comments."""
    if '"' in line:
        line = _STR_OR_REST.sub(_blank_string, line)
    if "/*" in line:
        line = strip_comments(line)
    return (
        line.count("(") + line.count("{") + line.count("[")
        - line.count(")") - line.count("}") - line.count("]")
    )  # fmt: skip
