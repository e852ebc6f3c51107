"""Many modules on many cores: the modules of a run parsed and analysed in parallel,
and one big module's two sides read at once.

`analyze_dumps` is what `analyze_run` calls: its `analyze_dump` for every module, in
worker processes (one per core, this process being one of them) when a run holds
enough modules for it to pay, else in this process. The reports come back in the order
of the modules given, equal to a serial run's. `beside` is what `analyze_dump` calls
for a module whose two sides are big (`beside_pays`): its after side is parsed and
analysed in a worker while this process reads the before side.

What a worker sends back is small (`pack_reports`): its reports with each parsed module
replaced by a stand-in (`_SentModule`) that parses the file again if something asks for
its instructions, each kernel's instructions by the kernel's number (`_SentOps`), and a
before side's kernels, which only a diagram reads, as its analysis made again
(`_SentKernels`); the kernels' bytes and FLOPs and the module's devices come along
(`Derived`). An after side's kernels and their costs come as bytes of their own
(`_Later`), unpickled when first read: a report read back from the user's cache often
reads neither. The text and JSON reports need nothing else, so a report of many modules
parses each once; a diagram or the HTML page of a module parses (and analyses) it again
in this process, when it is drawn. The analyses kept in the user's cache folder are
packed the same way (`hloscope.analysis.kept`).

Workers are forked from this process once its modules are known (nothing is imported
again); where `fork` is not available or another thread runs (a notebook's kernel), the
analysis stays serial. `HLOSCOPE_JOBS=1` forces a serial run, `N` at most N processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import multiprocessing
import operator
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection
from types import MappingProxyType
from typing import Any, Generic, Protocol, TypeVar

from hloscope.analysis.cost import Cost, ModuleCost, module_cost, remember_cost
from hloscope.analysis.fusion import Kernel, ModuleAnalysis, analyze_module
from hloscope.analysis.memo import ByModule, LazyTuple
from hloscope.analysis.parallel import Parallelism, parallelism, remember_parallelism
from hloscope.analysis.provenance import Provenance
from hloscope.hlo.model import HloModule, Instruction
from hloscope.hlo.parser import paused_gc
from hloscope.runs import ModuleDump

__all__ = [
    "JOBS_VARIABLE",
    "Derived",
    "Pending",
    "analyze_dumps",
    "beside",
    "beside_pays",
    "elsewhere",
    "file_loaders",
    "jobs_for",
    "may_split",
    "pack_reports",
    "parsed_here",
    "side_sizes",
    "unpack_reports",
]

JOBS_VARIABLE = "HLOSCOPE_JOBS"
"""Environment variable: the most processes the analysis of a run uses (1: serial)."""

# Below these, the workers cost more than they save (benchmarks/parallel_bench.py): a
# few modules, a few hundred kB of HLO in all, or two cores. On 2 cores shared with
# other work, the 165-module EfficientNet folder (6 MB) took 1.1-1.3x the serial time
# in parallel: a worker's share, its pickling and its reports' unpickling here did not
# beat this process doing it all. A serial run is the default there.
MIN_MODULES = 8
MIN_BYTES = 1 << 20
MIN_CORES = 3
# One module's sides in two processes (`beside`): worth it from a few MB a side, where
# parsing and analysing each takes seconds and what comes back is small.
MIN_SIDE_BYTES = 8 << 20

_IN_WORKER = False  # set in a worker: it splits nothing further


class Report(Protocol):
    """What `analyze_dumps` needs of a module's report (`analysis.report.ModuleReport`)."""

    @property
    def before_module(self) -> HloModule | None: ...
    @property
    def after_module(self) -> HloModule | None: ...
    @property
    def before(self) -> ModuleAnalysis | None: ...
    @property
    def after(self) -> ModuleAnalysis | None: ...
    @property
    def provenance(self) -> Provenance | None: ...


R = TypeVar("R", bound=Report)

# What the workers run on which dumps, set before they are forked (they inherit it, so
# only indices travel to them).
_TODO: list[list[ModuleDump]] = []
_ANALYZE: list[Callable[[ModuleDump], Any]] = []


