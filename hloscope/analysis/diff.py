"""Run A vs run B: what changed in XLA's fusion decisions, and whether B is worse.

`diff_runs` pairs the modules of two `RunReport`s (by normalised name, else by
structure), and per pair compares the counts and matches kernels by provenance (the
source ops they contain), never by XLA's generated kernel names, which change between
compiles. `check_run` and `regressions` turn a report or a diff into budget and
regression `Violation`s for CI; nothing here prints or reads files.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hloscope.analysis.fusion import Kernel
from hloscope.analysis.provenance import ALONE, FUSED, Placement, SourceOp, is_framework_file
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.errors import UsageError

__all__ = [
    "APPEARED",
    "DISAPPEARED",
    "KIND_CHANGED",
    "MERGED",
    "OPS_CHANGED",
    "REGROUPED",
    "SAME",
    "SPLIT",
    "Budget",
    "KernelChange",
    "KernelRef",
    "Metric",
    "ModuleDiff",
    "OpChange",
    "RunDiff",
    "Violation",
    "check_run",
    "diff_modules",
    "diff_runs",
    "match_modules",
    "normalise_module_name",
    "parse_tolerance",
    "regressions",
]

# Kinds of kernel change, from A to B.
SPLIT = "split"  # one kernel in A, several in B
MERGED = "merged"  # several kernels in A, one in B
REGROUPED = "regrouped"  # several in A, several (other) in B
APPEARED = "appeared"  # only in B
DISAPPEARED = "disappeared"  # only in A
KIND_CHANGED = "kind changed"  # one to one, other kind (kLoop -> kInput, fusion -> unfused)
OPS_CHANGED = "ops changed"  # one to one, same kind, other source ops
SAME = "same"  # one to one, same kind and source ops (the name may differ)

CHANGES = (SPLIT, MERGED, REGROUPED, APPEARED, DISAPPEARED, KIND_CHANGED, OPS_CHANGED, SAME)

# Metric names, as `Metric.name`, JSON keys and `Violation.metric`.
INSTRUCTIONS_BEFORE = "instructions_before"
INSTRUCTIONS = "instructions"
KERNELS = "kernels"
LAUNCHES = "launches"
OPS_PER_KERNEL = "ops_per_kernel"
ALONE_OPS = "ops_alone"
TIME_US = "time_us"

# Metrics `regressions` compares, and which direction is worse.
_GUARDED = {KERNELS: "higher", LAUNCHES: "higher", OPS_PER_KERNEL: "lower", TIME_US: "higher"}

_TF_HASH = re.compile(r"_*XlaMustCompile_(?:true|false)_config_proto_\d+_executor_type_\d+_*")
_TF_FUNCTION_ID = re.compile(r"^(a?_?inference_.+?)_\d+$")
_OUTER_JIT = re.compile(r"^p?jit\([^/]*\)/")
_STRUCTURE_THRESHOLD = 0.6


@dataclass(frozen=True)
class Metric:
    """One module-level number in A and in B.

    Attributes:
        name: `instructions`, `kernels`, `launches`, `ops_per_kernel`, `time_us`, ...
        a: The value in run A, or None when A does not have it.
        b: The value in run B, or None.
        worse: `"higher"` or `"lower"`: which direction is a regression; None when
            neither is (instruction counts).
    """

    name: str
    a: float | None
    b: float | None
    worse: str | None = None

    @property
    def delta(self) -> float | None:
        """`b - a`, or None when a side is missing."""
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def relative(self) -> float | None:
        """`(b - a) / a`; None when a side is missing or a is zero."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return (self.b - self.a) / abs(self.a)

    def is_worse(self, tolerance: float = 0.0) -> bool:
        """Whether B is worse than A by more than `tolerance` (a fraction of A)."""
        if self.worse is None or self.a is None or self.b is None:
            return False
        if self.worse == "higher":
            return self.b > self.a * (1 + tolerance) + 1e-9
        return self.b < self.a * (1 - tolerance) - 1e-9


