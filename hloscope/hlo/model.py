"""The parsed HLO module: immutable objects that every later stage reads.

The parser (`hloscope.hlo.parser`) is the only producer of these objects; analyses and
renderers only read them. Attributes are kept verbatim as text next to the few fields
that are parsed (shape, operands, called computations, metadata, backend_config), so
nothing in the input is lost even when hloscope does not understand it.

They are frozen dataclasses, slotted where a module holds many (shapes, metadata), and
`Instruction` is a named tuple: a model is about five times its text in memory
(`benchmarks/scale_bench.py`), little more than the text it keeps verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from sys import intern
from types import MappingProxyType
from typing import Any, NamedTuple, get_type_hints

INT64_MAX = 2**63 - 1
"""The largest dimension, and the largest array byte size, a shape may have (XLA's)."""

_INT = re.compile(r"-?[0-9]{1,19}")


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


# Bits per element of every XLA primitive type (xla_data.proto); `None` for types with
# no fixed size (token, opaque). Sub-byte types are counted in bits, then rounded up.
ELEMENT_BITS: Mapping[str, int | None] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f4e2m1fn": 4, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8,
    "bf16": 16, "f16": 16, "f32": 32, "f64": 64,
    "c64": 64, "c128": 128,
    "token": None, "opaque": None,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Layout:
    """The `{...}` after an array shape's dimensions.

    Attributes:
        minor_to_major: Dimension numbers, most minor first, as printed.
        tiles: Each `T(...)` tile as a tuple of sizes (`*` printed for a combined
            dimension is kept as -1).
        memory_space: The `S(n)` memory space, or None for the default one.
        text: The layout exactly as printed, without the braces.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> shape = m.entry.root.shape
        >>> shape.layout.text
        '1,0'
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    memory_space: int | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Shape:
    """An HLO shape: an array, a tuple of shapes, or a token.

    Attributes:
        element_type: `f32`, `bf16`, `pred`, ..., `token`, or `tuple` for tuples.
        dimensions: Size of each dimension (the bound, for a dynamic dimension).
        dynamic: For each dimension, whether it is dynamic (`<=8` or `?`).
        layout: The layout when the text has one.
        tuple_shapes: The element shapes of a tuple; empty for arrays.
        text: The shape as printed, less XLA's `/*index=N*/` comments in long tuples.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> root = m.entry.root
        >>> root.shape.element_type, root.shape.dimensions, root.shape.byte_size
        ('f32', (32, 10), 1280)
    """

    element_type: str
    dimensions: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()
    text: str = ""
    # `byte_size`, once asked: a shape is shared by thousands of instructions, and the
    # analyses ask each operand's size.
    _bytes: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def is_tuple(self) -> bool:
        """Whether this is a tuple shape."""
        return self.element_type == "tuple"

    @property
    def is_token(self) -> bool:
        """Whether this is the `token[]` shape."""
        return self.element_type == "token"

    @property
    def num_elements(self) -> int:
        """Number of array elements (1 for a scalar); 0 for tuples and tokens."""
        if self.is_tuple or self.is_token:
            return 0
        n = 1
        for d in self.dimensions:
            n *= d
        return n

    @property
    def byte_size(self) -> int:
        """Bytes the array (or, for a tuple, all its leaves) occupies, without padding."""
        size = self._bytes
        if size is None:
            if self.is_tuple:
                size = sum(s.byte_size for s in self.leaves())
            else:
                bits = ELEMENT_BITS.get(self.element_type)
                size = 0 if bits is None else (self.num_elements * bits + 7) // 8
            object.__setattr__(self, "_bytes", size)
        return size

    def leaves(self) -> Iterator[Shape]:
        """Yield the array and token shapes inside this shape, depth first."""
        stack: list[Shape] = [self]
        while stack:
            shape = stack.pop()
            if shape.is_tuple:
                stack.extend(reversed(shape.tuple_shapes))
            else:
                yield shape

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where in the user's program an instruction came from.

    Attributes:
        file: Source file path as recorded by the framework.
        line: 1-based line number, or None when unknown.
        function: Function name, when the stack-frame tables give it.
        column: 1-based column, when known.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> inst = m.computation_map['fused_computation.4'].root
        >>> loc = m.source_location(inst)
        >>> loc.file.endswith('jax_mlp.py'), loc.line
        (True, 45)
    """

    file: str
    line: int | None = None
    function: str | None = None
    column: int | None = None

    def __str__(self) -> str:
        text = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{text} ({self.function})" if self.function else text


@dataclass(frozen=True, slots=True)
class StackFrame:
    """One row of the `StackFrames` table, resolved through the other tables.

    Attributes:
        id: The frame id used by `metadata={... stack_frame_id=N}`.
        location: File, line and function of this frame.
        parent_id: The caller's frame id, or 0 at the outermost frame.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> frame = m.stack_frames[1]
        >>> frame.location.line, frame.parent_id
        (86, 0)
    """

    id: int
    location: SourceLocation
    parent_id: int = 0


class Metadata:
    """The parsed `metadata={...}` of an instruction.

    Kept as its text: the fields every analysis reads are parsed from it on first use
    (a big module holds hundreds of thousands, and a `parse` that reads none of them
    need not pay for them), then read as plain attributes; the rest are read on demand
    (`fields`). Immutable, compared and hashed by its fields and text, as a frozen
    dataclass would be.

    Attributes:
        op_type: TensorFlow op type (`MatMul`, `Relu`), when present.
        op_name: TensorFlow op name or JAX op path (`jit(mlp)/dot_general`).
        source_file: Inline `source_file=`, when present.
        source_line: Inline `source_line=`, when present.
        stack_frame_id: Index into the module's stack frames, when present.
        text: The `{...}` exactly as printed.
    """

    __slots__ = ("op_name", "op_type", "source_file", "source_line", "stack_frame_id", "text")
    op_type: str | None
    op_name: str | None
    source_file: str | None
    source_line: int | None
    stack_frame_id: int | None
    text: str

    def __init__(
        self,
        op_type: str | None = None,
        op_name: str | None = None,
        source_file: str | None = None,
        source_line: int | None = None,
        stack_frame_id: int | None = None,
        text: str = "{}",
    ) -> None:
        _set(self, "text", text)
        _set_fields(self, (op_type, op_name, source_file, source_line, stack_frame_id))

    @classmethod
    def of_text(cls, text: str) -> Metadata:
        """The metadata printed as `text` (braces included), its fields read on first use."""
        md = _new(cls)
        _set(md, "text", text)
        return md

    def __getattr__(self, name: str) -> object:
        # Only reached for a slot not set yet: the fields of metadata made `of_text`.
        if name not in _METADATA_FIELDS or name == "text":
            raise AttributeError(name)
        m = _CANONICAL_METADATA.fullmatch(self.text)
        if m is not None:  # as XLA prints it, no escapes: the same fields, faster
            op_type, op_name, source_file, line, frame = m.groups()
            _set(self, "op_type", None if op_type is None else intern(op_type))
            _set(self, "op_name", op_name)
            _set(self, "source_file", None if source_file is None else intern(source_file))
            _set(self, "source_line", None if line is None else int(line))
            _set(self, "stack_frame_id", None if frame is None else int(frame))
            return object.__getattribute__(self, name)
        # The raw pairs (a key given twice keeps its last value, as in `fields`), and
        # only the five fields unquoted.
        raw = dict(KEY_VALUE.findall(self.text[1:-1]))
        op_type, source_file = raw.get("op_type"), raw.get("source_file")
        # Interned: a big module repeats a few op types and files on every instruction.
        op_name = raw.get("op_name")
        _set(self, "op_type", None if op_type is None else intern(_value(op_type)))
        _set(self, "op_name", None if op_name is None else _value(op_name))
        _set(self, "source_file", None if source_file is None else intern(_value(source_file)))
        _set(self, "source_line", small_int(raw.get("source_line")))
        _set(self, "stack_frame_id", small_int(raw.get("stack_frame_id")))
        return object.__getattribute__(self, name)

    @property
    def fields(self) -> dict[str, str]:
        """Every `key=value` pair exactly as printed (strings unquoted), in order."""
        return metadata_fields(self.text)

    def with_stack_frame_id(self, stack_frame_id: int | None) -> Metadata:
        """This metadata with another stack frame id (its text unchanged), as
        `dataclasses.replace` gives a dataclass."""
        return Metadata(
            self.op_type,
            self.op_name,
            self.source_file,
            self.source_line,
            stack_frame_id,
            self.text,
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: Metadata is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: Metadata is immutable")

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _METADATA_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        pairs = zip(_METADATA_FIELDS, self._key(), strict=True)
        return "Metadata(" + ", ".join(f"{n}={v!r}" for n, v in pairs) + ")"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Metadata, self._key())


_METADATA_FIELDS = ("op_type", "op_name", "source_file", "source_line", "stack_frame_id", "text")
# Metadata as XLA prints it (`OpMetadataToString`: its keys in this order, each at most
# once, strings without escapes): read in one match, as `KEY_VALUE` would read it.
# Anything else (another key, order or spacing, an escape) takes the general path.
_STR = r'"([^"\\\n]*+)"'
_NUM = r"([0-9]{1,18}+)"
_END = r"(?: |(?=\}))"  # each pair ends at a blank, or at the closing brace
_CANONICAL_METADATA = re.compile(
    r"\{"
    rf"(?:op_type={_STR}{_END})?"
    rf"(?:op_name={_STR}{_END})?"
    rf"(?:source_file={_STR}{_END})?"
    rf"(?:source_line={_NUM}{_END})?"
    rf"(?:source_end_line=[0-9]{{1,18}}+{_END})?"
    rf"(?:source_column=[0-9]{{1,18}}+{_END})?"
    rf"(?:source_end_column=[0-9]{{1,18}}+{_END})?"
    rf"(?:stack_frame_id={_NUM}{_END})?"
    r"\}"
)
_new = object.__new__
_set = object.__setattr__


def _set_fields(md: Metadata, values: tuple[object, ...]) -> None:
    for name, value in zip(_METADATA_FIELDS, values, strict=False):
        _set(md, name, value)


def _value(raw: str) -> str:
    """A value as `metadata_fields` gives it: strings unquoted."""
    return unescape(raw[1:-1]) if raw.startswith('"') else raw


# `key=value` inside `{...}`: values are quoted strings or bare words. The lookbehind
# keeps `findall` from starting inside a key: without it a long word with no `=` is
# re-scanned from each of its characters (10k characters took 4 s).
KEY_VALUE = re.compile(r'(?<![\w\-])([\w\-]++)\s*+=\s*+("(?:[^"\\]++|\\.)*+"|[^\s,}]++)')


def metadata_fields(text: str) -> dict[str, str]:
    """The `key=value` pairs of a `{...}` attribute such as `metadata=`, strings unquoted.

    Args:
        text: The attribute's value, braces included.
    """
    fields = {}
    for key, value in KEY_VALUE.findall(text[1:-1]):
        fields[key] = unescape(value[1:-1]) if value.startswith('"') else value
    return fields


@dataclass(frozen=True, slots=True)
class CalledComputation:
    """A reference from an instruction to a computation.

    Attributes:
        role: The attribute it came from: `calls`, `to_apply`, `condition`, `body`,
            `branch_computations`, `true_computation`, `false_computation`,
            `called_computations`, `select`, `scatter`, ...
        name: The called computation's name (no sigil).
    """

    role: str
    name: str

    @classmethod
    def _make(cls, role: str, name: str) -> CalledComputation:
        """`CalledComputation(role, name)` for the parser: the same object, without the
        frozen dataclass's `__setattr__` per field (half the cost)."""
        call = _new(cls)
        _set(call, "role", role)
        _set(call, "name", name)
        return call


class Instruction(NamedTuple):
    """One HLO instruction.

    A named tuple rather than a frozen dataclass: a big module holds hundreds of
    thousands, and a frozen dataclass's `__init__` (one `object.__setattr__` per field)
    costs ten times what building a tuple does (most of the parse, measured).

    Attributes:
        name: Instruction name without sigil, unique within its computation.
        opcode: `add`, `fusion`, `custom-call`, ... (unknown opcodes are kept too).
        shape: The result shape.
        operands: Operand instruction names, in order.
        attributes: Every attribute after the operand list, verbatim, in order.
        called: Computations this instruction calls, with their roles, in order.
        metadata: The parsed `metadata={...}`, or None.
        is_root: Whether it is its computation's `ROOT`.
        literal: For `constant`, the literal text; for `parameter`, the number; for
            `iota`/`rng`/..., the raw text between the parentheses when it names no
            operands. Empty otherwise.
        line: 1-based line in the source text where the instruction starts.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> root = m.computation_map['fused_computation.4'].root
        >>> root.name, root.opcode, root.operands, root.shape.text
        ('multiply.1', 'multiply', ('param_0.4', 'broadcast.11'), 'f32[32,10]{1,0}')
    """

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    attributes: Mapping[str, str]
    called: tuple[CalledComputation, ...]
    metadata: Metadata | None
    is_root: bool
    literal: str
    line: int

    @property
    def parameter_number(self) -> int | None:
        """The `parameter(N)` number, or None for other opcodes."""
        return int(self.literal) if self.opcode == "parameter" else None

    @property
    def fusion_kind(self) -> str | None:
        """`kLoop`, `kInput`, `kOutput` or `kCustom` for fusions, else None."""
        return self.attributes.get("kind") if self.opcode == "fusion" else None

    @property
    def custom_call_target(self) -> str | None:
        """The unquoted `custom_call_target`, or None."""
        raw = self.attributes.get("custom_call_target")
        return _unquote(raw) if raw is not None else None

    @property
    def backend_config(self) -> Any:
        """The backend_config parsed as JSON, or None when absent or not JSON.

        XLA prints it either as a JSON object (`backend_config={...}`) or as a quoted,
        escaped string (`backend_config="{...}"`); both forms are accepted. Treat the
        result as read-only: instructions printed with the same config share it.
        """
        raw = self.attributes.get("backend_config")
        return None if raw is None else _backend_config(raw)

    def calls(self, role: str | None = None) -> list[str]:
        """Names of the called computations, optionally only those of one role."""
        return [c.name for c in self.called if role is None or c.role == role]


# The named tuple's generated `__new__` lives in `collections`' namespace, where its string
# annotations name nothing; give it the resolved ones (documentation tools and
# `typing.get_type_hints` read them).
Instruction.__new__.__annotations__ = {**get_type_hints(Instruction), "return": Instruction}


@dataclass(frozen=True)
class Computation:
    """One HLO computation.

    Attributes:
        name: Name without sigil.
        instructions: Instructions in text order.
        is_entry: Whether it is the module's `ENTRY` computation.
        execution_thread: The `execution_thread="..."` of the computation, if printed.
        line: 1-based line of its header in the source text.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> comp = m.computation_map['fused_computation.4']
        >>> len(comp.instructions), comp.root.opcode, [p.name for p in comp.parameters]
        (4, 'multiply', ['param_0.4', 'param_1.5'])
    """

    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool = False
    execution_thread: str | None = None
    line: int = 0

    @classmethod
    def _make(
        cls,
        name: str,
        instructions: tuple[Instruction, ...],
        is_entry: bool,
        execution_thread: str | None,
        line: int,
    ) -> Computation:
        """`Computation(...)` for the parser, which makes thousands: the same object,
        without the frozen dataclass's `__setattr__` per field (half the cost)."""
        comp = object.__new__(cls)
        comp.__dict__.update(
            name=name,
            instructions=instructions,
            is_entry=is_entry,
            execution_thread=execution_thread,
            line=line,
        )
        return comp

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # Without the `by_name` cache, which would double what is sent.
        return (
            Computation._make,
            (self.name, self.instructions, self.is_entry, self.execution_thread, self.line),
        )

    @cached_property
    def by_name(self) -> Mapping[str, Instruction]:
        """Instructions by name."""
        return {i.name: i for i in self.instructions}

    @property
    def root(self) -> Instruction:
        """The `ROOT` instruction (the last one when none is marked, as XLA does)."""
        for inst in reversed(self.instructions):
            if inst.is_root:
                return inst
        return self.instructions[-1]

    @property
    def parameters(self) -> list[Instruction]:
        """Parameter instructions ordered by parameter number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number or 0)


@dataclass(frozen=True, slots=True)
class ParseStats:
    """What the tolerant parser kept without understanding it.

    Attributes:
        unknown_opcodes: Opcodes not in XLA's opcode list, with their counts.
        unparsed: One `line: text` entry per piece kept verbatim and not understood.

    Example:
        >>> m = hloscope.parse_module('HloModule m\\nENTRY e {\\n  ROOT x = f32[] my-new-op()\\n}')
        >>> dict(m.stats.unknown_opcodes)
        {'my-new-op': 1}
    """

    unknown_opcodes: Mapping[str, int] = field(default_factory=dict)
    unparsed: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """How many things were not understood."""
        return sum(self.unknown_opcodes.values()) + len(self.unparsed)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # Read-only mappings (MappingProxyType) do not pickle: travel as dicts.
        return (_stats, (dict(self.unknown_opcodes), self.unparsed))


@dataclass(frozen=True)
class HloModule:
    """A parsed `HloModule`.

    Attributes:
        name: The module name from the `HloModule` line.
        attributes: Header attributes verbatim (`is_scheduled`,
            `entry_computation_layout`, `num_partitions`, `input_output_alias`, ...).
        computations: Computations in text order.
        stack_frames: Resolved `StackFrames` table rows by id (empty when absent).
        stats: What the tolerant parser did not understand.
        path: The file the module was read from, when it came from a file.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> m.entry.name, m.instruction_count, len(m.fused_computations)
        ('main.3', 125, 11)
    """

    name: str
    attributes: Mapping[str, str]
    computations: tuple[Computation, ...]
    stack_frames: Mapping[int, StackFrame] = field(default_factory=dict)
    stats: ParseStats = field(default_factory=ParseStats)
    path: str | None = None

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # Sent whole to or from a worker process (`hloscope.analysis.pool`): read-only
        # mappings travel as dicts, caches (computation_map, ...) not at all.
        return (
            _module,
            (
                self.name,
                dict(self.attributes),
                self.computations,
                dict(self.stack_frames),
                self.stats,
                self.path,
            ),
        )

    @cached_property
    def computation_map(self) -> Mapping[str, Computation]:
        """Computations by name."""
        return {c.name: c for c in self.computations}

    @cached_property
    def entry(self) -> Computation:
        """The entry computation (the last one when none is marked `ENTRY`, as XLA does)."""
        for comp in self.computations:
            if comp.is_entry:
                return comp
        return self.computations[-1]

    @property
    def is_scheduled(self) -> bool:
        """Whether the header says `is_scheduled=true` (after-optimization modules do)."""
        return self.attributes.get("is_scheduled") == "true"

    @property
    def instruction_count(self) -> int:
        """Instructions in all computations, fused ones included."""
        return sum(len(c.instructions) for c in self.computations)

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        """Yield every (computation, instruction) pair in text order."""
        for comp in self.computations:
            for inst in comp.instructions:
                yield comp, inst

    @cached_property
    def fused_computations(self) -> frozenset[str]:
        """Names of computations called by a fusion instruction (`calls=`)."""
        return frozenset(
            c.name
            for _, inst in self.instructions()
            if inst.opcode == "fusion"
            for c in inst.called
        )

    def source_location(self, inst: Instruction) -> SourceLocation | None:
        """Where `inst` came from: its stack frame, else its inline source_file/line."""
        md = inst.metadata
        if md is None:
            return None
        if md.stack_frame_id is not None:
            frame = self.stack_frames.get(md.stack_frame_id)
            if frame is not None:
                return frame.location
        if md.source_file is not None:
            return _inline_location(md.source_file, md.source_line)
        return None

    def stack(self, inst: Instruction) -> list[SourceLocation]:
        """The full call stack of `inst`, innermost frame first (may be empty)."""
        md = inst.metadata
        out: list[SourceLocation] = []
        frame_id = md.stack_frame_id if md is not None else None
        seen: set[int] = set()
        while frame_id and frame_id not in seen:
            seen.add(frame_id)
            frame = self.stack_frames.get(frame_id)
            if frame is None:
                break
            out.append(frame.location)
            frame_id = frame.parent_id
        return out


def _stats(unknown_opcodes: dict[str, int], unparsed: tuple[str, ...]) -> ParseStats:
    return ParseStats(MappingProxyType(unknown_opcodes), unparsed)


def _module(
    name: str,
    attributes: dict[str, str],
    computations: tuple[Computation, ...],
    stack_frames: dict[int, StackFrame],
    stats: ParseStats,
    path: str | None,
) -> HloModule:
    return HloModule(
        name,
        MappingProxyType(attributes),
        computations,
        MappingProxyType(stack_frames),
        stats,
        path,
    )


@lru_cache(maxsize=4096)
def _inline_location(file: str, line: int | None) -> SourceLocation:
    """Memoised: a big module asks for the same few thousand lines again and again."""
    return SourceLocation(file, line)


@lru_cache(maxsize=4096)
def _backend_config(raw: str) -> Any:
    """Memoised: the analyses ask each kernel's config several times."""
    return load_json(_unquote(raw) if raw.startswith('"') else raw)


def _unquote(raw: str) -> str:
    """Undo HLO's C-style string quoting (`"a\\"b"` -> `a"b`, see `unescape`)."""
    if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
        return unescape(raw[1:-1])
    return raw


_C_ESCAPE = re.compile(
    rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]++)|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.)|\Z)", re.S
)
_SIMPLE_ESCAPES = {
    b"n": b"\n", b"t": b"\t", b"r": b"\r", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?",
    b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v",
}  # fmt: skip


