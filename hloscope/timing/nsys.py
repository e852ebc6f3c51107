"""nsys-jax archives -> per-module, per-kernel GPU timings: a timing source beside XPlane.

An nsys-jax archive (a .zip, or the folder it unpacks to) holds
`nvtx_gpu_proj_trace/trace.parquet`: the NVTX ranges XLA's GPU runtime pushes
(`TSL:XlaModule:#hlo_module=...#` around each execution, `TSL:Thunk:#hlo_op=...#` around
each thunk) projected onto the GPU work they launched. `read_nsys` turns it into executions
of modules made of leaf thunk calls; `nsys_timings` summarises them in the same
`ProfileTimings` / `ModuleTiming` / `KernelTiming` the XPlane reader produces.
"""

from __future__ import annotations

import io
import lzma
import math
import re
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import MissingDependencyError, ProfileReadError, UsageError
from hloscope.files import decompress_xz, expansion_limit, inside, read_regular, walk
from hloscope.hlo.parser import paused_gc
from hloscope.timing.devices import DeviceTally
from hloscope.timing.executions import measured
from hloscope.timing.intervals import NS_PER_US, ns_to_us, union_length
from hloscope.timing.results import KernelTiming, ModuleTiming, ProfileTimings, cold_problems
from hloscope.unpack import NSYS_TRACE, is_nsys_archive

__all__ = [
    "NsysArchive",
    "NsysExecution",
    "ThunkCall",
    "is_nsys_archive",
    "module_timing",
    "nsys_timings",
    "read_nsys",
]

TRACE_MEMBER = NSYS_TRACE
SOURCE = "nsys"
# Range names XLA's GPU runtime pushes (xla/backends/gpu/runtime: GpuExecutable's
# `XlaModule` annotation per execution, `Thunk` annotation per thunk; TSL's TraceMe
# encoding `name#key=value,key=value#`).
MODULE_PREFIX = "TSL:XlaModule:"
THUNK_PREFIX = "TSL:Thunk:"
SPLIT_BY = "XlaModule NVTX range per execution"
WALL_FROM = "XlaModule range projected onto the GPU"
_COLUMNS = (
    "Name",
    "Projected Start",
    "Projected Duration",
    "Orig Start",
    "PID",
    "TID",
    "NumGPUOps",
    "RangeId",
    "ParentId",
)
# A value in the TraceMe payload; `name=` values may hold commas, so the op is the
# last `hlo_op=` key and runs to the next `,` or `#`.
_HLO_OP = re.compile(r"[#,]hlo_op=([^,#]*)")
_HLO_MODULE = re.compile(r"[#,]hlo_module=([^,#]*)")
_PROGRAM_ID = re.compile(r"[#,]program_id=(-?\d+)")
_TARGET_CONFIG = "gpu_target_config.pbtxt"
_DUMP_PLATFORM = re.compile(r"\.(sm_\d+\.\d+)_gpu_after_optimizations\.")


@dataclass(frozen=True, slots=True)
class ThunkCall:
    """One leaf thunk range of an execution: one call of an HLO op on the GPU.

    Attributes:
        op: The `hlo_op` the runtime reported.
        start_ns: Projected start on the GPU, ns.
        duration_ns: Projected duration, ns (from its first GPU operation's start to its
            last one's end).
        gpu_ops: GPU operations it launched (kernels, memcpys, memsets).
    """

    op: str
    start_ns: int
    duration_ns: int
    gpu_ops: int