def analyze_dumps(
    dumps: Sequence[ModuleDump], analyze: Callable[[ModuleDump], R], jobs: int | None = None
) -> list[R]:
    """`analyze(dump)` of every module, in parallel when it pays.

    Args:
        dumps: The modules.
        analyze: `hloscope.analysis.report.analyze_dump`.
        jobs: The most processes to use (this one included); default: `jobs_for`.

    Returns:
        One report per module, in the order given, as a serial run gives them.
    """
    sizes = [sum(side_sizes(d)) for d in dumps]
    n = jobs if jobs is not None else jobs_for(len(dumps), sum(sizes))
    shares = _balance(sizes, n) if n > 1 else []
    if len(shares) < 2:
        return [analyze(d) for d in dumps]
    global _TODO
    _TODO = [[dumps[i] for i in share] for share in shares]
    _ANALYZE[:] = [analyze]
    context = multiprocessing.get_context("fork")
    workers = []
    found: dict[int, list[R]] = {}
    try:
        for k in range(1, len(shares)):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_worker, args=(k, sender), daemon=True)
            process.start()
            sender.close()
            workers.append((process, receiver))
        found[0] = [analyze(d) for d in _TODO[0]]  # this process's share
        loaders = file_loaders(dumps)
        for k, (_, receiver) in enumerate(workers, 1):
            found[k] = unpack_reports(receiver.recv_bytes(), loaders)
    finally:
        _TODO = []
        _ANALYZE.clear()
        for process, receiver in workers:
            receiver.close()
            if process.exitcode is None and len(found) < len(shares):
                process.terminate()  # stopped by an error here: nobody reads what it sends
            process.join()
    reports: list[R | None] = [None] * len(dumps)
    for k, share in enumerate(shares):
        for i, report in zip(share, found[k], strict=True):
            reports[i] = report
    return [r for r in reports if r is not None]


class Side(Protocol):
    """What `beside` sends back: one module and its analysis (and what else refers to
    them: a provenance's after side, a cost)."""

    @property
    def module(self) -> HloModule | None: ...
    @property
    def analysis(self) -> ModuleAnalysis | None: ...


S = TypeVar("S", bound=Side)
T = TypeVar("T")
U = TypeVar("U")


class Pending(Generic[T, U]):
    """A `beside` (or `elsewhere`) task running in a forked worker.

    A thread here takes what the worker sends as soon as it is sent, so the worker
    ends then, and its memory is free, while this process is still busy with its own
    side (the pickled result is a small part of what the worker held).
    """

    def __init__(
        self,
        task: Callable[[], T],
        loaders: dict[str, Callable[[], HloModule | None]],
        then: Callable[[T], U] | None,
        pack: Callable[[T], bytes],
        more: Sequence[Callable[[T], object]] = (),
    ) -> None:
        self._loaders = loaders
        context = multiprocessing.get_context("fork")
        self._receiver, sender = context.Pipe(duplex=False)
        _widen(self._receiver)
        later = ([] if then is None else [then]) + list(more)
        args = (task, later, pack, sender)
        self._process = context.Process(target=_task_worker, args=args, daemon=True)
        self._process.start()
        sender.close()
        # what the worker sent: the task's result, then `then`'s and `more`'s, in turn
        # (None: it died first); the worker is closed once all are taken
        self._data: list[bytes | None] = [None] * (1 + len(later))
        self._taken = [False] * len(self._data)
        self._more = 1 + (then is not None)  # where `more`'s results start
        self._sent = [threading.Event() for _ in self._data]
        self._reader = threading.Thread(target=self._read, name="hloscope-beside", daemon=True)
        self._reader.start()

    def _read(self) -> None:  # a read takes the interpreter lock once per pipe's worth
        try:
            for n, sent in enumerate(self._sent):
                self._data[n] = self._receiver.recv_bytes()
                sent.set()
        except (EOFError, OSError):
            pass
        finally:
            for sent in self._sent:
                sent.set()

    def result(self) -> T | None:
        """Wait for the task's result; raise what it raised there; None when the worker
        died without a word (killed for memory: the caller runs the task itself). The
        worker is closed then, unless `then` or `more` is still to come."""
        data = self._take(0)
        if data is None:
            return None
        found: T = _unpickle(data, self._loaders)
        return found

    def then(self) -> U | None:
        """Wait for `then(result)`, which the worker finds after it has sent the result;
        raise what it raised there; None when the worker died first."""
        if self._more == 1:  # no `then` was given
            return None
        later: U | None = self._later(1)
        return later

    def more(self, n: int) -> object | None:
        """Wait for the result of `more[n]`, found in turn after `then`'s; raise what
        it raised there; None when the worker died first."""
        found: object | None = self._later(self._more + n)
        return found

    def _later(self, n: int) -> Any:
        data = self._take(n)
        if data is None:
            return None
        found = pickle.loads(data)
        if isinstance(found, _Failed):
            raise found.error
        return found

    def _take(self, n: int) -> bytes | None:
        """The `n`th message, waited for; the worker is closed once each is taken, or
        once one never came."""
        self._sent[n].wait()
        data, self._data[n] = self._data[n], None
        self._taken[n] = True
        if data is None or all(self._taken):
            self.close()
        return data

    def close(self) -> None:
        """Stop the worker if it still runs (nobody will read its result)."""
        if self._process.exitcode is None:
            self._process.terminate()  # the reader then sees the pipe closed
        self._process.join()
        self._reader.join()
        if not self._receiver.closed:
            self._receiver.close()


