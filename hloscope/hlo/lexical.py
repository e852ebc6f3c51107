"""Pieces of HLO text: the regexes, shapes, layouts, integers, metadata and brackets.

The module parser (`hloscope.hlo.parser`) reads statements; the small parsers here read
the pieces inside them, memoised, since real modules repeat the same shapes and
metadata. Every regex is possessive or anchored so that it runs in linear time.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from sys import intern
from typing import TYPE_CHECKING

from hloscope.hlo.model import (
    INT64_MAX,
    Layout,
    Metadata,
    Shape,
    to_int,
)
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES

# ---------------------------------------------------------------------------------------
# Regular expressions. Every one of them runs in time linear in its input: quantifiers
# are possessive (`*+`, `++`) wherever what follows could also match what they consume,
# so a failed match never backtracks, and the ones used with `findall`/`sub` cannot
# start a long failing attempt at every position of a long run (issue 14).


def _run(plain: str, special: str) -> str:
    """`(?:plain++|special)*+` as the "unrolled loop" `plain*+(?:special plain*+)*+`: the
    same text (`special` starts with a character `plain` excludes), which `re` matches
    in a tenth less time, entering the repetition once per special piece rather than
    once per run of plain characters as well."""
    return rf"{plain}*+(?:(?:{special}){plain}*+)*+"


_STR = '"' + _run(r'[^"\\]', r"\\.") + '"'
# A string, or an unterminated one running to the end of the text: once a string fails
# to close at one quote it fails at every later quote too, so this consumes the rest at
# once instead of re-scanning from each quote (quadratic).
_STR_OR_REST = re.compile(r'"(?:[^"\\]++|\\.)*+(?:(")|\\?\Z)', re.S)
_NAME = r"[%@]?([\w.\-]++)"


def _nested(depth: int) -> str:
    """A value: text without top-level `,`, with strings and brackets nested `depth` deep."""
    plain, free_plain = r'[^{}\[\]()",]', r'[^{}\[\]()"]'  # inside brackets commas are fine
    inner, free = _run(plain, _STR), _run(free_plain, _STR)
    for _ in range(depth):
        group = rf"{_STR}|\{{{free}\}}|\[{free}\]|\({free}\)"
        inner, free = _run(plain, group), _run(free_plain, group)
    return inner


_VALUE = _nested(5)
_PARENS = r"\([^()]*+\)"  # parentheses nested 4 deep
for _ in range(3):
    _PARENS = rf"\({_run('[^()]', _PARENS)}\)"
_IN_PARENS = _run("[^()]", _PARENS)  # what is between parentheses: operands, parameters
_SHAPE = rf"(?:[a-z][a-z0-9]*+\[[^\]]*+\](?:\{{[^}}]*+\}}|)|{_PARENS})"

_WS = r"\s*+"
# `(?:x|)` rather than `(?:x)?`: the same, as a branch, which `re` enters faster than
# a repetition (RECORD's scan takes a twentieth less time).
_HEAD = rf"{_WS}(?:(ROOT\s++)|){_NAME}{_WS}={_WS}(?:({_SHAPE}){_WS}|)([a-z][\w\-]*+)\("
INSTRUCTION = re.compile(_HEAD)
# One whole instruction on one line: the fast path taken by nearly every line XLA prints.
_FULL_INSTRUCTION = (
    rf"{_HEAD}({_IN_PARENS})\)"
    rf"((?:{_WS},{_WS}[\w\-]++{_WS}={_WS}{_VALUE})*+){_WS}"
)


def _one_line(pattern: str) -> str:
    """`pattern` kept to one line: blanks and negated classes stop at a newline.

    On text without a newline it matches exactly what `pattern` matches, so a record
    matched this way in the whole text is what the per-line pattern reads from its line.
    """
    classes = re.sub(r"\[\^((?:\\.|[^\]\\])*+)\]", lambda m: f"[^{m.group(1)}\\n]", pattern)
    # `\s` less the newline, as ASCII (`RECORD`) reads it: listed, a set `re` tests in
    # one step, where `[^\S\n]` is a negated category and a character to test.
    blank = r"[ \t\r\f\v]"
    return classes.replace(r"\s*+", blank + "*+").replace(r"\s++", blank + "++")


_CALL_KEYS = "|".join(sorted(CALLED_COMPUTATION_ATTRIBUTES))
# One `, key=value` attribute, with the value of `metadata=` captured, and the key and
# value captured when it names called computations (the two things the parser reads
# from attributes it otherwise keeps as text), with an empty group before them when
# another such attribute came before (`(?(9)()|)`, 9 the number of the key's group in
# `RECORD`: the parser then reads them all from the text). The three branches are
# exclusive, so a line
# that fails backtracks through them at most once each. Metadata and callee lists are
# read one bracket deep (XLA prints them so; a deeper one sends its line the
# line-by-line way): the pattern compiles in a third of the time. (The repetition
# around it is greedy, not possessive: Python 3.11 mistakes the spans of groups inside
# a possessive repetition.)
_FLAT_VALUE = _nested(1)
_RECORD_ATTRIBUTE = (
    rf"{_WS},{_WS}(?:metadata(?![\w\-]){_WS}={_WS}({_FLAT_VALUE})"
    rf"|(?(9)()|)(?P<role>{_CALL_KEYS})(?![\w\-]){_WS}={_WS}({_FLAT_VALUE})"
    rf"|(?!(?:metadata|{_CALL_KEYS})(?![\w\-]))[\w\-]++{_WS}={_WS}{_VALUE})"
)
_END = rf'\}}{_WS}(?:,{_WS}execution_thread{_WS}={_WS}"([^"]*+)")?{_WS}'
COMPUTATION_END = re.compile(_END)


def _computation(signature: str) -> str:
    """A computation's header line: groups `ENTRY` and the name, then the parameters and
    result shape in groups when `signature` is `(`, not when it is `(?:`."""
    return (
        rf"(ENTRY\s++)?[%@]?([\w.\-]++){_WS}"
        rf"(?:{signature}\({_IN_PARENS}\)){_WS}->{_WS}{signature}{_SHAPE}))?"
        rf"{_WS}\{{{_WS}"
    )


COMPUTATION = re.compile(_computation("("))
_RECORD = (
    "|".join(
        _one_line(line) + r"(?:\n|\Z)"
        for line in (
            rf"{_HEAD}({_IN_PARENS})\)"
            rf"((?:{_RECORD_ATTRIBUTE})*){_WS}",
            rf"{_WS}({_END})",
            rf"{_WS}({_computation('(?:')})",
        )
    )
    + r"|([^\S\n]*+(?://[^\n]*+)?)\n|[^\n]*+\n?"
).replace(r"\w", "0-9A-Za-z_")  # ASCII, as a bitmap: faster than the \w category
r"""`RECORD`: one line of the text, read as the line-by-line parser would read it alone:
an instruction as `FULL_INSTRUCTION` reads it (groups 1-6 its groups 1-6; 7 the last
`metadata=` value; 8 empty when two attributes name called computations, 9 and 10 the
key and value of the last one); the `}` that ends a computation as `COMPUTATION_END`
reads it (group 11; 12 its execution thread); a computation's header as `COMPUTATION`
reads it (group 13; 14 `ENTRY`, 15 its name); a blank or comment line (group 16); else
anything (every group None),
left to the line-by-line parser. Each but the last ends at a newline or the end of the
text. ASCII only (`\w`, `\s`): a line with other letters or blanks in its names or
between its tokens goes the line-by-line way, so a line read here reads the same there.
The parser reads computations record by record with `finditer`, one scan in C."""


OPERAND_NAMES = re.compile(r"[%@]?([^\s,%@]++)")
_ATTRIBUTES = rf"(?:{_WS},{_WS}[\w\-]++{_WS}={_WS}{_VALUE})*+{_WS}"
_ATTRIBUTE = rf"{_WS},{_WS}([\w\-]++){_WS}={_WS}({_VALUE})"

# The parser's four big patterns take about 100 ms to compile together: compiled when
# first used (`__getattr__`), so a command that parses nothing (its analyses read back
# from the user's cache folder) does not pay for them.
_LAZY = {
    "FULL_INSTRUCTION": (_FULL_INSTRUCTION, 0),
    "RECORD": (_RECORD, re.ASCII),
    "ATTRIBUTES": (_ATTRIBUTES, 0),
    "ATTRIBUTE": (_ATTRIBUTE, 0),
}
if TYPE_CHECKING:
    FULL_INSTRUCTION: re.Pattern[str]
    RECORD: re.Pattern[str]
    ATTRIBUTES: re.Pattern[str]
    ATTRIBUTE: re.Pattern[str]


def __getattr__(name: str) -> re.Pattern[str]:
    """One of the parser's big patterns (`_LAZY`), compiled on first use and kept."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    pattern = re.compile(*_LAZY[name])
    if name == "RECORD":
        assert pattern.groupindex["role"] == 9  # as `_RECORD_ATTRIBUTE` refers to it
    globals()[name] = pattern
    return pattern


