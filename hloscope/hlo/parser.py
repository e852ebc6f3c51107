"""HLO text -> `HloModule`: the first stage after capture.

The parser reads what XLA prints (`*.before_optimizations.txt`, `*_after_optimizations.txt`,
long and short text forms) and hand-written test modules. It is line-oriented and
regex-driven for speed; every instruction goes through one anchored match in the common
case and through a bracket-aware scanner otherwise. It is tolerant by default: unknown
opcodes and text it cannot interpret are kept and counted in `ParseStats`; `strict=True`
turns those into errors. Structurally broken input (unbalanced brackets, a truncated
computation, binary data, an empty file) always raises `HloParseError` with the file,
line, column and offending text, and so does what XLA's own parser rejects and the
analyses rely on: a call cycle or a missing callee, an operand not defined before its
use, a name defined twice, parameter numbers other than 0..n-1, integers that are not
64-bit, arrays past 2^63 bytes. Any other exception is a bug: every regex runs in
linear time and no recursion depth depends on the input (tests/hlo/test_fuzz.py).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from sys import intern
from types import MappingProxyType
from typing import NoReturn

from hloscope.errors import HloParseError
from hloscope.hlo import lexical
from hloscope.hlo.calls import called_computations, called_in, find_cycle
from hloscope.hlo.lexical import (
    COMPUTATION,
    COMPUTATION_END,
    INSTRUCTION,
    MODULE,
    OPERAND_NAMES,
    TABLE_LINE,
    TABLE_ROW,
    TABLES,
    Attributes,
    bracket_error,
    brackets,
    open_count,
    parse_metadata,
    parse_shape,
    shape_cache,
    split_top,
    strip_comments,
)
from hloscope.hlo.model import (
    KEY_VALUE,
    CalledComputation,
    Computation,
    HloModule,
    Instruction,
    Metadata,
    ParseStats,
    Shape,
    SourceLocation,
    StackFrame,
    small_int,
    to_int,
    unescape,
)
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES, KNOWN_OPCODES
from hloscope.hlo.text import read_text, split_modules

__all__ = ["parse_file", "parse_module", "parse_modules"]

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

    Example:
        >>> m = hloscope.parse_module('HloModule m\\nENTRY e {\\n  ROOT p = f32[4]{0} parameter(0)\\n}')
        >>> m.name, m.instruction_count, m.entry.root.opcode
        ('m', 1, 'parameter')
    """
    with paused_gc():
        return _Parser(text, path, strict).parse()


@contextmanager
def paused_gc(*, kept: bool = False) -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block.

    Parsing and analysing a big module allocate millions of objects and no reference
    cycles; the collector would walk them all several times over for nothing (a
    quarter of the analysis of a 500k-instruction module, measured). Nests.

    On leaving, what the block made is moved to the oldest generation unwalked
    (`gc.freeze` then `gc.unfreeze`: two list splices), so the first collection after
    it does not walk it all as young objects (7 ms of the 105 ms parse of the 3.4 MB
    module). Not when something is frozen already (`freeze_kept`, or `gc.freeze`
    elsewhere): unfreezing would undo that. Then, with `kept`, what the block made is
    frozen with it: made late for what a command keeps to the end (the kernels and
    placements of a report read back, made as it is written), it is kept to the end
    too, and walked by no collection meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # `gc.get_freeze_count` walks every frozen object: not asked once this
            # process froze its own (a page's blocks are hundreds, its objects millions)
            if _FROZEN[0] or gc.get_freeze_count():
                if kept:
                    gc.freeze()
            else:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# Whether this process froze its objects to keep them to the end (`freeze_kept`).
_FROZEN = [False]


def freeze_kept() -> None:
    """Freeze every object now (`gc.freeze`: the collector never walks them again), as a
    command that keeps its objects to the end does (`cli.teardown.keep`), and say so to
    `paused_gc`."""
    gc.freeze()
    _FROZEN[0] = True


