"""Successive dumps of one module -> `HloModule`s, what did not change parsed once.

XLA's per-pass dumps (`--xla_dump_hlo_pass_re`) print the whole module after every pass
that changed it, and a pass changes little: most computations of one dump are, to the
character, those of the dump before, and most lines of a computation that changed are
too. `ModuleSeries.parse` splits a dump into its head (the `HloModule` line and the
stack-frame tables) and its computations as XLA prints them, reuses the previous dump's
`Computation` for every computation whose text is unchanged and its `Instruction` for
every unchanged line of one that changed, and parses only the rest with the public
`parse_module`. Text it cannot split that way is parsed whole. The module it returns
equals what `parse_module` returns for the same text, but for line numbers (see
`ModuleSeries`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.errors import HloParseError
from hloscope.hlo.model import Computation, HloModule, Instruction
from hloscope.hlo.parser import parse_module

__all__ = ["ModuleSeries", "split_computations"]

# A computation header as XLA prints it: at column 0, ending with `{`.
_HEADER = re.compile(r"(?:ENTRY[ \t]+)?[%@]?([\w.\-]+)[ \t]*(?:\([^\n]*)?\{[ \t]*")
# One instruction on one line, as XLA prints them (group 1: its name).
_INSTRUCTION_LINE = re.compile(r"  (?:ROOT )?%([\w.\-]+) = ")
_NAME = re.compile(r"%([\w.\-]+)")
_PARAMETER = " parameter("
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_STUB = "%{name} () -> () {{\n  ROOT %{name}.stub = () tuple()\n}}\n"
# A changed computation with more new lines than this share is parsed whole.
_PATCH_AT_MOST = 0.5


@dataclass(frozen=True)
class _Chunk:
    """One computation's text, its name and the line its header is on (1-based)."""

    name: str
    text: str
    line: int


def split_computations(text: str) -> tuple[str, list[tuple[str, str, int]]] | None:
    """Split module text as XLA prints it into its head and its computations.

    Args:
        text: One module's HLO text.

    Returns:
        `(head, [(name, computation text, header line), ...])`: the head is the
        `HloModule` line and the stack-frame tables; each computation runs from its
        header line (at column 0, ending with `{`) to its closing `}` line. None when
        the text does not have that shape (hand-written text, comments between
        computations): parse it whole.
    """
    split = _split(text)
    if split is None:
        return None
    head, chunks = split
    return head, [(c.name, c.text, c.line) for c in chunks]


def _split(text: str) -> tuple[str, list[_Chunk]] | None:
    if "\r" in text:
        return None
    # The head: the HloModule line and the table rows, up to the first header.
    at = 0
    line = 1
    while True:
        eol = text.find("\n", at)
        if eol < 0:
            return None
        row = text[at:eol]
        if row.endswith("{") and not row[:1].isdigit():
            break
        if (
            row
            and not row.startswith("HloModule")
            and not row[:1].isdigit()
            and row.split(None, 1)[0] not in _TABLES
        ):
            return None
        at, line = eol + 1, line + 1
    head = text[:at].strip("\n")
    if not head.startswith("HloModule"):
        return None
    chunks: list[_Chunk] = []
    n = len(text)
    while at < n:
        eol = text.find("\n", at)
        eol = n if eol < 0 else eol
        if at == eol or text[at:eol].isspace():  # blank lines between computations
            at, line = eol + 1, line + 1
            continue
        m = _HEADER.fullmatch(text, at, eol)
        if m is None:
            return None  # text between computations
        end = text.find("\n}", eol)
        if end < 0:
            return None
        close = text.find("\n", end + 1)
        close = n if close < 0 else close
        chunk = text[at:close]
        chunks.append(_Chunk(m.group(1), chunk, line))
        line += chunk.count("\n") + 1
        at = close + 1
    return (head, chunks) if chunks else None


