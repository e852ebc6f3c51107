"""Structure-aware mutations of binary protobuf, JSON and compressed containers, for the
reader fuzzing of issue 25 (`tests/fuzz/readers.py` puts them to work).

Protobuf is mutated on its wire format, without a schema: the message is read into a
tree of fields (a length-delimited value that reads back as a whole message becomes a
sub-tree), one node is changed (a hostile varint, a wrong length, another wire type, a
field deleted, repeated or moved, a message nested in itself thousands deep, an
overlong varint, a truncation) and the tree is written back. JSON is mutated on its
parsed document: a value of another type, an infinity or NaN, a number past 64 bits, a
string with terminal escapes, a container nested past any recursion limit, a list
repeated into a size bomb. Each mutator takes a `random.Random` and is deterministic in
it, so a case is replayed from its seed alone.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------------------
# Protobuf wire format

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

# Values that break readers: zero, one, every 2^k boundary of 31/32/62/63/64 bits, both
# signs (a negative int64 is a ten-byte varint).
HOSTILE_INTS = [
    0, 1, 2, 7, 127, 128, 255, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1,
    2**62, 2**63 - 1, 2**63, 2**64 - 1, -1, -2, -(2**31), -(2**62), -(2**63), 10**6, 10**9,
]  # fmt: skip
HOSTILE_STRINGS = [
    "", "\x1b[2J\x1b]52;c;aGVsbG8=\x07", "\u202e\u2028x", "a" * 70_000, "%", "#", "\x00",
    "../../etc/passwd", "while.1", "fusion", "ROOT", "}", '"', "\\", "\udcff",
]  # fmt: skip


@dataclass
class Field:
    """One field of a message on the wire. `value` is an int (varint, fixed), bytes, or
    a list of fields (a length-delimited value that reads as a message); `raw` replaces
    the whole encoding when set (a deliberately broken field)."""

    number: int
    wire: int
    value: Any
    raw: bytes | None = None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def encode_varint(value: int) -> bytes:
    """A varint; negative values as the ten-byte two's complement protobuf writes."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def parse_message(data: bytes, depth: int = 0, max_depth: int = 24) -> list[Field] | None:
    """The fields of a message, sub-messages parsed where their bytes read as one; None
    when the bytes are not a well-formed message."""
    fields: list[Field] = []
    pos = 0
    try:
        while pos < len(data):
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                return None
            if wire == VARINT:
                value, pos = _varint(data, pos)
            elif wire == I64:
                if pos + 8 > len(data):
                    return None
                value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
            elif wire == I32:
                if pos + 4 > len(data):
                    return None
                value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
            elif wire == LEN:
                n, pos = _varint(data, pos)
                if pos + n > len(data):
                    return None
                chunk = data[pos : pos + n]
                pos += n
                value = chunk
                if depth < max_depth and chunk and not _looks_text(chunk):
                    inner = parse_message(chunk, depth + 1, max_depth)
                    if inner:
                        value = inner
            else:
                return None
            fields.append(Field(number, wire, value))
    except ValueError:
        return None
    return fields


def _looks_text(chunk: bytes) -> bool:
    """Printable ASCII reads as a string, not as a message (names often parse as both)."""
    return len(chunk) < 200 and all(32 <= b < 127 for b in chunk)


def encode_message(fields: list[Field]) -> bytes:
    """The wire bytes of a field tree."""
    out = bytearray()
    for f in fields:
        out += encode_field(f)
    return bytes(out)


def encode_field(f: Field) -> bytes:
    if f.raw is not None:
        return f.raw
    key = encode_varint((f.number << 3) | f.wire)
    if f.wire == VARINT:
        return key + encode_varint(f.value if isinstance(f.value, int) else 0)
    if f.wire == I64:
        v = f.value if isinstance(f.value, int) else 0
        return key + (v & (2**64 - 1)).to_bytes(8, "little")
    if f.wire == I32:
        v = f.value if isinstance(f.value, int) else 0
        return key + (v & 0xFFFFFFFF).to_bytes(4, "little")
    body = encode_message(f.value) if isinstance(f.value, list) else bytes(f.value)
    return key + encode_varint(len(body)) + body


@dataclass
class _Slot:
    """Where a field sits: its parent list and index, and its depth."""

    parent: list[Field]
    index: int
    depth: int
    path: tuple[int, ...] = field(default_factory=tuple)

    @property
    def field(self) -> Field:
        return self.parent[self.index]


def slots(fields: list[Field], depth: int = 0, path: tuple[int, ...] = ()) -> list[_Slot]:
    """Every field of the tree, with its place."""
    out = []
    for i, f in enumerate(fields):
        here = (*path, f.number)
        out.append(_Slot(fields, i, depth, here))
        if isinstance(f.value, list):
            out.extend(slots(f.value, depth + 1, here))
    return out