def parse_file(path: str | Path, *, strict: bool = False) -> HloModule:
    """Read and parse one HLO text file (see `parse_module`).

    Raises:
        HloParseError: The file is missing, unreadable, binary or not well-formed HLO.

    Example:
        >>> path = "tests/data/jax_mlp/module_0030.jit_mlp.cpu_after_optimizations.txt"
        >>> m = hloscope.parse_file(path)
        >>> m.name, len(m.computations), m.is_scheduled
        ('jit_mlp', 14, True)
    """
    return parse_module(read_text(path), path=str(path), strict=strict)


def parse_modules(path: str | Path, *, strict: bool = False) -> list[HloModule]:
    """Parse a file that may hold several `// -----`-separated modules.

    Line numbers in errors and in the model refer to the whole file.

    Example:
        >>> import tempfile, pathlib
        >>> one = 'HloModule {}\\nENTRY e {{\\n  ROOT p = f32[] parameter(0)\\n}}\\n'
        >>> path = pathlib.Path(tempfile.mkdtemp()) / 'two.hlo'
        >>> _ = path.write_text(one.format('a') + '// -----\\n' + one.format('b'))
        >>> [m.name for m in hloscope.parse_modules(path)]
        ['a', 'b']
    """
    text = read_text(path)
    modules = []
    for first_line, chunk in split_modules(text):
        padded = "\n" * (first_line - 1) + chunk  # keep line numbers file-relative
        modules.append(parse_module(padded, path=str(path), strict=strict))
    if not modules:
        raise HloParseError("no 'HloModule' in file", path=str(path), line=1, column=1)
    return modules


# ---------------------------------------------------------------------------------------
# The module parser