@dataclass(frozen=True)
class NsysExecution:
    """One execution of a module on one device thread.

    Attributes:
        module: The HloModule name.
        program_id: XLA's program id (= the dump's module number), when recorded.
        thread: The host thread that launched it (one per GPU in JAX), `pid P tid T`.
        order: Its host-side start, to order executions on a thread.
        start_ns: Projected start on the GPU, ns.
        duration_ns: Projected duration, ns.
        gpu_ops: GPU operations the module range counts.
        thunks: Its leaf thunk ranges, in order.
        enclosing: (op, GPU operations) that thunks enclosing other thunks launched
            themselves (beyond their children's), such as the offset copies of a
            `__custom_fusion` dynamic-slice thunk around its cuBLAS call.
    """

    module: str
    program_id: int | None
    thread: str
    order: float
    start_ns: int
    duration_ns: int
    gpu_ops: int
    thunks: tuple[ThunkCall, ...]
    enclosing: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class NsysArchive:
    """What an nsys-jax archive says ran.

    Attributes:
        path: The archive (zip or folder).
        executions: Every module execution found, in trace order.
        platform: The GPU target, `sm_90`, from the dump's target config or file names.
        device: The GPU model (`NVIDIA H100 80GB HBM3`) where the target config records it.
        platform_name: The runtime platform (`CUDA`), where recorded.
        problems: What was skipped or looked wrong, one line each.
    """

    path: str
    executions: tuple[NsysExecution, ...]
    platform: str | None = None
    device: str | None = None
    platform_name: str | None = None
    problems: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------
# Reading


def _parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            "reading nsys-jax archives needs pyarrow: pip install 'hloscope[nsys]'"
        ) from None
    return pq


# The NVTX trace of a long run reaches hundreds of MB; past this, reading fails clearly.
MAX_MEMBER_BYTES = 2 << 30
_MAX_TARGET_CONFIG_BYTES = 64 << 20  # a real one is a few kilobytes
# Reading takes a few hundred bytes of memory per NVTX range (row). The real MaxText
# trace has one row per 37 bytes of parquet; any trace may hold 250,000 rows, and past
# that at least 16 bytes a row: millions of rows that compress to nothing (a bomb) are
# refused before they are read, and memory stays ~40 times the parquet.
_FREE_ROWS = 250_000
_MIN_BYTES_PER_ROW = 16
_MAX_ROWS = 20_000_000


