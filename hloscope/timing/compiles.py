"""Compile times beside a profile -> modules: how long XLA took to compile each module
before its first (cold) run.

A profile records executions, not the compile before the first one. For JAX,
`hloscope dump --profile` hears JAX's own compile-duration events in the child and
writes them beside JAX's profile (`profile/jax/compiles.json`: `[["jit(mlp)", 0.088],
...]`, in compile order). Here they are matched to the profiled modules by name
(`jit(mlp)` is HloModule `jit_mlp`; modules that share a name take their compiles in
program-id order, when the counts agree) and set as `ModuleTiming.compile_us`.
TensorFlow has no such event, so its modules get none.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from hloscope.capture.profiler import COMPILES_FILE
from hloscope.files import inside, read_regular
from hloscope.timing.results import ProfileTimings

__all__ = ["read_compiles", "with_compile_times"]


def _key(name: str) -> str:
    """`jit(<lambda>)` and `jit__lambda` alike: lower-case letters and digits only."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


# A real record is a line per compiled module.
_MAX_BYTES = 16 * 1024 * 1024


def read_compiles(profiles: Iterable[Path]) -> list[tuple[str, float]]:
    """The compiles recorded beside these profile files (in each one's profiler log dir,
    `<logdir>/plugins/profile/<time>/<host>.xplane.pb`); [] where none were, or where the
    record is not one: not a regular file in the log dir (a FIFO, a link out of it), not
    `[name, seconds]` pairs of a string and a finite, non-negative number."""
    out: list[tuple[str, float]] = []
    for logdir in dict.fromkeys(p.parents[3] for p in profiles if len(p.parents) > 3):
        path = logdir / COMPILES_FILE
        try:
            if not inside(path, logdir):
                continue
            doc = json.loads(read_regular(path, _MAX_BYTES))
            pairs = [(n, s) for n, s in doc["compiles"]]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        good = all(
            isinstance(n, str)
            and isinstance(s, int | float)
            and not isinstance(s, bool)
            and math.isfinite(s)
            and s >= 0
            for n, s in pairs
        )
        if good:
            out += [(n, float(s)) for n, s in pairs]
    return out


def with_compile_times(
    timings: ProfileTimings, compiles: Sequence[tuple[str, float]]
) -> ProfileTimings:
    """The timings with each module's compile time set, where it can be told."""
    if not compiles:
        return timings
    seconds: dict[str, list[float]] = defaultdict(list)
    for name, s in compiles:
        seconds[_key(name)].append(s)
    modules: dict[str, list[str]] = defaultdict(list)
    for key, m in sorted(timings.modules.items(), key=lambda kv: kv[1].program_id or 0):
        modules[_key(m.name)].append(key)
    found = dict(timings.modules)
    for name, keys in modules.items():
        times = seconds.get(name, [])
        if len(times) != len(keys):
            continue  # compiled more or less often than it ran: no telling which is which
        for key, s in zip(keys, times, strict=True):
            found[key] = replace(found[key], compile_us=s * 1e6)
    return replace(timings, modules=found)
