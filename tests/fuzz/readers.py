"""Every reader of hloscope, as a fuzz target: seeds, a generator of hostile inputs, and
the reader's contract (issue 25).

A `Reader` builds one case from a `random.Random` (a mutated copy of a real file, written
into a fresh folder) and runs it through the reader and what reads the reader's output.
The contract: the input is read, or an `HloscopeError` says which file and what was
wrong; never another exception, never a hang, memory bounded. Timings that come out are
finite and non-negative. Run folders add: nothing outside the run is read (a marker
file outside it never shows in the output), a forged or stale cache is never shown (the
output equals a fresh computation), no raw control character reaches the terminal, no
partial unpack is left in the temp folder.

Seeds are real files, read in place: tests/data, and ../shared/gpu where present (the
MaxText nsys-jax archive, the TPU XSpace). Nothing of ../shared is copied into the repo.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import json
import lzma
import math
import os
import random
import re
import shutil
import stat
import struct
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import HloscopeError
from tests.fuzz.mutators import (
    HOSTILE_INTS,
    LEN,
    VARINT,
    Field,
    encode_message,
    encode_varint,
    gzip_bytes,
    mutate_bytes,
    mutate_json,
    mutate_proto,
    parse_message,
    write_json,
    xz_bytes,
    zero_bomb_deflate,
    zero_bomb_xz,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GPU = ROOT.parent / "shared" / "gpu"
ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"

# What an outside file holds: it must never show in anything a reader gives back.
SECRET = "SECRET-OUTSIDE-THE-RUN-7f3a"
# What a forged cache entry says: never shown as a measurement.
FORGED_EXECUTIONS = 987654
FORGED_REPORT = "FORGED-REPORT-OUTPUT"
# Control characters that must not reach a terminal raw (colour SGR aside).
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class ContractViolation(Exception):
    """A reader's output broke the contract without raising (a number, a leak)."""


@dataclass
class Reader:
    """One fuzz target.

    Attributes:
        name: What the figures call it.
        make: Writes one case into a folder and returns the path to read.
        check: Reads the path as hloscope does; raises `HloscopeError` on bad input,
            `ContractViolation` on output that breaks the contract.
    """

    name: str
    make: Callable[[random.Random, Path], Path]
    check: Callable[[Path], None]


@dataclass
class Outcome:
    """What one case did: `read`, `rejected` (a clean HloscopeError), or a violation:
    `traceback`, `hang`, `blow-up`, `contract`."""

    kind: str
    detail: str = ""


VIOLATIONS = ("traceback", "hang", "blow-up", "contract")


def run_case(reader: Reader, path: Path) -> Outcome:
    """Run one case through a reader and classify what happened."""
    try:
        reader.check(path)
    except HloscopeError as e:
        message = str(e)  # control characters are escaped where it is shown
        if "\n" in message.strip():
            return Outcome("contract", f"error message not one line: {message[:300]!r}")
        if SECRET in message:
            return Outcome("contract", f"outside file quoted: {message[:300]!r}")
        return Outcome("rejected", message[:300])
    except ContractViolation as e:
        return Outcome("contract", str(e)[:2000])
    except MemoryError:
        return Outcome("blow-up", traceback.format_exc(limit=8)[-3000:])
    except BaseException:  # the contract under test: nothing else may escape
        return Outcome("traceback", traceback.format_exc(limit=12)[-3000:])
    return Outcome("read")


# --------------------------------------------------------------------------------------
# Checks shared by the timing readers


def check_timings(timings: Any) -> None:
    """Every duration and count of a `ProfileTimings` is finite and non-negative."""
    for key, m in timings.modules.items():
        _check_numbers(f"module {key}", m)
        for k in (*m.kernels, *m.control):
            _check_numbers(f"module {key} kernel {k.name}", k)
    if timings.duration_us is not None:
        _check_number("profile duration_us", timings.duration_us)


@functools.cache
def _numeric_fields(cls: type) -> tuple[str, ...]:
    return tuple(
        f.name for f in dataclasses.fields(cls) if "int" in str(f.type) or "float" in str(f.type)
    )


def _check_numbers(where: str, obj: Any) -> None:
    for name in _numeric_fields(type(obj)):
        value = getattr(obj, name)
        for v in value if isinstance(value, tuple) else (value,):
            if v is not None and not isinstance(v, bool):
                _check_number(f"{where} {name}", v)


def _check_number(where: str, v: float) -> None:
    if not math.isfinite(v) or v < 0:
        raise ContractViolation(f"{where} = {v!r}: not a finite, non-negative figure")


# --------------------------------------------------------------------------------------
# Binary HLO (`*.hlo.pb`, `*.hlo.pb.xz`)


@functools.cache
def _proto_seeds() -> list[bytes]:
    seeds = [p.read_bytes() for p in sorted((DATA / "jax_proto").glob("*.hlo.pb"))]
    if ARCHIVE.is_file():
        with zipfile.ZipFile(ARCHIVE) as z:
            for info in z.infolist():
                if info.filename.endswith(".hlo.pb.xz") and info.file_size < 20_000:
                    seeds.append(lzma.decompress(z.read(info)))
    return seeds