def _pick(tree: list[Field], rng: random.Random, want: Callable[[_Slot], bool]) -> _Slot | None:
    found = [s for s in slots(tree) if want(s)]
    return rng.choice(found) if found else None


def mutate_proto(data: bytes, rng: random.Random, rounds: int | None = None) -> bytes:
    """One to three structure-aware edits of a protobuf message (bytes edits when it
    does not parse)."""
    tree = parse_message(data)
    if not tree:
        return mutate_bytes(data, rng)
    for _ in range(rounds or rng.randint(1, 3)):
        op = rng.choice(_PROTO_MUTATORS)
        result = op(tree, rng)
        if isinstance(result, bytes):  # a mutation of the encoded bytes
            return result
    return encode_message(tree)


def _hostile_varint(tree: list[Field], rng: random.Random) -> None:
    s = _pick(tree, rng, lambda s: s.field.wire == VARINT)
    if s is not None:
        s.field.value = rng.choice(HOSTILE_INTS) if rng.random() < 0.8 else rng.getrandbits(64)


def _copy_varint(tree: list[Field], rng: random.Random) -> None:
    """The value of another varint of the message: ids pointing at the wrong thing
    (a computation calling itself, an operand that is its own user, a duplicate id)."""
    all_ints = [s for s in slots(tree) if s.field.wire == VARINT]
    if len(all_ints) < 2:
        return
    a, b = rng.choice(all_ints), rng.choice(all_ints)
    a.field.value = b.field.value


def _copy_same_number(tree: list[Field], rng: random.Random) -> None:
    """Copy a field over another field of the same path (a name onto another name: two
    computations or instructions of the same name)."""
    by_path: dict[tuple[int, ...], list[_Slot]] = {}
    for s in slots(tree):
        by_path.setdefault(s.path, []).append(s)
    groups = [g for g in by_path.values() if len(g) > 1]
    if not groups:
        return
    group = rng.choice(groups)
    a, b = rng.sample(group, 2)
    a.parent[a.index] = _clone(b.field)


def _clone(f: Field) -> Field:
    value = [_clone(c) for c in f.value] if isinstance(f.value, list) else f.value
    return Field(f.number, f.wire, value, f.raw)


def _delete(tree: list[Field], rng: random.Random) -> None:
    s = _pick(tree, rng, lambda s: True)
    if s is not None:
        del s.parent[s.index]