def _widen(pipe: Connection) -> None:
    """Let `pipe` hold 1 MiB (Linux; 64 kB by default), so that a thread reading it
    while the interpreter is busy with other work takes it in a few turns."""
    with contextlib.suppress(ImportError, AttributeError, OSError):  # not Linux, or capped
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)


def beside(
    task: Callable[[], S],
    loaders: dict[str, Callable[[], HloModule | None]],
    then: Callable[[S], T] | None = None,
    more: Sequence[Callable[[S], object]] = (),
) -> Pending[S, T]:
    """Run `task()` in a forked worker while this process goes on.

    Its result comes back small (`_send`): its module as a stand-in that parses the file
    again through `loaders[path]` if something asks for its instructions, the kernels'
    instructions by the kernel's number. `beside_pays` says when it is worth it.

    Args:
        task: What the worker computes (`Pending.result`).
        loaders: How this process reads each module file again.
        then: What the worker computes from the task's result once it has sent it
            (`Pending.then`), while this process works on that result: pickled as it
            is, so nothing in it should hold the worker's module.
        more: What the worker computes after `then`, each in turn and sent as it is
            found (`Pending.more`), pickled as `then`'s.
    """
    return Pending(task, loaders, then, _side, more)


def _side(side: Side) -> bytes:
    """A `beside` task's result, small (`_send`): its module as its file, its kernels'
    instructions by number."""
    return _send(side, [side.module], [(side.module, side.analysis)])


def elsewhere(task: Callable[[], T], then: Callable[[T], U] | None = None) -> Pending[T, U]:
    """Run `task()` in a forked worker while this process goes on, then `then` of its
    result there once it has sent it (`Pending.result`, `Pending.then`). Both are
    pickled as they are: a module the worker parses stays there. `may_split` says when
    it can run; the caller runs them itself when the worker dies (None)."""
    return Pending(task, {}, then, lambda found: _send(found, (), ()))


def parsed_here(module: HloModule | None) -> bool:
    """Whether `module`'s instructions are in this process: not for the stand-in of a
    module a worker parsed (`_SentModule`) until something here asked for them."""
    return not isinstance(module, _SentModule) or "computations" in module.__dict__


def may_split() -> bool:
    """Whether work can be split with a forked worker now (`elsewhere`): two cores for
    it, `fork` there, no other thread running, not in a worker, and `HLOSCOPE_JOBS` not
    1."""
    return not _IN_WORKER and _cores() >= 2 and _may_fork()