# Field numbers of xla/service/hlo.proto and xla/xla_data.proto (see hloscope.hlo.proto).
_MODULE_COMPUTATIONS, _MODULE_ENTRY_ID = 3, 6
_COMP_NAME, _COMP_INSTRUCTIONS, _COMP_ID, _COMP_ROOT = 1, 2, 5, 6
_INST_NAME, _INST_OPCODE, _INST_SHAPE, _INST_ID = 1, 2, 3, 35
_INST_OPERANDS, _INST_CALLS, _INST_DIMENSIONS = 36, 38, 14
_SHAPE_TYPE, _SHAPE_DIMS, _SHAPE_TUPLE = 2, 3, 4
_OPCODES = ["fusion", "while", "call", "conditional", "tuple", "get-tuple-element",
            "custom-call", "all-reduce-start", "async-start", "parameter", "constant",
            "reduce", "sort", "map", "bogus-op", ""]  # fmt: skip


def _module_fields(tree: list[Field]) -> list[Field]:
    """The HloModuleProto's fields: inside the HloProto wrapper (field 1) when there."""
    for f in tree:
        if f.number == 1 and isinstance(f.value, list) and any(c.number == 3 for c in f.value):
            return f.value
    return tree


def _sub(f: Field, number: int) -> list[Field]:
    return [c for c in f.value if c.number == number] if isinstance(f.value, list) else []


def _mutate_hlo_semantics(data: bytes, rng: random.Random) -> bytes:
    """Edits that make a well-formed proto describe a broken module: a computation that
    calls itself or its caller, an operand that is its own user, duplicated names and
    ids, hostile dimensions, tuples nested deep, another opcode."""
    tree = parse_message(data)
    if not tree:
        return mutate_bytes(data, rng)
    module = _module_fields(tree)
    comps = [f for f in module if f.number == _MODULE_COMPUTATIONS and isinstance(f.value, list)]
    if not comps:
        return mutate_proto(data, rng)
    comp = rng.choice(comps)
    insts = [f for f in _sub(comp, _COMP_INSTRUCTIONS) if isinstance(f.value, list)]
    ids = [c.value for c in comps for f in _sub(c, _COMP_ID) for c in [f]]
    kind = rng.randrange(9)
    if kind == 0 and insts:  # a call of its own computation, or of any other
        target = [f.value for f in _sub(comp, _COMP_ID)] or [0]
        inst = rng.choice(insts)
        callee = target[0] if rng.random() < 0.6 else rng.choice(ids or [0])
        inst.value.append(Field(_INST_CALLS, VARINT, callee))
    elif kind == 1 and insts:  # an operand cycle: an instruction uses itself or a later one
        i = rng.randrange(len(insts))
        j = rng.randrange(i, len(insts))
        own = [f.value for f in _sub(insts[j], _INST_ID)] or [0]
        insts[i].value.append(Field(_INST_OPERANDS, VARINT, own[0]))
    elif kind == 2 and len(insts) > 1:  # two instructions of one name (or id)
        a, b = rng.sample(insts, 2)
        number = rng.choice([_INST_NAME, _INST_ID])
        a.value[:] = [f for f in a.value if f.number != number] + [
            Field(f.number, f.wire, f.value) for f in _sub(b, number)
        ]
    elif kind == 3 and len(comps) > 1:  # two computations of one name (or id)
        a, b = rng.sample(comps, 2)
        number = rng.choice([_COMP_NAME, _COMP_ID])
        a.value[:] = [f for f in a.value if f.number != number] + [
            Field(f.number, f.wire, f.value) for f in _sub(b, number)
        ]
    elif kind == 4 and insts:  # hostile dimensions, or a rank of thousands
        inst = rng.choice(insts)
        for shape in _sub(inst, _INST_SHAPE):
            if rng.random() < 0.3:
                dims = [Field(_SHAPE_DIMS, VARINT, 1) for _ in range(rng.choice([65, 1000]))]
            else:
                dims = [Field(_SHAPE_DIMS, VARINT, rng.choice([2**62, -5, -(2**63), 2**63 - 1]))]
            shape.value[:] = [Field(_SHAPE_TYPE, VARINT, 11), *dims]
    elif kind == 5 and insts:  # a tuple shape nested 40 to 5,000 deep
        inst = rng.choice(insts)
        body = encode_message([Field(_SHAPE_TYPE, VARINT, 11)])
        for _ in range(rng.choice([40, 80, 500, 5000])):
            inner = encode_varint((_SHAPE_TUPLE << 3) | LEN) + encode_varint(len(body)) + body
            body = encode_message([Field(_SHAPE_TYPE, VARINT, 13)]) + inner
        inst.value[:] = [f for f in inst.value if f.number != _INST_SHAPE]
        inst.value.append(Field(_INST_SHAPE, LEN, body))
    elif kind == 6 and insts:  # another opcode (a while with one callee, a bare fusion)
        inst = rng.choice(insts)
        inst.value[:] = [f for f in inst.value if f.number != _INST_OPCODE]
        inst.value.append(Field(_INST_OPCODE, LEN, rng.choice(_OPCODES).encode()))
    elif kind == 7:  # the entry is missing, or is a computation that others call
        module[:] = [f for f in module if f.number != _MODULE_ENTRY_ID]
        module.append(Field(_MODULE_ENTRY_ID, VARINT, rng.choice([*ids, 999_999])))
    elif insts:  # a root that is not in the computation; dimensions attribute hostile
        inst = rng.choice(insts)
        inst.value.append(Field(_INST_DIMENSIONS, VARINT, rng.choice(HOSTILE_INTS)))
        comp.value.append(Field(_COMP_ROOT, VARINT, rng.choice([999_999, -1])))
    return encode_message(tree)


@functools.cache
def _xz_zero_bomb(size: int) -> bytes:
    return zero_bomb_xz(size)