@dataclass(frozen=True)
class KernelRef:
    """One kernel of one side, as a diff shows it.

    Attributes:
        name: The instruction name in that side's module.
        kind: Its kind (`kLoop`, `__ynn_fusion`, `unfused:dot`, ...).
        launches: Launches per execution (None when a loop trip count is unknown).
        bytes: Bytes it reads and writes per execution (times its launches).
        ops: The HLO opcodes it computes (`add`, `multiply`, ...), in order.
        shape: Its result shape, as text.
        time_us: Its total time in the profile, when the side was profiled.
    """

    name: str
    kind: str
    launches: int | None
    bytes: int
    ops: tuple[str, ...]
    shape: str
    time_us: float | None = None


@dataclass(frozen=True)
class KernelChange:
    """Kernels of A and B that hold the same source ops, and how they differ.

    Attributes:
        change: SPLIT, MERGED, REGROUPED, APPEARED, DISAPPEARED, KIND_CHANGED,
            OPS_CHANGED or SAME.
        a: The kernels in A (empty for APPEARED).
        b: The kernels in B (empty for DISAPPEARED).
        source_ops: The source op names the kernels hold, on either side.
        ops_only_a: Source ops the A kernels hold and the B kernels do not.
        ops_only_b: Source ops the B kernels hold and the A kernels do not.
    """

    change: str
    a: tuple[KernelRef, ...]
    b: tuple[KernelRef, ...]
    source_ops: tuple[str, ...]
    ops_only_a: tuple[str, ...] = ()
    ops_only_b: tuple[str, ...] = ()

    @property
    def bytes_a(self) -> int:
        """Bytes the A kernels move per execution."""
        return sum(k.bytes for k in self.a)

    @property
    def bytes_b(self) -> int:
        """Bytes the B kernels move per execution."""
        return sum(k.bytes for k in self.b)

    @property
    def time_a(self) -> float | None:
        """Total time of the A kernels (µs), when A was profiled."""
        return _total(k.time_us for k in self.a)

    @property
    def time_b(self) -> float | None:
        """Total time of the B kernels (µs), when B was profiled."""
        return _total(k.time_us for k in self.b)

    @property
    def time_delta(self) -> float | None:
        """B minus A time (µs), when both sides were profiled."""
        ta, tb = self.time_a, self.time_b
        if not self.a:
            ta = 0.0 if tb is not None else None
        if not self.b:
            tb = 0.0 if ta is not None else None
        return None if ta is None or tb is None else tb - ta

    @property
    def impact(self) -> float:
        """The sort key of diffs: |time delta| (µs) where profiled, else |bytes delta|."""
        delta = self.time_delta
        if delta is not None:
            return abs(delta)
        return float(abs(self.bytes_b - self.bytes_a))

    @property
    def changed(self) -> bool:
        """Whether anything but the names differs."""
        return self.change != SAME


@dataclass(frozen=True)
class OpChange:
    """A source op whose placement differs between A and B.

    Attributes:
        op: The source op name (as in A when both have it; the outer `jit(...)` of
            JAX names is ignored when matching).
        type: TensorFlow op type, when known.
        status_a: Its status in A (fused, alone, folded, dead, free, removed), or None
            when A does not have the op.
        status_b: Its status in B, or None.
        kernels_a: The A kernels it is in.
        kernels_b: The B kernels it is in.
        bytes_a: Bytes its A kernels move.
        bytes_b: Bytes its B kernels move.
    """

    op: str
    type: str | None
    status_a: str | None
    status_b: str | None
    kernels_a: tuple[str, ...]
    kernels_b: tuple[str, ...]
    bytes_a: int
    bytes_b: int

    @property
    def unfused(self) -> bool:
        """Fused in A, running alone in B: a regression."""
        return self.status_a == FUSED and self.status_b == ALONE

    @property
    def fused(self) -> bool:
        """Alone in A, fused in B: an improvement."""
        return self.status_a == ALONE and self.status_b == FUSED


