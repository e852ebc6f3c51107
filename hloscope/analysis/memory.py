"""Memory as XLA planned it: the buffer-assignment and memory-usage dump files.

XLA writes two files beside each after-optimization module when it dumps HLO text
(`--xla_dump_to=DIR --xla_dump_hlo_as_text`, which `hloscope dump` sets):
`<module>.<platform>_after_optimizations-buffer-assignment.txt` (every allocation: its
size, whether it holds a parameter, the output, a constant, thread-local scalars or the
preallocated temporary arena, and the values -- instruction results -- placed in it) and
`...-memory-usage-report.txt` (the total). `read_memory` reads them into a
`MemoryReport`: the peak planned memory (the sum of all allocations, which is the
report's `Total bytes`: XLA reserves every allocation for the whole execution, and the
temporaries share one arena packed by the heap simulator), the split into parameters,
outputs, temporaries and constants, and the largest buffers with their instructions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hloscope.errors import HloscopeError
from hloscope.files import read_regular

__all__ = [
    "MISSING_HINT",
    "Allocation",
    "BufferValue",
    "MemoryReport",
    "memory_files",
    "parse_buffer_assignment",
    "read_memory",
    "reported_total",
]

BUFFER_ASSIGNMENT = "-buffer-assignment.txt"
MEMORY_USAGE = "-memory-usage-report.txt"
MISSING_HINT = (
    "XLA writes *-buffer-assignment.txt and *-memory-usage-report.txt beside the "
    "after-optimization text with --xla_dump_to=DIR --xla_dump_hlo_as_text (hloscope dump "
    "sets both); keep them when you copy a dump"
)

PARAMETER, OUTPUT, TEMPORARY, CONSTANT, THREAD_LOCAL = (
    "parameter", "output", "temporary", "constant", "thread-local",
)  # fmt: skip
KINDS = (PARAMETER, OUTPUT, TEMPORARY, CONSTANT, THREAD_LOCAL)

_MAX_BYTES = 512 * 1024 * 1024
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(?:, (.*?))?:?\s*$")
_VALUE = re.compile(r"^\s+value: <\d+ (\S+) @(\S*)> \(size=(\d+),offset=(\d+)\): (.*)$")
_TOTAL = re.compile(r"^Total bytes(?: used)?:\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class BufferValue:
    """One instruction result placed in an allocation.

    Attributes:
        instruction: The instruction that defines the value.
        index: Its shape index (`0`, or `{1}`-like for tuple elements), as printed.
        size: Bytes.
        offset: Offset inside the allocation.
        shape: The value's shape, as printed.

    Example:
        >>> from hloscope.analysis.memory import read_memory
        >>> from pathlib import Path
        >>> after = next(Path('tests/data/memory_reports').glob('*dense_relu*after*.txt'))
        >>> memory = read_memory(after)
        >>> value = memory.largest(1)[0].values[0]
        >>> value.instruction, value.size
        ('arg1.1', 131072)
    """

    instruction: str
    index: str
    size: int
    offset: int
    shape: str


@dataclass(frozen=True, slots=True)
class Allocation:
    """One buffer XLA allocates for an execution.

    Attributes:
        index: The allocation number.
        size: Bytes.
        kind: PARAMETER, OUTPUT, TEMPORARY, CONSTANT or THREAD_LOCAL.
        parameter: The entry parameter number, for a parameter.
        shape: The shape printed with it (parameters and outputs), else "".
        values: The values placed in it, largest first.
        text: The allocation's line as printed.

    Example:
        >>> from hloscope.analysis.memory import read_memory
        >>> from pathlib import Path
        >>> after = next(Path('tests/data/memory_reports').glob('*dense_relu*after*.txt'))
        >>> memory = read_memory(after)
        >>> a = memory.largest(1)[0]
        >>> a.index, a.size, a.kind
        (0, 131072, 'parameter')
    """

    index: int
    size: int
    kind: str
    parameter: int | None
    shape: str
    values: tuple[BufferValue, ...]
    text: str


@dataclass(frozen=True)
class MemoryReport:
    """A module's planned memory.

    Attributes:
        allocations: Every allocation, in XLA's order.
        reported: `Total bytes` of the memory-usage report (summed over memory spaces),
            or None without that file.
        path: The buffer-assignment file.

    Example:
        >>> from hloscope.analysis.memory import read_memory
        >>> from pathlib import Path
        >>> after = next(Path('tests/data/memory_reports').glob('*dense_relu*after*.txt'))
        >>> memory = read_memory(after)
        >>> memory.peak, sorted(k for k, v in memory.by_kind.items() if v)
        (229888, ['output', 'parameter'])
    """

    allocations: tuple[Allocation, ...]
    reported: int | None = None
    path: str = ""
    by_kind: Mapping[str, int] = field(init=False)

    def __post_init__(self) -> None:
        totals = dict.fromkeys(KINDS, 0)
        for a in self.allocations:
            totals[a.kind] += a.size
        object.__setattr__(self, "by_kind", totals)

    @property
    def total(self) -> int:
        """Bytes of all allocations: the peak planned memory of one execution."""
        return sum(a.size for a in self.allocations)

    @property
    def peak(self) -> int:
        """Peak planned memory: the report's total where there is one, else the sum."""
        return self.reported if self.reported is not None else self.total

    def largest(self, n: int = 5) -> list[Allocation]:
        """The `n` largest allocations, biggest first (ties by allocation number)."""
        return sorted(self.allocations, key=lambda a: (-a.size, a.index))[:n]

    def largest_values(self, n: int = 5) -> list[tuple[BufferValue, Allocation]]:
        """The `n` largest values (instruction results), each with its allocation."""
        pairs = [(v, a) for a in self.allocations for v in a.values]
        return sorted(pairs, key=lambda p: (-p[0].size, p[1].index, p[0].instruction))[:n]