class _Files:
    """The archive's files, from a folder or a zip, by path relative to its root.

    In a folder, regular files only, never through a link out of it (`links_out` names
    those left alone): an archive from elsewhere must not make hloscope read, and quote,
    files elsewhere on this machine. In a zip, a member is read only when its declared
    size is within `MAX_MEMBER_BYTES` and `files.MAX_EXPANSION` times its compressed
    size (the zip reader never yields more than the declared size)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self.links_out: list[str] = []
        if path.is_dir():
            found = walk(path)
            self.names = [str(f.relative_to(path)) for f in found.files]
            self.links_out = [str(f.relative_to(path)) for f in found.links_out]
        elif path.is_file() and zipfile.is_zipfile(path):
            self.zip = zipfile.ZipFile(path)
            self.names = [n for n in self.zip.namelist() if not n.endswith("/")]
        else:
            raise ProfileReadError(
                "not an nsys-jax archive: expected a .zip or a folder holding " + TRACE_MEMBER,
                path=str(path),
            )

    def find(self, suffix: str) -> list[str]:
        return sorted(n for n in self.names if n.endswith(suffix))

    def read(self, name: str) -> bytes:
        """A member's bytes.

        Raises:
            OSError: Too big, encrypted, of an unknown compression, or damaged.
        """
        if self.zip is not None:
            info = self.zip.getinfo(name)
            limit = expansion_limit(info.compress_size, MAX_MEMBER_BYTES)
            if info.file_size > limit:
                raise OSError(
                    f"{name} is {info.file_size:,} bytes from {info.compress_size:,}, more "
                    f"than the {limit:,} allowed"
                )
            try:
                return self.zip.read(name)
            except (RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error,
                    lzma.LZMAError, EOFError, ValueError) as e:  # fmt: skip
                # RuntimeError: encrypted; NotImplementedError: a compression method
                # Python has no decoder for.
                raise OSError(f"{name} cannot be read from the zip: {_line(e)}") from None
        if not inside(self.path / name, self.path):  # made a link since it was listed
            raise OSError(f"{name} is a link out of the archive folder; not read")
        return read_regular(self.path / name, MAX_MEMBER_BYTES)

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


def _line(error: BaseException) -> str:
    """A library's error text on one line (pyarrow's messages hold line breaks)."""
    return " ".join(str(error).split()) or type(error).__name__


def _columns(data: bytes, path: str) -> Any:
    """The trace's table, the rows of XLA's ranges only (module and thunk names): each
    column checked to be of its type, the rows within the budget."""
    pq = _parquet()
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        rows = meta.num_rows
        budget = min(_MAX_ROWS, max(_FREE_ROWS, len(data) // _MIN_BYTES_PER_ROW))
        if rows > budget:
            raise ProfileReadError(
                f"{TRACE_MEMBER}: {rows:,} rows in {len(data):,} bytes, more than the "
                f"{budget:,} read (at most one row per {_MIN_BYTES_PER_ROW} bytes past "
                f"{_FREE_ROWS:,} rows, and {_MAX_ROWS:,} in all)",
                path=path,
            )
        table = pq.read_table(io.BytesIO(data), columns=list(_COLUMNS))
    except ProfileReadError:
        raise
    except Exception as e:  # pyarrow raises its own ArrowInvalid, KeyError for columns
        raise ProfileReadError(
            f"{TRACE_MEMBER}: not the nsys-jax NVTX trace: {_line(e)}", path=path
        ) from None
    for name in _COLUMNS:
        kind = table.schema.field(name).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if name == "Name":
            good = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        else:
            good = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        if not (good or pa.types.is_null(kind)):
            want = "text" if name == "Name" else "numbers"
            raise ProfileReadError(
                f"{TRACE_MEMBER}: column {name!r} holds {kind}, not {want}", path=path
            )
    names = table.column("Name")
    if not pa.types.is_null(names.type):
        names = names.cast(pa.string())
        xla = pc.fill_null(
            pc.or_(pc.starts_with(names, MODULE_PREFIX), pc.starts_with(names, THUNK_PREFIX)),
            False,
        )
        table = table.filter(xla)
    return table


def _target(files: _Files) -> tuple[str | None, str | None, str | None]:
    """(platform `sm_90`, device model, platform name) from the dump's target config
    (`gpu_device_info.cuda_compute_capability`, `device_description_str`)."""
    platform = device = runtime = None
    for name in files.find(_TARGET_CONFIG + ".xz") + files.find(_TARGET_CONFIG):
        raw = files.read(name)
        if name.endswith(".xz"):
            raw = decompress_xz(raw, _MAX_TARGET_CONFIG_BYTES)
        text = raw.decode("utf-8", "replace")
        cc = re.search(r"cuda_compute_capability\s*\{([^}]*)\}", text)
        if cc:
            major = re.search(r"major:\s*(\d+)", cc.group(1))
            minor = re.search(r"minor:\s*(\d+)", cc.group(1))
            # proto text leaves out fields at their default: `minor` absent means 0.
            platform = f"sm_{major.group(1) if major else 0}{minor.group(1) if minor else 0}"
        found = re.search(r'device_description_str:\s*"([^"]*)"', text)
        device = found.group(1) if found else None
        found = re.search(r'platform_name:\s*"([^"]*)"', text)
        runtime = found.group(1) if found else None
        break
    if platform is None:
        # The dump's file names carry the target: `module_0016.x.sm_9.0_gpu_after_...`.
        for name in files.names:
            m = _DUMP_PLATFORM.search(name)
            if m:
                platform = m.group(1).replace(".", "")
                break
    return platform, device, runtime


def read_nsys(path: Path | str) -> NsysArchive:
    """Read an nsys-jax archive's NVTX trace into module executions.

    Args:
        path: The archive: a `.zip` or the folder it unpacks to.

    Returns:
        The executions, with the platform and device the archive records.

    Raises:
        ProfileReadError: Not an archive, or no NVTX trace in it.
        MissingDependencyError: pyarrow is not installed.
    """
    p = Path(path)
    try:
        files = _Files(p)
    except (OSError, zipfile.BadZipFile) as e:
        raise ProfileReadError(f"cannot read the nsys-jax archive: {e}", path=str(p)) from None
    try:
        members = files.find(TRACE_MEMBER)
        if not members and any(n.endswith(TRACE_MEMBER) for n in files.links_out):
            raise ProfileReadError(
                f"{TRACE_MEMBER} is a link out of the archive folder; not read", path=str(p)
            )
        if not members:
            raise ProfileReadError(f"no {TRACE_MEMBER} in this nsys-jax archive", path=str(p))
        table = _columns(files.read(members[0]), str(p))
        platform, device, runtime = _target(files)
    except (OSError, zipfile.BadZipFile, lzma.LZMAError, EOFError, ValueError) as e:
        raise ProfileReadError(f"cannot read the nsys-jax archive: {e}", path=str(p)) from None
    finally:
        files.close()
    executions, problems = _executions(table)
    return NsysArchive(str(p), tuple(executions), platform, device, runtime, tuple(problems))


@dataclass(slots=True)
class _Range:
    """One module or thunk range: `label` is the module range's name, or the thunk's
    `hlo_op` (shared by every call of the op, so a million rows hold few strings)."""

    thunk: bool
    label: str
    start: int
    duration: int
    order: float
    thread: str
    gpu_ops: int
    parent: Any
    children: list[_Range] | None = None


def _id(value: Any) -> int | None:
    """A PID, TID or range id as an integer; None unless a finite whole number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def _time(value: Any) -> int | None:
    """A projected start or duration (ns), or a GPU operation count: a finite,
    non-negative number as an integer; None otherwise (NaN, infinite, negative)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if value >= 0 else None


def _ranges(table: Any) -> tuple[dict[Any, _Range], int, int]:
    """Module and thunk ranges by (pid, range id), children linked; how many rows had
    no projected time, and how many had times or counts that are no measurement.

    Read a batch of rows at a time: only the ranges stay in memory (a few hundred bytes
    a row), not Python lists of every column."""
    out: dict[Any, _Range] = {}
    untimed = invalid = 0
    ops: dict[str, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for batch in table.to_batches(max_chunksize=1 << 16):
        cols = {c: batch.column(c).to_pylist() for c in _COLUMNS}
        for i, name in enumerate(cols["Name"]):
            if not isinstance(name, str) or not name.startswith((MODULE_PREFIX, THUNK_PREFIX)):
                continue
            rid = _id(cols["RangeId"][i])
            if rid is None:
                continue
            pid, tid = _id(cols["PID"][i]), _id(cols["TID"][i])
            raw_start, raw_duration = cols["Projected Start"][i], cols["Projected Duration"][i]
            start, duration = _time(raw_start), _time(raw_duration)
            raw_ops = cols["NumGPUOps"][i]
            gpu_ops = _time(raw_ops) if raw_ops is not None else 0
            if raw_start is None or raw_duration is None:
                untimed += 1
            elif start is None or duration is None:
                invalid += 1
                continue
            if gpu_ops is None:
                invalid += 1
                continue
            order = cols["Orig Start"][i]
            if not isinstance(order, int | float) or not math.isfinite(order):
                order = start or 0
            parent = _id(cols["ParentId"][i])
            thunk = name.startswith(THUNK_PREFIX)
            label = ops.setdefault(op, op) if thunk and (op := _op(name)) else name
            thread = threads.get((pid, tid))
            if thread is None:
                thread = threads[(pid, tid)] = f"pid {pid} tid {tid}"
            out[(pid, rid)] = _Range(
                thunk,
                label,
                start or 0,
                duration or 0,
                float(order),
                thread,
                gpu_ops,
                None if parent is None else (pid, parent),
            )
    for r in out.values():
        above = out.get(r.parent)
        if above is not None and above is not r:
            if above.children is None:
                above.children = []
            above.children.append(r)
    return out, untimed, invalid


def _op(name: str) -> str:
    found = _HLO_OP.findall(name)
    return found[-1] if found else name[len(THUNK_PREFIX) :]


def _thunks(r: _Range) -> list[_Range]:
    return sorted((c for c in r.children or () if c.thunk), key=lambda c: c.order)


def _leaves(
    root: _Range, leaves: list[ThunkCall], enclosing: list[tuple[str, int]], seen: set[int]
) -> None:
    """Collect the leaf thunks below a module range, in start order, each thunk range
    once (`seen`: parent links that loop, or reach a range twice, add nothing). A thunk
    that encloses others and launched more GPU operations than they did is recorded in
    `enclosing`. Iterative: ranges nested thousands deep need no recursion."""
    # Each frame: a range whose thunk children are being walked, and their operations.
    stack: list[tuple[_Range, Any, list[int]]] = [(root, iter(_thunks(root)), [0])]
    while stack:
        r, children, inner = stack[-1]
        c = next(children, None)
        if c is None:
            stack.pop()
            if stack and r.gpu_ops > inner[0]:
                enclosing.append((r.label, r.gpu_ops - inner[0]))
            continue
        if id(c) in seen:
            continue
        seen.add(id(c))
        inner[0] += c.gpu_ops
        below = _thunks(c)
        if below:
            stack.append((c, iter(below), [0]))
        else:
            leaves.append(ThunkCall(c.label, c.start, c.duration, c.gpu_ops))


def _executions(table: Any) -> tuple[list[NsysExecution], list[str]]:
    ranges, untimed, invalid = _ranges(table)
    problems = []
    if untimed:
        problems.append(f"{untimed} NVTX ranges without a projected time (no GPU work) read as 0")
    if invalid:
        problems.append(
            f"{invalid} NVTX ranges with a negative or non-finite time or GPU operation "
            "count left out"
        )
    out = []
    seen: set[int] = set()
    for r in ranges.values():
        if r.thunk:
            continue
        module = _HLO_MODULE.search(r.label)
        program = _PROGRAM_ID.search(r.label)
        leaves: list[ThunkCall] = []
        enclosing: list[tuple[str, int]] = []
        _leaves(r, leaves, enclosing, seen)
        program_id = int(program.group(1)) if program and len(program.group(1)) < 20 else None
        out.append(
            NsysExecution(
                module=module.group(1) if module else r.label[len(MODULE_PREFIX) :],
                program_id=program_id,
                thread=r.thread,
                order=r.order,
                start_ns=r.start,
                duration_ns=r.duration,
                gpu_ops=r.gpu_ops,
                thunks=tuple(leaves),
                enclosing=tuple(enclosing),
            )
        )
    orphans = sum(1 for r in ranges.values() if r.thunk) - len(seen)
    if orphans:
        problems.append(
            f"{orphans} thunk ranges not directly below an XlaModule range or a thunk left out"
        )
    out.sort(key=lambda e: e.order)
    return out, problems


# --------------------------------------------------------------------------------------
# Executions -> timings


def _busy_ns(thunks: Iterable[ThunkCall]) -> int:
    """Time when at least one thunk's GPU work ran (the union of their intervals)."""
    return union_length((t.start_ns, t.start_ns + t.duration_ns) for t in thunks)