def _compiled(name: str) -> re.Pattern[str]:
    """One of `_LAZY`'s patterns, for this module (whose own names `__getattr__` does
    not see)."""
    found: re.Pattern[str] | None = globals().get(name)
    return found if found is not None else __getattr__(name)


MODULE = re.compile(rf"HloModule\s++{_NAME}")
TABLE_ROW = re.compile(r"([0-9]++)\s++(.*)")
CALLED_NAME = re.compile(r"[%@]?([\w.\-]++)")
_DIM = re.compile(rf"{_WS}(<=)?{_WS}([0-9]++|\?){_WS}")
_TILE = re.compile(r"T\(([^()]*+)\)")
_MEMORY_SPACE = re.compile(r"S\(([0-9]++)\)")
_SURROGATE = re.compile("[\ud800-\udfff]")

TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
# One line of the stack frame tables as XLA prints them, for `_Parser.scan_tables`: a
# row `N "string"` or `N {k=v ...}` (no brackets, comments or line joins inside), a
# table's name, or a blank line. Anything else is left to the line-by-line reader.
TABLE_LINE = re.compile(
    r'(?![^\n]*/[/*])[ \t]*+(?:([0-9]{1,18}+)[ \t]++("(?:[^"\\\n]|\\.)*+"|\{[^{}\[\]()"\n]*+\})'
    r"|(FileNames|FunctionNames|FileLocations|StackFrames)|)[ \t]*+(?:\n|\Z)"
)


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