def make_proto(rng: random.Random, folder: Path) -> Path:
    """A mutated binary HLO dump, plain or xz-compressed; now and then an xz bomb."""
    data = rng.choice(_proto_seeds())
    kind = rng.random()
    if kind < 0.45:
        data = mutate_proto(data, rng)
    elif kind < 0.85:
        data = _mutate_hlo_semantics(data, rng)
        if rng.random() < 0.3:
            data = _mutate_hlo_semantics(data, rng)
    else:
        data = mutate_bytes(data, rng)
    roll = rng.random()
    if roll < 0.04:
        path = folder / "module_0001.bomb.before_optimizations.hlo.pb.xz"
        path.write_bytes(_xz_zero_bomb(rng.choice([300 << 20, 1 << 30])))
    elif roll < 0.4:
        path = folder / "module_0001.fuzz.sm_9.0_gpu_after_optimizations.hlo.pb.xz"
        path.write_bytes(
            xz_bytes(data) if rng.random() < 0.9 else mutate_bytes(xz_bytes(data), rng)
        )
    else:
        path = folder / "module_0001.fuzz.before_optimizations.hlo.pb"
        path.write_bytes(data)
    return path


def check_module(module: Any) -> None:
    """What every command does with a parsed module."""
    from hloscope.analysis.cost import module_cost
    from hloscope.analysis.fusion import analyze_module
    from hloscope.analysis.provenance import trace
    from hloscope.hlo.graph import call_graph, to_networkx

    analysis = analyze_module(module)
    trace(module, analysis, before=module)
    to_networkx(module)
    call_graph(module)
    module_cost(module, analysis)


def check_proto(path: Path) -> None:
    from hloscope.hlo.proto import parse_proto_file

    check_module(parse_proto_file(path))


# --------------------------------------------------------------------------------------
# HLO text (issue 14's generators, under the same limits)


@functools.cache
def _text_seeds() -> list[str]:
    from tests.hlo.fuzzing import seed_modules

    return seed_modules([ROOT.parent / "shared" / "corpus" / "hlo", DATA], 100_000)


def make_text(rng: random.Random, folder: Path) -> Path:
    from tests.hlo.fuzzing import mutate

    path = folder / "module_0001.fuzz.before_optimizations.txt"
    text = mutate(rng.choice(_text_seeds()), rng)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


def check_text(path: Path) -> None:
    from hloscope.hlo.parser import parse_file

    check_module(parse_file(path))


# --------------------------------------------------------------------------------------
# trace.json(.gz)


@functools.cache
def _trace_seeds() -> list[bytes]:
    return [gzip.decompress(p.read_bytes()) for p in sorted(DATA.rglob("*.trace.json.gz"))]


def make_trace_json(rng: random.Random, folder: Path) -> Path:
    """A mutated Chrome trace: event fields of other types, infinities, negative times,
    deep nesting, size bombs; gzipped or not, now and then cut short."""
    text = rng.choice(_trace_seeds())
    gz = rng.random() < 0.8
    path = folder / ("vm.trace.json.gz" if gz else "vm.trace.json")
    roll = rng.random()
    if roll < 0.85:
        doc = mutate_json(json.loads(text), rng)
        write_json(path, doc, gz=gz)
    else:
        data = mutate_bytes(text, rng)
        path.write_bytes(gzip_bytes(data) if gz else data)
    if rng.random() < 0.05 and gz:  # a truncated or damaged gzip stream
        path.write_bytes(mutate_bytes(path.read_bytes(), rng))
    return path


def check_trace(path: Path) -> None:
    from hloscope.timing.attribution import attribute
    from hloscope.timing.sources import load_profile
    from hloscope.timing.xplane import read_trace

    check_timings(attribute(read_trace(path)))
    check_timings(load_profile(path, with_hlo=False))


# --------------------------------------------------------------------------------------
# XSpace (`*.xplane.pb`)


@functools.cache
def _xspace_seeds() -> list[bytes]:
    seeds = [p.read_bytes() for p in sorted(DATA.rglob("*.xplane.pb"))]
    tpu = GPU / "xprof_tpu_inference_2.xplane.pb"
    if tpu.is_file():
        seeds.append(tpu.read_bytes())
    return seeds


def _xspace_events(tree: list[Field]) -> list[Field]:
    """The XEvent messages of a decoded XSpace (planes 1 > lines 3 > events 4)."""
    return [
        e
        for plane in tree
        if plane.number == 1
        for line in _sub(plane, 3)
        if isinstance(line.value, list)
        for e in _sub(line, 4)
        if isinstance(e.value, list)
    ]


def _mutate_xspace_times(data: bytes, rng: random.Random) -> bytes:
    """Times no profiler writes: negative or 2^63 durations and offsets, a line's
    timestamp negative or huge."""
    tree = parse_message(data, max_depth=6)
    if not tree:
        return mutate_bytes(data, rng)
    events = _xspace_events(tree)
    for e in rng.sample(events, min(len(events), rng.choice([1, 5, 100]))):
        number = rng.choice([2, 3])  # offset_ps, duration_ps
        e.value[:] = [f for f in e.value if f.number != number]
        e.value.append(Field(number, VARINT, rng.choice([-1, -(10**12), 2**63 - 1, -(2**63)])))
    if rng.random() < 0.3:
        for plane in tree:
            for line in _sub(plane, 3):
                if isinstance(line.value, list):
                    line.value[:] = [f for f in line.value if f.number != 3]
                    line.value.append(Field(3, VARINT, rng.choice([-(2**62), 2**62])))
    return encode_message(tree)


