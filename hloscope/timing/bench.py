"""Eager vs XLA: time one function in each execution mode of its framework, side by side.

TensorFlow runs eagerly, as a `tf.function` without XLA, and as a
`tf.function(jit_compile=True)`; JAX runs op by op (`jax.disable_jit()`) and under
`jax.jit`; PyTorch runs eagerly on the CPU and on torch_xla's lazy XLA device. Each mode gets a timed first call (tracing, compilation), warm-up, then
repetitions until enough time has passed, with every result synchronised. The statistics
take an injected clock, so tests drive them with a fake one. The frameworks are imported
only inside `bench`, never by importing this module. The timed calls of the modes are
interleaved in rounds, so a change in the machine's load hits every mode alike.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hloscope.capture.inprocess import framework_of_call
from hloscope.errors import DocumentError, HloscopeError, MissingDependencyError, UsageError
from hloscope.frameworks import Framework

__all__ = [
    "BENCH_SCHEMA_VERSION",
    "BenchResult",
    "Measurement",
    "Mode",
    "ModeResult",
    "bench",
    "load_target",
    "measure",
    "percentile",
    "run_modes",
]

Clock = Callable[[], float]

DEFAULT_MIN_TIME = 1.0
DEFAULT_MIN_REPEATS = 5
DEFAULT_MAX_REPEATS = 10_000
DEFAULT_WARMUP = 1
DEFAULT_ROUNDS = 3


@dataclass(frozen=True)
class Measurement:
    """Timings of one callable.

    Attributes:
        first_s: The first call (cold: tracing, compilation, allocation).
        times_s: Each timed steady-state call, in order.
        warmup: Untimed calls made between the first call and the timed ones.
    """

    first_s: float
    times_s: tuple[float, ...]
    warmup: int = 0

    @property
    def repeats(self) -> int:
        """How many steady-state calls were timed."""
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        """Median steady-state call."""
        return statistics.median(self.times_s) if self.times_s else math.nan

    @property
    def p10_s(self) -> float:
        """10th percentile of the steady-state calls."""
        return percentile(self.times_s, 10)

    @property
    def p90_s(self) -> float:
        """90th percentile of the steady-state calls."""
        return percentile(self.times_s, 90)

    @property
    def total_s(self) -> float:
        """Time spent in the timed calls."""
        return sum(self.times_s)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation (numpy's default).

    Returns:
        The percentile, or NaN for no values.
    """
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * min(max(q, 0.0), 100.0) / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _timed(
    call: Callable[[], Any],
    clock: Clock,
    repeats: int | None,
    min_time: float,
    min_repeats: int,
    max_repeats: int,
    max_time: float,
) -> list[float]:
    """Timed calls: exactly `repeats`, or adaptive (see `measure`)."""
    times: list[float] = []
    elapsed = 0.0
    while True:
        t = clock()
        call()
        dt = clock() - t
        times.append(dt)
        elapsed += dt
        n = len(times)
        if repeats is not None:
            if n >= repeats:
                return times
        elif (
            n >= max_repeats
            or (elapsed >= min_time and n >= min_repeats)
            or (elapsed >= max_time and n >= min(3, min_repeats))
        ):
            return times