def _duplicate(tree: list[Field], rng: random.Random) -> None:
    """Repeat a field: once, or many times (counts past what any reader expects)."""
    s = _pick(tree, rng, lambda s: True)
    if s is None:
        return
    times = rng.choice([1, 1, 2, 10, 1000, 20_000])
    if times > 100 and len(encode_field(s.field)) * times > 8_000_000:
        times = max(1, 8_000_000 // max(1, len(encode_field(s.field))))
    for _ in range(times):
        s.parent.insert(s.index, _clone(s.field))


def _swap(tree: list[Field], rng: random.Random) -> None:
    s = _pick(tree, rng, lambda s: len(s.parent) > 1)
    if s is not None:
        j = rng.randrange(len(s.parent))
        s.parent[s.index], s.parent[j] = s.parent[j], s.parent[s.index]


def _move(tree: list[Field], rng: random.Random) -> None:
    """Move a field into another message (a field number where another type expects it)."""
    src = _pick(tree, rng, lambda s: True)
    dst = _pick(tree, rng, lambda s: isinstance(s.field.value, list))
    if src is None or dst is None or src.field is dst.field:
        return
    f = _clone(src.field)
    dst.field.value.insert(rng.randrange(len(dst.field.value) + 1), f)


def _wire_type(tree: list[Field], rng: random.Random) -> None:
    """Same field number, another wire type (a string where a varint is expected)."""
    s = _pick(tree, rng, lambda s: True)
    if s is None:
        return
    f = s.field
    wire = rng.choice([w for w in (VARINT, I64, LEN, I32, SGROUP, EGROUP) if w != f.wire])
    key = encode_varint((f.number << 3) | wire)
    if wire == VARINT:
        f.raw = key + encode_varint(rng.choice(HOSTILE_INTS))
    elif wire == I64:
        f.raw = key + rng.randbytes(8)
    elif wire == I32:
        f.raw = key + rng.randbytes(4)
    elif wire == LEN:
        body = rng.choice([b"", b"\xff" * 3, rng.randbytes(rng.randint(1, 16))])
        f.raw = key + encode_varint(len(body)) + body
    else:
        f.raw = key  # a group marker protobuf 3 does not allow


def _bad_length(tree: list[Field], rng: random.Random) -> None:
    """A length prefix that lies: past the end, one short, or 2^62."""
    s = _pick(tree, rng, lambda s: s.field.wire == LEN)
    if s is None:
        return
    f = s.field
    body = encode_message(f.value) if isinstance(f.value, list) else bytes(f.value)
    n = rng.choice(
        [len(body) + 1, len(body) + 1000, max(0, len(body) - 1), 2**31, 2**62, 2**64 - 1]
    )
    f.raw = encode_varint((f.number << 3) | LEN) + encode_varint(n) + body


def _overlong_varint(tree: list[Field], rng: random.Random) -> None:
    """A varint of 11 bytes, or one cut at the end of the message."""
    s = _pick(tree, rng, lambda s: s.field.wire == VARINT)
    if s is None:
        return
    key = encode_varint((s.field.number << 3) | VARINT)
    s.field.raw = key + rng.choice([b"\xff" * 10 + b"\x01", b"\x80" * 11 + b"\x00", b"\xff" * 9])


def _nest(tree: list[Field], rng: random.Random) -> None:
    """A message nested inside itself: 80 to 20,000 levels (a tuple of tuples of ...)."""
    s = _pick(tree, rng, lambda s: isinstance(s.field.value, list))
    if s is None:
        return
    f = s.field
    inner = rng.choice([sub for sub in f.value if sub.number]) if f.value else None
    levels = rng.choice([80, 101, 200, 1000, 20_000])
    # The recursive field: one of the message's own message fields when it has one
    # (tuple_shapes in a shape), else the field's own number.
    number = inner.number if inner is not None and isinstance(inner.value, list) else f.number
    body = encode_message(f.value)
    for _ in range(levels):
        body = encode_varint((number << 3) | LEN) + encode_varint(len(body)) + body
    f.raw = encode_varint((f.number << 3) | LEN) + encode_varint(len(body)) + body


def _hostile_bytes(tree: list[Field], rng: random.Random) -> None:
    s = _pick(tree, rng, lambda s: s.field.wire == LEN and not isinstance(s.field.value, list))
    if s is not None:
        text = rng.choice(HOSTILE_STRINGS)
        s.field.value = text.encode("utf-8", "surrogatepass")


def _truncate(tree: list[Field], rng: random.Random) -> bytes:
    data = encode_message(tree)
    return data[: rng.randrange(len(data) + 1)] if data else data


_PROTO_MUTATORS: list[Callable[[list[Field], random.Random], Any]] = [
    _hostile_varint, _hostile_varint, _copy_varint, _copy_varint, _copy_same_number,
    _delete, _duplicate, _swap, _move, _wire_type, _bad_length, _overlong_varint, _nest,
    _hostile_bytes, _truncate,
]  # fmt: skip


# --------------------------------------------------------------------------------------
# Bytes


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """Flip, insert or delete bytes, or cut the data short."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            buf += rng.randbytes(8)
        at = rng.randrange(len(buf))
        kind = rng.random()
        if kind < 0.35:
            buf[at] = rng.randrange(256)
        elif kind < 0.6:
            buf[at:at] = rng.randbytes(rng.randint(1, 8))
        elif kind < 0.85:
            del buf[at : at + rng.randint(1, 64)]
        else:
            del buf[at:]
    return bytes(buf)


# --------------------------------------------------------------------------------------
# JSON


@dataclass
class Raw:
    """JSON text put in place as is (an infinity, a number past 64 bits, deep nesting)."""

    text: str


@dataclass
class Bomb:
    """A JSON list of `times` copies of `piece`: written in steps, so that a file of
    kilobytes that decompresses to gigabytes is made without holding them."""

    piece: str
    times: int

    def chunks(self, step: int = 1 << 20) -> Iterator[str]:
        yield "["
        per = max(1, step // (len(self.piece) + 1))
        left = self.times
        first = True
        while left > 0:
            n = min(per, left)
            text = ",".join([self.piece] * n)
            yield text if first else "," + text
            first = False
            left -= n
        yield "]"


_MARK = "\u0001raw{}\u0001"


def segments(doc: Any) -> list[str | Bomb]:
    """JSON text of a document that may hold `Raw` and `Bomb` pieces, as text and bombs."""
    pieces: list[Raw | Bomb] = []

    def default(o: Any) -> Any:
        if isinstance(o, Raw | Bomb):
            pieces.append(o)
            return _MARK.format(len(pieces) - 1)
        raise TypeError(type(o).__name__)

    text = json.dumps(doc, default=default, allow_nan=True)
    out: list[str | Bomb] = []
    for i, piece in enumerate(pieces):
        head, _, text = text.partition(json.dumps(_MARK.format(i)))
        out.append(head)
        out.append(piece.text if isinstance(piece, Raw) else piece)
    out.append(text)
    return out


def dumps(doc: Any) -> str:
    """JSON text of a document; bombs written in full (keep them small here)."""
    return "".join(p if isinstance(p, str) else "".join(p.chunks()) for p in segments(doc))


def write_json(path: Path, doc: Any, *, gz: bool) -> None:
    """Write a (mutated) document as JSON text, gzipped or not, bombs in steps."""
    with gzip.open(path, "wb", compresslevel=1) if gz else path.open("wb") as f:
        for p in segments(doc):
            if isinstance(p, Bomb) and not gz:
                # Uncompressed, a bomb is only a big file: kept to a few MB.
                p = Bomb(p.piece, min(p.times, 4_000_000 // (len(p.piece) + 1)))
            for chunk in [p] if isinstance(p, str) else p.chunks():
                f.write(chunk.encode("utf-8", "surrogatepass"))


def _json_slots(doc: Any, limit: int = 200_000) -> list[tuple[Any, Any]]:
    """(container, key) of every value in the document, at most `limit`."""
    out: list[tuple[Any, Any]] = []
    queue = [doc] if isinstance(doc, dict | list) else []
    while queue and len(out) < limit:
        node = queue.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            out.append((node, k))
            if isinstance(v, dict | list):
                queue.append(v)
    return out


def hostile_json_value(rng: random.Random, old: Any) -> Any:
    """A value to put in place of `old`: another type, an edge number, deep nesting."""
    depth = rng.choice([100, 1000, 5000, 100_000])
    choices: list[Any] = [
        None, True, False, 0, -1, -(10**6), 2**63, 2**64, -(2**63) - 1, 1.5, -0.0, 1e308,
        -1e308, 5e-324, Raw("Infinity"), Raw("-Infinity"), Raw("NaN"), Raw("1" * 5000),
        Raw("1e99999"), "", "x", "\x1b[2J\x07", "NaN", "inf", "-5", "1e400", [], {},
        [old], {"x": old}, [1, 2, 3], "a" * 100_000,
        Raw("[" * depth + "]" * depth), Raw('{"a":' * depth + "1" + "}" * depth),
    ]  # fmt: skip
    if isinstance(old, int | float) and not isinstance(old, bool):
        choices += [-old, old * 1e6, -abs(old) - 1, str(old), [old]]
    if isinstance(old, str):
        choices += [old + "\x1b[31m", old * 50, 7, [old]]
    return rng.choice(choices)


def mutate_json(doc: Any, rng: random.Random, rounds: int | None = None) -> Any:
    """The document after one to three edits (changed in place where it can be)."""
    for _ in range(rounds or rng.randint(1, 3)):
        places = _json_slots(doc)
        if not places:
            return hostile_json_value(rng, doc)
        node, key = rng.choice(places)
        kind = rng.random()
        if kind < 0.55:
            node[key] = hostile_json_value(rng, node[key])
        elif kind < 0.7:
            del node[key]
        elif kind < 0.8 and isinstance(node, dict):
            node[key + "\x1b[2J"] = node.pop(key)
        elif kind < 0.9 and isinstance(node, list):
            node.insert(key, node[key])
        elif _small(node[key]):
            # A size bomb: the value repeated, up to gigabytes that gzip to little.
            times = rng.choice([1000, 100_000, 3_000_000, 30_000_000])
            node[key] = Bomb(dumps(node[key]), times)
    return doc


def _small(value: Any) -> bool:
    try:
        return len(dumps(value)) < 400
    except (TypeError, ValueError, RecursionError):
        return False


# --------------------------------------------------------------------------------------
# Compression


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def xz_bytes(data: bytes) -> bytes:
    return lzma.compress(data, preset=1)


def zero_bomb_gzip(size: int) -> bytes:
    """gzip of `size` zero bytes, compressed in steps (never `size` bytes in memory)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)
    return out.getvalue()


def zero_bomb_xz(size: int) -> bytes:
    """xz of `size` zero bytes, compressed in steps."""
    c = lzma.LZMACompressor(preset=1)
    chunk = b"\0" * (1 << 20)
    parts = [c.compress(chunk) for _ in range(size >> 20)]
    parts.append(c.flush())
    return b"".join(parts)


def zero_bomb_deflate(size: int) -> bytes:
    """Raw deflate of `size` zero bytes (a zip member's data), in steps."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\0" * (1 << 20)
    parts = [c.compress(chunk) for _ in range(size >> 20)]
    parts.append(c.flush())
    return b"".join(parts)
