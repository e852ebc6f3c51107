"""Source op -> kernel: which of the user's ops ended up in which kernel, and which not.

Every HLO instruction carries the framework op it came from in its metadata (TensorFlow
`op_type`/`op_name`, JAX `op_name` such as `jit(mlp)/dot_general`, PyTorch/XLA's
`aten__addmm`, named here `aten::addmm@train.py:31` (`hloscope.analysis.torch_ops`), and
a source location). `trace` joins the before- and after-optimization modules on those names:
for each kernel the source ops it contains, for each source op the kernels it landed in,
and for source ops that vanished the evidence of why (constant folding, dead code,
merged into an identical op, a no-op that became a bitcast). Reasons are only claimed
where the modules show them. An op is in a kernel only when an instruction doing its
work is (`hloscope.analysis.evidence`): constants XLA copies into a fusion are not.
Kernels holding no such instruction get ops inferred, and marked so.
"""

from __future__ import annotations

import pickle
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any, NamedTuple

from hloscope.analysis import kernels as K
from hloscope.analysis.evidence import (
    DATA_MOVEMENT,
    Inferred,
    Location,
    Twin,
    constant_like,
    cse_twins,
    infer_kernel_ops,
    is_framework_file,
    is_work,
    user_location,
    user_locator,
)
from hloscope.analysis.fusion import Kernel, ModuleAnalysis, entered, walk
from hloscope.analysis.memo import Ahead, Later
from hloscope.analysis.torch_ops import is_torch_op, torch_op_name, torch_source_op
from hloscope.hlo.fusion_log import FusionDecisions
from hloscope.hlo.model import HloModule, Instruction, SourceLocation
from hloscope.hlo.names import readable_name
from hloscope.hlo.parser import paused_gc

__all__ = [
    "ALONE",
    "DEAD",
    "FOLDED",
    "FREE",
    "FUSED",
    "MERGED",
    "REMOVED",
    "AfterOps",
    "BeforeFacts",
    "Inferred",
    "KernelIndex",
    "Placement",
    "Provenance",
    "SourceOp",
    "before_facts",
    "expect_index",
    "is_framework_file",
    "join",
    "kernel_index",
    "kernel_of_before_ops",
    "kernels_of_before_ops",
    "source_op",
    "trace",
]

# TensorFlow's plumbing around the traced function: not user ops.
_PLUMBING = frozenset({"XLA_Args", "XLA_Retvals"})

FUSED = "fused"  # shares a kernel with other source ops
ALONE = "alone"  # every kernel it is in holds only this source op
FOLDED = "folded"  # computed from constants only: constant folding removed it
DEAD = "dead"  # its result was not used: dead code elimination removed it
FREE = "free"  # still there, but only as instructions doing no work (bitcast, constant)
MERGED = "merged"  # identical to another op: common-subexpression elimination kept that one
REMOVED = "removed"  # gone, and the modules give no evidence why