def measure(
    call: Callable[[], Any],
    *,
    clock: Clock = time.perf_counter,
    repeats: int | None = None,
    min_time: float = DEFAULT_MIN_TIME,
    min_repeats: int = DEFAULT_MIN_REPEATS,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    max_time: float | None = None,
    warmup: int = DEFAULT_WARMUP,
) -> Measurement:
    """Time `call`: once cold, `warmup` times untimed, then repeatedly.

    `call` must return only when its work is done (synchronise inside it).

    Args:
        call: What to time.
        clock: Seconds as a float, monotonic (`time.perf_counter`; a fake in tests).
        repeats: Exactly this many timed calls; None for adaptive: until the timed calls
            add up to `min_time` and there are at least `min_repeats`, or `max_repeats`
            calls, or `max_time` (default 20 x min_time) with at least 3 calls.
        min_time: Seconds of timed calls to collect in adaptive mode.
        min_repeats: Fewest timed calls in adaptive mode.
        max_repeats: Most timed calls in adaptive mode.
        max_time: Stop adaptive mode after this many seconds once 3 calls are timed.
        warmup: Untimed calls after the first one.

    Returns:
        The measurement.
    """
    if repeats is not None and repeats < 1:
        raise UsageError("repeats must be 1 or more")
    t0 = clock()
    call()
    first = clock() - t0
    for _ in range(warmup):
        call()
    limit = max_time if max_time is not None else 20 * min_time
    times = _timed(call, clock, repeats, min_time, min_repeats, max_repeats, limit)
    return Measurement(first, tuple(times), warmup)


@dataclass(frozen=True)
class Mode:
    """One way to run the function.

    Attributes:
        name: Short id (`eager`, `tf.function`, `xla`, `op-by-op`, `jit`).
        label: What it is, for people.
        call: Runs the function once and waits for the result.
        before: Called before the mode runs (reset memory statistics).
        peak_memory: Called after: (peak bytes or None, note).
        compile_s: Called right after the cold first call: the seconds the framework
            says it spent compiling in it (its own events), or None.
    """

    name: str
    label: str
    call: Callable[[], Any]
    before: Callable[[], None] | None = None
    peak_memory: Callable[[], tuple[int | None, str | None]] | None = None
    compile_s: Callable[[], float | None] | None = None


@dataclass(frozen=True)
class ModeResult:
    """One mode's figures.

    Attributes:
        name: The mode id.
        label: The mode, for people.
        first_call_s: The cold first call (None when the mode failed).
        median_s: Median steady-state call.
        p10_s: 10th percentile.
        p90_s: 90th percentile.
        repeats: Timed calls.
        speedup: Baseline median / this median (None for a failed mode or baseline).
        peak_memory_bytes: Peak device memory the framework reports, or None.
        memory_note: Why memory is unavailable, or what the figure means.
        error: The error that stopped the mode (`XlaRuntimeError: ...`), or None.
        times_s: The timed calls.
        compile_s: Of the first call, the seconds the framework says it spent compiling
            (JAX's compile events: tracing, lowering and XLA's compile), None where it
            does not say.

    Example:
        >>> modes = [{'name': 'jit', 'median_s': 0.0005, 'repeats': 40}]
        >>> doc = {'framework': 'jax', 'baseline': 'jit', 'modes': modes}
        >>> mode = hloscope.BenchResult.from_json(doc).mode('jit')
        >>> mode.median_s, mode.repeats
        (0.0005, 40)
    """

    name: str
    label: str
    first_call_s: float | None
    median_s: float | None
    p10_s: float | None
    p90_s: float | None
    repeats: int
    speedup: float | None = None
    peak_memory_bytes: int | None = None
    memory_note: str | None = None
    error: str | None = None
    times_s: tuple[float, ...] = ()
    compile_s: float | None = None


BENCH_SCHEMA_VERSION = 1
"""Version of the `bench.json` layout (`BenchResult.to_json`)."""

# The figures of a mode as `bench.json` holds them, with the digits they keep.
_MODE_SECONDS = ("first_call_s", "compile_s", "median_s", "p10_s", "p90_s")


