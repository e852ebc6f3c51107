"""A dump's compile events -> `manifest.Compile` records, each joined to the module it made.

The child's `CompileWatch` hears JAX's compile phases as events; TensorFlow writes one
log line per XLA compile to `stderr.log`. Here JAX's phases become one compile each (an
XLA compile event, the lowering of the same name before it, and the tracing that
lowering followed, with the cache-miss explanation JAX gave for that function), TF's
lines are read, and each compile is joined to the dumped module it made: compiles and
modules of one name pair in order, when their counts agree. TensorFlow's retracing
warnings are kept as notes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hloscope.capture.child_report import ChildReport
from hloscope.frameworks import Framework
from hloscope.manifest import Compile
from hloscope.runs import ModuleDump

__all__ = ["jax_compiles", "join_modules", "record_compiles", "retrace_notes", "tf_compiles"]

# `device_compilation_profiler.cc:113] Compiled __inference_f_16 1 times, compile time:
# 69883 us, cumulative: ...` (TensorFlow's DeviceCompilationProfiler::RegisterCompilation)
_TF_COMPILE = re.compile(
    r"device_compilation_profiler\.cc:\d+\] Compiled (\S+) \d+ times, compile time: (\d+) us"
)
# `tf_logging`'s warning from polymorphic_function's _FrequentTracingDetector
_TF_RETRACE = re.compile(
    r"(\d+) out of the last (\d+) calls to (?:<function (\S+) at 0x[0-9a-f]+>|(\S+)) "
    r"triggered tf\.function retracing"
)
# the function a JAX cache-miss explanation is about
_MISS_FUNCTION = re.compile(r"\n\s*for (\S+) defined at|never seen function:\s*\n\s*(\S+) id=")
_NEVER_SEEN = "never seen function"


def _bare(name: str) -> str:
    """`jit(attend)` -> `attend`: the traced function's name in a lowering's name."""
    m = re.fullmatch(r"\w+\((.*)\)", name)
    return m[1] if m else name


def jax_compiles(events: Iterable[Sequence[Any]]) -> list[Compile]:
    """JAX's compile events, in order, as one compile per XLA compile event.

    A compile's tracing is the last trace of its function heard since the previous
    lowering (functions jitted inside it trace within its trace, and a function whose
    trace was cached has none); its lowering is the last one of its name; its reason is
    JAX's explanation of the last cache miss of its function, unless that function had
    never been seen (its first compile needs no reason).
    """
    out: list[Compile] = []
    traces: list[tuple[str, float]] = []
    lowered: dict[str, tuple[float | None, float]] = {}
    misses: dict[str, str] = {}
    for event in events:
        if len(event) != 4 or event[0] != "jax":
            continue
        _, phase, name, value = event
        if phase == "miss":
            m = _MISS_FUNCTION.search(str(value))
            if m is not None:
                misses[m[1] or m[2]] = str(value)
        elif not isinstance(value, int | float):
            continue
        elif phase == "trace":
            traces.append((str(name), float(value)))
        elif phase == "lower":
            bare = _bare(str(name))
            trace = next((s for n, s in reversed(traces) if n == bare), None)
            lowered[str(name)] = (trace, float(value))
            traces.clear()
        elif phase == "compile":
            trace, lower = lowered.pop(str(name), (None, None))
            phases = {"trace": trace, "lower": lower, "compile": float(value)}
            kept = {k: v for k, v in phases.items() if v is not None}
            reason = misses.pop(_bare(str(name)), None)
            out.append(
                Compile(
                    framework=Framework.JAX,
                    function=str(name),
                    seconds=sum(kept.values()),
                    phases=kept,
                    reason=None if reason is None or _NEVER_SEEN in reason else reason,
                )
            )
    return out


def tf_compiles(lines: Iterable[str]) -> list[Compile]:
    """TensorFlow's XLA compiles from its log (`TF_CPP_VMODULE=device_compilation_profiler=1`)."""
    out = []
    for line in lines:
        m = _TF_COMPILE.search(line)
        if m is not None:
            seconds = int(m[2]) / 1e6
            out.append(
                Compile(Framework.TENSORFLOW, m[1], seconds, {"compile": seconds}),
            )
    return out


def retrace_notes(lines: Iterable[str]) -> list[str]:
    """TensorFlow's warnings that a function was traced again and again: the last one
    of each function (TensorFlow repeats it as the count grows)."""
    found: dict[str, str] = {}
    for line in lines:
        m = _TF_RETRACE.search(line)
        if m is not None:
            fn = m[3] or m[4]
            found[fn] = (
                f"TensorFlow: {m[1]} of the last {m[2]} calls to {fn} triggered tf.function "
                "retracing"
            )
    return list(found.values())


def join_key(name: str) -> str:
    """What a compile's name and its module's name share: `jit(attend)` and `jit_attend`,
    `__inference_f_16` and `a_inference_f_16__XlaMustCompile_..._.3`, alike."""
    name = name.split("__Xla", 1)[0]
    name = re.sub(r"(\.\d+)+$", "", name)
    name = re.sub(r"^a?_+", "", name)
    return re.sub(r"[^0-9a-z]", "", name.lower())


def join_modules(compiles: Sequence[Compile], modules: Sequence[ModuleDump]) -> list[Compile]:
    """The compiles with the module each made, where that can be told: compiles and
    modules (by module id) of one name pair in order when there are as many of each
    (a `--module` filter or a persistent-cache hit leaves some compiles undumped: no
    telling which is which)."""
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(compiles):
        by_key[join_key(c.function)].append(i)
    dumped: dict[str, list[ModuleDump]] = defaultdict(list)
    for m in sorted(modules, key=lambda m: (m.id_number is None, m.id_number or 0)):
        dumped[join_key(m.name)].append(m)
    out = list(compiles)
    for key, indices in by_key.items():
        found = dumped.get(key, [])
        if len(found) != len(indices):
            continue
        for i, m in zip(indices, found, strict=True):
            out[i] = replace(out[i], module=m.key)
    return out


def record_compiles(
    child: ChildReport, stderr_log: Path, modules: Sequence[ModuleDump]
) -> tuple[tuple[Compile, ...], tuple[str, ...]]:
    """A dump's compiles and notes, for `run.json`.

    Args:
        child: The child's report (its compile watch's events and notes).
        stderr_log: The script's `stderr.log` (TensorFlow's compile lines).
        modules: The modules the dump holds.

    Returns:
        `(compiles, notes)`; compiles in the order they happened, JAX's then
        TensorFlow's (a run rarely compiles with both).
    """
    watched = child.compiles
    found = jax_compiles(watched.events if watched else ())
    notes = list(watched.notes if watched else ())
    lines = _log_lines(stderr_log)
    found += tf_compiles(lines)
    notes += retrace_notes(lines)
    if child.compile_watch_error is not None:
        notes.append(f"compile times were not recorded: {child.compile_watch_error}")
    return tuple(join_modules(found, modules)), tuple(notes)


def _log_lines(path: Path) -> list[str]:
    """The lines of a log that may hold compile or retracing lines, read as a stream."""
    out: list[str] = []
    try:
        with path.open("rb") as f:
            for raw in f:
                if b"device_compilation_profiler" in raw or b"retracing" in raw:
                    out.append(raw.decode("utf-8", "replace"))
    except OSError:
        return out
    return out