def _steady(
    runs: Sequence[NsysExecution], skip_first: int
) -> tuple[list[NsysExecution], int, bool]:
    """The executions timed, with each thread as a device (`measured`): the first
    `skip_first` on each left out (autotuning, lazy initialisation), or a module's cold
    first runs where it ran no more; how many were left out; whether they are cold."""
    by_thread: dict[str, list[NsysExecution]] = defaultdict(list)
    for r in sorted(runs, key=lambda r: r.order):
        by_thread[r.thread].append(r)
    kept, skipped, cold = measured(list(by_thread.values()), skip_first)
    return sorted(kept, key=lambda r: r.order), skipped, cold


def _kernel(
    name: str,
    ops: set[str],
    calls: list[ThunkCall],
    kernel_ns: int,
    n: int,
    tally: DeviceTally,
) -> KernelTiming:
    return KernelTiming.of(
        name,
        [c.duration_ns for c in calls],
        per_us=NS_PER_US,
        kernels_total=kernel_ns,
        executions=n,
        devices=tally.count,
        kernels_per_op=max(c.gpu_ops for c in calls),
        device_ops=tally.mean(sum(c.gpu_ops for c in calls)),
        hlo_ops=tuple(sorted(ops)),
        **tally.kernel_fields(name),
    )


def module_timing(
    runs: Sequence[NsysExecution],
    *,
    skip_first: int = 1,
    kernel_of: Mapping[str, str] | None = None,
) -> ModuleTiming:
    """Time one module from its executions, joining each `hlo_op` to its kernel.

    Args:
        runs: Executions of one module (`NsysArchive.executions` of one name and id).
        skip_first: Executions left out on each thread as warm-up (autotuning); a
            module that ran no more than that is timed from them, marked `cold`.
        kernel_of: `hlo_op` name -> top-level kernel name (from the HLO analysis, built
            by the caller). Ops it does not name are kept under their own name and
            listed in `unknown_ops`; without it every op is its own kernel.

    Returns:
        The module's timing: wall time per execution is the module range projected on
        the GPU; `kernel_us` sums the leaf thunks, `busy_us` is their union (below the
        sum where async collectives overlap compute on other streams).

    Raises:
        UsageError: skip_first is negative, or `runs` is empty.
    """
    if skip_first < 0:
        raise UsageError("skip_first must be 0 or more")
    if not runs:
        raise UsageError("module_timing needs at least one execution")
    steady, skipped, cold = _steady(runs, skip_first)
    n = len(steady)
    calls: dict[str, list[ThunkCall]] = defaultdict(list)
    ops: dict[str, set[str]] = defaultdict(set)
    unknown: set[str] = set()
    busy = unattributed = 0
    tally = DeviceTally(NS_PER_US)  # each thread drives one GPU
    for ex in steady:
        for t in ex.thunks:
            name = t.op if kernel_of is None else kernel_of.get(t.op)
            if name is None:
                unknown.add(t.op)
                name = t.op
            calls[name].append(t)
            ops[name].add(t.op)
            tally.call(name, ex.thread, t.duration_ns)
        b = _busy_ns(ex.thunks)
        busy += b
        unattributed += max(0, ex.duration_ns - b)
        tally.execution(ex.thread, ex.duration_ns, sum(t.duration_ns for t in ex.thunks))
    kernel_ns = sum(t.duration_ns for ex in steady for t in ex.thunks)
    kernels = [_kernel(k, ops[k], cs, kernel_ns, n, tally) for k, cs in calls.items()]
    kernels.sort(key=lambda k: (-k.total_us, k.name))
    launches = tuple(len(ex.thunks) for ex in steady)
    device_ops = tuple(ex.gpu_ops for ex in steady)
    return ModuleTiming(
        name=runs[0].module,
        program_id=runs[0].program_id,
        executions=tally.mean_count(n),
        skipped=round(skipped / max(1, len({ex.thread for ex in runs}))),
        total_us=ns_to_us(tally.mean(sum(ex.duration_ns for ex in steady))),
        kernel_us=ns_to_us(tally.mean(kernel_ns)),
        unattributed_us=ns_to_us(tally.mean(unattributed)),
        execution_us=tuple(ns_to_us(ex.duration_ns) for ex in steady),
        launches_per_execution=sum(launches) / n if n else 0.0,
        kernel_launches_per_execution=sum(device_ops) / n if n else 0.0,
        static_launches=None,
        launch_mismatch=None,
        kernels=tuple(kernels),
        unknown_ops=tuple(sorted(unknown)),
        devices=tuple(sorted({ex.thread for ex in runs})),
        split_by=SPLIT_BY,
        wall_from=WALL_FROM,
        source=SOURCE,
        busy_us=ns_to_us(tally.mean(busy)),
        device_ops_per_execution=sum(device_ops) / n if n else None,
        launches_by_execution=launches,
        device_ops_by_execution=device_ops,
        cold=cold,
        device_count=tally.count,
        per_device=tally.per_device(),
    )