@dataclass(frozen=True)
class ModuleDiff:
    """One module of A against its counterpart in B.

    Attributes:
        a: The module's report in A.
        b: The module's report in B.
        matched_by: `"name"` (normalised name) or `"structure"` (names differ).
        metrics: Module-level numbers, A vs B (see the metric names in this module).
        kinds: `(kind, kernels in A, kernels in B)` for every kind on either side.
        kernels: Every kernel group, changed ones first, biggest impact first.
        ops: Source ops whose placement changed, regressions (fused -> alone) first.
        profiled: Whether both sides have kernel timings.
    """

    a: ModuleReport
    b: ModuleReport
    matched_by: str
    metrics: tuple[Metric, ...]
    kinds: tuple[tuple[str, int, int], ...]
    kernels: tuple[KernelChange, ...]
    ops: tuple[OpChange, ...]
    profiled: bool = False

    @property
    def trivial(self) -> bool:
        """Both sides are trivial helper modules."""
        return self.a.trivial and self.b.trivial

    @property
    def label(self) -> str:
        """`0030.jit_mlp`, or `0030.jit_mlp -> 0031.jit_mlp` when the keys differ."""
        return self.a.key if self.a.key == self.b.key else f"{self.a.key} -> {self.b.key}"

    @property
    def changed_kernels(self) -> tuple[KernelChange, ...]:
        """Kernel groups that changed (not SAME)."""
        return tuple(k for k in self.kernels if k.changed)

    @property
    def changed(self) -> bool:
        """Whether any count, kernel or op placement differs."""
        return bool(
            self.changed_kernels
            or self.ops
            or any(m.delta for m in self.metrics if m.name != TIME_US)
            or any(a != b for _, a, b in self.kinds)
        )

    def metric(self, name: str) -> Metric:
        """The metric called `name`.

        Raises:
            KeyError: No such metric.
        """
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)


@dataclass(frozen=True)
class RunDiff:
    """Two runs compared module by module.

    Attributes:
        a: The report of run A (the baseline).
        b: The report of run B.
        modules: Matched modules, in A's report order (biggest first, trivial last).
        only_a: Modules of A without a counterpart in B.
        only_b: Modules of B without a counterpart in A.
    """

    a: RunReport
    b: RunReport
    modules: tuple[ModuleDiff, ...]
    only_a: tuple[ModuleReport, ...] = ()
    only_b: tuple[ModuleReport, ...] = ()

    @property
    def main(self) -> tuple[ModuleDiff, ...]:
        """Matched modules that are not trivial helpers."""
        return tuple(m for m in self.modules if not m.trivial)

    @property
    def changed(self) -> bool:
        """Whether anything differs."""
        return bool(self.only_a or self.only_b or any(m.changed for m in self.modules))


@dataclass(frozen=True)
class Budget:
    """Limits `check_run` holds each module to; None leaves a limit unchecked.

    Attributes:
        max_kernels: Most kernels a module may have.
        max_launches: Most kernel launches per execution.
        min_ops_per_kernel: Fewest ops before optimization per kernel after.
    """

    max_kernels: int | None = None
    max_launches: int | None = None
    min_ops_per_kernel: float | None = None

    @property
    def empty(self) -> bool:
        """No limit is set."""
        return (
            self.max_kernels is None
            and self.max_launches is None
            and (self.min_ops_per_kernel is None)
        )


@dataclass(frozen=True)
class Violation:
    """A budget exceeded (`check_run`) or a regression from A to B (`regressions`).

    Attributes:
        module: The module key (`0030.jit_mlp`, or `A-key -> B-key`).
        metric: `kernels`, `launches`, `ops_per_kernel` or `time_us`.
        value: The value that failed (B's value for a regression).
        limit: The budget, or A's value for a regression.
        tolerance: For a regression, the tolerance it exceeded (fraction); None for a
            budget.
    """

    module: str
    metric: str
    value: float
    limit: float
    tolerance: float | None = None

    @property
    def message(self) -> str:
        """One line: module, metric, the values and the budget or tolerance."""
        what = self.metric.replace("_", " ")
        value, limit = _num(self.value), _num(self.limit)
        if self.tolerance is None:
            sign = ">" if self.metric != OPS_PER_KERNEL else "<"
            return f"{self.module}: {what} {value} {sign} budget {limit}"
        change = ""
        if self.limit:
            change = f"{(self.value - self.limit) / abs(self.limit):+.1%}, "
        return (
            f"{self.module}: {what} {limit} (A) -> {value} (B) "
            f"({change}tolerance {self.tolerance:.0%})"
        )


# ---------------------------------------------------------------------------------------
# Modules