@dataclass(frozen=True, slots=True)
class SourceOp:
    """A framework op as the metadata names it.

    Attributes:
        name: TensorFlow op_name or JAX op_name path (`jit(mlp)/jit(relu)/max`).
        type: TensorFlow op_type (`MatMul`), when present.
        location: Where in the user's code it was created: the first stack frame
            outside the frameworks; else the innermost location the dump records.
        user_frame: Whether `location` is in the user's code. False when the dump has no
            user frame (TensorFlow records only its own `ops.py` for every op).

    Example:
        >>> op = hloscope.open_run("tests/data/tf_dense_relu").ops()[0].op
        >>> op.name, op.type
        ('MatMul', 'MatMul')
    """

    name: str
    type: str | None = None
    location: SourceLocation | None = None
    user_frame: bool = False

    @property
    def label(self) -> str:
        """`name` with the TensorFlow op type when it differs: `dense/MatMul (MatMul)`."""
        if self.type and self.type != self.name.rsplit("/", 1)[-1].split("@", 1)[0]:
            return f"{self.name} ({self.type})"
        return self.name


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one source op went.

    Attributes:
        op: The source op.
        status: FUSED, ALONE, FOLDED, DEAD, FREE, MERGED or REMOVED.
        kernels: The kernels (instruction names) holding an instruction that does its
            work.
        shares_with: Other source ops in those kernels.
        bytes: Bytes its kernels read and write (the memory traffic it costs when alone).
        before: HLO instructions it had before optimization.
        after: HLO instructions it has after optimization.
        evidence: Why it is alone or gone, as the modules show it; "" when they show
            nothing (and then hloscope says XLA gave no reason).
        inferred: For an op no kernel does the work of, the kernels it was inferred
            for (`Provenance.inferred`), with how: `(kernel, how)`; empty otherwise.
        merged_with: For MERGED, the op whose identical instruction was kept.

    Example:
        >>> placement = hloscope.open_run("tests/data/tf_dense_relu").ops()[0]
        >>> placement.op.name, placement.status, placement.kernels
        ('MatMul', 'alone', ('MatMul.2',))
    """

    op: SourceOp
    status: str
    kernels: tuple[str, ...]
    shares_with: tuple[str, ...]
    bytes: int
    before: int
    after: int
    evidence: str = ""
    inferred: tuple[tuple[str, str], ...] = ()
    merged_with: str = ""

    @property
    def where(self) -> str:
        """Where it went, in the words every view uses: `fused in fusion.3 with 2 other
        ops`, `alone in MatMul.2`, `alone in 4 kernels` (an op XLA split, sharing none
        of them), `folded`, `merged with add.1`, ..."""
        kernels = self.kernels or tuple(k for k, _ in self.inferred)
        into = kernels[0] if len(kernels) == 1 else f"{len(kernels)} kernels"
        if self.status == FUSED and kernels:
            others = len(self.shares_with)
            return f"fused in {into} with {others} other op{'' if others == 1 else 's'}"
        if self.status == ALONE and kernels:
            return f"alone in {into}"
        if self.status == MERGED and self.merged_with:
            return f"merged with {self.merged_with}"
        return self.status

    def __repr__(self) -> str:
        return f"Placement({self.op.name!r}: {self.where})"


class Provenance:
    """The join of a module's before and after forms on source op names.

    The placements are joined on first use: a diagram reads only which ops each kernel
    holds, and on a 500k-op module the placements (dead, folded and merged ops traced
    through the before module) are most of the join's time.

    Attributes:
        placements: One per source op, in first-seen order.
        kernel_ops: For each kernel (by name), the source ops whose work it does.
        kernels_by_line: User source location -> number of kernels with an op from
            there.
        inferred: For kernels with no op in `kernel_ops`, the ops inferred from what
            they call, hold or neighbour (see `evidence.infer_kernel_ops`).

    Example:
        >>> provenance = hloscope.inspect_run("tests/data/tf_dense_relu").main[0].provenance
        >>> [(p.op.name, p.status) for p in provenance.placements]
        [('MatMul', 'alone'), ('add', 'fused'), ('Relu', 'fused')]
    """

    def __init__(
        self,
        placements: tuple[Placement, ...] | Callable[[], tuple[Placement, ...]],
        kernel_ops: Mapping[str, tuple[SourceOp, ...]],
        kernels_by_line: Mapping[str, int],
        inferred: Mapping[str, Inferred] | None = None,
    ) -> None:
        self._placements = placements  # or the function that joins them
        self._unmade: _Unmade | None = None  # read back, not made yet: `count`, `unfused`
        self.kernel_ops = kernel_ops
        self.kernels_by_line = kernels_by_line
        self.inferred: Mapping[str, Inferred] = inferred if inferred is not None else {}
        # kernel_index(), once found, or how it comes from elsewhere (`expect_index`)
        self._index: KernelIndex | Callable[[], KernelIndex | None] | None = None

    @property
    def placements(self) -> tuple[Placement, ...]:
        """One per source op, in first-seen order (joined on first use)."""
        found = self._placements
        if callable(found):
            found = self._placements = found()
        return found

    def _key(self) -> tuple[object, ...]:
        return (self.placements, self.kernel_ops, self.kernels_by_line, self.inferred)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Provenance):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # it holds mappings

    def __repr__(self) -> str:
        return f"Provenance({len(self.placements)} placements, {len(self.kernel_ops)} kernels)"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # joined, to travel without its modules; its placements and their source ops as
        # columns (`_Columns`): a 318k-op module's 636k objects pickled one by one took
        # a second
        index = None if callable(self._index) else self._index
        if self._unmade is not None:  # read back: its columns, as they came
            columns: _Columns | _ReadColumns = self._unmade.columns
        else:
            columns = _Columns.of(self.placements, self.kernel_ops)
        return (_rebuilt, (columns, self.kernels_by_line, self.inferred, index))

    def count(self, status: str | None = None) -> int:
        """How many source ops were placed, or placed with `status` (ALONE, ...).

        Example:
            >>> provenance = hloscope.inspect_run("tests/data/tf_dense_relu").main[0].provenance
            >>> provenance.count(), provenance.count("alone")
            (3, 1)
        """
        unmade = self._unmade if callable(self._placements) else None
        if unmade is not None:
            return unmade.count(status)
        if status is None:
            return len(self.placements)
        return sum(1 for p in self.placements if p.status == status)

    def op_names(self) -> list[str]:
        """The name of each placed source op, first seen first (read back, without
        making the placements)."""
        if self._unmade is not None and callable(self._placements):
            return self._unmade.ops.names()
        return [p.op.name for p in self.placements]

    def unfused(self) -> list[Placement]:
        """Source ops that run alone, biggest memory traffic first."""
        if self._unmade is not None and callable(self._placements):
            return self._unmade.alone_by_bytes()  # the others not made
        alone = [p for p in self.placements if p.status == ALONE]
        return sorted(alone, key=lambda p: -p.bytes)

    def holding(self, kernel: str) -> list[Placement]:
        """Placements of the ops whose work `kernel` does, or, for a kernel doing no op's
        work, of the ops inferred for it (`inferred`), first seen first."""
        names = {o.name for o in self.kernel_ops.get(kernel, ())}
        if not names and kernel in self.inferred:
            names = set(self.inferred[kernel].ops)
        return [p for p in self.placements if p.op.name in names]

    def find(self, pattern: str) -> list[Placement]:
        """Placements whose op name, type or location contains `pattern` (any case)."""
        needle = pattern.lower()
        return [
            p
            for p in self.placements
            if needle in p.op.name.lower()
            or (p.op.type and needle in p.op.type.lower())
            or (p.op.location and needle in str(p.op.location).lower())
        ]


def _rebuilt(
    columns: _ReadColumns,
    kernels_by_line: Mapping[str, int],
    inferred: Mapping[str, Inferred],
    index: KernelIndex | None,
) -> Provenance:
    """A pickled provenance, as it was: its source ops and placements made when first
    asked (a report read back asks only for their counts, the alone ones and the ops of
    the kernels it prints)."""
    ops = _Ops(columns)
    unmade = _Unmade(ops, columns)
    found = Provenance(unmade.all, _KernelOps(ops, columns), kernels_by_line, inferred)
    found._unmade = unmade
    found._index = index
    return found


_OP_FIELDS = tuple(f.name for f in fields(SourceOp))
_NAME = _OP_FIELDS.index("name")
_PLACEMENT_FIELDS = tuple(f.name for f in fields(Placement))
assert _PLACEMENT_FIELDS[0] == "op"
_STATUS = _PLACEMENT_FIELDS.index("status") - 1  # its column, after the op
_BYTES = _PLACEMENT_FIELDS.index("bytes") - 1


class _Ops:
    """The source ops of a provenance read back, each made when first asked and then
    the same object wherever it is asked (the 318k of a 107 MB module took 0.18 s)."""

    def __init__(self, columns: _ReadColumns) -> None:
        self.columns = columns
        self.count = columns.count
        self.some: dict[int, SourceOp] = {}  # made one by one
        self.made: list[SourceOp] | None = None  # all of them, once asked for all

    def one(self, i: int) -> SourceOp:
        """Op `i`, the placements' `i`th."""
        if self.made is not None:
            return self.made[i]
        found = self.some.get(i)
        if found is None:
            found = self.some[i] = SourceOp(*self.columns.op(i))
        return found

    def names(self) -> list[str]:
        """Every op's name, in the placements' order, without making the ops."""
        return list(self.columns.ops[_NAME]) if self.count else []

    def all(self) -> list[SourceOp]:
        """Every op, in the placements' order."""
        if self.made is None:
            with paused_gc(kept=True):  # as a report is written: see `_Unmade.all`
                made = list(map(SourceOp, *self.columns.ops)) if self.count else []
            for i, op in self.some.items():
                made[i] = op
            self.made = made
        return self.made


