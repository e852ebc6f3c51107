"""XSpace profiles of any size, written on the wire format: the scale cases of issue 25
(50,000 modules, ten million events) for `benchmarks/reader_scale_bench.py` and the
fuzzer (`tests/fuzz/readers.py`).

Two layouts, as the real profiles have them (see ../shared/gpu and tests/data):
- `tpu`: a `/device:TPU:0` plane with an `XLA Modules` line (one event per execution,
  named `<module>(<program id>)`, a `run_id` stat) and an `XLA Ops` line (one event per
  op call, its HLO text as name, the op as display name, the `program_id` stat on its
  metadata), and the `/host:metadata` plane naming the programs;
- `cpu`: JAX on the CPU: a `/host:CPU` plane whose thunk events carry `hlo_op`,
  `hlo_module`, `program_id` and `run_id` stats (refs and integers), as
  tests/data/jax_mlp_profile records them.

Field numbers: `xla/tsl/profiler/protobuf/xplane.proto` (XSpace planes 1; XPlane id 1,
name 2, lines 3, event_metadata 4, stat_metadata 5; XLine id 1, name 2, timestamp_ns 3,
events 4; XEvent metadata_id 1, offset_ps 2, duration_ps 3, stats 4; XStat metadata_id
1, int64 4, str 5, ref 7; XEventMetadata id 1, name 2, display_name 4, stats 5;
XStatMetadata id 1, name 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.fuzz.mutators import encode_varint


def _key(number: int, wire: int) -> bytes:
    return encode_varint((number << 3) | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + encode_varint(value)


def _len(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + encode_varint(len(payload)) + payload


def _stat_int(meta: int, value: int) -> bytes:
    return _int(1, meta) + _int(4, value)


def _stat_ref(meta: int, ref: int) -> bytes:
    return _int(1, meta) + _int(7, ref)


def _event(meta: int, offset: int, duration: int, stats: Iterable[bytes] = ()) -> bytes:
    body = _int(1, meta) + _int(2, offset) + _int(3, duration)
    for s in stats:
        body += _len(4, s)
    return _len(4, body)


def _event_metadata(
    meta_id: int, name: str, display: str = "", stats: Iterable[bytes] = ()
) -> bytes:
    body = _int(1, meta_id) + _len(2, name.encode())
    if display:
        body += _len(4, display.encode())
    for s in stats:
        body += _len(5, s)
    return _len(4, _int(1, meta_id) + _len(2, body))  # map<int64, XEventMetadata> entry


def _stat_metadata(meta_id: int, name: str) -> bytes:
    return _len(5, _int(1, meta_id) + _len(2, _int(1, meta_id) + _len(2, name.encode())))


def _line(line_id: int, name: str, events: Iterable[bytes]) -> Iterator[bytes]:
    """An XLine field in pieces (its events may be gigabytes: never one bytes object
    until the caller joins them)."""
    body = b"".join(events)
    yield _len(3, _int(1, line_id) + _len(2, name.encode()) + _int(3, 0) + body)


def tpu_xspace(modules: int, executions: int = 2, ops: int = 3, *, control: bool = False) -> bytes:
    """A TPU profile of `modules` programs, each run `executions` times, `ops` op calls
    per run. With `control`, every op is a `while` holding the next one (nested
    intervals: the worst case of the control-flow self time)."""
    run_id, program_id = 1, 2
    meta = [_stat_metadata(run_id, "run_id"), _stat_metadata(program_id, "program_id")]
    module_events, op_events = [], []
    t = 1_000_000
    for e in range(executions):
        for m in range(modules):
            span = ops * 1000 + 2000
            module_events.append(_event(1 + m, t, span, [_stat_int(run_id, e + 1)]))
            for o in range(ops):
                op_meta = 1 + modules + m * ops + o
                if control:  # each op inside the previous one
                    op_events.append(_event(op_meta, t + 500 + o * 10, span - 1000 - o * 20))
                else:
                    op_events.append(_event(op_meta, t + 1000 + o * 1000, 900))
            t += span + 500
    metas = [_event_metadata(1 + m, f"jit_f{m}({m})") for m in range(modules)]
    for m in range(modules):
        for o in range(ops):
            op = f"while.{o}" if control else f"fusion.{o}"
            metas.append(
                _event_metadata(
                    1 + modules + m * ops + o,
                    f"%{op} = f32[8]{{0}} fusion(f32[8]{{0}} %p)",
                    op,
                    [_stat_int(program_id, m)],
                )
            )
    plane = (
        _int(1, 1)
        + _len(2, b"/device:TPU:0")
        + b"".join(_line(2, "XLA Modules", module_events))
        + b"".join(_line(3, "XLA Ops", op_events))
        + b"".join(metas)
        + b"".join(meta)
    )
    host = (
        _int(1, 2)
        + _len(2, b"/host:metadata")
        + b"".join(_event_metadata(1 + m, f"jit_f{m}({m})") for m in range(modules))
    )
    return _len(1, plane) + _len(1, host)


def cpu_xspace(events: int, *, modules: int = 1, ops: int = 10) -> bytes:
    """A JAX CPU profile of `events` thunk events: `modules` programs of `ops` ops each,
    run in turn until the events are spent, each run with its own `run_id`."""
    names = ["hlo_op", "hlo_module", "program_id", "run_id"]
    stat_meta = [_stat_metadata(i + 1, n) for i, n in enumerate(names)]
    # Ref targets: stat metadata whose names are the op and module names.
    op_ref = {o: 100 + o for o in range(ops)}
    module_ref = {m: 100 + ops + m for m in range(modules)}
    stat_meta += [_stat_metadata(op_ref[o], f"fusion.{o}") for o in range(ops)]
    stat_meta += [_stat_metadata(module_ref[m], f"jit_f{m}") for m in range(modules)]
    event_meta = [_event_metadata(1 + o, f"fusion.{o}") for o in range(ops)]
    body = bytearray()  # ten million events: appended in place, never a list of pieces
    t = 1_000_000
    run = 0
    done = 0
    while done < events:
        m = run % modules
        for o in range(min(ops, events - done)):
            stats = [
                _stat_ref(1, op_ref[o]), _stat_ref(2, module_ref[m]),
                _stat_int(3, m), _stat_int(4, run + 1),
            ]  # fmt: skip
            body += _event(1 + o, t, 900, stats)
            t += 1000
            done += 1
        run += 1
        t += 5000
    line = _int(1, 7) + _len(2, b"tf_XLAPjRtCpuClient/7") + _int(3, 0)
    plane = bytearray(_int(1, 1) + _len(2, b"/host:CPU"))
    plane += _key(3, 2) + encode_varint(len(line) + len(body)) + line
    plane += body
    del body
    plane += b"".join(event_meta) + b"".join(stat_meta)
    host = (
        _int(1, 2)
        + _len(2, b"/host:metadata")
        + b"".join(_event_metadata(1 + m, f"jit_f{m}({m})") for m in range(modules))
    )
    out = bytearray(_key(1, 2) + encode_varint(len(plane)))
    out += plane
    del plane
    out += _len(1, host)
    return bytes(out)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