def make_xspace(rng: random.Random, folder: Path) -> Path:
    """A mutated real XSpace; or one of many modules (50,000), of loops nested in
    loops, of times no profiler writes."""
    from tests.fuzz.xspace_build import tpu_xspace

    roll = rng.random()
    if roll < 0.06:
        data = tpu_xspace(rng.choice([2000, 50_000]), executions=2, ops=3)
    elif roll < 0.1:
        data = tpu_xspace(rng.choice([200, 2000]), executions=2, ops=30, control=True)
    else:
        data = rng.choice(_xspace_seeds())
        if roll < 0.25:
            data = _mutate_xspace_times(data, rng)
        elif roll < 0.9:
            data = mutate_proto(data, rng)
        else:
            data = mutate_bytes(data, rng)
    path = folder / "host.xplane.pb"
    path.write_bytes(data)
    return path


def check_xspace(path: Path) -> None:
    """The profile read for timing (both decoders) and as a run (its embedded HLO through
    the report): each step reads it or refuses it cleanly."""
    from hloscope.inspection import inspect_run
    from hloscope.timing.attribution import attribute
    from hloscope.timing.xplane import read_trace

    def timed(xla_only: bool) -> None:
        check_timings(attribute(read_trace(path, xla_only=xla_only)))

    def as_run() -> None:
        inspection = inspect_run(path)
        if inspection.timings is not None:
            check_timings(inspection.timings)
        raise_if_not_clean(inspection.timing_error)

    errors: list[HloscopeError] = []
    steps = [lambda: timed(True)]
    if path.stat().st_size < 4 << 20:  # one command reads a big one once: time that alone
        steps += [lambda: timed(False), as_run]
    for step in steps:
        try:
            step()
        except HloscopeError as e:
            errors.append(e)
    if len(errors) == len(steps):
        raise errors[0]


# --------------------------------------------------------------------------------------
# nsys-jax archives


_NSYS_COLUMNS = ["Name", "Projected Start", "Projected Duration", "Orig Start", "PID", "TID",
                 "NumGPUOps", "RangeId", "ParentId"]  # fmt: skip


@functools.cache
def _nsys_seeds() -> list[tuple[bytes, dict[str, bytes]]]:
    """(trace.parquet bytes, dump members) of small archives cut from the MaxText one:
    the executions of a few small modules, with their dumps; and the whole archive."""
    if not ARCHIVE.is_file():
        return []
    import pyarrow as pa
    import pyarrow.parquet as pq

    with zipfile.ZipFile(ARCHIVE) as z:
        table = pq.read_table(io.BytesIO(z.read("nvtx_gpu_proj_trace/trace.parquet")))
        dumps = {
            i.filename: z.read(i)
            for i in z.infolist()
            if i.filename.startswith("dump/") and not i.is_dir()
        }
    names = table.column("Name").to_pylist()
    out = []
    for modules in (["jit_add", "jit_multiply"], ["jit__where", "jit_cos", "jit_fold_in"]):
        keep = _rows_of_modules(table, names, modules)
        buf = io.BytesIO()
        pq.write_table(table.take(pa.array(keep)), buf)
        members = {n: d for n, d in dumps.items() if any(f".{m}." in n for m in modules)}
        out.append((buf.getvalue(), members))
    with zipfile.ZipFile(ARCHIVE) as z:
        whole = z.read("nvtx_gpu_proj_trace/trace.parquet")
    out.append((whole, dumps))
    return out


def _rows_of_modules(table: Any, names: list[Any], modules: list[str]) -> list[int]:
    """Rows of the module ranges of these modules and every range below them."""
    pids = table.column("PID").to_pylist()
    rids = table.column("RangeId").to_pylist()
    parents = table.column("ParentId").to_pylist()
    wanted = {
        (pids[i], rids[i])
        for i, n in enumerate(names)
        if isinstance(n, str)
        and any(f"hlo_module={m}," in n or f"hlo_module={m}#" in n for m in modules)
    }
    keep: list[int] = []
    changed = True
    chosen: set[int] = set()
    while changed:
        changed = False
        for i in range(len(names)):
            if i in chosen:
                continue
            if (pids[i], rids[i]) in wanted or (pids[i], parents[i]) in wanted:
                chosen.add(i)
                wanted.add((pids[i], rids[i]))
                changed = True
    keep = sorted(chosen)
    return keep