def unescape(text: str) -> str:
    """The value of the body of an HLO string literal; never raises.

    XLA prints strings with `absl::CEscape` and reads them with `absl::CUnescape`:
    `\\n`-style escapes, octal bytes (`\\303\\251` for `é`), `\\xHH`, `\\uXXXX` and
    `\\UXXXXXXXX`. What XLA would reject is kept as written instead of failing: an
    unknown escape (`\\N{...}`, `\\q`), `\\x` without hex digits or above `\\xff`, a
    `\\u` naming a surrogate or no code point. Bytes that are not UTF-8 become U+FFFD.
    The result never holds a lone surrogate, so it can always be printed and encoded.

    Args:
        text: The characters between the quotes.

    Returns:
        The unescaped string.
    """
    if "\\" not in text:
        return text
    data = text.encode("utf-8", "backslashreplace")
    return _C_ESCAPE.sub(_c_escape, data).decode("utf-8", "replace")


def _c_escape(m: re.Match[bytes]) -> bytes:
    octal, hexa, u4, u8, other = m.groups()
    if octal is not None:
        value = int(octal, 8)
        return bytes([value]) if value <= 0xFF else m.group(0)
    if hexa is not None:
        digits = hexa.lstrip(b"0")
        return bytes([int(digits or b"0", 16)]) if len(digits) <= 2 else m.group(0)
    if u4 is not None or u8 is not None:
        code = int(u4 or u8, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return m.group(0)
        return chr(code).encode("utf-8")
    return _SIMPLE_ESCAPES.get(other, m.group(0)) if other is not None else m.group(0)


# Backend configs nest a few levels; past this depth the text is kept and not decoded
# (`json.loads` recurses once per level and would raise RecursionError).
_JSON_MAX_DEPTH = 100
_JSON_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.S)
# An escaped backslash, a surrogate pair, or a lone surrogate escape.
_JSON_SURROGATES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def load_json(text: str) -> Any:
    """`json.loads` that never raises: None for text that is not JSON or nests deeper
    than 100 levels; a lone surrogate escape (`\\ud800`) is kept as its six characters.
    """
    if text.count("[") + text.count("{") > _JSON_MAX_DEPTH and _json_depth(text) > _JSON_MAX_DEPTH:
        return None
    if "\\u" in text:
        text = _JSON_SURROGATES.sub(_keep_lone_surrogate, text)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _json_depth(text: str) -> int:
    depth = deepest = 0
    for m in _JSON_TOKENS.finditer(text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _keep_lone_surrogate(m: re.Match[str]) -> str:
    s = m.group(0)
    return "\\" + s if len(s) == 6 else s