def beside_pays(sizes: Sequence[int]) -> bool:
    """Whether a module's two sides, of `sizes` bytes, are worth analysing in two
    processes: both are big (`MIN_SIDE_BYTES`, unless `HLOSCOPE_JOBS=N` lifts it, as
    for `jobs_for`), and `may_split`."""
    if len(sizes) < 2 or not all(sizes):
        return False
    limit = os.environ.get(JOBS_VARIABLE, "").strip()
    if not (limit.isdigit() and int(limit) > 1) and min(sizes) < MIN_SIDE_BYTES:
        return False
    return may_split()


def jobs_for(modules: int, total_bytes: int) -> int:
    """How many processes a run of `modules` modules of `total_bytes` of HLO is worth:
    one per core this process may use; one when it would not pay (few or small
    modules, fewer than `MIN_CORES` cores), when `fork` is not available, or when
    another thread runs (forking a threaded process is unsafe). `HLOSCOPE_JOBS=N` sets
    the most (and lifts the thresholds); 1 forces a serial run."""
    limit = os.environ.get(JOBS_VARIABLE, "").strip()
    cap = int(limit) if limit.isdigit() and int(limit) > 0 else None
    if cap == 1 or modules < 2:
        return 1
    if cap is None and (modules < MIN_MODULES or total_bytes < MIN_BYTES):
        return 1
    if not _may_fork():
        return 1
    cores = _cores()
    if cap is None and cores < MIN_CORES:
        return 1
    return max(1, min(cores, modules, cap or cores))


def _may_fork() -> bool:
    """Whether this process may fork workers: `fork` is there, no other thread runs,
    and `HLOSCOPE_JOBS` is not 1."""
    if os.environ.get(JOBS_VARIABLE, "").strip() == "1":
        return False
    return "fork" in multiprocessing.get_all_start_methods() and not _threaded()


def _cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _threaded() -> bool:
    """Whether another thread may run: a Python one, or a framework's own (JAX,
    TensorFlow and torch start theirs on import; forking them can deadlock)."""
    frameworks = ("jax", "jaxlib", "tensorflow", "torch")
    return threading.active_count() > 1 or any(name in sys.modules for name in frameworks)


# --- in a worker ------------------------------------------------------------------------


def _worker(k: int, sender: Connection) -> None:
    """A forked worker: send share `k`'s reports (or the exception that stopped them),
    then leave at once, without tearing down what it parsed."""
    _send_and_exit(sender, lambda: _analyze_share(k))


def _task_worker(
    task: Callable[[], T],
    later: Sequence[Callable[[T], object]],
    pack: Callable[[T], bytes],
    sender: Connection,
) -> None:
    """A forked worker of `Pending`: send `task()` as `pack` pickles it, then each of
    `later` of it, in turn."""
    found: list[T] = []

    def run() -> bytes:
        found.append(task())
        return pack(found[0])

    _send_and_exit(sender, run, stay=bool(later))
    for n, then in enumerate(later):
        last = n == len(later) - 1
        made = partial(_pickled, then, found)
        _send_and_exit(sender, made, stay=not last)


def _pickled(then: Callable[[T], object], found: list[T]) -> bytes:
    return pickle.dumps(then(found[0]), protocol=pickle.HIGHEST_PROTOCOL)


def _send_and_exit(sender: Connection, make: Callable[[], bytes], stay: bool = False) -> None:
    """Send what `make()` returns (or the exception that stopped it), then leave at
    once, without tearing down what the worker parsed (with `stay`: only after an
    exception)."""
    global _IN_WORKER
    _IN_WORKER = True  # its modules are not split again (`beside_pays`)
    code = 0
    try:
        data = make()
    except BaseException as e:  # sent to the parent, raised there
        data, code = pickle.dumps(_Failed(e)), 1
    try:
        sender.send_bytes(data)
    except OSError:  # the parent is gone: nobody reads what comes next
        code = code or 1
    finally:
        if code or not stay:
            os._exit(code)