def _mutate_parquet(data: bytes, rng: random.Random) -> bytes:
    """Column-level edits: a column of another type, NaN, infinities, negative and huge
    values, names that are not strings, parent links in cycles or thousands deep, ids
    repeated, rows multiplied into millions."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    n = table.num_rows
    kind = rng.randrange(8)
    column = rng.choice(_NSYS_COLUMNS)
    rows = rng.sample(range(n), min(n, rng.choice([1, 3, 50]))) if n else []
    types: dict[str, Any] = {}
    if kind == 0:  # hostile values in a few cells
        for i in rows:
            cols[column][i] = rng.choice(
                [None, math.nan, math.inf, -math.inf, -1, -(2**63), 2**63 - 1, 1e300, -5e6]
            )
        types[column] = pa.float64()
    elif kind == 1:  # the column as strings
        cols[column] = [
            rng.choice(["many", "", "NaN", "-1", "\x1b[2J", str(v)]) for v in cols[column]
        ]
        types[column] = pa.string()
    elif kind == 2:  # the column as lists
        cols[column] = [[v, v] if v is not None else None for v in cols[column]]
        types[column] = pa.list_(pa.string() if column == "Name" else pa.float64())
        if column != "Name":
            cols[column] = [
                [float(x) if isinstance(x, int | float) else None for x in v] if v else None
                for v in cols[column]
            ]
        else:
            cols[column] = [[str(x) for x in v] if v else None for v in cols[column]]
    elif kind == 3:  # Name of another type
        cols["Name"] = [
            rng.choice([7, -1, None]) if i in rows else v for i, v in enumerate(cols["Name"])
        ]
        cols["Name"] = [str(v) if isinstance(v, str) else v for v in cols["Name"]]
        if any(isinstance(v, int) for v in cols["Name"]):
            cols["Name"] = [hash(v) & 0xFFFF if isinstance(v, str) else v for v in cols["Name"]]
            types["Name"] = pa.int64()
    elif kind == 4 and n:  # parents in a cycle, or a chain thousands deep
        if rng.random() < 0.5:
            for i in rows:
                cols["ParentId"][i] = cols["RangeId"][rng.randrange(n)]
            if rows:
                cols["ParentId"][rows[0]] = cols["RangeId"][rows[0]]
        else:
            depth = rng.choice([2000, 20_000])
            base = max(float(x) for x in cols["RangeId"] if x is not None) + 1
            thunk = next(
                (v for v in cols["Name"] if isinstance(v, str) and v.startswith("TSL:Thunk")),
                "TSL:Thunk:#hlo_op=x#",
            )
            module = next((i for i, v in enumerate(cols["ParentId"]) if v is None), 0)
            parent = cols["RangeId"][module]
            for d in range(depth):
                for c in cols:
                    cols[c].append(cols[c][module])
                cols["Name"][-1] = thunk
                cols["RangeId"][-1] = base + d
                cols["ParentId"][-1] = parent
                parent = base + d
    elif kind == 5 and n:  # ids repeated
        for i in rows:
            cols["RangeId"][i] = cols["RangeId"][0]
    elif kind == 6:  # rows multiplied: millions of rows that compress to little
        if n > 1000:
            return _repeat_rows(data, 1, 50)
        return _repeat_rows(data, 1_000_000, rng.choice([1, 3, 30]))
    else:  # a column missing
        del cols[column]
    arrays = {}
    for c, values in cols.items():
        want = types.get(c)
        try:
            arrays[c] = pa.array(values, type=want) if want is not None else pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays[c] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    buf = io.BytesIO()
    pq.write_table(pa.table(arrays), buf)
    return buf.getvalue()


@functools.lru_cache(maxsize=8)
def _repeat_rows(data: bytes, rows: int, groups: int) -> bytes:
    """The table's rows repeated to `rows` (1 = as they are), written `groups` times as
    row groups, one at a time: 30 million rows in a few MB (zstd)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    if rows > 1:
        table = table.take(pa.array(np.arange(rows) % max(1, table.num_rows)))
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, compression="zstd") as w:
        for _ in range(groups):
            w.write_table(table, row_group_size=max(1, table.num_rows))
    return buf.getvalue()


# Zip flags and methods a member may claim (APPNOTE.TXT): encrypted, unknown methods.
_ENCRYPTED = 0x1
_METHODS = [99, 12, 14, 93, 95, 97, 6, 1]


def _zip_archive(parquet: bytes, members: dict[str, bytes], rng: random.Random) -> bytes:
    """An nsys-jax zip; members stored or deflated, now and then with a damaged entry:
    encrypted, an unknown compression method, a lying size, a bomb, a hostile name."""
    buf = io.BytesIO()
    entries = [("nvtx_gpu_proj_trace/trace.parquet", parquet), *sorted(members.items())]
    special = rng.random() < 0.35
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries:
            method = zipfile.ZIP_DEFLATED if rng.random() < 0.5 else zipfile.ZIP_STORED
            z.writestr(zipfile.ZipInfo(name, (2024, 6, 4, 8, 26, 0)), data, compress_type=method)
        if special and rng.random() < 0.3:
            _write_bomb_member(z, rng)
        if special and rng.random() < 0.2:
            name = rng.choice(["dump/../../escape.before_optimizations.txt", "/abs/dump/x.txt",
                               "dump/\x1b[2J.before_optimizations.txt", "dump/.", "dump/.."])  # fmt: skip
            z.writestr(name, b"HloModule x\n")
    data = bytearray(buf.getvalue())
    if special:
        _damage_zip(data, rng)
    return bytes(data)


@functools.cache
def _deflate_zero_bomb(size: int) -> bytes:
    return zero_bomb_deflate(size)