class _KernelOps(Mapping[str, tuple[SourceOp, ...]]):
    """`Provenance.kernel_ops` read back: each kernel's ops made when it is asked for
    (`_Columns` keeps them as their places among the placements' ops)."""

    def __init__(self, ops: _Ops, columns: _ReadColumns) -> None:
        self._ops = ops
        self._columns = columns
        self._made: dict[str, tuple[SourceOp, ...]] = {}

    @property
    def _places(self) -> dict[str, tuple[int | SourceOp, ...]]:
        return self._columns.kernel_ops

    def __getitem__(self, kernel: str) -> tuple[SourceOp, ...]:
        found = self._made.get(kernel)
        if found is None:
            one = self._ops.one
            found = tuple([x if isinstance(x, SourceOp) else one(x) for x in self._places[kernel]])
            self._made[kernel] = found
        return found

    def __contains__(self, kernel: object) -> bool:
        return kernel in self._places

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)


class _Unmade:
    """The placements of a provenance read back, before they are all made: the 318k of
    a 107 MB module took 0.34 s. Counted by status, and the alone ones made when asked
    (`Provenance.unfused`), without the columns (`_ReadColumns`); each made once, and
    the same objects among `all`."""

    def __init__(self, ops: _Ops, columns: _ReadColumns) -> None:
        self.ops = ops
        self.columns = columns
        self.made: dict[int, Placement] = {}

    def count(self, status: str | None) -> int:
        if status is None:
            return self.ops.count
        return self.columns.counts.get(status, 0)

    def alone_by_bytes(self) -> list[Placement]:
        """`Provenance.unfused`: the alone ones, most bytes first (first seen first
        among equals)."""
        alone = self.columns.alone  # in the placements' order
        at = sorted(alone, key=lambda i: -alone[i][1][_BYTES])
        return [self._one(i) for i in at]

    def _one(self, i: int) -> Placement:
        found = self.made.get(i)
        if found is None:
            found = self.made[i] = Placement(self.ops.one(i), *self.columns.placement(i))
        return found

    def all(self) -> tuple[Placement, ...]:
        """Every placement, first seen first; those made already are these."""
        if not self.ops.count:
            return ()
        # made as a report is written, and none garbage: walked by no collection
        with paused_gc(kept=True):
            fresh = map(Placement, self.ops.all(), *self.columns.placements)
            if not self.made:
                return tuple(fresh)
            return tuple(self.made.get(i, p) for i, p in enumerate(fresh))


class _Columns:
    """A provenance's placements and the source ops of its kernels as it pickles them:
    each field a column (lists and tuples of strings and numbers, pickled at C speed),
    a kernel's ops by their place among the placements' ops where they are one of them.
    Read back as `_ReadColumns`, from which `_Ops` and `_KernelOps` give the same ops
    back, each one object again, and `_Unmade` the same placements."""

    def __init__(
        self,
        ops: list[tuple[object, ...]],
        placements: list[tuple[object, ...]],
        kernel_ops: dict[str, tuple[int | SourceOp, ...]],
    ) -> None:
        self.ops = ops
        self.placements = placements
        self.kernel_ops = kernel_ops

    @classmethod
    def of(
        cls, placements: tuple[Placement, ...], kernel_ops: Mapping[str, tuple[SourceOp, ...]]
    ) -> _Columns:
        ops = [p.op for p in placements]
        at = {id(op): n for n, op in enumerate(ops)}
        by_kernel: dict[str, tuple[int | SourceOp, ...]] = {}
        for kernel, found in kernel_ops.items():
            places: tuple[int | SourceOp | None, ...] = tuple(map(at.get, map(id, found)))
            if None in places:  # an op not placed: itself
                places = tuple([at.get(id(op), op) for op in found])
            by_kernel[kernel] = places  # type: ignore[assignment]  # no None left
        op_columns = list(zip(*map(attrgetter(*_OP_FIELDS), ops), strict=True))
        rest = attrgetter(*_PLACEMENT_FIELDS[1:])
        columns = list(zip(*map(rest, placements), strict=True))
        return cls(op_columns, columns, by_kernel)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # what a report reads (how many placements have each status, the alone ones
        # whole), then the columns as bytes of their own: `hloscope report` of the
        # 107 MB pair reads none of its 318k fused placements (unpickling them took
        # 0.17 s of its 0.45 s)
        status = self.placements[_STATUS] if self.ops else ()
        alone = {
            i: (tuple(c[i] for c in self.ops), tuple(c[i] for c in self.placements))
            for i, found in enumerate(status)
            if found == ALONE
        }
        rest = pickle.dumps((self.ops, self.placements, self.kernel_ops), pickle.HIGHEST_PROTOCOL)
        return (_ReadColumns, (dict(Counter(status)), alone, rest))


class _ReadColumns:
    """`_Columns` read back: how many placements have each status, and the alone ones'
    fields, at once (what `hloscope report` reads: the counts and the biggest alone
    ones); the columns unpickled when first read, with the collector paused. Until then
    it pickles again as the bytes it came as."""

    def __init__(
        self,
        counts: dict[str, int],
        alone: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]],
        rest: bytes,
    ) -> None:
        self.counts = counts  # status -> placements with it
        self.count = sum(counts.values())
        self.alone = alone  # place -> (its op's fields, its placement's after the op)
        self._rest: bytes | None = rest
        self._columns: _Columns | None = None

    def _read(self) -> _Columns:
        if self._columns is None:
            assert self._rest is not None
            with paused_gc(kept=True):
                self._columns = _Columns(*pickle.loads(self._rest))
            self._rest = None
        return self._columns

    @property
    def ops(self) -> list[tuple[Any, ...]]:
        """One column per field of a source op."""
        return self._read().ops

    @property
    def placements(self) -> list[tuple[Any, ...]]:
        """One column per field of a placement after its op."""
        return self._read().placements

    @property
    def kernel_ops(self) -> dict[str, tuple[int | SourceOp, ...]]:
        """Each kernel's ops, by their place among the placements' ops (or themselves)."""
        return self._read().kernel_ops

    def op(self, i: int) -> tuple[Any, ...]:
        """The fields of the `i`th placement's op."""
        found = self.alone.get(i)
        return found[0] if found is not None else tuple(c[i] for c in self.ops)

    def placement(self, i: int) -> tuple[Any, ...]:
        """The fields of the `i`th placement after its op."""
        found = self.alone.get(i)
        return found[1] if found is not None else tuple(c[i] for c in self.placements)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        if self._rest is None:
            return self._read().__reduce__()
        return (_ReadColumns, (self.counts, self.alone, self._rest))