class ModuleSeries:
    """Parses the successive dumps of one module, reusing what did not change.

    A computation whose text is unchanged is the previous dump's `Computation`; in one
    that changed, every unchanged line is the previous dump's `Instruction` (an
    instruction's parse depends on its line alone: operands are names, and XLA prints
    every result shape). Only the previous dump is kept: consecutive dumps are what
    share text, and keeping every dump's would hold the whole series in memory. Line
    numbers are those of the dump a piece was first parsed in (for a changed line,
    of the text it was parsed in): nothing that reads a series shows them.

    Attributes:
        parsed: Instruction lines parsed so far (not reused), for tests and benchmarks.
        reused: Instruction lines reused from earlier dumps so far.
    """

    def __init__(self) -> None:
        # The previous dump's computations: by text, and by name with their text.
        self._by_text: dict[str, Computation] = {}
        self._by_name: dict[str, tuple[str, Computation]] = {}
        # Computations of a module known in advance (`also`), by text.
        self._known: dict[str, Computation] = {}
        self._head: tuple[str, HloModule] | None = None
        self.parsed = 0
        self.reused = 0

    def parse(self, text: str, *, path: str | None = None) -> HloModule:
        """Parse one dump of the series.

        Args:
            text: The dump's HLO text.
            path: Its file, recorded on the module and named in errors.

        Returns:
            The module, as `parse_module(text)` would return it (but for line numbers).

        Raises:
            HloParseError: The text is not a well-formed HLO module.
        """
        split = _split(text)
        if split is not None:
            try:
                return self._assemble(split[0], split[1], path)
            except HloParseError:
                pass  # the pieces did not parse on their own: the whole text says where
        module = parse_module(text, path=path)
        self.parsed += module.instruction_count
        self.seed(text, module)
        return module

    def also(self, text: str, module: HloModule) -> None:
        """Reuse, for the rest of the series, the computations of a module parsed
        elsewhere (`parse_module(text)`): the optimized module, whose fused computations
        the last dumps share."""
        split = _split(text)
        if split is None:
            return
        found = {c.name: c for c in module.computations}
        for chunk in split[1]:
            if chunk.name in found:
                self._known[chunk.text] = found[chunk.name]

    def seed(self, text: str, module: HloModule) -> None:
        """Start the series from a module parsed elsewhere (`parse_module(text)`), so
        that the next dump reuses its computations."""
        split = _split(text)
        self._by_text, self._by_name = {}, {}
        if split is None:
            return
        found = {c.name: c for c in module.computations}
        for chunk in split[1]:
            if chunk.name in found:
                self._keep(chunk, found[chunk.name])

    def _keep(self, chunk: _Chunk, comp: Computation) -> None:
        self._by_text[chunk.text] = comp
        self._by_name[comp.name] = (chunk.text, comp)

    def _assemble(self, head_text: str, chunks: list[_Chunk], path: str | None) -> HloModule:
        head = self._parse_head(head_text, path)
        names = {c.name for c in chunks}
        found: dict[str, Computation] = {}
        whole: list[_Chunk] = []
        patch: list[tuple[_Chunk, list[str], list[Instruction | None]]] = []
        for chunk in chunks:
            comp = self._by_text.get(chunk.text) or self._known.get(chunk.text)
            if comp is not None:
                found[chunk.name] = comp
                self.reused += len(comp.instructions)
                continue
            lines = self._old_lines(chunk.name)
            body = chunk.text.split("\n")
            body = body[1:-1] if body[-1] == "}" else []
            known = [lines.get(line) for line in body]
            new = [line for line, k in zip(body, known, strict=True) if k is None]
            if (
                not body
                or not lines
                or len(new) > _PATCH_AT_MOST * len(body)
                or not all(_INSTRUCTION_LINE.match(line) and _PARAMETER not in line for line in new)
            ):
                whole.append(chunk)
            else:
                patch.append((chunk, body, known))
        found.update(self._parse_whole(whole, names, path))
        for chunk, body, known in patch:
            found[chunk.name] = self._patch(chunk, body, known, names, path)
        self._by_text, self._by_name = {}, {}
        for chunk in chunks:
            self._keep(chunk, found[chunk.name])
        return HloModule(
            name=head.name,
            attributes=head.attributes,
            computations=tuple(found[c.name] for c in chunks),
            stack_frames=head.stack_frames,
            stats=head.stats,
            path=path,
        )

    def _old_lines(self, name: str) -> dict[str, Instruction]:
        """The previous dump's lines of the computation of this name, by text."""
        old = self._by_name.get(name)
        if old is None:
            return {}
        text, comp = old
        lines = text.split("\n")[1:-1]
        if len(lines) != len(comp.instructions):
            return {}  # an instruction printed over several lines
        return dict(zip(lines, comp.instructions, strict=True))

    def _parse_head(self, head: str, path: str | None) -> HloModule:
        """The header attributes and stack frames, from the head and a stub entry."""
        if self._head is not None and self._head[0] == head:
            return self._head[1]
        module = parse_module(head + "\n\n" + _STUB.format(name="hloscope.stub"), path=path)
        self._head = (head, module)
        return module

    def _parse_whole(
        self, chunks: list[_Chunk], names: set[str], path: str | None
    ) -> dict[str, Computation]:
        """Parse new computations together, each at its own line number, with a stub
        for each computation they call that is not among them."""
        if not chunks:
            return {}
        own = {c.name for c in chunks}
        called = {n for c in chunks for n in _NAME.findall(c.text) if n in names} - own
        pieces = ["HloModule hloscope.series\n"]
        at = 2  # the line the next piece starts on
        for c in chunks:
            pieces.append("\n" * (c.line - at))  # blank lines up to its header
            pieces.append(c.text)
            pieces.append("\n")
            at = c.line + c.text.count("\n") + 1
        pieces.append("\n")
        pieces.extend(_STUB.format(name=n) for n in sorted(called))
        module = parse_module("".join(pieces), path=path)
        self.parsed += sum(len(c.instructions) for c in module.computations if c.name in own)
        return {c.name: c for c in module.computations if c.name in own}

    def _patch(
        self,
        chunk: _Chunk,
        body: list[str],
        known: list[Instruction | None],
        names: set[str],
        path: str | None,
    ) -> Computation:
        """A changed computation: its unchanged lines reused, the others parsed in a
        computation of their own, where the operands they take from unchanged lines are
        parameters of the shapes those lines give them."""
        new_lines = [line for line, k in zip(body, known, strict=True) if k is None]
        parsed: dict[str, Instruction] = {}
        if new_lines:
            shapes = {k.name: k.shape.text for k in known if k is not None}
            defined = set()
            operands: dict[str, str] = {}
            for line in new_lines:
                m = _INSTRUCTION_LINE.match(line)
                assert m is not None
                for name in _NAME.findall(line, m.end()):
                    if name not in defined and name in shapes:
                        operands.setdefault(name, shapes[name])
                defined.add(m.group(1))
            called = {n for line in new_lines for n in _NAME.findall(line) if n in names}
            text = "\n".join(
                [
                    "HloModule hloscope.series",
                    "",
                    *(_STUB.format(name=n) for n in sorted(called)),
                    f"ENTRY %{chunk.name} () -> () {{",
                    *(f"  %{n} = {s} parameter({i})" for i, (n, s) in enumerate(operands.items())),
                    *new_lines,
                    "}",
                ]
            )
            parsed = {i.name: i for i in parse_module(text, path=path).entry.instructions}
        self.parsed += len(new_lines)
        self.reused += len(body) - len(new_lines)
        instructions = []
        for line, k in zip(body, known, strict=True):
            if k is None:
                m = _INSTRUCTION_LINE.match(line)
                assert m is not None
                k = parsed[m.group(1)]
            instructions.append(k)
        return Computation(
            name=chunk.name,
            instructions=tuple(instructions),
            is_entry=chunk.text.startswith("ENTRY"),
            execution_thread=None,
            line=chunk.line,
        )
