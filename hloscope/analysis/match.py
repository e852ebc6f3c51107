"""Pairing what two compiles of one program produced: modules, kernels and timings.

Sits between `analysis.report` (per-module reports) and `analysis.diff` (what changed):
modules pair by normalised name, else by structure; kernels pair by the source ops they
hold, never by XLA's generated names, which change between compiles; a module finds its
kernel times in a profile's table by key, program id or name. Nothing here judges a change.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hloscope.analysis.fusion import Kernel
from hloscope.analysis.provenance import SourceOp, is_framework_file
from hloscope.analysis.report import ModuleReport
from hloscope.hlo.model import SourceLocation

__all__ = [
    "KernelGroup",
    "KernelTimes",
    "MatchedKernel",
    "kernel_times_for",
    "match_kernels",
    "match_modules",
    "normalise_module_name",
    "op_name_key",
]

KernelTimes = Mapping[str, Mapping[str, float]]
"""Module key or name -> kernel name -> µs per execution (as
`Inspection.all_kernel_times` returns)."""

_TF_HASH = re.compile(r"_*XlaMustCompile_(?:true|false)_config_proto_\d+_executor_type_\d+_*")
_TF_FUNCTION_ID = re.compile(r"^(a?_?inference_.+?)_\d+$")
_MODULE_NUMBER = re.compile(r"(\d+)\.")
_STRUCTURE_THRESHOLD = 0.6


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

    Example:
        >>> a = hloscope.inspect_run("tests/data/jax_mlp").modules
        >>> pairs, only_a, only_b = hloscope.match_modules(a, a)
        >>> len(pairs) == len(a), only_a, only_b
        (True, [], [])
    """
    sig_a = [_signature(m) for m in a]
    sig_b = [_signature(m) for m in b]

    def score(i: int, j: int) -> float:
        return _similarity(sig_a[i], sig_b[j])

    by_name_b: dict[str, list[int]] = defaultdict(list)
    for j, m in enumerate(b):
        by_name_b[normalise_module_name(m.name)].append(j)
    pairs: dict[int, tuple[int, str]] = {}
    for name, ia in _indices_by_name(a).items():
        for i, j in _greedy(ia, by_name_b.get(name, []), score, 0.0):
            pairs[i] = (j, "name")
    used_b = {j for j, _ in pairs.values()}
    rest_a = [i for i in range(len(a)) if i not in pairs]
    rest_b = [j for j in range(len(b)) if j not in used_b]
    for i, j in _greedy(rest_a, rest_b, score, _STRUCTURE_THRESHOLD):
        pairs[i] = (j, "structure")
        used_b.add(j)
    matched = [(a[i], b[j], how) for i, (j, how) in sorted(pairs.items())]
    only_a = [m for i, m in enumerate(a) if i not in pairs]
    only_b = [m for j, m in enumerate(b) if j not in used_b]
    return matched, only_a, only_b


def _indices_by_name(modules: Sequence[ModuleReport]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for i, m in enumerate(modules):
        out[normalise_module_name(m.name)].append(i)
    return out


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
# Timings


def kernel_times_for(times: KernelTimes | None, key: str, name: str) -> Mapping[str, float] | None:
    """The kernel times of one dumped module, from a profile's table of all modules.

    This is the one join of a module to its timing. Tried in order: the module key
    (`0030.jit_mlp`); `name(program_id)`, how a profile names one of several programs of
    one name (XLA's program id is the dump's module number); the HloModule name; and
    last the one profiled module of the same normalised name (another compile of it).
    The program id comes before the bare name because a profile that holds several
    programs of one name may still map the bare name to one of them.

    Args:
        times: Module key or name -> kernel name -> µs per execution (see
            `Inspection.all_kernel_times`), or None when not profiled.
        key: The module's key in its run (`0030.jit_mlp`).
        name: Its HloModule name (`jit_mlp`).

    Returns:
        Kernel name -> µs per execution, or None when the table has no such module (or
        several of its normalised name).

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> times = hloscope.kernel_times_for(ins.all_kernel_times(), '0030.jit_mlp', 'jit_mlp')
        >>> sorted(times)[:2]
        ['add_reduce_fusion', 'broadcast_multiply_fusion']
    """
    if not times:
        return None
    number = _MODULE_NUMBER.match(key)
    program = f"{name}({int(number[1])})" if number else None
    for candidate in (key, program, name):
        if candidate is not None and candidate in times:
            return times[candidate]
    wanted = normalise_module_name(name)
    found = [v for k, v in times.items() if normalise_module_name(k) == wanted]
    return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------------------------------
# Kernels


@dataclass(frozen=True)
class MatchedKernel:
    """One kernel of one side with what it is matched on.

    Attributes:
        kernel: The kernel.
        index: Its position among the module's kernels (program order).
        keys: Its matching keys: source op names without the outer `jit(...)/`, with the
            source line added where one name stands for several places (see
            `match_kernels`).
        names: The source op names it holds, in order, as the module spells them.
        shown: Matching key -> the source op name to show for it.
        ops: The HLO opcodes it computes, in order.
    """

    kernel: Kernel
    index: int
    keys: frozenset[str]
    names: tuple[str, ...] = ()
    shown: Mapping[str, str] = field(default_factory=dict)
    ops: tuple[str, ...] = ()

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str]:
        """What it computes, for kernels without source ops: kind, opcodes, shape."""
        return (self.kernel.kind, self.ops, self.kernel.shape.text)


