"""What is computed once per parsed module (and its analysis), while they live.

A module's platform (`kernels.platform`) and constants (`evidence.constant_like`) are
asked by several passes over it, its kernel costs (`cost.module_cost`) and devices
(`parallel.parallelism`) by several renderers: each is computed once per module
(`ByModule`) or per (module, analysis) pair (`PerModule`). A worker
process (`hloscope.analysis.pool`) computes them where the module is parsed and sends
them back with the analysis: `remember` keeps them for the module's stand-in here, which
then never parses its file again for them.

`Ahead` is computed once, early, where a process waits anyway, for the one later call
that needs it (the op diagram's ops of a page, found while a worker sends its side).
`Later` is a mapping computed the first time it is read: what a drawing may never ask
of a module that a worker process analysed (the after side's source ops) is found
then, from the module's file. `LazyTuple` is a tuple of the same kind, its length known
at once: the kernels of a module before optimization, one per op, that only a diagram
reads.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from hloscope.hlo.model import HloModule

__all__ = ["Ahead", "ByModule", "Later", "LazyTuple", "PerModule"]

T = TypeVar("T")
A = TypeVar("A")  # what a module is analysed into (`fusion.ModuleAnalysis`)
K = TypeVar("K")
V = TypeVar("V")
E = TypeVar("E")


class PerModule(Generic[A, T]):
    """`compute(module, analysis)`, kept by (module, analysis) while both are alive
    (weak references: an id is never reused for other objects while kept)."""

    def __init__(self, compute: Callable[[HloModule, A], T]) -> None:
        self._compute = compute
        self._kept: dict[tuple[int, int], tuple[weakref.ref[Any], weakref.ref[Any], T]] = {}

    def __call__(self, module: HloModule, analysis: A) -> T:
        known = self._kept.get((id(module), id(analysis)))
        if known is not None and known[0]() is module and known[1]() is analysis:
            return known[2]
        value = self._compute(module, analysis)
        self.remember(module, analysis, value)
        return value

    def remember(self, module: HloModule, analysis: A, value: T) -> None:
        """Keep `value` as what `compute(module, analysis)` gives (one made elsewhere)."""
        key = (id(module), id(analysis))

        def forget(_: object) -> None:
            self._kept.pop(key, None)

        with contextlib.suppress(TypeError):  # an object that takes no weak reference
            self._kept[key] = (weakref.ref(module, forget), weakref.ref(analysis, forget), value)


class ByModule(Generic[T]):
    """`compute(module)`, kept while the module is alive (`_keep`)."""

    def __init__(self, compute: Callable[[HloModule], T]) -> None:
        self._compute = compute
        self._kept: dict[int, tuple[weakref.ref[HloModule], T]] = {}

    def __call__(self, module: HloModule) -> T:
        known = self._kept.get(id(module))
        if known is not None and known[0]() is module:
            return known[1]
        value = self._compute(module)
        _keep(self._kept, module, value)
        return value


def _keep(kept: dict[int, tuple[weakref.ref[HloModule], T]], module: HloModule, value: T) -> None:
    """Keep `value` for `module` by its id, while the module is alive (a weak reference:
    its id is never reused for another module while kept; one that takes none is not
    kept)."""
    key = id(module)

    def forget(ref: weakref.ref[HloModule]) -> None:
        if kept.get(key, (None,))[0] is ref:
            del kept[key]

    with contextlib.suppress(TypeError):  # a module that takes no weak reference
        kept[key] = (weakref.ref(module, forget), value)


class Ahead(Generic[T]):
    """`compute(module)`, found ahead of time (`ahead`) where a process has time to
    spare, and kept only until the next call takes it (computed then otherwise)."""

    def __init__(self, compute: Callable[[HloModule], T]) -> None:
        self._compute = compute
        self._kept: dict[int, tuple[weakref.ref[HloModule], T]] = {}

    def ahead(self, module: HloModule) -> None:
        """Compute the value for `module` now, for the next call to take."""
        _keep(self._kept, module, self._compute(module))

    def __call__(self, module: HloModule) -> T:
        known = self._kept.pop(id(module), None)
        if known is not None and known[0]() is module:
            return known[1]
        return self._compute(module)


class Later(Mapping[K, V]):
    """A mapping made the first time it is read (pickled as the dict it is then)."""

    def __init__(self, make: Callable[[], Mapping[K, V]]) -> None:
        self._make: Callable[[], Mapping[K, V]] | None = make
        self._found: Mapping[K, V] = {}

    def _made(self) -> Mapping[K, V]:
        if self._make is not None:
            self._found, self._make = self._make(), None
            # From now on `get` is the made mapping's own, an attribute of this object
            # over the method: the op diagram of a big module reads a million keys.
            self.get = self._found.get  # type: ignore[method-assign,assignment]
        return self._found

    def __getitem__(self, key: K) -> V:
        return self._made()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())

    # Read at the made mapping's speed, not through `Mapping`'s methods, which ask
    # `__getitem__` for each key (a big module's op diagram reads 536k of them).
    def __contains__(self, key: object) -> bool:
        return key in self._made()

    def get(self, key: K, default: Any = None) -> Any:
        return self._made().get(key, default)

    def items(self) -> ItemsView[K, V]:
        return self._made().items()

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (dict, (dict(self._made()),))


class LazyTuple(Sequence[E]):
    """A tuple made on first use (`_make`), its length known at once: equal to the
    tuple, hashed and pickled as it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._made: tuple[E, ...] | None = None

    def _make(self) -> tuple[E, ...]:
        raise NotImplementedError

    def _load(self) -> tuple[E, ...]:
        if self._made is None:
            self._made = self._make()
            assert len(self._made) == self.size  # what it was said to hold
        return self._made

    @overload
    def __getitem__(self, index: int) -> E: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[E, ...]: ...
    def __getitem__(self, index: int | slice) -> E | tuple[E, ...]:
        return self._load()[index]

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[E]:
        return iter(self._load())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyTuple):
            other = other._load()
        return self._load() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._load())

    def __add__(self, other: tuple[E, ...]) -> tuple[E, ...]:
        return self._load() + tuple(other)

    def __repr__(self) -> str:
        return repr(self._load())

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (tuple, (self._load(),))