@dataclass(frozen=True)
class Derived:
    """What renderers compute from an after module and its analysis, computed where the
    module was parsed: the kernels' costs and the module's devices. Kept for its
    stand-in in this process (`keep`), which then needs its file for neither."""

    cost: ModuleCost
    parallel: Parallelism | None

    @classmethod
    def of(cls, module: HloModule | None, analysis: ModuleAnalysis | None) -> Derived | None:
        """Both, computed; None without a module or analysis."""
        if module is None or analysis is None:
            return None
        return cls(module_cost(module, analysis), parallelism(module, analysis))

    def keep(self, module: HloModule | None, analysis: ModuleAnalysis | None) -> None:
        """Remember both as computed for `module` (a stand-in) and `analysis`."""
        if module is not None and analysis is not None:
            remember_cost(module, analysis, self.cost)
            remember_parallelism(module, analysis, self.parallel)


class _Failed:
    """What a worker sends when its analysis raised."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _analyze_share(k: int) -> bytes:
    """Analyse share `k` of `_TODO`; its reports, pickled small (`pack_reports`)."""
    return pack_reports([_ANALYZE[0](d) for d in _TODO[k]])


def pack_reports(reports: Sequence[Report]) -> bytes:
    """Reports pickled small, as a worker sends them (`_Sender`): each parsed module as
    its file, each kernel's instructions by the kernel's number, with their
    placements joined and the kernels' costs and devices (`Derived`) computed first, so
    that `unpack_reports` gives reports that need their files only for what reads
    instructions (a diagram, the HTML page)."""
    derived: list[Derived | None] = []
    for r in reports:
        if r.provenance is not None:
            r.provenance.placements  # noqa: B018  # joined here, not after the trip
        derived.append(Derived.of(r.after_module, r.after))
    modules = [m for r in reports for m in (r.before_module, r.after_module)]
    after = [(r.after_module, r.after) for r in reports]
    before = [(r.before_module, r.before) for r in reports]
    return _send((reports, derived), modules, after, unread=before)


def unpack_reports(data: bytes, loaders: dict[str, Callable[[], HloModule | None]]) -> list[Any]:
    """What `pack_reports` pickled (or the exception a worker raised, raised here): each
    module a stand-in that parses its file again through `loaders[path]` if something
    asks for its instructions, each kernel's costs and devices kept for it."""
    reports, derived = _unpickle(data, loaders)
    for r, found in zip(reports, derived, strict=True):
        if found is not None:
            found.keep(r.after_module, r.after)
    return list(reports)


