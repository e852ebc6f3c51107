"""JSON documents written as they are made, never held whole.

The `report --json` document of a big run is hundreds of megabytes of text, and more as
the dicts and lists it is made from. A streamed document is plain JSON values plus
stand-ins: `Items`, an array whose items are made one at a time as it is written (and
`Records`, one whose objects are written straight from the rows they are made from),
`Fields`, an object some of whose values are stand-ins, and `Value`, a value found only
when the writing reaches it (what another process is still making). `chunks` yields the
document's text piece by piece, exactly the text `json.dumps(built(doc), indent=2,
ensure_ascii=False)` gives (`render.json.dumps`); `built` makes every stand-in whole,
for the callers that want the document itself (the HTML page, the notebook, tests).

`indented` is that text for a plain value, made faster than `json.dumps`: with an
indent, the standard library encodes in Python, a generator step per value (10 s of a
341 MB document); here each string and number is encoded by the C functions
`json.dumps` uses without one, and each container joined at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["Fields", "Items", "Records", "Value", "built", "chunks", "indented", "write_chunks"]

# What `render.json.dumps` uses; one encoder for every piece.
_ENCODER = json.JSONEncoder(indent=2, ensure_ascii=False)
_INDENT = "  "
_STRING = json.encoder.encode_basestring  # C, where the json module has its speedups
_CONSTANTS = {None: "null", True: "true", False: "false"}


def indented(value: Any, newline: str = "\n") -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, the same text.

    Args:
        value: A JSON value: dicts, lists and tuples of strings, numbers, booleans and
            None (anything else goes through `json.dumps`, which says what it cannot
            encode).
        newline: A newline and the indentation of the level `value` sits at.
    """
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = newline + _INDENT
        # strings inline: most values are, and a call each is most of the time
        parts = [
            (_KEYS.get(k) or _key(k)) + (_STRING(v) if type(v) is str else indented(v, inner))
            for k, v in value.items()
        ]
        return "{" + inner + ("," + inner).join(parts) + newline + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = newline + _INDENT
        items = [_STRING(v) if type(v) is str else indented(v, inner) for v in value]
        return "[" + inner + ("," + inner).join(items) + newline + "]"
    if kind is int:
        return int.__repr__(value)
    if kind is float and value == value and value not in (_INF, -_INF):
        return float.__repr__(value)
    if value is None or kind is bool:
        return _CONSTANTS[value]
    # NaN, infinities, subclasses, what JSON cannot hold: as the standard library does
    text = _ENCODER.encode(value)
    return text.replace("\n", newline) if "\n" in text else text


_INF = float("inf")


def _key(key: Any) -> str:
    """A dict key as `json.dumps` writes it, with its `": "` (it turns numbers, booleans
    and None into strings); the first few thousand strings kept (a document's field
    names repeat in every object)."""
    if type(key) is str:
        text = _STRING(key) + ": "
        if len(_KEYS) < 4096:
            _KEYS[key] = text
        return text
    return _ENCODER.encode({key: 0})[4:].split(": ", 1)[0] + ": "


_KEYS: dict[str, str] = {}


class Items:
    """A JSON array made as it is written.

    Args:
        make: Gives the array's items, each a JSON value or a stand-in; called each
            time the array is read (so a document can be written and built alike).
    """

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Iterable[Any]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Any]:
        return iter(self.make())

    def __repr__(self) -> str:
        return f"Items({self.make!r})"


Row = TypeVar("Row")


class Records(Items, Generic[Row]):
    """An array of objects made from rows, written without making the objects.

    Args:
        rows: Gives the rows, each time the array is read.
        doc: The object of a row (what `built` and every other reader see).
        text: The text of a row's object at an indentation (its argument as in
            `indented`): exactly `indented(doc(row), newline)`, made faster (a big
            run's provenance is hundreds of thousands of objects); with None for the
            indentation, exactly `json.dumps(doc(row), ensure_ascii=False,
            separators=(",", ":"))`.
    """

    __slots__ = ("doc", "rows", "text")

    def __init__(
        self,
        rows: Callable[[], Iterable[Row]],
        doc: Callable[[Row], Any],
        text: Callable[[Row, str | None], str],
    ) -> None:
        super().__init__(lambda: map(doc, rows()))
        self.rows = rows
        self.doc = doc
        self.text = text


class Fields(dict[str, Any]):
    """A JSON object whose values may be stand-ins (`Items`, `Fields`, `Value`); plain
    values hold none."""


class Value:
    """A JSON value (or a stand-in) found only when the document's writing, or `built`,
    reaches it: `find` is called then, once, and its result kept.

    Args:
        find: Gives the value (it may wait for it: another process's work, which the
            document's earlier parts are written meanwhile).
    """

    __slots__ = ("_find", "_found")

    def __init__(self, find: Callable[[], Any]) -> None:
        self._find: Callable[[], Any] | None = find
        self._found: Any = None

    def get(self) -> Any:
        """The value, found the first time."""
        if self._find is not None:
            self._found, self._find = self._find(), None
        return self._found

    def __repr__(self) -> str:
        return f"Value({self._find if self._find is not None else self._found!r})"


def built(doc: Any) -> Any:
    """The document with every stand-in made whole: `Items` as lists, `Fields` as dicts,
    `Value` as its value."""
    if isinstance(doc, Items):
        return [built(item) for item in doc]
    if isinstance(doc, Fields):
        return {key: built(value) for key, value in doc.items()}
    if isinstance(doc, Value):
        return built(doc.get())
    return doc


def chunks(doc: Any, level: int = 0) -> Iterator[str]:
    """The text of a document, in pieces that join to `json.dumps(built(doc), indent=2,
    ensure_ascii=False)`; each item of an `Items` is made as it is reached, and dropped
    once written.

    Args:
        doc: A JSON value, stand-ins allowed.
        level: How deep the document sits (for its indentation).
    """
    if isinstance(doc, Items):
        yield from _array(doc, level)
    elif isinstance(doc, Fields):
        yield from _object(doc, level)
    elif isinstance(doc, Value):
        yield from chunks(doc.get(), level)
    else:
        yield indented(doc, "\n" + _INDENT * level)


def _array(items: Items, level: int) -> Iterator[str]:
    inner = "\n" + _INDENT * (level + 1)
    opening = "[" + inner
    if isinstance(items, Records):  # each object's text straight from its row
        text = items.text
        for row in items.rows():
            yield opening + text(row, inner)
            opening = "," + inner
    else:
        for item in items:
            if isinstance(item, (Items, Fields, Value)):
                yield opening
                yield from chunks(item, level + 1)
            else:  # most items (a kernel): one piece, no generator
                yield opening + indented(item, inner)
            opening = "," + inner
    yield "[]" if opening.startswith("[") else "\n" + _INDENT * level + "]"


def _object(fields: Fields, level: int) -> Iterator[str]:
    if not fields:
        yield "{}"
        return
    inner = "\n" + _INDENT * (level + 1)
    opening = "{" + inner
    for key, value in fields.items():
        yield opening + _key(key)
        yield from chunks(value, level + 1)
        opening = "," + inner
    yield "\n" + _INDENT * level + "}"


def write_chunks(
    pieces: Iterable[str], write: Callable[[str], object], size: int = 1 << 20
) -> None:
    """Write pieces of text in writes of about `size` characters (a write per piece
    would make millions of calls)."""
    buffer: list[str] = []
    held = 0
    for piece in pieces:
        buffer.append(piece)
        held += len(piece)
        if held >= size:
            write("".join(buffer))
            buffer.clear()
            held = 0
    if buffer:
        write("".join(buffer))