def normalise_module_name(name: str) -> str:
    """A module name with what changes between compiles of the same program removed.

    TensorFlow's `__XlaMustCompile_..._config_proto_<hash>_executor_type_<hash>_` middle,
    its function counter (`a_inference_dense_relu_12` -> `a_inference_dense_relu`) and
    the `.N` suffixes XLA and JAX append (`jit_mlp.1`) are dropped.

    Args:
        name: An HloModule name.

    Returns:
        The name to match modules of two runs on.
    """
    name = _TF_HASH.sub("", name)
    while True:
        stripped = re.sub(r"\.\d+$", "", name)
        if stripped == name:
            break
        name = stripped
    name = name.rstrip("_")
    m = _TF_FUNCTION_ID.match(name)
    return m[1] if m else name


def match_modules(
    a: Sequence[ModuleReport], b: Sequence[ModuleReport]
) -> tuple[list[tuple[ModuleReport, ModuleReport, str]], list[ModuleReport], list[ModuleReport]]:
    """Pair the modules of two runs.

    Modules pair by normalised name (see `normalise_module_name`); several modules of
    one name pair by structural similarity, then in order. What is left pairs by
    structure alone (the source op types and kernel kinds they hold), when similar
    enough.

    Args:
        a: Module reports of run A.
        b: Module reports of run B.

    Returns:
        `(pairs, only_a, only_b)`: pairs are `(a, b, "name" | "structure")` in A's order.
    """
    by_name_b: dict[str, list[int]] = defaultdict(list)
    for j, m in enumerate(b):
        by_name_b[normalise_module_name(m.name)].append(j)
    by_name_a: dict[str, list[int]] = defaultdict(list)
    for i, m in enumerate(a):
        by_name_a[normalise_module_name(m.name)].append(i)
    sig_a = [_signature(m) for m in a]
    sig_b = [_signature(m) for m in b]

    pairs: dict[int, tuple[int, str]] = {}
    used_b: set[int] = set()
    for name, ia in by_name_a.items():
        jb = by_name_b.get(name, [])
        for i, j in _greedy(ia, jb, lambda i, j: _similarity(sig_a[i], sig_b[j]), 0.0):
            pairs[i] = (j, "name")
            used_b.add(j)
    rest_a = [i for i in range(len(a)) if i not in pairs]
    rest_b = [j for j in range(len(b)) if j not in used_b]
    for i, j in _greedy(
        rest_a, rest_b, lambda i, j: _similarity(sig_a[i], sig_b[j]), _STRUCTURE_THRESHOLD
    ):
        pairs[i] = (j, "structure")
        used_b.add(j)
    matched = [(a[i], b[j], how) for i, (j, how) in sorted(pairs.items())]
    only_a = [m for i, m in enumerate(a) if i not in pairs]
    only_b = [m for j, m in enumerate(b) if j not in used_b]
    return matched, only_a, only_b


def _greedy(
    left: Sequence[int],
    right: Sequence[int],
    score: Callable[[int, int], float],
    threshold: float,
) -> list[tuple[int, int]]:
    """Pairs of best score first (ties: in order), each index used once."""
    candidates = sorted(
        ((score(i, j), i, j) for i in left for j in right), key=lambda t: (-t[0], t[1], t[2])
    )
    out: list[tuple[int, int]] = []
    seen_l: set[int] = set()
    seen_r: set[int] = set()
    for s, i, j in candidates:
        if s < threshold or i in seen_l or j in seen_r:
            continue
        if threshold > 0 and s <= 0:
            continue
        seen_l.add(i)
        seen_r.add(j)
        out.append((i, j))
    return out


def _signature(m: ModuleReport) -> tuple[Counter[str], int]:
    """What a module computes, independent of names: its source op types and size.

    Kernel kinds count only without a before-optimization dump: they are the compiler's
    decisions, which a diff exists to compare, not part of the program.
    """
    sig: Counter[str] = Counter()
    if m.provenance is not None:
        for p in m.provenance.placements:
            sig[f"op:{_leaf(p.op)}"] += 1
    if m.after is not None and m.before is None:
        for kind, n in m.after.kernels_by_kind.items():
            sig[f"kind:{kind}"] += n
    side = m.before or m.after
    return sig, side.instructions if side else 0