@dataclass(frozen=True)
class BenchResult:
    """Eager vs XLA figures of one function; saved as a run's `bench.json`.

    Attributes:
        framework: The framework it ran with.
        device: What it ran on (`CPU (2 cores)`, `gpu: NVIDIA H100`, ...).
        modes: Each mode's figures, the baseline first.
        baseline: The mode speed-ups are relative to.
        notes: Caveats, one line each.
        target: What was benchmarked (`samples/x.py:bench`), when known.

    Example:
        >>> modes = [{'name': 'op-by-op', 'median_s': 2e-3}, {'name': 'jit', 'median_s': 5e-4}]
        >>> doc = {'framework': 'jax', 'baseline': 'op-by-op', 'modes': modes}
        >>> result = hloscope.BenchResult.from_json(doc)
        >>> result.framework, result.mode('jit').speedup
        (<Framework.JAX: 'jax'>, None)
        >>> hloscope.BenchResult.from_json(result.to_json()) == result
        True
    """

    framework: Framework
    device: str
    modes: tuple[ModeResult, ...]
    baseline: str
    notes: tuple[str, ...] = ()
    target: str | None = None

    def mode(self, name: str) -> ModeResult:
        """One mode's figures by name.

        Raises:
            KeyError: No such mode.
        """
        for m in self.modes:
            if m.name == name:
                return m
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """The `hloscope bench --json` document, also saved as a run's `bench.json`.

        Schema: `schema_version`, `framework`, `device`, `target`, `baseline`, `notes`,
        and `modes`: `[{name, label, first_call_s, compile_s, median_s, p10_s, p90_s,
        repeats, speedup, peak_memory_bytes, memory_note, error}]`, the baseline first.
        Seconds, rounded to nanoseconds; `speedup` is baseline median / mode median;
        `compile_s` is the part of the first call the framework says it spent compiling
        (JAX's compile events), null where it does not say. The individual timed calls
        (`times_s`) are not kept.

        Example:
            >>> doc = result.to_json()  # doctest: +SKIP
            >>> BenchResult.from_json(doc).mode("xla").median_s  # doctest: +SKIP
            0.000412
        """
        return {
            "schema_version": BENCH_SCHEMA_VERSION,
            "framework": self.framework.value,
            "device": self.device,
            "target": self.target,
            "baseline": self.baseline,
            "notes": list(self.notes),
            "modes": [
                {
                    "name": m.name,
                    "label": m.label,
                    **{k: _rounded(getattr(m, k), 9) for k in _MODE_SECONDS},
                    "repeats": m.repeats,
                    "speedup": _rounded(m.speedup, 3),
                    "peak_memory_bytes": m.peak_memory_bytes,
                    "memory_note": m.memory_note,
                    "error": m.error,
                }
                for m in self.modes
            ],
        }

    @classmethod
    def from_json(cls, doc: Any, *, where: str = "bench.json") -> BenchResult:
        """Read a `bench.json` document (`to_json`'s), checking each field's type.

        Raises:
            DocumentError: Not an object of this layout, a field of the wrong type, or
                a schema version this hloscope does not read.
        """
        if not isinstance(doc, dict):
            raise DocumentError("not a bench document (expected a JSON object)", where=where)
        if doc.get("schema_version", BENCH_SCHEMA_VERSION) != BENCH_SCHEMA_VERSION:
            raise DocumentError(
                f"schema_version {doc.get('schema_version')!r}; this hloscope reads "
                f"{BENCH_SCHEMA_VERSION} (run `hloscope bench --save` again)",
                where=where,
            )
        framework = Framework.lookup(_field(doc, "framework", str, where) or "")
        if framework is None:
            raise DocumentError(f"framework {doc.get('framework')!r} is unknown", where=where)
        modes = doc.get("modes")
        if not isinstance(modes, list):
            raise DocumentError("modes should be a list", where=where)
        notes = doc.get("notes") or []
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise DocumentError("notes should be a list of strings", where=where)
        return cls(
            framework=framework,
            device=_field(doc, "device", str, where) or "",
            modes=tuple(_mode(m, where) for m in modes),
            baseline=_field(doc, "baseline", str, where) or "",
            notes=tuple(notes),
            target=_field(doc, "target", str, where),
        )


def _rounded(x: float | None, digits: int) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(x, digits)