def source_op(module: HloModule, inst: Instruction, scope: str = "") -> SourceOp | None:
    """The source op an instruction came from, or None when metadata names none."""
    return _source_op(inst, scope, user_locator(module))


def _source_op(
    inst: Instruction, scope: str, locate: Callable[[Instruction], Location]
) -> SourceOp | None:
    """`source_op`, with the module's `user_locator` (found once for many instructions)."""
    md = inst.metadata
    if md is None or not md.op_name or md.op_name in _PLUMBING:
        return None
    name, kind = md.op_name, md.op_type
    location, user = locate(inst)
    if kind is not None and is_torch_op(kind, name):  # by its line, as `op_name` names it
        name, kind = torch_source_op(name, location, user), torch_op_name(kind)
    if scope and not name.startswith(scope):
        name = f"{scope}/{name}"
    return SourceOp(name, kind, location, user)


def op_name(inst: Instruction, scope: str = "", module: HloModule | None = None) -> str | None:
    """The source op name of an instruction (prefixed by a call's `scope`), or None.

    A torch_xla op is named with the user's source line when `module` is given (see
    `hloscope.analysis.torch_ops`): its name alone repeats across a model.
    """
    md = inst.metadata
    if md is None or not md.op_name or md.op_name in _PLUMBING:
        return None
    name = md.op_name
    if is_torch_op(md.op_type, name):
        location, user = user_location(module, inst) if module is not None else (None, False)
        name = torch_source_op(name, location, user)
    return f"{scope}/{name}" if scope and not name.startswith(scope) else name


def trace(
    after: HloModule,
    analysis: ModuleAnalysis,
    before: HloModule | None = None,
    decisions: FusionDecisions | None = None,
) -> Provenance:
    """Join source ops to kernels.

    Args:
        after: The module after optimization.
        analysis: `analyze_module(after)`.
        before: The module before optimization, when the dump has it; without it only
            ops that survive are reported.
        decisions: XLA's priority-fusion log for this module (GPU), when the dump has
            one: its reasons are joined to the ops that run alone.

    Returns:
        The provenance of every source op.
    """
    return join(AfterOps.of(after, analysis), analysis, before, decisions)


class AfterOps:
    """What the join reads of the after module: its source ops, by kernel and in all.

    It is `trace`'s first half, which needs only the after module. `join` is the
    second: it adds the before module. A worker process can compute this half and send
    it (`hloscope.analysis.pool.beside`); the after module then travels as its file.
    One made by `later` finds it all on first use instead (what a drawing of the
    before side may never ask: its colours come from a `KernelIndex`).

    Attributes:
        kernel_ops: Kernel -> the source ops whose work it does (a property).
        ops: Every such op, first seen first (a property).
        count: How many working instructions each op has (a property).
        inferred: Ops inferred for kernels doing no op's work (`evidence.infer_kernel_ops`;
            a property).
    """

    def __init__(
        self,
        after: HloModule,
        analysis: ModuleAnalysis,
        kernel_ops: dict[str, tuple[SourceOp, ...]] | None,
        ops: dict[str, SourceOp] | None,
        count: Counter[str] | None,
        inferred: dict[str, Inferred] | None,
        free: tuple[dict[str, list[str]], dict[str, SourceOp]] | None = None,
        idle: list[tuple[str, Instruction]] | None = None,
    ) -> None:
        self.after = after
        self.analysis = analysis
        # None: found (again) from the after module when asked
        self._kernel_ops = kernel_ops
        self._ops = ops
        self._count = count
        self._inferred = inferred
        self._free = free
        self._idle = idle  # until `free` is found: `_kernel_ops`' idle instructions

    @classmethod
    def of(cls, after: HloModule, analysis: ModuleAnalysis) -> AfterOps:
        """The after side of `after`, whose `analyze_module` is `analysis`."""
        return cls.later(after, analysis)._found()

    @classmethod
    def later(cls, after: HloModule, analysis: ModuleAnalysis) -> AfterOps:
        """`of`, found the first time something is asked of it."""
        return cls(after, analysis, None, None, None, None)

    @property
    def known(self) -> bool:
        """Whether the source ops by kernel are found (not left for first use)."""
        return self._kernel_ops is not None

    @property
    def kernel_ops(self) -> dict[str, tuple[SourceOp, ...]]:
        found = self._kernel_ops if self._kernel_ops is not None else self._found()._kernel_ops
        assert found is not None
        return found

    @property
    def inferred(self) -> dict[str, Inferred]:
        found = self._inferred if self._inferred is not None else self._found()._inferred
        assert found is not None
        return found

    @property
    def ops(self) -> dict[str, SourceOp]:
        found = self._ops if self._ops is not None else self._found()._ops
        assert found is not None
        return found

    @property
    def count(self) -> Counter[str]:
        found = self._count if self._count is not None else self._found()._count
        assert found is not None
        return found

    def _found(self) -> AfterOps:
        """Find every source op of the after module (what is known already stays)."""
        after, analysis = self.after, self.analysis
        kernel_ops, self._ops, self._count, idle = _kernel_ops(after, analysis)
        if self._free is None:
            self._idle = idle
        if self._kernel_ops is None:
            self._kernel_ops = kernel_ops
        if self._inferred is None:
            self._inferred = infer_kernel_ops(
                after,
                analysis.kernels,
                {k: tuple(o.name for o in v) for k, v in kernel_ops.items()},
                lambda inst: op_name(inst, module=after),
            )
        return self

    def index(self) -> KernelIndex:
        """`kernel_index` of the after module: from these source ops when found, else
        from their names alone (finding none)."""
        return _kernel_index(self.after, self.analysis, self._kernel_ops)

    @property
    def free(self) -> tuple[dict[str, list[str]], dict[str, SourceOp]]:
        """Ops left only as instructions doing no work (with the kernels holding one),
        and those of them not in `ops`, first seen first: found on first use (the
        placements need them, a diagram does not)."""
        if self._free is None:
            idle = self._idle
            if idle is None:  # sent from a worker before it was found: found again
                idle = _kernel_ops(self.after, self.analysis)[3]
            ops = dict(self.ops)
            free = _free_after(self.after, idle, self.ops, ops)
            self._free = (free, {k: v for k, v in ops.items() if k not in self.ops})
            self._idle = None
        return self._free

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        fields = (self._kernel_ops, self._ops, self._count, self._inferred, self._free)
        return (AfterOps, (self.after, self.analysis, *fields))