def _similarity(x: tuple[Counter[str], int], y: tuple[Counter[str], int]) -> float:
    """1.0 for the same structure, 0.0 for nothing in common."""
    (cx, nx), (cy, ny) = x, y
    size = min(nx, ny) / max(nx, ny) if max(nx, ny) else 1.0
    keys = set(cx) | set(cy)
    if not keys:
        return size
    common = sum(min(cx[k], cy[k]) for k in keys)
    total = sum(max(cx[k], cy[k]) for k in keys)
    return size * common / total


def _leaf(op: SourceOp) -> str:
    """`jit(f)/layer0/add` -> `add`; a TensorFlow op -> its type."""
    return op.type or re.sub(r"\.\d+$", "", op.name.rsplit("/", 1)[-1])


# ---------------------------------------------------------------------------------------
# Kernels


@dataclass
class _Side:
    """One kernel with its matching keys (a working record, not a result)."""

    kernel: Kernel
    keys: frozenset[str]
    ref: KernelRef
    names: tuple[str, ...] = field(default=())
    index: int = 0
    shown: dict[str, str] = field(default_factory=dict)  # key -> source op name


def _op_name_key(name: str) -> str:
    """A source op name without the outer `jit(<function>)/`, which renames with it."""
    return _OUTER_JIT.sub("", name)


def _location(op: SourceOp) -> str | None:
    if op.location is None or is_framework_file(op.location.file):
        return None
    return str(op.location)


def _sides(
    m: ModuleReport, timing: Mapping[str, float] | None, split_by_line: frozenset[str]
) -> list[_Side]:
    if m.after is None:
        return []
    kernel_ops = m.provenance.kernel_ops if m.provenance else {}
    out = []
    for index, k in enumerate(m.after.kernels):
        ops = kernel_ops.get(k.name, ())
        shown: dict[str, str] = {}
        for op in ops:
            key = _op_name_key(op.name)
            where = _location(op)
            shown.setdefault(f"{key}@{where}" if key in split_by_line and where else key, op.name)
        launches = k.launches if k.launches is not None else 1
        ref = KernelRef(
            name=k.name,
            kind=k.kind,
            launches=k.launches,
            bytes=(k.bytes_in + k.bytes_out) * launches,
            ops=tuple(i.opcode for i in k.ops),
            shape=k.shape.text,
            time_us=None if timing is None else float(timing.get(k.name, 0.0)),
        )
        names = tuple(dict.fromkeys(o.name for o in ops))
        out.append(_Side(k, frozenset(shown), ref, names, index, shown))
    return out


def _split_by_line(a: ModuleReport, b: ModuleReport) -> frozenset[str]:
    """Source op names to tell apart by source line: those both sides place on the same
    lines. A JAX name such as `jit(f)/add` repeats across a model; its line keeps the
    kernels of different layers apart. Names whose lines moved (an edited script) match
    on the name alone."""

    def lines(m: ModuleReport) -> dict[str, set[str | None]]:
        out: dict[str, set[str | None]] = defaultdict(set)
        if m.provenance is not None:
            for ops in m.provenance.kernel_ops.values():
                for op in ops:
                    out[_op_name_key(op.name)].add(_location(op))
        return out

    la, lb = lines(a), lines(b)
    return frozenset(
        name
        for name in la.keys() & lb.keys()
        if la[name] == lb[name] and len(la[name]) > 1 and None not in la[name]
    )