class _Parser:
    def __init__(self, text: str, path: str | None, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.text = text
        # Lines are sliced out as they are read, not split up front: a list of them
        # would hold a second copy of a text that may be hundreds of megabytes. (Looking
        # for a "\r" first: `replace` takes 20 times as long to find no "\r\n".)
        self.lf_text = text.replace("\r\n", "\n") if "\r" in text else text
        self.at = 0  # where the next line starts in lf_text
        self.i = 0  # lines read so far
        self.unknown_opcodes: dict[str, int] = {}
        self.unparsed: list[str] = []
        self.last_joined = 0  # first line of the last statement that spanned lines
        # Collected while building instructions, so the checks at the end of a
        # computation and of the module see only these, not every instruction again.
        self.parameters: list[str] = []  # the parameter numbers, as printed
        self.callers: list[Instruction] = []
        self.call_sites: dict[str, list[Instruction]] = {}  # computation -> its callers
        # Identical metadata (a module repeats it by the thousand) is one object.
        # None once the module shows it hardly repeats any (`remember`).
        self.metadata: dict[str, Metadata] | None = {}  # by the text of `metadata={...}`
        self.computations: list[Computation] = []
        self.open: _Body | None = None  # the computation being read
        self.tables: dict[str, dict[int, str]] = {}  # the stack frame tables by name
        self.table: dict[int, str] | None = None  # the one whose rows are being read

    # -- errors and tolerance ---------------------------------------------------------

    def error(self, message: str, line: int, column: int, text: str = "") -> HloParseError:
        """A parse error at a 1-based line and column (a column below 1 is shown as 1)."""
        return HloParseError(
            message, path=self.path, line=max(line, 1), column=max(column, 1), text=text
        )

    def not_understood(self, line: int, what: str, text: str) -> None:
        if self.strict:
            raise self.error(f"{what} (strict mode)", line, 1, text)
        self.unparsed.append(f"{line}: {text.strip()}")

    # -- reading statements -----------------------------------------------------------

    def statements(self) -> Iterator[tuple[int, str, re.Match[str] | None]]:
        """Yield (line number, statement, instruction match or None).

        Lines are joined until their brackets balance; comments are dropped. A line that
        is a whole instruction is matched once and yielded at once (the fast path).
        """
        n = len(self.lf_text)
        full = lexical.FULL_INSTRUCTION.fullmatch
        while self.at < n:
            line = self.next_line()
            number = self.i
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
                line = strip_comments(line)
                if not line.strip():
                    continue
            if "//" in line and '"' not in line:
                line = line[: line.index("//")]
            depth = open_count(line)
            if (depth > 0 or line.rstrip().endswith(",")) and not _is_header(line):
                parts = [line]
                while (depth > 0 or parts[-1].rstrip().endswith(",")) and self.at < n:
                    nxt = self.next_line()
                    if nxt.strip().startswith("//"):
                        continue
                    if "/*" in nxt:
                        nxt = strip_comments(nxt)
                    parts.append(nxt)
                    depth += open_count(nxt)
                if depth > 0:
                    joined = "\n".join(parts)
                    at, why = bracket_error(joined) or (0, "unbalanced brackets")
                    raise self.error(
                        f"{why}: the file ends inside this statement",
                        number,
                        at + 1,
                        joined[at : at + 60],
                    )
                # The first part keeps its indentation: columns on that line stay exact.
                line = " ".join([parts[0].rstrip(), *(p.strip() for p in parts[1:])])
                self.last_joined = number
            yield number, line, full(line)

    def next_line(self) -> str:
        """The next line, sliced out of the text."""
        text = self.lf_text
        end = text.find("\n", self.at)
        if end < 0:
            end = len(text)
        line = text[self.at : end]
        self.at = end + 1
        self.i += 1
        return line

    def line(self, number: int) -> str:
        """Line `number` (1-based) again, for an error message: found by counting, as
        errors are rare and lines are not kept."""
        text = self.lf_text
        start = 0
        for _ in range(number - 1):
            start = text.find("\n", start) + 1
            if start == 0:
                return ""
        end = text.find("\n", start)
        return text[start : end if end >= 0 else len(text)]

    # -- top level --------------------------------------------------------------------

    def parse(self) -> HloModule:
        if not self.lf_text:
            raise self.error("empty file: expected 'HloModule <name>'", 1, 1)
        self.check_unicode(self.text)
        stream = self.statements()
        header = next(stream, None)
        if header is None:
            raise self.error("no HLO text: expected 'HloModule <name>'", 1, 1)
        number, text, _ = header
        m = MODULE.match(text.strip())
        if m is None:
            raise self.error("expected 'HloModule <name>'", number, 1, text)
        name = m.group(1)
        offset = len(text) - len(text.lstrip()) + m.end()
        attributes = self.attributes(text.strip()[m.end() :], number, offset)

        while True:
            self.scan()  # the lines XLA prints, at C speed
            if self.open is None:
                self.scan_tables()
            item = next(stream, None)  # then anything else, statement by statement
            if item is None:
                break
            self.statement(*item)
        if self.open is not None:
            self.unclosed(self.open)
        computations = self.computations
        if not computations:
            raise self.error("module has no computations", self.i, 1)
        self.check_calls(computations)
        return HloModule(
            name=name,
            attributes=MappingProxyType(attributes),
            computations=tuple(computations),
            stack_frames=MappingProxyType(self.stack_frames(self.tables)),
            stats=ParseStats(MappingProxyType(self.unknown_opcodes), tuple(self.unparsed)),
            path=self.path,
        )

    def statement(self, number: int, text: str, m: re.Match[str] | None) -> None:
        """One statement read line by line (`statements`): a table row, a computation's
        header, an instruction or its end."""
        body = self.open
        if body is None:
            self.top_level(number, text)
            return
        if m is not None:
            inst = self.fast_instruction(number, m, body.scope)
        else:
            if text.lstrip()[:1] == "}":
                end = COMPUTATION_END.fullmatch(text.strip())
                if end is not None:
                    self.close(body, end.group(1))
                    return
            inst = self.instruction(number, text, body.scope)
        body.instructions.append(inst)
        body.scope[inst.name] = inst
        body.names[inst.name] = inst.name

    def top_level(self, number: int, text: str) -> None:
        """A statement between computations: a table name or row, or a header."""
        s = text.strip()
        if s in TABLES:
            self.table = self.tables.setdefault(s, {})
            return
        if self.table is not None:
            row = TABLE_ROW.fullmatch(s)
            if row is not None:
                self.table[self.row_id(row.group(1), number, text)] = row.group(2)
                return
            self.table = None
        if s.endswith("{"):
            self.open_computation(number, s)
            return
        self.not_understood(number, "unexpected text between computations", s)

    def open_computation(self, number: int, header: str) -> _Body:
        """Start reading the computation whose header is line `number`."""
        m = COMPUTATION.fullmatch(header)
        if m is None:
            raise self.error(
                "expected a computation header '[ENTRY] name (...) -> shape {'", number, 1, header
            )
        self.table = None
        body = self.open = _Body(m.group(2), m.group(1) is not None, number, header)
        return body

    def close(self, body: _Body, execution_thread: str | None) -> None:
        """The computation being read ends here: check it and keep it."""
        name, instructions = body.name, body.instructions
        if not instructions:
            raise self.error(f"computation '{name}' has no instructions", body.line, 1, body.header)
        if len(body.scope) != len(instructions):
            self.duplicate_name(name, instructions)
        numbers = self.parameters
        if numbers:
            # Mostly "0", "1", ... in order: compared at once, not read as integers.
            if numbers != _COUNTING[: len(numbers)]:
                self.check_parameters(name, [i for i in instructions if i.opcode == "parameter"])
            self.parameters = []
        if self.callers:
            self.call_sites.setdefault(name, []).extend(self.callers)
            self.callers = []
        self.computations.append(
            Computation._make(name, tuple(instructions), body.is_entry, execution_thread, body.line)
        )
        self.open = None

    def unclosed(self, body: _Body) -> NoReturn:
        """The text ended inside a computation."""
        if self.last_joined > body.line:
            # A statement with an unclosed bracket swallowed the closing '}'.
            first = self.line(self.last_joined)
            at, why = bracket_error(first) or (0, "unbalanced brackets")
            raise self.error(
                f"{why}: the statement runs on to the end of computation '{body.name}'",
                self.last_joined,
                at + 1,
                first[at : at + 60],
            )
        raise self.error(
            f"computation '{body.name}' is not closed with '}}' (truncated file?)",
            body.line,
            1,
            body.header,
        )

    def scan(self) -> None:
        """Read the text record by record (`RECORD`) from where it is, while each line
        is one the line-by-line way would read alone: a whole instruction inside a
        computation, a computation's header or end, a blank or comment line. Stop
        before the first line that is not one of these.

        The fast path of the parser, and most of its time: one `finditer` scan, and for
        each instruction only what the model holds eagerly (shape, operands, metadata
        text, called computations); its attributes stay text (`Attributes`) unless
        two of them name called computations (`RECORD` gives the one XLA prints).
        Anything unusual (no shape, typed operands, comments
        other than XLA's `/*index=N*/` among operands, a parameter number that is not a
        small plain integer, get-tuple-element, an unknown opcode, an error) is left to
        `build`, which the slow path uses too, so both give the same instruction.
        """
        body = self.open
        scope: dict[str, Instruction] = body.scope if body else {}
        names: dict[str, str] = body.names if body else {}
        append = body.instructions.append if body else None
        shapes = shape_cache
        memo = self.metadata
        opcodes, literals = _OPCODES, _LITERAL_OPCODES
        new = _new_tuple
        new_metadata = Metadata.of_text
        # Each record is one line: enumerate numbers them. The last record of the text
        # is always an empty "anything" match at its end, so the loop ends at a `break`.
        line, m = self.i, None
        for line, m in enumerate(lexical.RECORD.finditer(self.lf_text, self.at), self.i + 1):
            (root, name, shape_text, opcode, inner, rest, raw_md, calls_again, role, callee,
             end, thread, header, entry, computation, blank) = m.groups()  # fmt: skip
            if name is None:
                if blank is not None:
                    continue
                if end is not None and body is not None:
                    self.close(body, thread)
                    body = append = None
                    continue
                if header is not None and body is None:
                    body = self.open = _Body(computation, entry is not None, line, header.rstrip())
                    self.table = None
                    scope, names, append = body.scope, body.names, body.instructions.append
                    continue
                break
            if append is None:
                break  # an instruction outside a computation
            shape = shapes.get(shape_text)
            known_opcode = opcodes.get(opcode)
            literal = ""
            operands: tuple[str, ...] | None = ()  # None: left to `build`
            if opcode in literals:
                literal = inner.strip()
                if opcode == "parameter" and not (
                    len(literal) < 19 and literal.isdigit() and literal.isascii()
                ):
                    operands = None
            elif "[" in inner or "(" in inner:
                operands = None  # typed operands
            elif inner:
                # Each operand name becomes the defining instruction's own string (one
                # object per name). XLA prints them `%a, %b`, with `/*index=5*/` before
                # every fifth; other spellings are split by `OPERAND_NAMES`, or left to
                # `build` when they hold comments. A name not defined before, or a piece
                # of the split that is no name, is not in `names`: `build` says which.
                commented = "/*" in inner
                if commented:
                    inner = strip_comments(inner)
                try:
                    if inner[:1] == "%":
                        found = inner[1:].split(", %")
                        if len(found) == 1:
                            operands = (names[found[0]],)
                        elif len(found) == 2:
                            operands = (names[found[0]], names[found[1]])
                        else:
                            operands = tuple([names[o] for o in found])
                    elif commented:
                        operands = None
                    else:
                        operands = tuple([names[o] for o in OPERAND_NAMES.findall(inner)])
                except KeyError:
                    operands = None
            if (
                operands is None
                or shape is None
                or known_opcode is None
                or opcode == "get-tuple-element"
            ):
                inst = self.fast_instruction(line, self.line_match(m), scope)
                name = inst.name  # the object the instruction holds, for its users
            else:
                metadata = None
                if raw_md is not None and raw_md[:1] == "{":
                    if memo is None:
                        metadata = new_metadata(raw_md)
                    else:
                        metadata = memo.get(raw_md)
                        if metadata is None:
                            metadata = memo[raw_md] = new_metadata(raw_md)
                            if not len(memo) & 0x3FFF:
                                memo = self.remember(line)
                called: tuple[CalledComputation, ...] = ()
                if role is None:
                    attributes = Attributes(rest) if rest else _EMPTY
                elif calls_again is None:  # one attribute names computations: read it alone
                    attributes = Attributes(rest)
                    called = called_in(intern(role), callee)
                else:
                    attrs = self.shared_keys(lexical.ATTRIBUTE.findall(rest))
                    attributes = Attributes(rest, attrs)
                    called = called_computations(attrs)
                inst = new(
                    Instruction,
                    (name, known_opcode, shape, operands, attributes, called, metadata,
                     root is not None, literal, line),
                )  # fmt: skip
                if called:
                    self.callers.append(inst)
                if opcode == "parameter":
                    self.parameters.append(literal)
            append(inst)
            scope[name] = inst
            names[name] = name
        assert m is not None  # the text's last record
        self.at = m.start()
        self.i = line - 1

    def scan_tables(self) -> None:
        """Read the stack frame tables' names and rows (and blank lines) from where the
        text is, one regex match a line (`TABLE_LINE`), as `top_level` would; stop
        before any other line, left to the line-by-line reader. A module of a few
        hundred instructions may carry as many rows (a JAX module's call stacks)."""
        text, at, line = self.lf_text, self.at, self.i
        tables, table = self.tables, self.table
        match = TABLE_LINE.match
        while True:
            m = match(text, at)
            if m is None or m.end() == at:
                break
            key, value, name = m.groups()
            if name is not None:
                table = tables.setdefault(name, {})
            elif key is not None:
                if table is None:
                    break  # a row outside a table: an error, or not understood
                table[int(key)] = value
            at = m.end()
            line += 1
        self.at, self.i, self.table = at, line, table

    def check_unicode(self, text: str) -> None:
        """Reject lone surrogates: text decoded with `surrogateescape`, or built by a
        caller, may hold them, and they cannot be printed or encoded later."""
        if text.isascii():  # O(1) for the usual all-ASCII dump
            return
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            line = text.count("\n", 0, e.start) + 1
            column = e.start - text.rfind("\n", 0, e.start)
            raise self.error(
                "a lone surrogate: the text is not valid Unicode", line, column
            ) from None

    def row_id(self, text: str, line: int, statement: str) -> int:
        """The id that starts a stack-frame table row."""
        try:
            return to_int(text)
        except ValueError:
            column = statement.find(text) + 1
            raise self.error("table row id is not a 64-bit integer", line, column, text) from None

    def check_calls(self, computations: list[Computation]) -> None:
        """Every called computation exists, is defined once, and no computation calls
        itself, directly or through others.

        XLA's parser rejects all three ("computation does not exist" / "already
        exists"; it resolves names in text order, so a cycle cannot be written). The
        analyses walk the call graph and rely on it being finite and acyclic.
        """
        order = {c.name: i for i, c in enumerate(computations)}
        if len(order) != len(computations):
            self.duplicate_computation(computations)
        position_of = order.get
        forward = False  # a call to a computation defined later in the text
        for caller, callers in self.call_sites.items():
            position = order[caller]
            for inst in callers:
                for call in inst.called:
                    callee = position_of(call.name, -1)
                    if callee < 0:
                        raise self.call_error(
                            f"computation '{call.name}' does not exist", inst, call.name
                        )
                    if callee >= position:
                        forward = True
        # XLA prints callees first; then no cycle is possible and the search is skipped.
        cycle = find_cycle(self.call_sites) if forward else None
        if cycle is not None:
            path, inst = cycle
            raise self.call_error(
                f"computation '{path[0]}' calls itself: {' -> '.join(path)}", inst, path[-1]
            )

    def duplicate_computation(self, computations: list[Computation]) -> None:
        seen: set[str] = set()
        for comp in computations:
            if comp.name in seen:
                raise self.error(
                    f"computation '{comp.name}' is defined twice",
                    comp.line,
                    self.line(comp.line).find(comp.name) + 1,
                    comp.name,
                )
            seen.add(comp.name)

    def call_error(self, message: str, inst: Instruction, callee: str) -> HloParseError:
        line = self.line(inst.line)
        at = line.find(callee, line.find("(")) if callee else -1
        return self.error(message, inst.line, at + 1, line.strip())

    def attributes(self, text: str, line: int, offset: int) -> dict[str, str]:
        """Parse `, key=value, key=value` (header and instruction attributes).

        `offset` is where `text` starts in its line, for the column of an error.
        """
        if not text or text.isspace():
            return {}
        if lexical.ATTRIBUTES.fullmatch(text):
            return self.shared_keys(lexical.ATTRIBUTE.findall(text))
        return self.attributes_slow(text, line, offset)

    def attributes_slow(self, text: str, line: int, offset: int) -> dict[str, str]:
        problem = bracket_error(text)
        if problem is not None:
            at, why = problem
            raise self.error(why, line, offset + at + 1, text[at : at + 60])
        out: dict[str, str] = {}
        parts = split_top(text)
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

    def duplicate_name(self, name: str, instructions: list[Instruction]) -> None:
        """XLA: "instruction already exists". A second definition would also let operands
        form a cycle (`q = g(p)`, then `p = f(q)`)."""
        seen: set[str] = set()
        for inst in instructions:
            if inst.name in seen:
                raise self.error(
                    f"instruction '{inst.name}' is defined twice in computation '{name}'",
                    inst.line,
                    self.line(inst.line).find(inst.name) + 1,
                    inst.name,
                )
            seen.add(inst.name)

    def check_parameters(self, name: str, params: list[Instruction]) -> None:
        """Parameter numbers must be 0..n-1, each once, as XLA's computation builder
        CHECKs (hlo_computation.cc; XLA aborts the process on a violation)."""
        numbers = {int(i.literal) for i in params}
        if len(numbers) == len(params) and (not params or max(numbers) == len(params) - 1):
            return
        seen: set[int] = set()
        for inst in params:
            number = int(inst.literal)
            if number >= len(params) or number in seen:
                problem = "used twice" if number in seen else f"not in [0, {len(params)})"
                raise self.error(
                    f"parameter number {number} of computation '{name}' is {problem}",
                    inst.line,
                    self.line(inst.line).find("parameter(") + 11,
                    inst.literal,
                )
            seen.add(number)

    # -- instructions -----------------------------------------------------------------

    def remember(self, line: int) -> dict[str, Metadata] | None:
        """Keep sharing identical metadata (one object per text), unless nearly every
        instruction so far (`line` lines) had its own: then hashing and keeping each text
        costs a tenth of the parse and saves nothing (a generated training step, with a
        source line per op)."""
        memo = self.metadata
        if memo is not None and len(memo) * 10 > line * 9:
            self.metadata = memo = None
        return memo

    def fast_instruction(
        self, line: int, m: re.Match[str], scope: Mapping[str, Instruction]
    ) -> Instruction:
        """Build an instruction from a `FULL_INSTRUCTION` match (the fast path)."""
        rest = m.group(6)
        attributes = self.shared_keys(lexical.ATTRIBUTE.findall(rest)) if rest else None
        return self.build(line, m, m.group(5), attributes, scope, rest)

    @staticmethod
    def line_match(record: re.Match[str]) -> re.Match[str]:
        """The `FULL_INSTRUCTION` match of a record's line alone: its columns are the
        line's, for error messages."""
        line = record.group(0)
        match = lexical.FULL_INSTRUCTION.fullmatch(line[:-1] if line.endswith("\n") else line)
        assert match is not None  # RECORD is FULL_INSTRUCTION kept to one line
        return match

    def shared_keys(self, pairs: list[tuple[str, str]]) -> dict[str, str]:
        """The attributes as a dict whose keys are one object per name across the
        module (`findall` makes a new `metadata` string on every line)."""
        return {intern(k): v for k, v in pairs}

    def instruction(self, line: int, text: str, scope: Mapping[str, Instruction]) -> Instruction:
        """Parse an instruction the fast path could not match (the general, slow path)."""
        m = INSTRUCTION.match(text)
        if m is None:
            # For a statement joined from several lines, its first line says most.
            first = self.line(line) if line == self.last_joined else text
            problem = bracket_error(first) or bracket_error(text)
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
        attributes = self.attributes(rest, line, close + 1) if rest and not rest.isspace() else None
        return self.build(line, m, text[start:close], attributes, scope, rest)

    def build(
        self,
        line: int,
        m: re.Match[str],
        inner: str,
        attrs: dict[str, str] | None,
        scope: Mapping[str, Instruction],
        text: str = "",
    ) -> Instruction:
        """Make the Instruction from the header match (groups 1-4), operand text and
        attributes (parsed from `text`, the attributes as printed); shared by the fast
        and the slow path."""
        is_root, name, shape_text, opcode = m.group(1, 2, 3, 4)
        shape: Shape | None = None
        if shape_text is not None:
            shape = shape_cache.get(shape_text)
            if shape is None:
                try:
                    shape = parse_shape(shape_text)
                except ValueError as e:
                    raise self.error(str(e), line, m.start(3) + 1, shape_text) from None
        literal = ""
        operands: tuple[str, ...] = ()
        is_parameter = False
        if opcode in _LITERAL_OPCODES:
            literal = inner.strip()
            if opcode == "parameter":
                is_parameter = True
                if not (len(literal) < 19 and literal.isdigit() and literal.isascii()):
                    self.check_integer(literal, "parameter number", line, m)
        elif inner and not inner.isspace():
            if "[" in inner or "/*" in inner or "(" in inner:
                operands = self.operands(inner, line, m.end(4) + 1)  # typed operands, comments
            else:
                operands = tuple(OPERAND_NAMES.findall(inner))
            # Each operand name becomes the defining instruction's own string: one object
            # per name, however many instructions use it.
            try:
                operands = tuple([scope[o].name for o in operands])
            except KeyError:
                self.undefined_operand(next(o for o in operands if o not in scope), line, m)
        attributes: Mapping[str, str] = _EMPTY
        called: tuple[CalledComputation, ...] = ()
        metadata = None
        if attrs:
            raw_md = attrs.get("metadata")
            if raw_md is not None and raw_md[:1] == "{":
                memo = self.metadata
                metadata = memo.get(raw_md) if memo is not None else None
                if metadata is None:
                    metadata = parse_metadata(raw_md)
                    if memo is not None:
                        memo[raw_md] = metadata
            if not CALLED_COMPUTATION_ATTRIBUTES.isdisjoint(attrs):
                called = called_computations(attrs)
            if "index" in attrs and opcode == "get-tuple-element":
                self.check_integer(attrs["index"], "tuple index", line, m)
            attributes = Attributes(text, attrs)
        opcode = _OPCODES.get(opcode, opcode)
        if opcode not in KNOWN_OPCODES:
            if self.strict:
                raise self.error(
                    f"unknown opcode {opcode!r} (strict mode)", line, m.start(4) + 1, opcode
                )
            self.unknown_opcodes[opcode] = self.unknown_opcodes.get(opcode, 0) + 1
        if shape is None:
            shape = self.infer_shape(opcode, operands, scope, line, m.string)
        # Instruction(...), less the call of the named tuple's Python-level __new__.
        root = is_root is not None
        fields = (name, opcode, shape, operands, attributes, called, metadata, root, literal, line)
        inst = _new_tuple(Instruction, fields)
        # Collected for the checks at the end of the computation and of the module.
        if called:
            self.callers.append(inst)
        if is_parameter:
            self.parameters.append(literal)
        return inst

    def undefined_operand(self, operand: str, line: int, m: re.Match[str]) -> NoReturn:
        """XLA: "instruction does not exist". XLA also rejects an operand defined later
        in the computation, and so does hloscope: the analyses rely on text order."""
        column = m.string.find(operand, m.end(4)) + 1
        raise self.error(
            f"operand '{operand}' is not defined before this instruction", line, column, operand
        )

    def check_integer(self, text: str, what: str, line: int, m: re.Match[str]) -> None:
        """A non-negative 64-bit integer (`parameter(N)`, `index=N`), as XLA requires."""
        try:
            if to_int(text) >= 0:
                return
        except ValueError:
            pass
        column = m.string.find(text, m.end(4)) + 1
        raise self.error(f"{what} must be a non-negative integer", line, column, text)

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

    def operands(self, inner: str, line: int, offset: int) -> tuple[str, ...]:
        if "/*" in inner:
            inner = strip_comments(inner)
        # Typed operands (`f32[2,3]{1,0} %a`) have commas inside brackets.
        parts = split_top(inner) if "[" in inner or "(" in inner else inner.split(",")
        names = []
        for part in parts:
            token = part.rsplit(None, 1)[-1] if part.strip() else ""
            if not token:
                raise self.error("empty operand", line, offset + 1, inner)
            names.append(token.lstrip("%@"))
        return tuple(names)

    def _matching_paren(self, text: str, open_at: int, line: int) -> int:
        for i, c, depth in brackets(text, open_at):
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
            locations[k] = SourceLocation(
                files.get(_int(f.get("file_name_id")), "?"),
                small_int(f.get("line")),
                functions.get(_int(f.get("function_name_id"))),
                small_int(f.get("column")),
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


class _Body:
    """A computation being read: its header, and its instructions so far."""

    __slots__ = ("header", "instructions", "is_entry", "line", "name", "names", "scope")

    def __init__(self, name: str, is_entry: bool, line: int, header: str) -> None:
        self.name = name
        self.is_entry = is_entry
        self.line = line  # of the header
        self.header = header
        self.instructions: list[Instruction] = []
        self.scope: dict[str, Instruction] = {}  # the instructions by name
        self.names: dict[str, str] = {}  # each instruction's name, by itself


_new_tuple = tuple.__new__

_COUNTING = [str(i) for i in range(256)]
# Each known opcode as one string, which every instruction of a module holds (a string
# per instruction would be a tenth of the model).
_OPCODES = {opcode: opcode for opcode in KNOWN_OPCODES}
_LITERAL_OPCODES = frozenset(
    {"constant", "parameter", "iota", "rng-get-and-update-state", "partition-id", "replica-id"}
)
_EMPTY = Attributes("", {})


def _is_header(line: str) -> bool:
    """Whether a line opening a `{` starts a computation (not an instruction)."""
    s = line.strip()
    return s.endswith("{") and COMPUTATION.fullmatch(s) is not None


@lru_cache(maxsize=1 << 14)
def _fields(text: str) -> Mapping[str, str]:
    # The modules of one run repeat the same stack frame rows: each read once.
    return MappingProxyType(dict(KEY_VALUE.findall(text.strip().strip("{}"))))


def _int(value: str | None) -> int:
    return small_int(value) or 0


@lru_cache(maxsize=1 << 14)
def _unquote_row(value: str) -> str:
    value = value.strip()
    return unescape(value[1:-1]) if value.startswith('"') and value.endswith('"') else value