def _write_bomb_member(z: zipfile.ZipFile, rng: random.Random) -> None:
    """A dump member whose declared size is gigabytes of zeros (deflated to megabytes)."""
    size = rng.choice([300 << 20, 1 << 30])
    raw = _deflate_zero_bomb(size)
    info = zipfile.ZipInfo("dump/module_0099.bomb.before_optimizations.txt", (2024, 6, 4, 8, 26, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    # Write the precompressed stream by hand: zipfile would compress it again.
    import zlib

    crc = 0
    chunk = b"\0" * (1 << 20)
    for _ in range(size >> 20):
        crc = zlib.crc32(chunk, crc)
    info.CRC, info.compress_size, info.file_size = crc, len(raw), size
    header = info.FileHeader(zip64=size > 0x7FFFFFFF)
    z.fp.write(header)  # type: ignore[union-attr]
    info.header_offset = z.start_dir
    z.fp.write(raw)  # type: ignore[union-attr]
    z.start_dir = z.fp.tell()  # type: ignore[union-attr]
    z.filelist.append(info)
    z.NameToInfo[info.filename] = info


def _damage_zip(data: bytearray, rng: random.Random) -> None:
    """Set the encrypted flag or an unknown method on a central-directory entry (and
    its local header), or a lying size."""
    entries = [m.start() for m in re.finditer(b"PK\x01\x02", data)]
    if not entries:
        return
    at = rng.choice(entries)
    local = struct.unpack_from("<I", data, at + 42)[0]
    kind = rng.randrange(3)
    for base, flag_at, method_at in ((at, 8, 10), (local, 6, 8)):
        if base + method_at + 2 > len(data):
            continue
        if kind == 0:
            flags = struct.unpack_from("<H", data, base + flag_at)[0]
            struct.pack_into("<H", data, base + flag_at, flags | _ENCRYPTED)
        elif kind == 1:
            struct.pack_into("<H", data, base + method_at, rng.choice(_METHODS))
    if kind == 2:
        struct.pack_into("<I", data, at + 24, rng.choice([0, 1, 0xFFFFFFFF, 3 << 30]))


def make_nsys(rng: random.Random, folder: Path) -> Path:
    """A mutated nsys-jax archive: as a zip (mostly) or the folder it unpacks to."""
    seeds = _nsys_seeds()
    parquet, members = seeds[0] if rng.random() < 0.5 else rng.choice(seeds)
    members = dict(members)
    roll = rng.random()
    if roll < 0.55:
        parquet = _mutate_parquet(parquet, rng)
    elif roll < 0.65:
        parquet = mutate_bytes(parquet, rng)
    elif roll < 0.9 and members:
        name = rng.choice(sorted(n for n in members if n.endswith(".hlo.pb.xz")) or sorted(members))
        raw = lzma.decompress(members[name]) if name.endswith(".xz") else members[name]
        raw = _mutate_hlo_semantics(raw, rng) if rng.random() < 0.6 else mutate_proto(raw, rng)
        members[name] = xz_bytes(raw) if name.endswith(".xz") else raw
    if rng.random() < 0.8:
        path = folder / "run.nsys-jax.zip"
        path.write_bytes(_zip_archive(parquet, members, rng))
        return path
    path = folder / "archive"
    (path / "nvtx_gpu_proj_trace").mkdir(parents=True)
    (path / "nvtx_gpu_proj_trace" / "trace.parquet").write_bytes(parquet)
    (path / "dump").mkdir()
    for name, data in members.items():
        (path / name).write_bytes(data)
    _hostile_entries(path, path / "dump", rng)
    return path


def check_nsys(path: Path) -> None:
    from hloscope.inspection import inspect_run

    before = _temp_entries()
    try:
        inspection = inspect_run(path)
        if inspection.timings is not None:
            check_timings(inspection.timings)
        if inspection.timing_error:
            raise_if_not_clean(inspection.timing_error)
    finally:
        _check_no_leftovers(before)


def raise_if_not_clean(message: str) -> None:
    if SECRET in message or "\n" in message.strip():
        raise ContractViolation(f"timing error not clean: {message[:300]!r}")


def _temp_entries() -> set[str]:
    return set(os.listdir(tempfile.gettempdir()))


def _check_no_leftovers(before: set[str]) -> None:
    """No partial unpack folder stays in the temp folder."""
    for name in set(os.listdir(tempfile.gettempdir())) - before:
        full = Path(tempfile.gettempdir()) / name
        if name.startswith("hloscope-nsys-") and not (full / ".complete").is_file():
            raise ContractViolation(f"a partial unpack was left behind: {full}")


# --------------------------------------------------------------------------------------
# Run folders and their caches


_RUN_MANIFEST = {
    "source": "dump",
    "target": {"kind": "script", "name": "samples/jax_mlp.py", "args": []},
    "platform": "cpu",
    "device": "CPU (2 cores)",
    "exit_code": 0,
    "dump_dir": "dump",
    "profile": {"dir": "profile", "framework": "jax", "skip_first": 1},
}


@functools.cache
def _pristine_runs() -> list[Path]:
    """Run folders made from tests/data, caches written by a first `report --json`."""
    base = Path(tempfile.mkdtemp(prefix="fuzz-seeds-"))
    out = []
    for name, dump, profile in (
        ("jax", DATA / "jax_mlp_profile" / "hlo", DATA / "jax_mlp_profile" / "plugins"),
        ("tf", DATA / "tf_dense_relu", DATA / "tf_dense_relu_profile" / "plugins"),
    ):
        run = base / name
        shutil.copytree(
            dump, run / "dump", ignore=shutil.ignore_patterns("HOW.md", "*.debug_options")
        )
        shutil.copytree(profile, run / "profile" / "jax" / "plugins")
        logdir = run / "profile" / "jax"
        (logdir / "compiles.json").write_text(json.dumps({"compiles": [["jit(mlp)", 0.05]]}))
        memory = DATA / "memory_reports"
        for f in memory.glob("module_0030.jit_mlp.cpu_after_optimizations-*"):
            if name == "jax":
                shutil.copy(f, run / "dump" / f.name)
        log = DATA / "gpu_fusion_log" / "module_0004.jit_f.priority_fusion_dump.txt"
        after = next((run / "dump").glob("*after_optimizations.txt"))
        shutil.copy(
            log,
            after.with_name(
                after.name.split(".")[0]
                + "."
                + after.name.split(".")[1]
                + ".priority_fusion_dump.txt"
            ),
        )
        (run / "bench.json").write_text(
            json.dumps({"model": "mlp", "eager_ms": 1.5, "xla_ms": 0.5, "speedup": 3.0})
        )
        (run / "run.json").write_text(json.dumps(_RUN_MANIFEST))
        _age(run)
        _cli(["report", str(run), "--json", *_PEAKS])
        _cli(["profile", str(run)])
        out.append(run)
    return out


def _age(folder: Path) -> None:
    old = 1_700_000_000 * 10**9
    for p in [folder, *folder.rglob("*")]:
        os.utime(p, ns=(old, old), follow_symlinks=False)


def _cli(args: list[str]) -> tuple[int, str, str, BaseException | None]:
    from typer.testing import CliRunner

    from hloscope.cli import app

    result = CliRunner().invoke(app, args, env={"COLUMNS": "120", "FORCE_COLOR": "1"})
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, exc


@functools.cache
def _outside() -> Path:
    """A folder outside every run: files that hold the secret, a profile of its own."""
    base = Path(tempfile.mkdtemp(prefix="fuzz-outside-"))
    (base / "secret.txt").write_text(f"HloModule {SECRET}\nallocation 0: size 4 {SECRET}\n")
    (base / "secret.json").write_text(json.dumps({"compiles": [[SECRET, 1.0]], "eager_ms": SECRET}))
    prof = base / "profile" / "plugins" / "profile" / "1"
    prof.mkdir(parents=True)
    seed = next(DATA.rglob("*.trace.json.gz"))
    doc = json.loads(gzip.decompress(seed.read_bytes()))
    for e in doc["traceEvents"]:
        if isinstance(e.get("args"), dict) and "hlo_op" in e["args"]:
            e["args"]["hlo_op"] = SECRET
    (prof / "vm.trace.json.gz").write_bytes(gzip_bytes(json.dumps(doc).encode()))
    return base


def _tree(where: Path) -> list[Path]:
    """Every entry below a folder, links not followed, without recursion (a 1,200-deep
    nest made by an earlier edit must not stop the next one)."""
    out: list[Path] = []
    stack = [where]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            out.append(Path(e.path))
            if e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))
    return sorted(out)