def join(
    side: AfterOps,
    analysis: ModuleAnalysis,
    before: HloModule | None = None,
    decisions: FusionDecisions | None = None,
    facts: BeforeFacts | None = None,
    index: KernelIndex | None = None,
) -> Provenance:
    """`trace`'s second half: the after side's source ops joined with the before module.

    Args:
        side: `AfterOps.of(after, analysis)`, here or from a worker process.
        analysis: `analyze_module(after)`.
        before: As for `trace`.
        decisions: As for `trace`.
        facts: `before_facts(before)`, when already found.
        index: `kernel_index` of the after module, when already found (a worker
            process found it: the after module is not here).
    """

    def placements() -> tuple[Placement, ...]:
        known = facts if facts is not None or before is None else before_facts(before)
        return _placements(side, analysis, before, known, decisions)

    if side.known:
        kernel_ops = side.kernel_ops
        found = Provenance(
            placements, kernel_ops, _kernels_by_line(analysis, kernel_ops), side.inferred
        )
    else:  # a drawing's: found from the after module if something asks
        found = Provenance(
            placements,
            Later(lambda: side.kernel_ops),
            Later(lambda: _kernels_by_line(analysis, side.kernel_ops)),
            Later(lambda: side.inferred),
        )
    found._index = index
    return found


def _op_kernels(
    analysis: ModuleAnalysis, kernel_ops: Mapping[str, tuple[SourceOp, ...]]
) -> dict[str, list[Kernel]]:
    """Source op -> the kernels doing its work, in kernel order."""
    op_kernels: dict[str, list[Kernel]] = {}
    for kernel in analysis.kernels:
        for op in kernel_ops[kernel.name]:
            op_kernels.setdefault(op.name, []).append(kernel)
    return op_kernels


def _placements(
    side: AfterOps,
    analysis: ModuleAnalysis,
    before: HloModule | None,
    facts: BeforeFacts | None,
    decisions: FusionDecisions | None,
) -> tuple[Placement, ...]:
    """Where every source op went (`trace`'s placements)."""
    kernel_ops, inferred, after_count = side.kernel_ops, side.inferred, side.count
    op_kernels = _op_kernels(analysis, kernel_ops)
    by_inferred: dict[str, list[tuple[str, str]]] = {}
    for kernel_name, found in inferred.items():
        for name in found.ops:
            by_inferred.setdefault(name, []).append((kernel_name, found.how))
    free_after, free_ops = side.free
    ops = {**side.ops, **free_ops}
    for name in by_inferred:
        ops.setdefault(name, SourceOp(name))

    before_ops: dict[str, list[tuple[str, Instruction]]] = {}
    evidence: dict[str, tuple[str, str, str]] = {}
    if before is not None and facts is not None:
        before_ops, evidence = facts.by_op, _before_evidence(facts, op_kernels)
        for name, places in before_ops.items():
            if name not in ops:
                first = source_op(before, places[0][1])
                ops[name] = replace(first, name=name) if first else SourceOp(name)

    placements = []
    held: dict[str, _OneKernel] = {}
    for name, op in ops.items():
        kernels = op_kernels.get(name, [])
        guesses = by_inferred.get(name)
        guessed = tuple(dict.fromkeys(guesses)) if guesses else ()
        n_before = len(before_ops.get(name, ()))
        if kernels or guessed:
            counts = (n_before, after_count[name])
            placements.append(
                _placed(op, kernels, guessed, kernel_ops, analysis, decisions, counts, held)
            )
        elif name in evidence:
            status, why, twin = evidence[name]
            placements.append(Placement(op, status, (), (), 0, n_before, 0, why, (), twin))
        elif name in free_after:
            placements.append(
                Placement(op, FREE, (), (), 0, n_before, 0, _only_free(free_after[name]))
            )
        else:
            placements.append(Placement(op, REMOVED, (), (), 0, n_before, 0))
    return tuple(placements)


def _free_after(
    after: HloModule,
    idle: Iterable[tuple[str, Instruction]],
    op_kernels: Mapping[str, object],
    ops: dict[str, SourceOp],
) -> dict[str, list[str]]:
    """Ops still in the after module only as instructions doing no work, each with the
    kernels holding such an instruction (a constant copied in); adds them to `ops`.

    Args:
        after: The module after optimization.
        idle: (kernel, instruction) of each instruction in a kernel that does no work,
            in kernel order (`_kernel_ops`): only those can name an op no kernel does.
        op_kernels: The ops some kernel does the work of.
        ops: Every op found so far, first seen first.
    """
    out: dict[str, list[str]] = {}
    for ex in walk(after):
        if ex.cls != K.FREE or ex.instruction.opcode == "parameter":
            continue
        op = source_op(after, ex.instruction, ex.scope)
        if op is not None:
            out.setdefault(op.name, [])
            ops.setdefault(op.name, op)
    for kernel_name, inst in idle:
        name = op_name(inst, module=after)
        if name is not None and name not in op_kernels:
            out.setdefault(name, []).append(kernel_name)
            ops.setdefault(name, source_op(after, inst) or SourceOp(name))
    return out


def _kernel_ops(
    after: HloModule, analysis: ModuleAnalysis
) -> tuple[
    dict[str, tuple[SourceOp, ...]],
    dict[str, SourceOp],
    Counter[str],
    list[tuple[str, Instruction]],
]:
    """Kernel -> ops of the instructions in it that do work; every such op; how many
    working instructions each op has; and (kernel, instruction) of those that do none."""
    free = constant_like(after)
    kernel_ops: dict[str, tuple[SourceOp, ...]] = {}
    ops: dict[str, SourceOp] = {}
    count: Counter[str] = Counter()
    idle: list[tuple[str, Instruction]] = []
    # Instructions with the same metadata have the same source op: one object for them.
    seen: dict[int, SourceOp | None] = {}
    locate = user_locator(after)
    for kernel in analysis.kernels:
        found: dict[str, SourceOp] = {}
        for inst in kernel.ops:
            if not is_work(inst, free):
                idle.append((kernel.name, inst))
                continue
            md = inst.metadata
            if md is None:
                continue
            name = md.op_name
            # A kernel keeps the first op of each name, and counts the rest: those need
            # no `SourceOp` (its location) when their name is the op's (not torch's).
            if name in found and not is_torch_op(md.op_type, name):
                count[name] += 1
                continue
            key = id(md)
            if key in seen:
                op = seen[key]
            else:
                op = seen[key] = _source_op(inst, "", locate)
            if op is not None:
                found.setdefault(op.name, op)
                count[op.name] += 1
        kernel_ops[kernel.name] = tuple(found.values())
        for name, op in found.items():
            ops.setdefault(name, op)
    return kernel_ops, ops, count, idle