def _field(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """`doc[key]`, None when absent, else checked to be of `kind` (never a bool for a
    number) and finite."""
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise DocumentError(f"{key} has the wrong type ({type(value).__name__})", where=where)
    if isinstance(value, float) and not math.isfinite(value):
        raise DocumentError(f"{key} is not a finite number", where=where)
    return value


def _mode(doc: Any, where: str) -> ModeResult:
    if not isinstance(doc, dict):
        raise DocumentError("each of modes should be an object", where=where)
    number = (int, float)
    return ModeResult(
        name=_field(doc, "name", str, where) or "?",
        label=_field(doc, "label", str, where) or "",
        repeats=_field(doc, "repeats", int, where) or 0,
        speedup=_field(doc, "speedup", number, where),
        peak_memory_bytes=_field(doc, "peak_memory_bytes", int, where),
        memory_note=_field(doc, "memory_note", str, where),
        error=_field(doc, "error", str, where),
        **{k: _field(doc, k, number, where) for k in _MODE_SECONDS},
    )


def _error_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def run_modes(
    modes: Sequence[Mode],
    *,
    clock: Clock = time.perf_counter,
    repeats: int | None = None,
    min_time: float = DEFAULT_MIN_TIME,
    min_repeats: int = DEFAULT_MIN_REPEATS,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    warmup: int = DEFAULT_WARMUP,
    rounds: int = 1,
) -> list[ModeResult]:
    """Measure the modes side by side; speed-ups are relative to the first one.

    Each mode first gets its cold first call and warm-up. Then the timed calls run in
    `rounds` rounds, each visiting every mode in turn with its share of `repeats` (or of
    `min_time`, `min_repeats` and `max_repeats`), so that a change in the machine's
    load during the run hits every mode alike. A mode that raises (XLA cannot compile
    the function, ...) is reported with its error and no figures; the others still run.
    """
    if repeats is not None and repeats < 1:
        raise UsageError("repeats must be 1 or more")
    rounds = max(1, min(rounds, repeats or rounds))
    firsts: dict[int, float] = {}
    compiled: dict[int, float | None] = {}
    errors: dict[int, str] = {}
    times: dict[int, list[float]] = {i: [] for i in range(len(modes))}
    peaks: dict[int, int | None] = {}
    notes: dict[int, str | None] = {}

    def attempt(i: int, action: Callable[[], None]) -> None:
        mode = modes[i]
        if mode.before is not None:
            mode.before()
        try:
            action()
        except Exception as e:  # the user's function or the compiler failed in this mode
            errors[i] = _error_line(e)
            return
        if mode.peak_memory is not None:
            peak, note = mode.peak_memory()
            notes[i] = note
            if peak is not None:
                peaks[i] = max(peak, peaks.get(i) or 0)

    for i, mode in enumerate(modes):

        def cold(i: int = i, call: Callable[[], Any] = mode.call, m: Mode = mode) -> None:
            t0 = clock()
            call()
            firsts[i] = clock() - t0
            compiled[i] = m.compile_s() if m.compile_s is not None else None
            for _ in range(warmup):
                call()

        attempt(i, cold)

    for r in range(rounds):
        share = None if repeats is None else repeats // rounds + (r < repeats % rounds)
        for i, mode in enumerate(modes):
            if i in errors:
                continue

            def timed(
                i: int = i, call: Callable[[], Any] = mode.call, share: int | None = share
            ) -> None:
                times[i] += _timed(
                    call,
                    clock,
                    share,
                    min_time / rounds,
                    math.ceil(min_repeats / rounds),
                    math.ceil(max_repeats / rounds),
                    20 * min_time / rounds,
                )

            attempt(i, timed)

    results: list[ModeResult] = []
    for i, mode in enumerate(modes):
        if i in errors:
            results.append(
                ModeResult(mode.name, mode.label, None, None, None, None, 0, error=errors[i])
            )
            continue
        m = Measurement(firsts[i], tuple(times[i]), warmup)
        results.append(
            ModeResult(
                mode.name,
                mode.label,
                m.first_s,
                m.median_s,
                m.p10_s,
                m.p90_s,
                m.repeats,
                peak_memory_bytes=peaks.get(i),
                memory_note=notes.get(i),
                times_s=m.times_s,
                compile_s=compiled.get(i),
            )
        )
    if results and results[0].median_s:
        base = results[0].median_s
        results = [
            r
            if r.median_s is None or i == 0
            else _replace_speedup(r, base / r.median_s if r.median_s > 0 else None)
            for i, r in enumerate(results)
        ]
        results[0] = _replace_speedup(results[0], 1.0)
    return results


def _replace_speedup(r: ModeResult, speedup: float | None) -> ModeResult:
    return replace(r, speedup=speedup)


# --------------------------------------------------------------------------------------
# Frameworks


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "CPU"


def _tf_modes(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[list[Mode], str, list[str]]:
    try:
        import tensorflow as tf
    except ImportError as e:
        raise MissingDependencyError(
            f"TensorFlow is not installed ({e}); pip install 'hloscope[tf]'"
        ) from None

    def sync(out: Any) -> Any:
        return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, out)

    gpus = tf.config.list_physical_devices("GPU")
    notes: list[str] = []
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        device = f"GPU:0 ({details.get('device_name', 'GPU')})"

        def before() -> None:
            tf.config.experimental.reset_memory_stats("GPU:0")

        def peak() -> tuple[int | None, str | None]:
            info = tf.config.experimental.get_memory_info("GPU:0")
            return int(info["peak"]), "tf.config.experimental.get_memory_info('GPU:0')['peak']"

        before_fn: Callable[[], None] | None = before
    else:
        device = f"CPU ({_cpu_name()}, {os.cpu_count()} cores)"
        before_fn = None

        def peak() -> tuple[int | None, str | None]:
            return None, "unavailable: TensorFlow reports device memory for GPUs only"

        notes.append("peak memory: not reported on the CPU (TensorFlow reports it for GPUs only)")

    notes.append(
        "compile: TensorFlow reports XLA's compile time only in its log, not to the process "
        "(`hloscope dump` records it); the first call holds tracing, compiling and a run"
    )
    plain = tf.function(fn, jit_compile=False)
    xla = tf.function(fn, jit_compile=True)
    modes = [
        Mode("eager", "eager", lambda: sync(fn(*args)), before_fn, peak),
        Mode("tf.function", "tf.function, no XLA", lambda: sync(plain(*args)), before_fn, peak),
        Mode("xla", "jit_compile=True", lambda: sync(xla(*args)), before_fn, peak),
    ]
    return modes, device, notes


def _jax_modes(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[list[Mode], str, list[str]]:
    try:
        import jax
    except ImportError as e:
        raise MissingDependencyError(
            f"JAX is not installed ({e}); pip install 'hloscope[jax]'"
        ) from None

    dev = jax.devices()[0]
    notes: list[str] = []
    if dev.platform == "cpu":
        device = f"CPU ({_cpu_name()}, {os.cpu_count()} cores)"
    else:
        device = f"{dev.platform}: {dev.device_kind}"

    def peak() -> tuple[int | None, str | None]:
        stats = dev.memory_stats()
        if not stats or "peak_bytes_in_use" not in stats:
            return None, f"unavailable: JAX reports no memory statistics on {dev.platform}"
        return int(stats["peak_bytes_in_use"]), "peak_bytes_in_use since the process started"

    jitted = jax.jit(fn)
    jit_peak = peak
    if dev.platform == "cpu":
        notes.append(
            "peak memory: not measured on the CPU (jax Device.memory_stats() is None); for "
            "jax.jit, XLA's planned peak (compiled.memory_analysis())"
        )
        jit_peak = _planned_peak(jitted, args, peak)
    else:
        notes.append(
            "peak memory: JAX's peak since the process started; it cannot be reset, so a mode "
            "shows at least the peak of the modes before it"
        )

    def op_by_op() -> Any:
        with jax.disable_jit():
            return jax.block_until_ready(fn(*args))

    modes = [
        Mode("op-by-op", "op by op (disable_jit)", op_by_op, None, peak),
        Mode(
            "jit",
            "jax.jit",
            lambda: jax.block_until_ready(jitted(*args)),
            None,
            jit_peak,
            _jax_compile_time(jax, jitted),
        ),
    ]
    return modes, device, notes


# JAX's compile events (`jax._src.dispatch`): tracing, lowering to HLO, XLA's compile.
_JAX_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _jax_compile_time(jax: Any, jitted: Any) -> Callable[[], float | None]:
    """The seconds of JAX's compile events for `jitted` (traced as `fn`, lowered and
    compiled as `jit(fn)`) since this was made; the listener leaves once read."""
    name = getattr(jitted, "__name__", None) or getattr(jitted, "__qualname__", "")
    heard: list[float] = []

    def listen(event: str, duration: float, **kwargs: Any) -> None:
        if event in _JAX_COMPILE_EVENTS and str(kwargs.get("fun_name")) in (name, f"jit({name})"):
            heard.append(duration)

    try:
        jax.monitoring.register_event_duration_secs_listener(listen)
    except Exception:  # a JAX without monitoring: no compile time
        return lambda: None

    def read() -> float | None:
        with contextlib.suppress(Exception):
            jax.monitoring.unregister_event_duration_listener(listen)
        return sum(heard) if heard else None

    return read


def _planned_peak(
    jitted: Any, args: Sequence[Any], fallback: Callable[[], tuple[int | None, str | None]]
) -> Callable[[], tuple[int | None, str | None]]:
    """XLA's planned memory of a jitted function: arguments + outputs + temporaries, less
    what outputs alias (`CompiledMemoryStats`, the buffer assignment's totals without
    constants and thread-local scalars)."""

    def peak() -> tuple[int | None, str | None]:
        try:
            stats = jitted.lower(*args).compile().memory_analysis()
        except Exception:  # an API this jax lacks: say unavailable as before
            return fallback()
        if stats is None:
            return fallback()
        total = (
            stats.argument_size_in_bytes + stats.output_size_in_bytes
            + stats.temp_size_in_bytes - stats.alias_size_in_bytes
        )  # fmt: skip
        return int(total), "planned by XLA: compiled.memory_analysis() args + outputs + temps"

    return peak


def _torch_modes(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[list[Mode], str, list[str]]:
    """Eager PyTorch on the CPU, and the same function on torch_xla's device: traced
    lazily, compiled by XLA once per graph (cached after), each call's outputs
    materialised and waited for (`xm.unlazy`)."""
    from hloscope.capture.torch import import_torch_xla, to_device, xla_leaves

    torch, torch_xla = import_torch_xla()
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

    cpu = torch.device("cpu")
    fn_cpu, args_cpu = to_device(fn, args, cpu, torch)
    fn_xla, args_xla = to_device(fn, args, torch_xla.device(), torch)

    def eager() -> Any:
        return fn_cpu(*args_cpu)

    def lazy() -> Any:
        out = fn_xla(*args_xla)
        xm.unlazy(list(xla_leaves(out, torch)))
        return out

    device = f"CPU ({_cpu_name()}, {os.cpu_count()} cores); torch_xla on PJRT {xr.device_type()}"
    notes = [
        "peak memory: not measured (neither eager PyTorch on the CPU nor torch_xla reports it)"
    ]
    modes = [
        Mode("eager", "eager (CPU)", eager),
        Mode("xla", "torch_xla", lazy),
    ]
    return modes, device, notes


_MODES = {
    Framework.TENSORFLOW: _tf_modes,
    Framework.JAX: _jax_modes,
    Framework.TORCH_XLA: _torch_modes,
}


def bench(
    fn: Callable[..., Any],
    *args: Any,
    framework: str | None = None,
    repeats: int | None = None,
    min_time: float = DEFAULT_MIN_TIME,
    clock: Clock = time.perf_counter,
    warmup: int = DEFAULT_WARMUP,
    rounds: int = DEFAULT_ROUNDS,
    target: str | None = None,
) -> BenchResult:
    """Time `fn(*args)` eagerly and under XLA, side by side.

    Args:
        fn: The plain function (not a `tf.function` / `jax.jit`), or a PyTorch function
            or `nn.Module` (copied to each mode's device, as its tensor arguments are).
        *args: Its arguments.
        framework: `tensorflow` (`tf`), `jax` or `torch`; detected from the arguments
            when None.
        repeats: Timed calls per mode; None for adaptive (see `measure`).
        min_time: Seconds of timed calls per mode in adaptive mode.
        clock: Seconds as a float (`time.perf_counter`).
        warmup: Untimed calls per mode after the first.
        rounds: The timed calls are split into this many rounds that visit the modes in
            turn (see `run_modes`), so that the machine's load hits them alike.
        target: What is being benchmarked, kept in the result.

    Returns:
        The figures, the eager mode first; speed-ups are relative to it.

    Raises:
        UsageError: The framework cannot be told or is not supported.
        MissingDependencyError: The framework is not installed.

    Example:
        >>> import jax.numpy as jnp  # doctest: +SKIP
        >>> result = hloscope.bench(lambda x: jnp.tanh(x) * 2, jnp.ones((64, 64)))  # doctest: +SKIP
        >>> result.mode('jit').speedup  # doctest: +SKIP
    """
    name = Framework.parse(framework) if framework else framework_of_call(fn, args)
    if name is None:
        raise UsageError(
            "cannot tell whether this is a TensorFlow, JAX or PyTorch function; "
            "pass framework='tensorflow', 'jax' or 'torch'"
        )
    modes, device, notes = _MODES[name](fn, args)
    results = run_modes(
        modes, clock=clock, repeats=repeats, min_time=min_time, warmup=warmup, rounds=rounds
    )
    return BenchResult(name, device, tuple(results), modes[0].name, tuple(notes), target)


# --------------------------------------------------------------------------------------
# `SCRIPT.py:FUNCTION`


def load_target(spec: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Import `SCRIPT.py` and call its `FUNCTION()`, which returns `(fn, args)`.

    The script is imported as a module (its `if __name__ == "__main__"` block does not
    run), with its folder first on `sys.path` so that it imports its neighbours.

    Args:
        spec: `path/to/script.py:function`.

    Returns:
        `(fn, args)` as the function returned them (`args` as a tuple).

    Raises:
        UsageError: Bad spec, missing script or function, or a wrong return value.
    """
    script, sep, func = spec.rpartition(":")
    if not sep or not script or not func:
        raise UsageError(
            f"expected SCRIPT.py:FUNCTION (e.g. samples/jax_mlp.py:bench), got {spec!r}"
        )
    path = Path(script)
    if not path.is_file():
        raise UsageError(f"{script}: no such script")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_name = f"_hloscope_bench_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"{script}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except HloscopeError:
        raise
    except ImportError as e:
        raise MissingDependencyError(f"{script}: {e}") from None
    target = getattr(module, func, None)
    if not callable(target):
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise UsageError(
            f"{script} has no function {func!r}; it defines: {', '.join(names[:12]) or 'none'}"
        )
    result = target()
    if (
        not isinstance(result, tuple)
        or len(result) != 2
        or not callable(result[0])
        or not isinstance(result[1], (tuple, list))
    ):
        raise UsageError(f"{spec} must return (fn, args): a callable and a tuple of its arguments")
    return result[0], tuple(result[1])