_SIDE = re.compile(
    r"buffer-assignment|memory-usage|priority_fusion|compiles\.json|bench\.json|run\.json"
    r"|\.xplane\.pb$|\.trace\.json|_after_optimizations|trace\.parquet|target_config"
)


def _hostile_entries(run: Path, where: Path, rng: random.Random) -> None:
    """Put in place of a file of `where`: a link out of the run, to /dev/zero, a FIFO,
    a folder, a loop of links; or nest folders 1,200 deep."""
    files = [p for p in _tree(where) if p.is_file() and not p.is_symlink()]
    if not files:
        return
    # Mostly the files read beside the HLO and the profile, which are few among many.
    side = [p for p in files if _SIDE.search(p.name)]
    target = rng.choice(side if side and rng.random() < 0.7 else files)
    kind = rng.randrange(7)
    target.unlink()
    outside = _outside()
    if kind == 0:
        target.symlink_to(outside / ("secret.json" if target.suffix == ".json" else "secret.txt"))
    elif kind == 1:
        target.symlink_to("/dev/zero")
    elif kind == 2:
        os.mkfifo(target)
    elif kind == 3:
        target.mkdir()
    elif kind == 4:
        target.symlink_to(target.name)  # a link to itself
    elif kind == 5:
        target.symlink_to(os.path.relpath(outside / "secret.txt", target.parent))
    else:
        deep = where
        for _ in range(1200):  # os.makedirs recurses per level
            deep = deep / "d"
            deep.mkdir(exist_ok=True)
        shutil.copy(outside / "secret.txt", deep / target.name)


_CACHE_FILES = (".hloscope-timings.json", ".hloscope-report.json")


def _json(path: Path) -> Any:
    """A JSON file's document, or None (an earlier edit may have made it anything)."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _forge(run: Path, rng: random.Random) -> None:
    """Change the kept caches' values under their keys: what a forger would do."""
    for name in _CACHE_FILES:
        path = run / name
        if not path.is_file() or rng.random() < 0.3:
            continue
        doc = _json(path)
        if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
            continue
        for entry in doc["entries"].values():
            value = entry.get("value", entry) if isinstance(entry, dict) else None
            if not isinstance(value, dict):
                continue
            if "stdout" in value:
                value["stdout"] = FORGED_REPORT + "\n"
            modules = value.get("modules")
            for m in modules.values() if isinstance(modules, dict) else ():
                if isinstance(m, dict):
                    m["executions"] = FORGED_EXECUTIONS
                    m["total_us"] = -998.0
        path.write_text(json.dumps(doc))


