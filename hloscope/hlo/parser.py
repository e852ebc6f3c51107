"""HLO text -> `HloModule`: the first stage after capture.

The parser reads what XLA prints (`*.before_optimizations.txt`, `*_after_optimizations.txt`,
long and short text forms) and hand-written test modules. It is line-oriented and
regex-driven for speed; every instruction goes through one anchored match in the common
case and through a bracket-aware scanner otherwise. It is tolerant by default: unknown
opcodes and text it cannot interpret are kept and counted in `ParseStats`; `strict=True`
turns those into errors. Structurally broken input (unbalanced brackets, a truncated
computation, binary data, an empty file) always raises `HloParseError` with the file,
line, column and offending text.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

from hloscope.errors import HloParseError
from hloscope.hlo.model import (
    CalledComputation,
    Computation,
    HloModule,
    Instruction,
    Layout,
    Metadata,
    ParseStats,
    Shape,
    SourceLocation,
    StackFrame,
)
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES, KNOWN_OPCODES

__all__ = ["parse_file", "parse_module", "parse_modules", "split_lines", "split_modules"]

# ---------------------------------------------------------------------------------------
# Regular expressions. Possessive quantifiers (`*+`, `++`) keep failed matches linear.

_STR = r'"(?:[^"\\]++|\\.)*+"'
_NAME = r"[%@]?([\w.\-]+)"


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

_INSTRUCTION = re.compile(rf"\s*(ROOT\s+)?{_NAME}\s*=\s*(?:({_SHAPE})\s*)?([a-z][\w\-]*)\(")
# One whole instruction on one line: the fast path taken by nearly every line XLA prints.
_FULL_INSTRUCTION = re.compile(
    rf"\s*(ROOT\s+)?{_NAME}\s*=\s*(?:({_SHAPE})\s*)?([a-z][\w\-]*)"
    rf"\(((?:[^()]++|{_PARENS})*+)\)"
    rf"((?:\s*,\s*[\w\-]+\s*=\s*{_VALUE})*+)\s*"
)
_OPERAND_NAMES = re.compile(r"[%@]?([^\s,%@]+)")
_ATTRIBUTES = re.compile(rf"(?:\s*,\s*[\w\-]+\s*=\s*{_VALUE})*\s*")
_ATTRIBUTE = re.compile(rf"\s*,\s*([\w\-]+)\s*=\s*({_VALUE})")
_COMPUTATION = re.compile(
    rf"(ENTRY\s+)?{_NAME}\s*(?:(\((?:[^()]++|{_PARENS})*+\))\s*->\s*({_SHAPE}))?\s*\{{\s*"
)
_COMPUTATION_END = re.compile(r'\}\s*(?:,\s*execution_thread\s*=\s*"([^"]*)")?\s*')
_MODULE = re.compile(rf"HloModule\s+{_NAME}")
_TABLE_ROW = re.compile(r"(\d+)\s+(.*)")
_KEY_VALUE = re.compile(rf"([\w\-]+)\s*=\s*({_STR}|[^\s,}}]+)")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CALLED_NAME = re.compile(r"[%@]?([\w.\-]+)")
_DIM = re.compile(r"\s*(<=)?\s*(\d+|\?)\s*")
_TILE = re.compile(r"T\(([^)]*)\)")
_MEMORY_SPACE = re.compile(r"S\((\d+)\)")

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


# ---------------------------------------------------------------------------------------
# Public API


def parse_module(text: str, *, path: str | None = None, strict: bool = False) -> HloModule:
    """Parse the text of one HLO module.

    Args:
        text: HLO text as XLA prints it (one `HloModule`).
        path: File name used in error messages and recorded on the module.
        strict: Raise on anything the tolerant parser would only count.

    Returns:
        The parsed module.

    Raises:
        HloParseError: The text is not a well-formed HLO module, or `strict` is set and
            something was not understood.
    """
    # The parse allocates hundreds of thousands of objects and no cycles; the cyclic
    # collector would walk them all several times over for nothing.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _Parser(text, path, strict).parse()
    finally:
        if gc_was_enabled:
            gc.enable()


def parse_file(path: str | Path, *, strict: bool = False) -> HloModule:
    """Read and parse one HLO text file (see `parse_module`).

    Raises:
        HloParseError: The file is missing, unreadable, binary or not well-formed HLO.
    """
    return parse_module(_read_text(path), path=str(path), strict=strict)


def split_modules(text: str) -> list[tuple[int, str]]:
    """Split text holding several modules (FileCheck's `// -----` separators).

    Returns:
        `(first_line, chunk_text)` pairs, one per chunk that contains `HloModule`.
    """
    chunks: list[tuple[int, str]] = []
    start, lines = 1, list[str]()
    for number, line in enumerate(split_lines(text, keepends=True), 1):
        if line.strip().startswith("// -----"):
            chunks.append((start, "".join(lines)))
            start, lines = number + 1, []
        else:
            lines.append(line)
    chunks.append((start, "".join(lines)))
    return [(s, c) for s, c in chunks if "HloModule" in c]


def parse_modules(path: str | Path, *, strict: bool = False) -> list[HloModule]:
    """Parse a file that may hold several `// -----`-separated modules.

    Line numbers in errors and in the model refer to the whole file.
    """
    text = _read_text(path)
    modules = []
    for first_line, chunk in split_modules(text):
        padded = "\n" * (first_line - 1) + chunk  # keep line numbers file-relative
        modules.append(parse_module(padded, path=str(path), strict=strict))
    if not modules:
        raise HloParseError("no 'HloModule' in file", path=str(path))
    return modules


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Split on newlines only, as XLA does.

    `str.splitlines` also splits on U+2028, form feeds and other separators, which may
    appear inside quoted metadata (file paths, op names).
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    return [line + "\n" for line in lines] if keepends else lines


def _read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise HloParseError("no such file", path=str(path)) from None
    except IsADirectoryError:
        raise HloParseError("is a directory, not an HLO text file", path=str(path)) from None
    except OSError as e:
        raise HloParseError(f"cannot read: {e.strerror}", path=str(path)) from None
    if b"\0" in data[:65536]:
        raise HloParseError("binary data, not HLO text (a .pb dump?)", path=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise HloParseError("not UTF-8 text", path=str(path), line=line) from None


# ---------------------------------------------------------------------------------------
# Small parsers for pieces, memoised: real modules repeat the same shapes and metadata.

_shape_cache: dict[str, Shape] = {}
_metadata_cache: dict[str, Metadata] = {}


def parse_shape(text: str) -> Shape:
    """Parse a shape such as `f32[8,<=16]{1,0:T(8,128)S(1)}` or `(f32[2], token[])`.

    Raises:
        ValueError: The text is not a shape.
    """
    shape = _shape_cache.get(text)
    if shape is None:
        shape = _parse_shape(text.strip())
        if len(_shape_cache) < 100_000:
            _shape_cache[text] = shape
    return shape


def _parse_shape(text: str) -> Shape:
    if text.startswith("("):
        body = _COMMENT.sub("", text[1:-1]) if "/*" in text else text[1:-1]
        parts = _split_top(body)
        elements = tuple(_parse_shape(p.strip()) for p in parts if p.strip())
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
                raise ValueError(f"bad dimension {d!r} in shape {text!r}")
            size = m.group(2)
            dims.append(-1 if size == "?" else int(size))
            dynamic.append(bool(m.group(1)) or size == "?")
    rest = text[close + 1 :].strip()
    layout = None
    if rest:
        if not (rest.startswith("{") and rest.endswith("}")):
            raise ValueError(f"bad layout in shape {text!r}")
        layout = _parse_layout(rest[1:-1])
    return Shape(element_type, tuple(dims), tuple(dynamic), layout, (), text)


def _parse_layout(text: str) -> Layout:
    order, _, extras = text.partition(":")
    minor_to_major = tuple(int(d) for d in order.split(",") if d.strip())
    tiles = tuple(
        tuple(-1 if t.strip() == "*" else int(t) for t in m.split(",") if t.strip())
        for m in _TILE.findall(extras)
    )
    space = _MEMORY_SPACE.search(extras)
    return Layout(minor_to_major, tiles, int(space.group(1)) if space else None, text)


def _parse_metadata(raw: str) -> Metadata:
    md = _metadata_cache.get(raw)
    if md is not None:
        return md
    fields = {}
    for key, value in _KEY_VALUE.findall(raw[1:-1]):
        if value.startswith('"'):
            value = _unescape(value[1:-1])
        fields[key] = value
    source_line = fields.get("source_line")
    frame = fields.get("stack_frame_id")
    md = Metadata(
        op_type=fields.get("op_type"),
        op_name=fields.get("op_name"),
        source_file=fields.get("source_file"),
        source_line=int(source_line) if source_line and source_line.isdigit() else None,
        stack_frame_id=int(frame) if frame and frame.isdigit() else None,
        fields=MappingProxyType(fields),
    )
    if len(_metadata_cache) < 100_000:
        _metadata_cache[raw] = md
    return md


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return (
        s.encode("utf-8", "backslashreplace")
        .decode("unicode_escape")
        .encode("latin-1", "backslashreplace")
        .decode("utf-8", "replace")
    )


def _brackets(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
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


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets and strings (the slow, general path)."""
    parts: list[str] = []
    start = 0
    for i, c, depth in _brackets(text):
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _bracket_error(text: str) -> tuple[int, str] | None:
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


def _open_count(line: str) -> int:
    """Net number of brackets a line opens, ignoring strings and comments."""
    if '"' in line:
        line = re.sub(_STR, '""', line)
    if "/*" in line:
        line = _COMMENT.sub("", line)
    return (
        line.count("(") + line.count("{") + line.count("[")
        - line.count(")") - line.count("}") - line.count("]")
    )  # fmt: skip


# ---------------------------------------------------------------------------------------
# The module parser


class _Parser:
    def __init__(self, text: str, path: str | None, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.lines = split_lines(text)
        self.i = 0  # index of the next line to read
        self.unknown_opcodes: dict[str, int] = {}
        self.unparsed: list[str] = []
        self.last_joined = 0  # first line of the last statement that spanned lines

    # -- errors and tolerance ---------------------------------------------------------

    def error(self, message: str, line: int, column: int = 0, text: str = "") -> HloParseError:
        return HloParseError(message, path=self.path, line=line, column=column, text=text)

    def not_understood(self, line: int, what: str, text: str) -> None:
        if self.strict:
            raise self.error(f"{what} (strict mode)", line, text=text)
        self.unparsed.append(f"{line}: {text.strip()}")

    # -- reading statements -----------------------------------------------------------

    def statements(self) -> Iterator[tuple[int, str, re.Match[str] | None]]:
        """Yield (line number, statement, instruction match or None).

        Lines are joined until their brackets balance; comments are dropped. A line that
        is a whole instruction is matched once and yielded at once (the fast path).
        """
        lines = self.lines
        n = len(lines)
        full = _FULL_INSTRUCTION.fullmatch
        while self.i < n:
            number = self.i + 1
            line = lines[self.i]
            self.i = number
            m = full(line)
            if m is not None:
                yield number, line, m
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("//"):
                continue
            if stripped == "}" or (stripped[-1] == "{" and _is_header(stripped)):
                yield number, stripped, None  # a computation's end or header
                continue
            if "/*" in line:
                line = _COMMENT.sub("", line)
                if not line.strip():
                    continue
            if "//" in line and '"' not in line:
                line = line[: line.index("//")]
            depth = _open_count(line)
            if (depth > 0 or line.rstrip().endswith(",")) and not _is_header(line):
                parts = [line]
                while (depth > 0 or parts[-1].rstrip().endswith(",")) and self.i < n:
                    nxt = lines[self.i]
                    self.i += 1
                    if nxt.strip().startswith("//"):
                        continue
                    if "/*" in nxt:
                        nxt = _COMMENT.sub("", nxt)
                    parts.append(nxt)
                    depth += _open_count(nxt)
                if depth > 0:
                    joined = "\n".join(parts)
                    at, why = _bracket_error(joined) or (0, "unbalanced brackets")
                    raise self.error(
                        f"{why}: the file ends inside this statement",
                        number,
                        at + 1,
                        joined[at : at + 60],
                    )
                line = " ".join(p.strip() for p in parts)
                self.last_joined = number
            yield number, line, full(line)

    # -- top level --------------------------------------------------------------------

    def parse(self) -> HloModule:
        if not self.lines:
            raise self.error("empty file: expected 'HloModule <name>'", 1)
        stream = self.statements()
        header = next(stream, None)
        if header is None:
            raise self.error("no HLO text: expected 'HloModule <name>'", 1)
        number, text, _ = header
        m = _MODULE.match(text.strip())
        if m is None:
            raise self.error("expected 'HloModule <name>'", number, 1, text)
        name = m.group(1)
        attributes = self.attributes(text.strip()[m.end() :], number)

        tables: dict[str, dict[int, str]] = {}
        computations: list[Computation] = []
        current_table: dict[int, str] | None = None
        for number, text, _ in stream:
            s = text.strip()
            if s in _TABLES:
                current_table = tables.setdefault(s, {})
                continue
            if current_table is not None:
                row = _TABLE_ROW.fullmatch(s)
                if row is not None:
                    current_table[int(row.group(1))] = row.group(2)
                    continue
                current_table = None
            if s.endswith("{"):
                computations.append(self.computation(number, s, stream))
                continue
            self.not_understood(number, "unexpected text between computations", s)

        if not computations:
            raise self.error("module has no computations", len(self.lines))
        return HloModule(
            name=name,
            attributes=MappingProxyType(attributes),
            computations=tuple(computations),
            stack_frames=MappingProxyType(self.stack_frames(tables)),
            stats=ParseStats(MappingProxyType(self.unknown_opcodes), tuple(self.unparsed)),
            path=self.path,
        )

    def attributes(self, text: str, line: int) -> dict[str, str]:
        """Parse `, key=value, key=value` (header and instruction attributes)."""
        if not text or text.isspace():
            return {}
        if _ATTRIBUTES.fullmatch(text):
            return dict(_ATTRIBUTE.findall(text))
        return self.attributes_slow(text, line)

    def attributes_slow(self, text: str, line: int) -> dict[str, str]:
        problem = _bracket_error(text)
        if problem is not None:
            at, why = problem
            raise self.error(why, line, 0, text[at : at + 60])
        out: dict[str, str] = {}
        parts = _split_top(text)
        if parts[0].strip():
            self.not_understood(line, "text before attributes", parts[0])
        for part in parts[1:]:
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                self.not_understood(line, "attribute without '='", part)
                continue
            out[key.strip()] = value.strip()
        return out

    # -- computations -----------------------------------------------------------------

    def computation(
        self, number: int, header: str, stream: Iterator[tuple[int, str, re.Match[str] | None]]
    ) -> Computation:
        m = _COMPUTATION.fullmatch(header)
        if m is None:
            raise self.error(
                "expected a computation header '[ENTRY] name (...) -> shape {'", number, 1, header
            )
        is_entry = m.group(1) is not None
        name = m.group(2)
        instructions: list[Instruction] = []
        scope: dict[str, Instruction] = {}
        execution_thread = None
        parse_instruction = self.instruction
        fast = self.fast_instruction
        for line, text, m in stream:
            if m is not None:
                inst = fast(line, m, scope)
            else:
                if text.lstrip()[:1] == "}":
                    end = _COMPUTATION_END.fullmatch(text.strip())
                    if end is not None:
                        execution_thread = end.group(1)
                        break
                inst = parse_instruction(line, text, scope)
            instructions.append(inst)
            scope[inst.name] = inst
        else:
            if self.last_joined > number:
                # A statement with an unclosed bracket swallowed the closing '}'.
                first = self.lines[self.last_joined - 1]
                at, why = _bracket_error(first) or (0, "unbalanced brackets")
                raise self.error(
                    f"{why}: the statement runs on to the end of computation '{name}'",
                    self.last_joined,
                    at + 1,
                    first[at : at + 60],
                )
            raise self.error(
                f"computation '{name}' is not closed with '}}' (truncated file?)", number, 1, header
            )
        if not instructions:
            raise self.error(f"computation '{name}' has no instructions", number, 1, header)
        return Computation(name, tuple(instructions), is_entry, execution_thread, number)

    # -- instructions -----------------------------------------------------------------

    def fast_instruction(
        self, line: int, m: re.Match[str], scope: Mapping[str, Instruction]
    ) -> Instruction:
        """Build an instruction from a `_FULL_INSTRUCTION` match (the fast path)."""
        rest = m.group(6)
        attributes = dict(_ATTRIBUTE.findall(rest)) if rest else None
        return self.build(line, m, m.group(5), attributes, scope)

    def instruction(self, line: int, text: str, scope: Mapping[str, Instruction]) -> Instruction:
        """Parse an instruction the fast path could not match (the general, slow path)."""
        m = _INSTRUCTION.match(text)
        if m is None:
            # For a statement joined from several lines, its first line says most.
            first = self.lines[line - 1] if line == self.last_joined else text
            problem = _bracket_error(first) or _bracket_error(text)
            if problem is not None:
                at, why = problem
                raise self.error(why, line, at + 1, first[at : at + 60])
            raise self.error(
                "expected an instruction 'name = shape opcode(operands)'", line, 1, text
            )
        start = m.end()
        close = text.find(")", start)
        if close < 0:
            raise self.error("missing ')' after operands", line, start, text[start - 1 :])
        if text.find("(", start, close) >= 0:
            close = self._matching_paren(text, start - 1, line)
        rest = text[close + 1 :]
        attributes = self.attributes(rest, line) if rest and not rest.isspace() else None
        return self.build(line, m, text[start:close], attributes, scope)

    def build(
        self,
        line: int,
        m: re.Match[str],
        inner: str,
        attrs: dict[str, str] | None,
        scope: Mapping[str, Instruction],
    ) -> Instruction:
        """Make the Instruction from the header match (groups 1-4), operand text and
        attributes; shared by the fast and the slow path."""
        is_root, name, shape_text, opcode = m.group(1, 2, 3, 4)
        shape: Shape | None = None
        if shape_text is not None:
            shape = _shape_cache.get(shape_text)
            if shape is None:
                try:
                    shape = parse_shape(shape_text)
                except ValueError as e:
                    raise self.error(str(e), line, m.start(3) + 1, shape_text) from None
        literal = ""
        operands: tuple[str, ...] = ()
        if opcode in _LITERAL_OPCODES:
            literal = inner.strip()
        elif inner and not inner.isspace():
            if "[" in inner or "/*" in inner or "(" in inner:
                operands = self.operands(inner, line)  # typed operands, comments
            else:
                operands = tuple(_OPERAND_NAMES.findall(inner))
        attributes: Mapping[str, str] = _EMPTY
        called: tuple[CalledComputation, ...] = ()
        metadata = None
        if attrs:
            raw_md = attrs.get("metadata")
            if raw_md is not None and raw_md[:1] == "{":
                metadata = _metadata_cache.get(raw_md) or _parse_metadata(raw_md)
            if not CALLED_COMPUTATION_ATTRIBUTES.isdisjoint(attrs):
                called = _called(attrs)
            attributes = MappingProxyType(attrs)
        if opcode not in KNOWN_OPCODES:
            if self.strict:
                raise self.error(
                    f"unknown opcode {opcode!r} (strict mode)", line, m.start(4) + 1, opcode
                )
            self.unknown_opcodes[opcode] = self.unknown_opcodes.get(opcode, 0) + 1
        if shape is None:
            shape = self.infer_shape(opcode, operands, scope, line, m.string)
        # What Instruction(...) makes, without the frozen dataclass's per-field
        # object.__setattr__: filling __dict__ at once is several times faster, which
        # matters at tens of thousands of instructions. The result is an equal instance.
        inst = _object_new(Instruction)
        _object_setattr(inst, "__dict__", {
            "name": name, "opcode": opcode, "shape": shape, "operands": operands,
            "attributes": attributes, "called": called, "metadata": metadata,
            "is_root": is_root is not None, "literal": literal, "line": line,
        })  # fmt: skip
        return inst

    def infer_shape(
        self,
        opcode: str,
        operands: tuple[str, ...],
        scope: Mapping[str, Instruction],
        line: int,
        text: str,
    ) -> Shape:
        """The shape XLA infers when the text omits it (`ROOT t = tuple(a, b)`)."""
        known = [scope[o].shape for o in operands if o in scope]
        if len(known) != len(operands) or not operands:
            raise self.error("instruction has no shape and it cannot be inferred", line, 1, text)
        if opcode == "tuple":
            inner = ", ".join(s.text for s in known)
            return Shape("tuple", tuple_shapes=tuple(known), text=f"({inner})")
        return known[0]

    def operands(self, inner: str, line: int) -> tuple[str, ...]:
        if "/*" in inner:
            inner = _COMMENT.sub("", inner)
        # Typed operands (`f32[2,3]{1,0} %a`) have commas inside brackets.
        parts = _split_top(inner) if "[" in inner or "(" in inner else inner.split(",")
        names = []
        for part in parts:
            token = part.rsplit(None, 1)[-1] if part.strip() else ""
            if not token:
                raise self.error("empty operand", line, 0, inner)
            names.append(token.lstrip("%@"))
        return tuple(names)

    def _matching_paren(self, text: str, open_at: int, line: int) -> int:
        for i, c, depth in _brackets(text, open_at):
            if c in ")]}" and depth == 1:
                return i
        raise self.error("unclosed '(' in operand list", line, open_at + 1, text[open_at:])

    # -- stack frame tables -------------------------------------------------------------

    def stack_frames(self, tables: dict[str, dict[int, str]]) -> dict[int, StackFrame]:
        if "StackFrames" not in tables:
            return {}
        files = {k: _unquote_row(v) for k, v in tables.get("FileNames", {}).items()}
        functions = {k: _unquote_row(v) for k, v in tables.get("FunctionNames", {}).items()}
        locations: dict[int, SourceLocation] = {}
        for k, v in tables.get("FileLocations", {}).items():
            f = _fields(v)
            line = f.get("line", "")
            column = f.get("column", "")
            locations[k] = SourceLocation(
                files.get(_int(f.get("file_name_id")), "?"),
                int(line) if line.isdigit() else None,
                functions.get(_int(f.get("function_name_id"))),
                int(column) if column.isdigit() else None,
            )
        frames = {}
        for k, v in tables["StackFrames"].items():
            f = _fields(v)
            # XLA prints parent_frame_id one above the parent's id: the outermost frame
            # shows 1 (no parent), and a frame called from frame N shows N + 1.
            parent = _int(f.get("parent_frame_id")) - 1
            location = locations.get(_int(f.get("file_location_id")), SourceLocation("?"))
            frames[k] = StackFrame(k, location, max(parent, 0))
        return frames


_object_new = object.__new__
_object_setattr = object.__setattr__


def _called(attributes: Mapping[str, str]) -> tuple[CalledComputation, ...]:
    return tuple(
        CalledComputation(role, callee)
        for role, value in attributes.items()
        if role in CALLED_COMPUTATION_ATTRIBUTES
        for callee in _CALLED_NAME.findall(value)
    )


_LITERAL_OPCODES = frozenset(
    {"constant", "parameter", "iota", "rng-get-and-update-state", "partition-id", "replica-id"}
)
_EMPTY: MappingProxyType[str, str] = MappingProxyType({})


def _is_header(line: str) -> bool:
    """Whether a line opening a `{` starts a computation (not an instruction)."""
    s = line.strip()
    return s.endswith("{") and _COMPUTATION.fullmatch(s) is not None


def _fields(text: str) -> dict[str, str]:
    return dict(_KEY_VALUE.findall(text.strip().strip("{}")))


def _int(value: str | None) -> int:
    return int(value) if value and value.lstrip("-").isdigit() else 0


def _unquote_row(value: str) -> str:
    value = value.strip()
    return _unescape(value[1:-1]) if value.startswith('"') and value.endswith('"') else value