def _match_kernels(sa: list[_Side], sb: list[_Side]) -> list[tuple[list[_Side], list[_Side]]]:
    """Group the kernels of A and B that hold the same source ops.

    Kernels with identical source ops pair first where that is unambiguous (as many
    in A as in B); the rest group by connected components of "shares a source op".
    Kernels without any source op pair by kind, opcodes and shape.
    """
    groups: list[tuple[list[_Side], list[_Side]]] = []
    named_a = [s for s in sa if s.keys]
    named_b = [s for s in sb if s.keys]

    # 1. Identical source op sets, as many on both sides: pair one to one.
    by_keys_a: dict[frozenset[str], list[_Side]] = defaultdict(list)
    by_keys_b: dict[frozenset[str], list[_Side]] = defaultdict(list)
    for s in named_a:
        by_keys_a[s.keys].append(s)
    for s in named_b:
        by_keys_b[s.keys].append(s)
    paired: set[int] = set()
    for keys, xs in by_keys_a.items():
        ys = by_keys_b.get(keys, [])
        if len(xs) != len(ys):
            continue
        for x, y in _pair_alike(xs, ys):
            groups.append(([x], [y]))
            paired.update((id(x), id(y)))
    rest_a = [s for s in named_a if id(s) not in paired]
    rest_b = [s for s in named_b if id(s) not in paired]

    # 2. Connected components over shared source ops.
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, int] = {}
    everyone = rest_a + rest_b
    for index, s in enumerate(everyone):
        find(index)
        for key in s.keys:
            if key in owner:
                parent[find(index)] = find(owner[key])
            else:
                owner[key] = index
    components: dict[int, tuple[list[_Side], list[_Side]]] = {}
    for index, s in enumerate(everyone):
        group = components.setdefault(find(index), ([], []))
        group[0 if index < len(rest_a) else 1].append(s)
    groups.extend(components.values())

    # 3. Kernels without source ops: by what they compute.
    anon_a = [s for s in sa if not s.keys]
    anon_b = [s for s in sb if not s.keys]
    by_sig: dict[tuple[str, tuple[str, ...], str], list[_Side]] = defaultdict(list)
    for s in anon_b:
        by_sig[(s.ref.kind, s.ref.ops, s.ref.shape)].append(s)
    gone: dict[tuple[str, tuple[str, ...], str], list[_Side]] = defaultdict(list)
    for s in anon_a:
        signature = (s.ref.kind, s.ref.ops, s.ref.shape)
        candidates = by_sig.get(signature)
        if candidates:
            groups.append(([s], [candidates.pop(0)]))
        else:
            gone[signature].append(s)
    # What is left appeared or disappeared; alike kernels are reported together.
    groups.extend((ss, []) for ss in gone.values())
    groups.extend(([], ss) for ss in by_sig.values() if ss)
    return groups


def _pair_alike(xs: list[_Side], ys: list[_Side]) -> list[tuple[_Side, _Side]]:
    """Pair equally many kernels: same kind and shape first, then in order."""
    left, right = list(xs), list(ys)
    out = []
    for test in (
        lambda x, y: x.ref.kind == y.ref.kind and x.ref.shape == y.ref.shape,
        lambda x, y: x.ref.kind == y.ref.kind,
        lambda x, y: True,
    ):
        for x in list(left):
            for y in right:
                if test(x, y):
                    out.append((x, y))
                    left.remove(x)
                    right.remove(y)
                    break
    return out


def _classify(xs: list[_Side], ys: list[_Side]) -> KernelChange:
    ops_a = {k for s in xs for k in s.keys}
    ops_b = {k for s in ys for k in s.keys}
    names = tuple(dict.fromkeys(n for s in (*xs, *ys) for n in s.names))
    if not xs:
        change = APPEARED
    elif not ys:
        change = DISAPPEARED
    elif len(xs) == 1 and len(ys) == 1:
        if xs[0].ref.kind != ys[0].ref.kind:
            change = KIND_CHANGED
        elif ops_a != ops_b:
            change = OPS_CHANGED
        else:
            change = SAME
    elif len(xs) == 1:
        change = SPLIT
    elif len(ys) == 1:
        change = MERGED
    else:
        change = REGROUPED
    shown = {k: n for s in (*ys, *xs) for k, n in s.shown.items()}
    only_a = tuple(sorted({shown[k] for k in ops_a - ops_b})) if xs and ys else ()
    only_b = tuple(sorted({shown[k] for k in ops_b - ops_a})) if xs and ys else ()
    return KernelChange(
        change,
        tuple(s.ref for s in xs),
        tuple(s.ref for s in ys),
        names,
        only_a,
        only_b,
    )


# ---------------------------------------------------------------------------------------
# Ops and metrics