KernelGroup = tuple[list[MatchedKernel], list[MatchedKernel]]
"""Kernels of A and of B that hold the same source ops (one side empty: only one has
them)."""


def op_name_key(name: str) -> str:
    """A source op name without the outer `jit(<function>)/`, which renames with it."""
    # `^p?jit\([^/]*\)/` without a regular expression: hundreds of thousands per diff
    if name.startswith(("jit(", "pjit(")):
        slash = name.find("/")
        if slash > 0 and name[slash - 1] == ")":
            return name[slash + 1 :]
    return name


def match_kernels(a: ModuleReport, b: ModuleReport) -> list[KernelGroup]:
    """Group the kernels of A and B that hold the same source ops.

    Kernels with identical source ops pair first where that is unambiguous (as many
    in A as in B); the rest group by connected components of "shares a source op".
    Kernels without any source op pair by kind, opcodes and shape. A JAX name such as
    `jit(f)/add` repeats across a model: where both sides place it on the same several
    source lines, the line keeps the kernels of different layers apart.

    Args:
        a: The module in run A.
        b: Its counterpart in run B.

    Returns:
        Groups `(kernels of A, kernels of B)`; every kernel of both sides is in one.
    """
    places = _Places()
    keys_a = _op_keys(a)
    keys_b = keys_a if b is a else _op_keys(b)
    split = _split_by_line(a, b, keys_a, keys_b, places)
    sa = _matched_kernels(a, keys_a, split, places)
    sb = sa if b is a else _matched_kernels(b, keys_b, split, places)  # a module with itself: once
    named_a = [s for s in sa if s.keys]
    named_b = [s for s in sb if s.keys]
    groups, rest_a, rest_b = _pair_identical(named_a, named_b)
    groups.extend(_shared_op_components(rest_a, rest_b))
    groups.extend(_by_signature([s for s in sa if not s.keys], [s for s in sb if not s.keys]))
    return groups


class _Places:
    """Each source op's user source location (None for none, or a framework's), found
    once per location: a big module's kernels hold a few hundred lines, hundreds of
    thousands of times, most often as the same few objects."""

    def __init__(self) -> None:
        self._places: dict[SourceLocation, str | None] = {}
        # by the object, which it keeps (so that its id is not another's): no hash of
        # its fields for every op
        self._seen: dict[int, tuple[SourceLocation, str | None]] = {}

    def where(self, op: SourceOp) -> str | None:
        location = op.location
        if location is None:
            return None
        seen = self._seen.get(id(location))
        if seen is None:
            seen = self._seen[id(location)] = (location, self._where(location))
        return seen[1]

    def _where(self, location: SourceLocation) -> str | None:
        if location not in self._places:
            user = not is_framework_file(location.file)
            self._places[location] = str(location) if user else None
        return self._places[location]


def _op_keys(m: ModuleReport) -> dict[str, list[str]]:
    """Each kernel's source ops' matching keys (`op_name_key`), in order: found once for
    both readers of a module's ops, lines and kernels."""
    kernel_ops = m.provenance.kernel_ops if m.provenance else {}
    return {name: [op_name_key(op.name) for op in ops] for name, ops in kernel_ops.items()}