def parse_buffer_assignment(text: str, path: str = "") -> tuple[Allocation, ...]:
    """The allocations of a `*-buffer-assignment.txt` file.

    Raises:
        HloscopeError: The text holds no `allocation N: size S` line.
    """
    out: list[Allocation] = []
    head: tuple[int, int, str, str] | None = None
    values: list[BufferValue] = []
    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            if head is not None:
                out.append(_allocation(head, values))
            head, values = (int(m[1]), int(m[2]), m[3] or "", line), []
            continue
        v = _VALUE.match(line)
        if v and head is not None:
            values.append(BufferValue(v[1], v[2], int(v[3]), int(v[4]), v[5].strip()))
        elif line and not line.startswith((" ", "allocation")) and head is not None:
            out.append(_allocation(head, values))  # the allocation list ended
            head = None
    if head is not None:
        out.append(_allocation(head, values))
    if not out:
        raise HloscopeError(f"{path or 'buffer assignment'}: no `allocation N: size S` line")
    return tuple(out)


def reported_total(text: str) -> int | None:
    """The memory-usage report's `Total bytes` (summed over its memory spaces)."""
    found = [int(t) for t in _TOTAL.findall(text)]
    return sum(found) if found else None


def memory_files(after: Path) -> tuple[Path, Path]:
    """The buffer-assignment and memory-usage files XLA writes beside `after`."""
    stem = after.name.removesuffix(".txt")
    return after.with_name(stem + BUFFER_ASSIGNMENT), after.with_name(stem + MEMORY_USAGE)


def read_memory(after: Path) -> MemoryReport | None:
    """The planned memory of the module whose after-optimization text is `after`.

    Returns:
        The report, or None when XLA's buffer-assignment file is not beside it.

    Raises:
        HloscopeError: A file is there but cannot be read or holds no allocation.
    """
    assignment, usage = memory_files(after)
    if not assignment.is_file():
        return None
    allocations = parse_buffer_assignment(_read(assignment), str(assignment))
    reported = reported_total(_read(usage)) if usage.is_file() else None
    return MemoryReport(allocations, reported, str(assignment))


def _read(path: Path) -> str:
    try:
        return read_regular(path, _MAX_BYTES).decode("utf-8", "replace")
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read: {e}") from e


def _allocation(head: tuple[int, int, str, str], values: list[BufferValue]) -> Allocation:
    index, size, rest, text = head
    param = re.search(r"\bparameter (\d+)", rest)
    shape = re.search(r"\|(.*?)\|", rest)
    kind = _kind(rest, param is not None)
    ordered = tuple(sorted(values, key=lambda v: (-v.size, v.offset, v.instruction)))
    return Allocation(
        index, size, kind, int(param[1]) if param else None, shape[1] if shape else "",
        ordered, text,
    )  # fmt: skip


def _kind(rest: str, is_parameter: bool) -> str:
    if is_parameter:
        return PARAMETER
    if "output shape" in rest or "maybe-live-out" in rest:
        return OUTPUT
    if "constant" in rest:
        return CONSTANT
    if "thread-local" in rest:
        return THREAD_LOCAL
    return TEMPORARY