def _module_problems(
    key: str, m: ModuleTiming, runs: Sequence[NsysExecution], skip_first: int
) -> list[str]:
    out = []
    if m.unknown_ops:
        out.append(
            f"{key}: {len(m.unknown_ops)} hlo_op(s) not mapped to a kernel, kept under their "
            "own name: " + ", ".join(m.unknown_ops[:8]) + (" ..." if len(m.unknown_ops) > 8 else "")
        )
    if m.busy_us is not None and m.kernel_us > m.busy_us * 1.0005:
        out.append(
            f"{key}: kernels overlap (async work on other streams): summed kernel time "
            f"{m.kernel_us:.1f} µs, busy {m.busy_us:.1f} µs, module {m.total_us:.1f} µs"
        )
    enclosing: dict[str, int] = defaultdict(int)
    for ex in _steady(runs, skip_first)[0]:
        for op, count in ex.enclosing:
            enclosing[op] += count
    if enclosing and m.execution_us:
        per = sum(enclosing.values()) / len(m.execution_us)  # every device's executions
        out.append(
            f"{key}: {per:g} GPU operations per execution launched by thunks that enclose "
            "other thunks (counted in the module, in no leaf hlo_op): "
            + ", ".join(sorted(enclosing)[:8])
            + (" ..." if len(enclosing) > 8 else "")
        )
    return out