def _op_changes(a: ModuleReport, b: ModuleReport) -> list[OpChange]:
    if a.provenance is None or b.provenance is None:
        return []

    def index(placements: Iterable[Placement]) -> dict[str, Placement]:
        return {_op_name_key(p.op.name): p for p in placements}

    pa, pb = index(a.provenance.placements), index(b.provenance.placements)
    out = []
    for key in [*pa, *(k for k in pb if k not in pa)]:
        x, y = pa.get(key), pb.get(key)
        if x is not None and y is not None and x.status == y.status:
            continue
        some = x or y
        assert some is not None
        out.append(
            OpChange(
                op=some.op.name,
                type=some.op.type,
                status_a=x.status if x else None,
                status_b=y.status if y else None,
                kernels_a=x.kernels if x else (),
                kernels_b=y.kernels if y else (),
                bytes_a=x.bytes if x else 0,
                bytes_b=y.bytes if y else 0,
            )
        )
    out.sort(key=lambda c: (not c.unfused, not c.fused, -max(c.bytes_a, c.bytes_b), c.op))
    return out


def _metrics(
    a: ModuleReport,
    b: ModuleReport,
    time_a: Mapping[str, float] | None,
    time_b: Mapping[str, float] | None,
) -> tuple[Metric, ...]:
    def get(m: ModuleReport, what: str) -> float | None:
        if what == INSTRUCTIONS_BEFORE:
            return m.before.instructions if m.before else None
        if what == INSTRUCTIONS:
            return m.after.instructions if m.after else None
        if what == KERNELS:
            return m.after.kernel_count if m.after else None
        if what == LAUNCHES:
            return m.after.launches if m.after else None
        if what == OPS_PER_KERNEL:
            return m.ops_per_kernel
        return m.alone

    out = [
        Metric(name, get(a, name), get(b, name), _GUARDED.get(name))
        for name in (INSTRUCTIONS_BEFORE, INSTRUCTIONS, KERNELS, LAUNCHES, OPS_PER_KERNEL)
    ]
    out.append(Metric(ALONE_OPS, get(a, ALONE_OPS), get(b, ALONE_OPS), "higher"))
    out.append(
        Metric(
            TIME_US,
            sum(time_a.values()) if time_a is not None else None,
            sum(time_b.values()) if time_b is not None else None,
            "higher",
        )
    )
    return tuple(out)


def diff_modules(
    a: ModuleReport,
    b: ModuleReport,
    *,
    time_a: Mapping[str, float] | None = None,
    time_b: Mapping[str, float] | None = None,
    matched_by: str = "name",
) -> ModuleDiff:
    """Compare one module of run A with its counterpart in run B.

    Args:
        a: The module in A (from `analyze_run` or `analyze_dump`).
        b: The module in B.
        time_a: Kernel name -> total µs in A's profile, when A was profiled.
        time_b: The same for B.
        matched_by: How the pair was found (`"name"` or `"structure"`).

    Returns:
        Counts A vs B, kernel groups matched by provenance (biggest impact first:
        time where both sides are profiled, else bytes moved), op placement changes.
    """
    profiled = time_a is not None and time_b is not None
    if not profiled:
        time_a = time_b = None
    split = _split_by_line(a, b)
    groups = _match_kernels(_sides(a, time_a, split), _sides(b, time_b, split))
    order = {name: i for i, name in enumerate(CHANGES)}
    ranked = []
    for xs, ys in groups:
        c = _classify(xs, ys)
        # Ties keep program order: A's kernel order, then B's.
        position = (0, min(s.index for s in xs)) if xs else (1, min(s.index for s in ys))
        ranked.append(((not c.changed, -c.impact, order[c.change], position), c))
    ranked.sort(key=lambda t: t[0])
    changes = [c for _, c in ranked]
    kinds_a = a.after.kernels_by_kind if a.after else {}
    kinds_b = b.after.kernels_by_kind if b.after else {}
    kinds = tuple(
        (kind, kinds_a.get(kind, 0), kinds_b.get(kind, 0))
        for kind in dict.fromkeys([*kinds_a, *kinds_b])
    )
    return ModuleDiff(
        a=a,
        b=b,
        matched_by=matched_by,
        metrics=_metrics(a, b, time_a, time_b),
        kinds=kinds,
        kernels=tuple(changes),
        ops=tuple(_op_changes(a, b)),
        profiled=profiled,
    )