def parse_metadata(raw: str) -> Metadata:
    """The `Metadata` of a `metadata={...}` value (braces included), kept as its `text`;
    its fields are read from it on first use."""
    return Metadata.of_text(raw)


class Attributes(Mapping[str, str]):
    """An instruction's attributes, read from their text on first use.

    The parser has checked the text (`, key=value` pairs, brackets balanced) and keeps
    it as one string; the pairs are split out only when asked for, which keeps a
    `parse` of a big module from building a dict per instruction that nothing reads.
    Keys are interned (one string per name across modules); a key given twice keeps its
    last value, as a dict built from the pairs would.

    Attributes:
        text: The attributes as printed, from the `,` after the operand list.
    """

    __slots__ = ("_map", "text")

    def __init__(self, text: str, parsed: dict[str, str] | None = None) -> None:
        self.text = text
        self._map = parsed

    def _load(self) -> dict[str, str]:
        found = self._map
        if found is None:
            pairs = _compiled("ATTRIBUTE").findall(self.text)
            found = self._map = {intern(k): v for k, v in pairs}
        return found

    # A key that is nowhere in the text is not an attribute: asked for one, most lookups
    # (`backend_config` on every instruction) answer without reading the pairs.

    def __getitem__(self, key: str) -> str:
        found = self._map
        if found is None:
            if key not in self.text:
                raise KeyError(key)
            found = self._load()
        return found[key]

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """The value of `key`, or `default`."""
        found = self._map
        if found is None:
            if key not in self.text:
                return default
            found = self._load()
        return found.get(key, default)

    def __contains__(self, key: object) -> bool:
        found = self._map
        if found is None:
            if not isinstance(key, str) or key not in self.text:
                return False
            found = self._load()
        return key in found

    def __iter__(self) -> Iterator[str]:
        return iter(self._map or self._load())

    def __len__(self) -> int:
        return len(self._map or self._load())

    def keys(self) -> KeysView[str]:
        """The attribute names, in order."""
        return (self._map or self._load()).keys()

    def items(self) -> ItemsView[str, str]:
        """`(name, value)` pairs, in order."""
        return (self._map or self._load()).items()

    def pairs(self) -> ItemsView[str, str]:
        """`items()`, read without keeping them when they were not read yet: printing a
        big module reads every instruction's once (the kernels' HLO of the HTML page
        kept 535k dicts, 194 MB, for a 153 MB module: issue 27)."""
        if self._map is not None:
            return self._map.items()
        return dict(_compiled("ATTRIBUTE").findall(self.text)).items()

    def values(self) -> ValuesView[str]:
        """The values, in order."""
        return (self._map or self._load()).values()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return (self._map or self._load()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, as dicts are

    def __repr__(self) -> str:
        return f"Attributes({self._map or self._load()!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Attributes, (self.text, self._map))


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