def _placed(
    op: SourceOp,
    kernels: list[Kernel],
    inferred: tuple[tuple[str, str], ...],
    kernel_ops: Mapping[str, tuple[SourceOp, ...]],
    analysis: ModuleAnalysis,
    decisions: FusionDecisions | None,
    counts: tuple[int, int],
    by_kernel: dict[str, _OneKernel],
) -> Placement:
    """The placement of an op some kernel holds (or, failing that, was inferred for);
    `by_kernel` keeps, for each kernel, what the placements of the ops only it holds
    share."""
    counted = kernels or [k for k in analysis.kernels if k.name in dict(inferred)]
    if len(kernels) == 1:  # most ops: the kernel's other ops (its names are distinct)
        kernel = kernels[0]
        shared = by_kernel.get(kernel.name)
        if shared is None:  # once per kernel, not once per op it holds
            shared = by_kernel[kernel.name] = _OneKernel(
                tuple(sorted(o.name for o in kernel_ops[kernel.name])),
                (kernel.name,),
                kernel.bytes_in + kernel.bytes_out,
            )
        held = shared.ops
        at = bisect_left(held, op.name)  # the kernel holds the op
        others = held[:at] + held[at + 1 :] if held[at : at + 1] == (op.name,) else held
        names, traffic = shared.names, shared.traffic
    else:
        others = tuple(sorted({o.name for k in kernels for o in kernel_ops[k.name]} - {op.name}))
        names = tuple(k.name for k in kernels)
        traffic = sum(k.bytes_in + k.bytes_out for k in counted)
    status = FUSED if others else ALONE
    why = _why_alone(counted, decisions) if status == ALONE else ""
    if not kernels:
        how = "; ".join(f"{k}: from {h}" for k, h in inferred)
        why = f"inferred ({how}): no instruction names an op there" + (f"; {why}" if why else "")
    extra = () if kernels else inferred
    return Placement(op, status, names, others, traffic, *counts, why, extra)


class _OneKernel(NamedTuple):
    """What the placements of the ops only one kernel holds share: one tuple and number
    per kernel, not per op (a big module has 318k such ops, issue 27).

    Attributes:
        ops: The kernel's op names, sorted.
        names: The kernel's name, as `Placement.kernels`.
        traffic: Its `Placement.bytes`.
    """

    ops: tuple[str, ...]
    names: tuple[str, ...]
    traffic: int


def _only_free(kernels: list[str]) -> str:
    if not kernels:
        return "only instructions that launch nothing remain (bitcast, tuple, ...)"
    names = list(dict.fromkeys(kernels))
    shown = ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")
    return (
        "only constants carrying its name remain, copied into "
        f"{len(names)} kernel{'s' if len(names) != 1 else ''} ({shown}); none does its work"
    )


def _kernels_by_line(
    analysis: ModuleAnalysis, kernel_ops: Mapping[str, tuple[SourceOp, ...]]
) -> dict[str, int]:
    by_line: Counter[str] = Counter()
    for kernel in analysis.kernels:
        # first seen first (a set would order ties by string hash, which varies by process)
        lines = dict.fromkeys(
            str(o.location) for o in kernel_ops[kernel.name] if o.location and o.user_frame
        )
        for line in lines:
            by_line[line] += 1
    return dict(by_line.most_common())


def _why_alone(kernels: Iterable[Kernel], decisions: FusionDecisions | None) -> str:
    """Facts that explain a lone kernel; never a guess at XLA's reasons.

    XLA's own reasons come first when its priority-fusion log names the kernel or one of
    the instructions in it.
    """
    facts: list[str | tuple[str, str]] = []
    # What several kernels share is said once: (singular, plural) -> the kernels' names.
    shared: dict[tuple[str, str], list[str]] = {}
    for k in kernels:
        if decisions is not None:
            reasons = decisions.reasons([k.name, *(i.name for i in k.ops)])
            if reasons:
                facts.append(f"XLA's fusion log: {'; '.join(reasons)}")
        kind = _kind_fact(k)
        if kind is not None:
            if kind not in shared:
                facts.append(kind)
            shared.setdefault(kind, []).append(k.name)
        if k.users > 1:
            facts.append(f"{k.users} consumers")
        if k.is_root:
            facts.append(f"it is the result of computation {readable_name(k.computation)}")

    def said(fact: str | tuple[str, str]) -> str:
        if isinstance(fact, str):
            return fact
        names = shared[fact]
        return f"{names[0]} {fact[0]}" if len(names) == 1 else f"{len(names)} kernels {fact[1]}"

    return "; ".join(dict.fromkeys(map(said, facts)))


def _kind_fact(k: Kernel) -> tuple[str, str] | None:
    """What kind of kernel runs alone, said of one and of several; None for a fusion."""
    if k.library:
        return f"is a library call ({k.kind})", f"are library calls ({k.kind})"
    if k.cls == K.COLLECTIVE:
        return "is a collective", "are collectives"
    if k.cls == K.UNFUSED:
        return f"is an unfused {k.opcode}", f"are unfused {k.opcode}s"
    return None


@dataclass(frozen=True)
class BeforeFacts:
    """What the join reads of the before module, whatever the after side holds: each
    source op's instructions, and which instructions are constant, live, or identical to
    an earlier one (`_before_facts`). Instructions are named by computation, then name
    (a big module's are hundreds of thousands: no tuple is made for each).

    Attributes:
        by_op: Source op -> (computation, instruction) of each of its instructions.
        names: Computation -> instruction name -> its source op.
        constant: Computation -> its instructions computed from constants only.
        live: Computation -> its instructions its root uses.
        twins: Instructions identical to an earlier one (`evidence.cse_twins`), by
            (computation, instruction name).
    """

    by_op: dict[str, list[tuple[str, Instruction]]]
    names: dict[str, dict[str, str]]
    constant: dict[str, set[str]]
    live: dict[str, set[str]]
    twins: Mapping[tuple[str, str], Twin]