def _send(
    obj: object,
    modules: Iterable[HloModule | None],
    analysed: Iterable[tuple[HloModule | None, ModuleAnalysis | None]],
    unread: Iterable[tuple[HloModule | None, ModuleAnalysis | None]] = (),
) -> bytes:
    """`obj` pickled small (`_Sender`): each of `modules` as its file, the kernels of
    each (module, analysis) in `analysed` by the kernel's number there, and those of
    each in `unread` (what nothing reads but a diagram: a before side's) as the
    analysis of the file made again."""
    buffer = io.BytesIO()
    sender = _Sender(buffer, _Tables(modules, analysed, unread))
    # the modules' headers first (by file), then what refers to them
    headers = {path: (name, attrs) for path, name, attrs in sender.tables.modules.values()}
    pickle.dump(headers, buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sender.dump(obj)
    return buffer.getvalue()


class _Tables:
    """What `_Sender` pickles differently, by object id: each module as its file, the
    kernels of each analysed module by number, an unread analysis as its file."""

    def __init__(
        self,
        modules: Iterable[HloModule | None],
        analysed: Iterable[tuple[HloModule | None, ModuleAnalysis | None]],
        unread: Iterable[tuple[HloModule | None, ModuleAnalysis | None]],
    ) -> None:
        # an analysis whose kernels go as its module's file (`_SentKernels`)
        self.unread = {
            id(a): m.path for m, a in unread if m is not None and m.path and a is not None
        }
        # a module as its file, name and header (small, and what the grouping of
        # compilations reads: `compilations.module_shapes`)
        self.modules: dict[int, tuple[str, str, dict[str, str]]] = {}
        # (file, kernel number, its instructions' opcodes, one string per opcode)
        self.ops: dict[int, tuple[str, int, tuple[str, ...]]] = {}
        # an analysis whose kernels go apart, unpickled when first read (`_Later`)
        self.apart: set[int] = set()
        for module in modules:
            if module is not None and module.path is not None:
                header = (module.path, module.name, dict(module.attributes))
                self.modules[id(module)] = header
        for module, analysis in analysed:
            if module is None or module.path is None or analysis is None:
                continue
            self.apart.add(id(analysis))
            if isinstance(analysis.kernels, _Later) and analysis.kernels.data is not None:
                continue  # they go as the bytes they came as
            for n, kernel in enumerate(analysis.kernels):
                if isinstance(kernel.ops, _SentOps):  # sent before: not analysed again
                    opcodes = kernel.ops.opcodes
                else:
                    opcodes = tuple([sys.intern(i.opcode) for i in kernel.ops])
                self.ops.setdefault(id(kernel.ops), (module.path, n, opcodes))


class _Sender(pickle.Pickler):
    """Pickles reports without the parsed modules: a module as its file, a kernel's
    instructions by the kernel's number in its module's analysis, or a whole analysis's
    kernels as the analysis of its file (`_SentKernels`). An analysed module's kernels
    and a module's kernel costs go apart (`_Later`): a report read back reads neither
    (`hloscope report` of the 107 MB pair reads none of its 44,640 kernels or their
    costs: unpickling them took 0.25 s of 0.44 s).

    It works through `reducer_override`, which pickle calls for objects other than
    plain strings, numbers, tuples, lists and dicts: millions of those go by at C
    speed (a `persistent_id` is called for every object: 8 million calls, two thirds
    of the time, for the 153 MB module of `benchmarks/scale_bench.py`).
    """

    def __init__(self, file: io.BytesIO, tables: _Tables) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tables = tables

    def reducer_override(self, obj: Any) -> Any:
        key = id(obj)
        tables = self.tables
        if key in tables.modules and isinstance(obj, HloModule):
            return (_sent_module, (tables.modules[key][0],))
        if isinstance(obj, ModuleAnalysis) and (key in tables.unread or key in tables.apart):
            state = {f: getattr(obj, f) for f in _ANALYSIS_FIELDS}
            if key in tables.unread:
                return (_sent_analysis, (state, tables.unread[key], len(obj.kernels)))
            return (_later_analysis, (state, self._apart(obj.kernels), len(obj.kernels)))
        cls = type(obj)
        if cls is ModuleCost:
            apart = self._apart(obj.kernels)
            return (_later_cost, (apart, len(obj.kernels), obj.total, obj.kept, obj.unknown))
        found = _FIELDS.get(cls, _UNSEEN)
        if found is _UNSEEN:
            found = _FIELDS[cls] = _fields_of(cls)
        if found is None:
            return NotImplemented
        values = found(obj)
        if cls is Kernel and id(obj.ops) in tables.ops:
            # the kernel and its instructions by number in one call (`_sent_kernel`)
            return (_sent_kernel, (values[:_OPS], values[_OPS + 1 :], *tables.ops[id(obj.ops)]))
        return (cls, values)

    def _apart(self, items: Sequence[Any]) -> bytes:
        """`items` pickled on their own, as this pickler does (what `_Later` unpickles),
        or the bytes they came as while still unread."""
        if isinstance(items, _Later) and items.data is not None:
            return items.data
        buffer = io.BytesIO()
        _Sender(buffer, self.tables).dump(tuple(items))
        return buffer.getvalue()


def _fields_of(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """What reads the fields of a slotted dataclass that takes them all, in order, as
    arguments (pickled as a call: pickle's default for slots reads them one by one in
    Python), at C speed; None for any other class."""
    if not (dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__):
        return None
    found = dataclasses.fields(cls)
    if not all(f.init and f.kw_only is False for f in found):
        return None
    names = [f.name for f in found]
    if len(names) == 1:
        return lambda obj: (getattr(obj, names[0]),)
    getter: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*names)
    return getter


_UNSEEN = object()
_FIELDS: dict[type, Any] = {}
_OPS = [f.name for f in dataclasses.fields(Kernel)].index("ops")


_ANALYSIS_FIELDS = [f.name for f in dataclasses.fields(ModuleAnalysis) if f.name != "kernels"]


def _sent_analysis(state: dict[str, Any], path: str, count: int) -> ModuleAnalysis:
    """An analysis a worker made, its kernels made again from its module file when first
    read (`_SentKernels`)."""
    return ModuleAnalysis(**state, kernels=_SentKernels(_RECEIVING[path], count))  # type: ignore[arg-type]


def _later_analysis(state: dict[str, Any], data: bytes, count: int) -> ModuleAnalysis:
    """An analysed module's analysis, its kernels unpickled when first read."""
    return ModuleAnalysis(**state, kernels=_Later(data, count))  # type: ignore[arg-type]


def _later_cost(
    data: bytes, count: int, total: Cost, kept: float, unknown: tuple[str, ...]
) -> ModuleCost:
    """A module's cost, its kernels' costs unpickled when first read."""
    return ModuleCost(_Later(data, count), total, kept, unknown)  # type: ignore[arg-type]


def _sent_kernel(
    head: tuple[Any, ...], tail: tuple[Any, ...], path: str, number: int, opcodes: tuple[str, ...]
) -> Kernel:
    """A kernel a worker analysed, its instructions taken from its module file when
    first read (`_SentOps`)."""
    make: Callable[..., Kernel] = Kernel  # its fields in order, `ops` between
    return make(*head, _SentOps(_RECEIVING[path], number, opcodes), *tail)


# --- back in this process ---------------------------------------------------------------


def file_loaders(dumps: Sequence[ModuleDump]) -> dict[str, Callable[[], HloModule | None]]:
    """How this process reads each module file again: as the worker did."""
    found: dict[str, Callable[[], HloModule | None]] = {}
    for d in dumps:
        if d.before is not None:
            found[str(d.before)] = d.load_before
        if d.after is not None:
            found[str(d.after)] = d.load_after
    return found


def _unpickle(data: bytes, loaders: dict[str, Callable[[], HloModule | None]]) -> Any:
    """What `_send` pickled (or the exception the worker raised, raised here)."""
    buffer = io.BytesIO(data)
    headers = pickle.load(buffer)
    if isinstance(headers, _Failed):
        raise headers.error
    modules = {
        path: _SentModule.of(path, name, attributes, loaders[path])
        for path, (name, attributes) in headers.items()
    }
    with _receiving(modules):
        return pickle.load(buffer)


# One stand-in per module file, while what refers to them is unpickled.
_RECEIVING: dict[str, _SentModule] = {}


@contextlib.contextmanager
def _receiving(modules: dict[str, _SentModule]) -> Iterator[None]:
    """`modules` as `_RECEIVING` while something is unpickled (what was there before
    after)."""
    before = dict(_RECEIVING)
    _RECEIVING.clear()
    _RECEIVING.update(modules)
    try:
        yield
    finally:
        _RECEIVING.clear()
        _RECEIVING.update(before)


def _sent_module(path: str) -> _SentModule:
    return _RECEIVING[path]


class _SentModule(HloModule):
    """A module a worker parsed: its path, name and header attributes known at once,
    the rest parsed again from the file the first time something asks (the parsed
    module is kept)."""

    @classmethod
    def of(
        cls,
        path: str,
        name: str,
        attributes: dict[str, str],
        load: Callable[[], HloModule | None],
    ) -> _SentModule:
        module = object.__new__(cls)
        module.__dict__.update(path=path, name=name, attributes=MappingProxyType(attributes))
        module.__dict__["_load"] = load
        return module

    def __getattr__(self, name: str) -> Any:
        # Only for what is not in the instance yet: its fields, before the first load.
        if name.startswith("__") or "computations" in self.__dict__:
            raise AttributeError(name)
        parsed = self.__dict__["_load"]()
        assert parsed is not None  # the file the worker parsed
        for field in ("computations", "stack_frames", "stats"):
            self.__dict__[field] = getattr(parsed, field)
        return getattr(self, name)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return HloModule.__reduce__(self)


E = TypeVar("E")


class _MadeAgain(LazyTuple[E]):
    """A tuple of what a worker analysed, made again here from its module file on first
    use (the analysis is deterministic: the same file gives the same kernels in the same
    order), its length known at once. Equal to the tuple, and pickled as it."""

    def __init__(self, module: _SentModule, size: int) -> None:
        super().__init__(size)
        self.module = module


class _Later(LazyTuple[E]):
    """A tuple pickled apart (`_Sender._apart`), unpickled when first read, its length
    known at once; until then it pickles again as the bytes it came as. Equal to the
    tuple, and pickled as it elsewhere."""

    def __init__(self, data: bytes, size: int) -> None:
        super().__init__(size)
        self.data: bytes | None = data
        self.modules = dict(_RECEIVING)  # the stand-ins its kernels' instructions are in

    def _make(self) -> tuple[E, ...]:
        assert self.data is not None
        # tens of thousands of objects made, none of them garbage, as a report is
        # written: walked by no collection
        with _receiving(self.modules), paused_gc(kept=True):
            found: tuple[E, ...] = pickle.loads(self.data)
        self.data = None  # read: its objects pickle as any others
        return found


class _SentOps(_MadeAgain[Instruction]):
    """A kernel's instructions, by the kernel's number in its module's analysis. Their
    opcodes came along (`Kernel.opcodes`: what `hloscope diff` matches kernels on)."""

    def __init__(self, module: _SentModule, number: int, opcodes: tuple[str, ...]) -> None:
        super().__init__(module, len(opcodes))
        self.number = number
        self.opcodes = opcodes

    def _make(self) -> tuple[Instruction, ...]:
        ops = tuple(_analysed_again(self.module).kernels[self.number].ops)
        assert tuple(i.opcode for i in ops) == self.opcodes  # the kernel the worker found
        return ops


class _SentKernels(_MadeAgain[Kernel]):
    """An analysis's kernels (what only a diagram reads: a before side's, one per
    instruction). Their number came along (`ModuleAnalysis.kernel_count`)."""

    def _make(self) -> tuple[Kernel, ...]:
        return tuple(_analysed_again(self.module).kernels)


# A module a worker analysed, analysed again here for its kernels' instructions.
_analysed_again = ByModule(analyze_module)


# --- shares -------------------------------------------------------------------------------


# A worker also joins its modules' placements, costs them and pickles its reports
# (measured: a third more than the analysis); this process's share is bigger by as much.
_WORKER_OVERHEAD = 1.35


def _balance(sizes: list[int], n: int) -> list[list[int]]:
    """Module indices in `n` shares (the first this process's) that take about as long:
    biggest first, each to the share that would end first; each share in module order."""
    shares: list[list[int]] = [[] for _ in range(n)]
    load = [0.0] * n
    weight = [1.0] + [_WORKER_OVERHEAD] * (n - 1)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        k = min(range(n), key=lambda k: load[k] + sizes[i] * weight[k])
        shares[k].append(i)
        load[k] += sizes[i] * weight[k]
    return [sorted(s) for s in shares if s]


def side_sizes(dump: ModuleDump) -> list[int]:
    """The sizes of a module's before and after files (0 for a side not dumped or not
    readable): what `beside_pays` and the shares weigh."""
    sizes = []
    for path in (dump.before, dump.after):
        size = 0
        if path is not None:
            with contextlib.suppress(OSError):
                size = path.stat().st_size
        sizes.append(size)
    return sizes