def _swap_same_stamp(run: Path, rng: random.Random) -> None:
    """Change a profile or dump file's content but keep its size and time (a stale cache
    would still match a key of names, sizes and times)."""
    files = [p for p in (run / "dump").glob("*after_optimizations.txt")]
    files += [p for p in _tree(run / "profile") if p.name.endswith(".trace.json.gz")]
    if not files:
        return
    path = rng.choice(files)
    st = path.stat()
    data = bytearray(path.read_bytes())
    if path.suffix == ".gz":
        doc = json.loads(gzip.decompress(bytes(data)))
        events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
        for e in events[: len(events) // 2]:
            e["dur"] = float(e.get("dur", 0)) * 3
        new = gzip_bytes(json.dumps(doc).encode())
    else:
        text = data.decode()
        new = re.sub(r"\bfusion\b", "fusiom", text, count=3).encode()
    path.write_bytes(
        new[: st.st_size].ljust(st.st_size, b" ")
        if len(new) != st.st_size and path.suffix != ".gz"
        else new
    )
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def make_run(rng: random.Random, folder: Path) -> Path:
    """A run folder with its dump, profile, bench.json, compile records, memory reports,
    fusion log and caches, then one to three hostile edits."""
    run = folder / "run"
    shutil.copytree(rng.choice(_pristine_runs()), run, symlinks=True)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(8)
        if kind <= 1:  # a JSON file mutated
            jsons = [p for p in _tree(run) if p.name.endswith(".json") and p.is_file()]
            jsons.append(run / "run.json")
            path = rng.choice(jsons)
            doc = _json(path)
            if doc is None:
                continue
            write_json(path, mutate_json(doc, rng), gz=False)
        elif kind == 2:  # profile.dir / dump_dir pointing elsewhere
            doc = _json(run / "run.json")
            if not isinstance(doc, dict):
                continue
            where = rng.choice([str(_outside() / "profile"), "/", "..", "../..", "/etc",
                                "profile/../../..", "dump", "", 7, None])  # fmt: skip
            if rng.random() < 0.7:
                doc["profile"] = {**(doc.get("profile") or {}), "dir": where}
            else:
                doc["dump_dir"] = where
            (run / "run.json").write_text(json.dumps(doc))
        elif kind == 3:
            _hostile_entries(run, run / rng.choice(["dump", "profile", "."]), rng)
        elif kind == 4:
            _forge(run, rng)
        elif kind == 5:
            _swap_same_stamp(run, rng)
        elif kind == 6:  # file names and fields with terminal escapes
            dump = run / "dump"
            files = sorted(p for p in dump.glob("*.txt") if p.is_file() and not p.is_symlink())
            if files:
                f = rng.choice(files)
                text = f.read_text(errors="replace").replace(
                    'op_name="', 'op_name="\x1b[2J\x1b]52;c;x\x07', 3
                )
                f.write_text(text)
                if rng.random() < 0.5:
                    f.rename(f.with_name(f.name.replace(".", ".\x1b[31m\u202e", 1)))
        else:  # a profile file damaged
            profiles = [p for p in _tree(run) if p.name.endswith((".trace.json.gz", ".xplane.pb"))]
            if profiles:
                p = rng.choice(profiles)
                if p.is_file() and not p.is_symlink():
                    p.write_bytes(mutate_bytes(p.read_bytes(), rng))
    return run


# The roofline's device roofs, given: measured on this machine they vary with its load,
# and the comparison below would see that, not a stale cache.
_PEAKS = ["--peak-bandwidth", "12", "--peak-tflops", "0.2"]


def check_run(run: Path) -> None:
    """`report`, `report --json` and `profile` on the run as a user runs them: exit code
    0 or an error line, no traceback, no secret, no raw control character, and the
    cached output equal to the output computed without caches."""
    outputs = []
    commands = [["report", str(run), "--json", *_PEAKS], ["report", str(run), *_PEAKS]]
    for args in [*commands, ["profile", str(run)]]:
        code, out, err, exc = _cli(args)
        if exc is not None:
            if isinstance(exc, MemoryError):
                raise exc
            tb = "".join(traceback.format_exception(exc, limit=10))[-3000:]
            raise ContractViolation(f"{' '.join(args[:1])}: exception escaped the CLI:\n{tb}")
        text = out + err
        if SECRET in text:
            raise ContractViolation(f"{args[0]}: a file outside the run was read and shown")
        if FORGED_REPORT in text or str(FORGED_EXECUTIONS) in text:
            raise ContractViolation(f"{args[0]}: a forged cache entry was shown")
        if "--json" not in args and _CONTROL.search(_SGR.sub("", text)):
            found = sorted({f"U+{ord(c):04X}" for c in _CONTROL.findall(_SGR.sub("", text))})
            raise ContractViolation(f"{' '.join(args[:1])}: raw control characters {found}")
        if code not in (0, 1, 2, 3):
            raise ContractViolation(f"{args[0]}: exit code {code}")
        if code and len(err.strip().splitlines()) > 3:
            raise ContractViolation(f"{args[0]}: error of several lines: {err[:500]!r}")
        outputs.append((code, out, err))
    errors = [err for code, out, err in outputs if code]
    # The caches are never taken as truth: the same commands without them agree.
    for name in _CACHE_FILES:
        p = run / name
        if p.is_file() and not p.is_symlink():
            p.unlink()
    for args, (code, out, _) in zip(commands[:1], outputs, strict=False):
        again = _cli(args)
        if again[0] == code == 0 and _normal(again[1]) != _normal(out):
            raise ContractViolation("report --json differs from a computation without caches")
    if errors:  # a clean refusal: counted as one
        raise HloscopeError(errors[0].strip().splitlines()[0] if errors[0].strip() else "error")


def _normal(text: str) -> str:
    """A report less what changes between two computations (timestamps of reading)."""
    return re.sub(r'"(elapsed|read_s|seconds)": [0-9.e-]+', "", text)


# --------------------------------------------------------------------------------------


READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader("hlo-text", make_text, check_text),
        Reader("hlo-proto", make_proto, check_proto),
        Reader("trace-json", make_trace_json, check_trace),
        Reader("nsys", make_nsys, check_nsys),
        Reader("run-folder", make_run, check_run),
        Reader("xspace", make_xspace, check_xspace),
    )
}
"""Every reader fuzzed, by the name the figures use."""


def available(name: str) -> bool:
    """Whether a reader's seeds are here (the nsys seeds need ../shared/gpu)."""
    if name == "nsys":
        return ARCHIVE.is_file()
    return True


__all__ = ["READERS", "Outcome", "Reader", "available", "run_case", "stat"]