# Instructions never computed from constants alone, whatever their operands.
_NOT_CONSTANT = frozenset({"parameter", "rng", "rng-bit-generator", "infeed"})


def before_facts(before: HloModule) -> BeforeFacts:
    """The before module's side of the join (`join` finds it when not given)."""
    by_op: dict[str, list[tuple[str, Instruction]]] = {}
    names: dict[str, dict[str, str]] = {}
    constant: dict[str, set[str]] = {}
    live: dict[str, set[str]] = {}
    for comp, scope in entered(before):  # what one execution runs, as `walk` meets it
        comp_name, index = comp.name, comp.by_name
        named = names[comp_name] = {}
        # Constant-ness flows forward through operands, in text order (XLA prints
        # operands before users). Only this computation's instructions are in `const`:
        # an operand that is not one of them (a name the module lacks) makes none.
        const = constant[comp_name] = set()
        for inst in comp.instructions:  # each once: the parser rejects a name given twice
            operands = inst.operands
            if inst.opcode in ("constant", "iota") or (
                operands and inst.opcode not in _NOT_CONSTANT and const.issuperset(operands)
            ):
                const.add(inst.name)
            name = op_name(inst, scope, before)
            if name is not None and inst.opcode != "parameter":
                places = by_op.get(name)
                if places is None:
                    places = by_op[name] = []
                places.append((comp_name, inst))
                named[inst.name] = name
        # Liveness flows backward from the root.
        alive = live[comp_name] = set()
        stack = [comp.root.name]
        while stack:
            name = stack.pop()
            if name in alive or name not in index:
                continue
            alive.add(name)
            stack.extend(index[name].operands)
    # The twins are read only for an op no kernel holds, live and not folded (`_merged`):
    # found then (a module whose ops all went to kernels never reads them)
    return BeforeFacts(by_op, names, constant, live, Later(lambda: cse_twins(before)))


def _before_evidence(
    facts: BeforeFacts, op_kernels: Mapping[str, list[Kernel]]
) -> dict[str, tuple[str, str, str]]:
    """For the source ops of the before module that are gone, FOLDED/DEAD/MERGED/REMOVED
    evidence where the module shows it: (status, why, op merged with)."""
    constant, live = facts.constant, facts.live
    evidence: dict[str, tuple[str, str, str]] = {}
    for name, places in facts.by_op.items():
        if name in op_kernels:
            continue
        if all(i.name in constant[c] for c, i in places):
            evidence[name] = (FOLDED, "computed from constants only (constant folding)", "")
        elif not any(i.name in live[c] for c, i in places):
            evidence[name] = (DEAD, "its result is never used (dead code)", "")
        elif merged := _merged(name, places, facts, op_kernels):
            evidence[name] = merged
        else:
            opcodes = sorted({i.opcode for _, i in places})
            if set(opcodes) <= DATA_MOVEMENT:
                evidence[name] = (
                    REMOVED,
                    f"it was only {', '.join(opcodes)}, which optimization merged into "
                    "neighbouring ops",
                    "",
                )
    return evidence


def _merged(
    name: str,
    places: list[tuple[str, Instruction]],
    facts: BeforeFacts,
    op_kernels: Mapping[str, list[Kernel]],
) -> tuple[str, str, str] | None:
    """MERGED evidence when an instruction of the op is identical to one of another op
    (XLA's CSE keeps the first): which op it became and where that one went."""
    for comp_name, inst in places:
        twin = facts.twins.get((comp_name, inst.name))
        if twin is None:
            continue
        kept = facts.names[comp_name].get(twin.kept.name)
        if kept is None or kept == name:
            continue
        kernels = [k.name for k in op_kernels.get(kept, [])]
        where = f"which is in {', '.join(kernels)}" if kernels else "which is itself gone"
        why = (
            f"merged with {kept} (its {twin.instruction.opcode} is identical to "
            f"{twin.kept.name}; common-subexpression elimination kept one), {where}"
        )
        return MERGED, why, kept
    return None


# --- op -> kernel, for each instruction before optimization ------------------------------


@dataclass(frozen=True)
class KernelIndex:
    """The after side of `kernels_of_before_ops`: kernels by what they hold.

    Attributes:
        by_op: Source op -> the kernels doing its work, in kernel order.
        by_op_code: (source op, opcode) -> the kernels holding such an instruction,
            where they are not the op's (`by_op`).
        own: Kernel -> its opcode.
    """

    by_op: dict[str, tuple[str, ...]]
    by_op_code: dict[tuple[str, str], tuple[str, ...]]
    own: dict[str, str]


def kernel_index(
    after: HloModule, provenance: Provenance, analysis: ModuleAnalysis | None = None
) -> KernelIndex:
    """`kernels_of_before_ops`'s after side, found once per provenance (a worker process
    of `hloscope.analysis.pool` finds it and sends it with the provenance)."""
    found = provenance._index
    if callable(found):  # on its way from a worker process (`expect_index`)
        found = provenance._index = found()
    if found is None:
        if analysis is None:
            from hloscope.analysis.fusion import analyze_module

            analysis = analyze_module(after)
        found = provenance._index = _kernel_index(after, analysis, provenance.kernel_ops)
    return found


def expect_index(provenance: Provenance, fetch: Callable[[], KernelIndex | None]) -> None:
    """Let `kernel_index` take the index from `fetch()` the first time it is needed: a
    worker process finds it meanwhile from the after module, which this process then
    never parses (`render.html`). Found here as usual if `fetch` gives None."""
    if provenance._index is None:
        provenance._index = fetch