def _matched_kernels(
    m: ModuleReport,
    op_keys: Mapping[str, list[str]],
    split_by_line: frozenset[str],
    places: _Places,
) -> list[MatchedKernel]:
    if m.after is None:
        return []
    kernel_ops = m.provenance.kernel_ops if m.provenance else {}
    out = []
    for index, k in enumerate(m.after.kernels):
        ops = kernel_ops.get(k.name, ())
        shown: dict[str, str] = {}
        for key, op in zip(op_keys.get(k.name, ()), ops, strict=True):
            where = places.where(op) if key in split_by_line else None
            shown.setdefault(f"{key}@{where}" if where else key, op.name)
        names = tuple(dict.fromkeys(o.name for o in ops))
        out.append(MatchedKernel(k, index, frozenset(shown), names, shown, k.opcodes))
    return out


def _split_by_line(
    a: ModuleReport,
    b: ModuleReport,
    keys_a: Mapping[str, list[str]],
    keys_b: Mapping[str, list[str]],
    places: _Places,
) -> frozenset[str]:
    """Source op names to tell apart by source line: those both sides place on the same
    lines. Names whose lines moved (an edited script) match on the name alone."""

    def lines(m: ModuleReport, op_keys: Mapping[str, list[str]]) -> dict[str, set[str | None]]:
        out: dict[str, set[str | None]] = defaultdict(set)
        if m.provenance is not None:
            for name, ops in m.provenance.kernel_ops.items():
                for key, op in zip(op_keys[name], ops, strict=True):
                    out[key].add(places.where(op))
        return out

    la = lines(a, keys_a)
    lb = la if b is a else lines(b, keys_b)
    return frozenset(
        name
        for name, places_a in la.items()
        if len(places_a) > 1 and None not in places_a and lb.get(name) == places_a
    )


def _pair_identical(
    named_a: list[MatchedKernel], named_b: list[MatchedKernel]
) -> tuple[list[KernelGroup], list[MatchedKernel], list[MatchedKernel]]:
    """Identical source op sets, as many on both sides: pair one to one. Returns the
    pairs and what is left of each side."""
    by_keys_b: dict[frozenset[str], list[MatchedKernel]] = defaultdict(list)
    for s in named_b:
        by_keys_b[s.keys].append(s)
    by_keys_a: dict[frozenset[str], list[MatchedKernel]] = defaultdict(list)
    for s in named_a:
        by_keys_a[s.keys].append(s)
    groups: list[KernelGroup] = []
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
    return groups, rest_a, rest_b


def _pair_alike(
    xs: list[MatchedKernel], ys: list[MatchedKernel]
) -> list[tuple[MatchedKernel, MatchedKernel]]:
    """Pair equally many kernels: same kind and shape first, then in order."""
    left, right = list(xs), list(ys)
    out = []
    for test in (
        lambda x, y: x.kernel.kind == y.kernel.kind and x.kernel.shape.text == y.kernel.shape.text,
        lambda x, y: x.kernel.kind == y.kernel.kind,
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


def _shared_op_components(
    rest_a: list[MatchedKernel], rest_b: list[MatchedKernel]
) -> list[KernelGroup]:
    """Connected components over "shares a source op"."""
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
    components: dict[int, KernelGroup] = {}
    for index, s in enumerate(everyone):
        group = components.setdefault(find(index), ([], []))
        group[0 if index < len(rest_a) else 1].append(s)
    return list(components.values())


def _by_signature(anon_a: list[MatchedKernel], anon_b: list[MatchedKernel]) -> list[KernelGroup]:
    """Kernels without source ops, by what they compute. What is left appeared or
    disappeared; alike kernels are reported together."""
    by_sig: dict[tuple[str, tuple[str, ...], str], list[MatchedKernel]] = defaultdict(list)
    for s in anon_b:
        by_sig[s.signature].append(s)
    groups: list[KernelGroup] = []
    gone: dict[tuple[str, tuple[str, ...], str], list[MatchedKernel]] = defaultdict(list)
    for s in anon_a:
        candidates = by_sig.get(s.signature)
        if candidates:
            groups.append(([s], [candidates.pop(0)]))
        else:
            gone[s.signature].append(s)
    groups.extend((ss, []) for ss in gone.values())
    groups.extend(([], ss) for ss in by_sig.values() if ss)
    return groups