@paused_gc()  # millions of acyclic events: see hlo.parser.paused_gc
def nsys_timings(
    source: NsysArchive | Path | str,
    *,
    skip_first: int = 1,
    kernel_of: Mapping[str, Mapping[str, str]] | None = None,
) -> ProfileTimings:
    """Per-module, per-kernel GPU timings of an nsys-jax archive.

    Args:
        source: An archive read with `read_nsys`, or its path.
        skip_first: Executions of each module left out on each thread as warm-up.
        kernel_of: Per module (by key `name` or `name(program_id)`, or by name), an
            `hlo_op` -> kernel mapping (see `module_timing`).

    Returns:
        The timings, modules with the most total time first; `source` is `nsys`.

    Raises:
        ProfileReadError: The archive cannot be read.
        MissingDependencyError: pyarrow is not installed.
    """
    archive = source if isinstance(source, NsysArchive) else read_nsys(source)
    by_module: dict[tuple[str, int | None], list[NsysExecution]] = defaultdict(list)
    for ex in archive.executions:
        by_module[(ex.module, ex.program_id)].append(ex)
    names: dict[str, int] = defaultdict(int)
    for name, _ in by_module:
        names[name] += 1
    timings = []
    problems = list(archive.problems)
    for (name, program_id), runs in by_module.items():
        key = f"{name}({program_id})" if names[name] > 1 and program_id is not None else name
        mapping = None
        if kernel_of is not None:
            mapping = kernel_of.get(key) or (kernel_of.get(name) if names[name] == 1 else None)
        timing = module_timing(runs, skip_first=skip_first, kernel_of=mapping)
        timings.append((key, timing))
        problems.extend(_module_problems(key, timing, runs, skip_first))
    timings.sort(key=lambda kv: (-kv[1].total_us, kv[0]))
    problems.extend(cold_problems(timings, skip_first))
    if not archive.executions:
        problems.append("no XlaModule NVTX ranges: the archive holds no XLA execution")
    return ProfileTimings(
        path=archive.path,
        format="nsys-jax",
        modules=dict(timings),
        skip_first=skip_first,
        op_events=sum(len(ex.thunks) for ex in archive.executions),
        problems=tuple(problems),
        source=SOURCE,
        platform=archive.platform,
        device=archive.device,
    )