def _kernel_index(
    after: HloModule,
    analysis: ModuleAnalysis,
    kernel_ops: Mapping[str, tuple[SourceOp, ...]] | None = None,
) -> KernelIndex:
    """`kernel_index` from the after side's source ops by kernel, or, without them,
    from the names alone: the names `_kernel_ops` would give its source ops, found
    without making them (a worker process drawing the before side needs no more)."""
    names: dict[str, Iterable[str]] = {}  # kernel -> its source op names, as kernel_ops
    if kernel_ops is not None:
        names = {kernel: [o.name for o in ops] for kernel, ops in kernel_ops.items()}
    # Kernel lists as tuples, one per kernel shared by the ops it alone holds: a big
    # module's ops are hundreds of thousands, its kernels tens of thousands (issue 27).
    by_op_code: dict[tuple[str, str], tuple[str, ...]] = {}
    own: dict[str, str] = {}
    free = constant_like(after)
    alone: dict[str, tuple[str]] = {}
    for k in analysis.kernels:
        kernel = k.name
        own[kernel] = k.opcode
        one = alone.setdefault(kernel, (kernel,))
        mine: dict[str, None] = {}
        for inst in k.ops:
            md = inst.metadata
            if md is None or not is_work(inst, free):
                continue
            fused_op = op_name(inst)
            if kernel_ops is None:  # the source op's name (a torch op's has its line)
                source = fused_op
                if md.op_name and is_torch_op(md.op_type, md.op_name):
                    source = op_name(inst, module=after)
                if source is not None:
                    mine[source] = None
            if fused_op is None:
                continue
            held = by_op_code.get((fused_op, inst.opcode))
            if held is None:
                by_op_code[(fused_op, inst.opcode)] = one
            elif held[-1] != kernel:  # kernels come in order: a kernel seen is the last
                by_op_code[(fused_op, inst.opcode)] = (*held, kernel)
        if kernel_ops is None:
            names[kernel] = mine
    by_op: dict[str, tuple[str, ...]] = {}
    for kernel, ops in names.items():
        one = alone.setdefault(kernel, (kernel,))
        for name in ops:
            held = by_op.get(name)
            by_op[name] = one if held is None else (*held, kernel)
    # An entry that only repeats the op's kernels is left out (`_placed_ops` falls back
    # to those): most are, the ops of a big module being in one kernel each.
    by_op_code = {key: held for key, held in by_op_code.items() if by_op.get(key[0]) != held}
    return KernelIndex(by_op, by_op_code, own)


def kernels_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, tuple[str, ...]]:
    """Before-optimization instruction name -> every kernel it went to, in kernel order.

    The join is on source op names (`Provenance.kernel_ops`): an op goes to the kernels
    holding an instruction with its op name, preferring those where that instruction has
    the same opcode; an op that is still a kernel under its own name goes there first.
    Ops whose source op reached no kernel (folded, dead, only bitcasts now) are left out.

    Args:
        before: The module before optimization.
        after: The module after optimization.
        provenance: `trace(after, analysis, before)`.
        analysis: `analyze_module(after)`; computed when not given.

    Returns:
        The kernels of every op that reached one, the op's own kernel first.
    """
    return placed_ops(ops_to_place(before), after, provenance, analysis)


class OpsToPlace(NamedTuple):
    """Each op a before module executes that could go to a kernel, in walk order:
    `kernels_of_before_ops`' before side (`ops_to_place`). Columns, not a tuple per op:
    a big module has 536k (issue 27).

    Attributes:
        names: Each op's instruction name.
        opcodes: Its opcode.
        ops: Its source op, None where it has none.
    """

    names: list[str]
    opcodes: list[str]
    ops: list[str | None]


def placed_ops(
    ops: OpsToPlace,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, tuple[str, ...]]:
    """`kernels_of_before_ops` of the ops `ops_to_place` found (which can be found while
    the after side is still analysed in a worker process)."""
    return _placed_ops(ops, kernel_index(after, provenance, analysis))


def ops_to_place(before: HloModule) -> OpsToPlace:
    """`kernels_of_before_ops`' before side: the ops of `before` it places (those
    `ops_to_place_ahead` found, when it did)."""
    return _ops_to_place(before)


def ops_to_place_ahead(before: HloModule) -> None:
    """Find `ops_to_place(before)` now, for its next call to take: `analysis.report`
    does, for a page, while it waits for the worker process that reads the after side."""
    _ops_to_place.ahead(before)


def _find_ops_to_place(before: HloModule) -> OpsToPlace:
    named = _op_namer()
    skip = (K.FREE, K.CONTROL)
    out = OpsToPlace([], [], [])
    for ex in walk(before):
        inst = ex.instruction
        if ex.cls not in skip:
            out.names.append(inst.name)
            out.opcodes.append(inst.opcode)
            out.ops.append(named(inst, ex.scope))
    return out


_ops_to_place = Ahead(_find_ops_to_place)


def _placed_ops(ops: OpsToPlace, index: KernelIndex) -> dict[str, tuple[str, ...]]:
    """`kernels_of_before_ops` of the ops `_ops_to_place` found, by the after side's
    kernel index."""
    by_op, by_op_code, own = index.by_op, index.by_op_code, index.own
    out: dict[str, tuple[str, ...]] = {}
    for name, opcode, op in zip(*ops, strict=True):
        if name in out:
            continue
        found: tuple[str, ...] = ()
        if op is not None:
            # the index's own tuple, one for the ops alike in source op and opcode: a big
            # module's 536k ops share a few hundred thousand (issue 27)
            found = by_op_code.get((op, opcode)) or by_op.get(op, ())
            if len(found) > 1 and len(set(found)) < len(found):
                found = tuple(dict.fromkeys(found))
        if own.get(name) == opcode:
            found = tuple(dict.fromkeys((name, *found)))
        if found:
            out[name] = found
    return out


def _op_namer() -> Callable[[Instruction, str], str | None]:
    """`op_name` without a module, remembered by what it reads within a call's scope,
    where it makes a name (one string for the instructions that share it). Outside
    one it is mostly the op name itself, and remembering it would cost a key per op of
    a big module (536k, issue 27)."""
    names: dict[tuple[str | None, str | None, str], str | None] = {}

    def named(inst: Instruction, scope: str) -> str | None:
        md = inst.metadata
        if md is None:
            return None
        if not scope:
            return op_name(inst)
        key = (md.op_name, md.op_type, scope)
        if key not in names:
            names[key] = op_name(inst, scope)
        return names[key]

    return named


def kernel_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, str]:
    """Before-optimization instruction name -> the (first) kernel it went to.

    See `kernels_of_before_ops` for the join and for every kernel of an op that went to
    several.

    Args:
        before: The module before optimization.
        after: The module after optimization.
        provenance: `trace(after, analysis, before)`.
        analysis: `analyze_module(after)`; computed when not given.

    Example:
        >>> m = hloscope.inspect_run("tests/data/tf_dense_relu").main[0]
        >>> placed = hloscope.kernel_of_before_ops(m.before_module, m.after_module, m.provenance)
        >>> sorted(set(placed.values()))
        ['MatMul.2', 'broadcast_maximum_fusion']
    """
    return {k: v[0] for k, v in kernels_of_before_ops(before, after, provenance, analysis).items()}