def _module_timing(
    timings: Mapping[str, Mapping[str, float]] | None, m: ModuleReport
) -> Mapping[str, float] | None:
    if not timings:
        return None
    number = re.match(r"(\d+)\.", m.key)
    program = f"{m.name}({int(number[1])})" if number else m.name
    for key in (m.key, m.name, program):
        if key in timings:
            return timings[key]
    wanted = normalise_module_name(m.name)
    found = [v for k, v in timings.items() if normalise_module_name(k) == wanted]
    return found[0] if len(found) == 1 else None


def diff_runs(
    a: RunReport,
    b: RunReport,
    *,
    timings_a: Mapping[str, Mapping[str, float]] | None = None,
    timings_b: Mapping[str, Mapping[str, float]] | None = None,
) -> RunDiff:
    """Compare two runs module by module.

    Args:
        a: `analyze_run` of run A (the baseline).
        b: `analyze_run` of run B.
        timings_a: Module key, name or `name(program_id)` -> (kernel name -> µs per
            execution), when A was profiled (see `ProfileTimings.kernel_us_per_execution`).
        timings_b: The same for B.

    Returns:
        The matched module diffs and the modules only one run has.
    """
    pairs, only_a, only_b = match_modules(a.modules, b.modules)
    modules = tuple(
        diff_modules(
            x,
            y,
            time_a=_module_timing(timings_a, x),
            time_b=_module_timing(timings_b, y),
            matched_by=how,
        )
        for x, y, how in pairs
    )
    return RunDiff(a, b, modules, tuple(only_a), tuple(only_b))


# ---------------------------------------------------------------------------------------
# CI guards


def parse_tolerance(text: str | float) -> float:
    """`"5%"`, `"5"` or `5` -> 0.05 (a plain number is a percentage too).

    Raises:
        UsageError: Not a non-negative percentage.
    """
    raw = str(text).strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--tolerance {raw!r}: give a percentage such as 5% or 0.5%")
    return value / 100


def check_run(modules: Iterable[ModuleReport], budget: Budget) -> tuple[Violation, ...]:
    """Hold modules to a budget.

    Args:
        modules: The modules to check (the CLI passes the non-trivial ones, or those
            `--module` selects).
        budget: The limits.

    Returns:
        Every limit a module exceeds, in module order; empty when all are within budget.
        A module without an after-optimization dump has no kernels to check; one
        without a before dump has no ops per kernel.
    """
    out = []
    for m in modules:
        a = m.after
        if a is None:
            continue
        if budget.max_kernels is not None and a.kernel_count > budget.max_kernels:
            out.append(Violation(m.key, KERNELS, a.kernel_count, budget.max_kernels))
        if budget.max_launches is not None and a.launches > budget.max_launches:
            out.append(Violation(m.key, LAUNCHES, a.launches, budget.max_launches))
        opk = m.ops_per_kernel
        if (
            budget.min_ops_per_kernel is not None
            and opk is not None
            and opk < budget.min_ops_per_kernel
        ):
            out.append(Violation(m.key, OPS_PER_KERNEL, opk, budget.min_ops_per_kernel))
    return tuple(out)


def regressions(modules: Iterable[ModuleDiff], tolerance: float = 0.0) -> tuple[Violation, ...]:
    """Where B is worse than A beyond a tolerance.

    Worse means more kernels, more launches, fewer ops per kernel, or more total kernel
    time (only when both sides were profiled).

    Args:
        modules: The module diffs to judge (the CLI passes the non-trivial ones).
        tolerance: Allowed relative change, as a fraction of A (0.05 for 5%).

    Returns:
        One violation per module and metric that got worse, in module order.
    """
    out = []
    for d in modules:
        for metric in d.metrics:
            if metric.name not in _GUARDED or not metric.is_worse(tolerance):
                continue
            assert metric.a is not None and metric.b is not None
            out.append(Violation(d.label, metric.name, metric.b, metric.a, tolerance))
    return tuple(out)


def _total(values: Iterable[float | None]) -> float | None:
    vs = list(values)
    if not vs or any(v is None for v in vs):
        return None
    return float(sum(v for v in vs if v is not None))


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
