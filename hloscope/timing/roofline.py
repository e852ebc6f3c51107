"""Each kernel against the device's roofline: achieved bandwidth and FLOP/s from measured
times, memory- or compute-bound, and how far below its roof it runs.

Device peaks come from (first that applies): `--peak-bandwidth`/`--peak-flops` flags, a
table of common accelerators keyed by the device name a run records (public spec-sheet
figures, dense, no sparsity), or -- for a CPU run -- a short bundled probe run on this
machine (a large array copy and an f32 matmul through numpy, all cores) and cached per
machine in the user cache dir. `roofline` joins `hloscope.analysis.cost` with the
measured kernel times; renderers show the result.
"""

from __future__ import annotations

import json
import math
import os
import platform as host
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hloscope.analysis.cost import ModuleCost
from hloscope.analysis.kernels import ASYNC_DONE_OPCODES, COLLECTIVE_OPCODES
from hloscope.errors import DocumentError
from hloscope.store import PEAKS_FILE, machine_key, user_cache_dir

__all__ = [
    "DEVICE_PEAKS",
    "KernelRoof",
    "Peaks",
    "cpu_peaks",
    "device_peaks",
    "roofline",
]


@dataclass(frozen=True, slots=True)
class Peaks:
    """A device's roofs.

    Attributes:
        name: The device, as matched or measured.
        bandwidth: Peak memory bandwidth, bytes per second.
        flops: Peak FLOP/s for f32 work.
        flops_low: Peak FLOP/s for 16-bit and narrower work (tensor cores), where it
            differs; None when the same.
        source: Where the figures come from (`table`, `probe`, `flags`).

    Example:
        >>> peaks = hloscope.Peaks('my GPU', bandwidth=3.35e12, flops=989e12)
        >>> round(peaks.ridge)
        295
    """

    name: str
    bandwidth: float
    flops: float
    flops_low: float | None = None
    source: str = "table"

    def to_json(self) -> dict[str, Any]:
        """The roofs as this machine's entry of the probe cache (`peaks.json`)."""
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Any, *, source: str = "probe") -> Peaks:
        """Read an entry of the probe cache (`to_json`'s).

        Raises:
            DocumentError: The entry is of another shape, or a roof is not a positive,
                finite number.
        """
        try:
            found = cls(
                str(doc["name"]), float(doc["bandwidth"]), float(doc["flops"]),
                None if doc.get("flops_low") is None else float(doc["flops_low"]), source,
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError):
            raise DocumentError("not a device's roofs", where=PEAKS_FILE) from None
        roofs = (found.bandwidth, found.flops, found.flops_low or 1.0)
        if not all(math.isfinite(x) and x > 0 for x in roofs):
            raise DocumentError("a roof is not a positive number", where=PEAKS_FILE)
        return found

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the f32 roof turns from memory to compute."""
        return self.flops / self.bandwidth


_G, _T = 1e9, 1e12
_COLLECTIVE_KINDS = frozenset(op.removesuffix("-start") for op in COLLECTIVE_OPCODES)
# Halves of async pairs that are kernels of their own (a TPU's `copy-start`/`copy-done`):
# a start issues a transfer and a done waits for it, over a host or chip link.
_ASYNC_HALVES = ASYNC_DONE_OPCODES | {"copy-start", "send", "recv"}

# (substring of the device name, lower case; memory GB/s; f32 TFLOP/s; bf16 TFLOP/s).
# NVIDIA and Google data sheets; the first match wins, so variants come first.
DEVICE_PEAKS: tuple[tuple[str, float, float, float | None], ...] = (
    ("h100 pcie", 2000, 51.2, 756),
    ("h100 nvl", 3900, 60.0, 835),
    ("h100", 3350, 67.0, 989),  # SXM5 ("NVIDIA H100 80GB HBM3")
    ("h200", 4800, 67.0, 989),
    ("gh200", 4000, 67.0, 989),
    ("a100 80gb pcie", 1935, 19.5, 312),
    ("a100-pcie", 1555, 19.5, 312),
    ("a100-sxm4-80gb", 2039, 19.5, 312),
    ("a100", 1555, 19.5, 312),  # SXM4 40GB
    ("l40s", 864, 91.6, 362),
    ("l4", 300, 30.3, 121),
    ("a10g", 600, 31.2, 125),
    ("a10", 600, 31.2, 125),
    ("v100", 900, 15.7, 125),
    ("t4", 320, 8.1, 65),
    # Trillium (`TPU v6 Lite` in a profile, whose planes record the same roofs: 918
    # TFLOP/s, 1,638 GB/s); f32 at half the bf16 rate, as for the TPUs below
    ("tpu v6 lite", 1640, 459, 918),
    ("tpu v6e", 1640, 459, 918),
    ("tpu v5p", 2765, 229.5, 459),
    ("tpu v5 lite", 819, 98.5, 197),
    ("tpu v5e", 819, 98.5, 197),
    ("tpu v4", 1200, 137.5, 275),
)


def table_peaks(device: str | None) -> Peaks | None:
    """The table's peaks for a device name (`NVIDIA H100 80GB HBM3`), or None."""
    if not device:
        return None
    low = device.lower()
    for key, bw, f32, bf16 in DEVICE_PEAKS:
        if key in low:
            return Peaks(device, bw * _G, f32 * _T, bf16 * _T if bf16 else None, "table")
    return None


def device_peaks(
    device: str | None,
    platform: str | None,
    *,
    bandwidth: float | None = None,
    flops: float | None = None,
    probe: Callable[[], Peaks | None] | None = None,
) -> Peaks | None:
    """The roofs for a run's device.

    Args:
        device: The device name the run records.
        platform: `cpu`, `gpu`, `tpu`, ... (a CPU without table entry is probed).
        bandwidth: Override: peak memory bandwidth in bytes/s.
        flops: Override: peak FLOP/s.
        probe: How to measure this CPU (default `cpu_peaks`).

    Returns:
        The peaks, or None when nothing gives both figures.
    """
    if bandwidth is not None and flops is not None:
        return Peaks(device or "device", bandwidth, flops, None, "flags")
    found = table_peaks(device)
    if found is None and (platform or "").lower() == "cpu":
        found = (probe or cpu_peaks)()
    if bandwidth is None and flops is None:
        return found
    bw = bandwidth if bandwidth is not None else (found.bandwidth if found else None)
    fl = flops if flops is not None else (found.flops if found else None)
    if bw is None or fl is None:
        return None
    low = found.flops_low if found is not None and flops is None else None
    return Peaks(device or "device", bw, fl, low, "flags")


def cpu_peaks(clock: Callable[[], float] = time.perf_counter) -> Peaks | None:
    """This CPU's peaks: cached, else measured now (about a second) and cached.

    Returns None when numpy, which the probe runs on, is not installed.
    """
    path = user_cache_dir() / PEAKS_FILE
    key = machine_key()
    cached = _read_cache(path)
    known = _peaks_of(cached[key]) if key in cached else None
    if known is not None:
        return known
    measured = _probe(clock)
    if measured is None:
        return None
    cached[key] = measured.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cached, indent=1))
    except OSError:
        pass  # an unwritable cache only costs a probe next time
    return measured


def _peaks_of(doc: Any) -> Peaks | None:
    """A kept entry; None for one of another shape (the machine is probed again)."""
    try:
        return Peaks.from_json(doc)
    except DocumentError:
        return None


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _probe(clock: Callable[[], float]) -> Peaks | None:
    """Best of several runs (a peak is the best the machine can do; a shared machine only
    slows some runs): a 128 MiB copy split over all cores (read + write), and a 512^2 f32
    matmul, small enough to stay in cache and so bound by arithmetic alone."""
    try:
        import numpy as np
    except ImportError:
        return None
    cores = os.cpu_count() or 1
    src = np.ones(32 * 1024 * 1024, dtype=np.float32)
    dst = np.empty_like(src)
    parts = _split(src, dst, cores)
    with ThreadPoolExecutor(cores) as pool:  # numpy copies without holding the GIL

        def copy() -> None:
            list(pool.map(lambda p: np.copyto(p[0], p[1]), parts))

        best_copy = min(_timed(copy, clock) for _ in range(_REPEATS))
    n = 512
    a = np.ones((n, n), dtype=np.float32)
    b = np.ones((n, n), dtype=np.float32)
    best_mm = min(_timed(lambda: a @ b, clock) for _ in range(4 * _REPEATS))
    name = f"{host.processor() or host.machine()} ({cores} cores)"
    return Peaks(name, 2 * src.nbytes / best_copy, 2 * n**3 / best_mm, None, "probe")


_REPEATS = 8


def _split(src: Any, dst: Any, parts: int) -> list[tuple[Any, Any]]:
    """Contiguous (destination, source) halves, thirds, ... of two arrays."""
    step = -(-len(src) // parts)
    return [(dst[i : i + step], src[i : i + step]) for i in range(0, len(src), step)]


def _timed(fn: Callable[[], object], clock: Callable[[], float]) -> float:
    start = clock()
    fn()
    return max(clock() - start, 1e-9)


@dataclass(frozen=True, slots=True)
class KernelRoof:
    """One measured kernel against the roofline.

    Attributes:
        name: The kernel.
        kind: Its kind.
        time_us: Measured time of one run, µs.
        flops: FLOPs of one run.
        bytes: Bytes moved by one run.
        intensity: FLOPs per byte (None when it moves nothing).
        bandwidth: Achieved bytes/s.
        flops_per_s: Achieved FLOP/s.
        bound: `memory` or `compute`: which roof is lower at its intensity.
        efficiency: Achieved / attainable at its intensity (1.0 = on the roof).
        roof_us: The time one run would take on the roof.
        known: False for a library call whose FLOPs XLA does not know (bytes are its
            operands and result; FLOPs 0).
        execution_us: Its time per execution of the module (all its runs), µs.
        peak_flops: The FLOP roof it is held to (16-bit for narrow matrix work).

    Example:
        >>> ins = hloscope.inspect_run("tests/data/jax_mlp_profile")
        >>> peaks = hloscope.Peaks('cpu', bandwidth=2e10, flops=1e11)
        >>> roof = ins.roofline('0030.jit_mlp', peaks)[0]  # furthest below its roof first
        >>> roof.name, roof.bound
        ('add_reduce_fusion', 'memory')
    """

    name: str
    kind: str
    time_us: float
    flops: float
    bytes: float
    intensity: float | None
    bandwidth: float
    flops_per_s: float
    bound: str
    efficiency: float
    roof_us: float
    known: bool = True
    execution_us: float = 0.0
    peak_flops: float = 0.0


def roofline(cost: ModuleCost, times: Mapping[str, float], peaks: Peaks) -> list[KernelRoof]:
    """Each measured kernel against the roofs, furthest below its roof first.

    Collectives are left out: the interconnect bounds them, not memory or compute; so
    are the halves of async copies and transfers that run as kernels of their own (a
    TPU's `copy-start` issues a host transfer, its `copy-done` waits for it).

    Args:
        cost: The module's cost (`hloscope.analysis.cost.module_cost`).
        times: µs per execution of each kernel (`Inspection.kernel_times`).
        peaks: The device's roofs.

    A kernel whose matrix work reads 16-bit floats is held to the 16-bit FLOP roof
    (tensor cores) where the peaks have one; every other kernel to the f32 roof.
    """
    out = []
    for k in cost.kernels:
        if k.kind in _COLLECTIVE_KINDS or k.kind.removeprefix("unfused:") in _ASYNC_HALVES:
            continue  # bound by the interconnect, which the roofs do not describe
        top = peaks.flops_low if k.narrow and peaks.flops_low else peaks.flops
        per_execution = times.get(k.name)
        if per_execution is None or per_execution <= 0 or k.cost.bytes <= 0:
            continue
        t_us = per_execution / (k.runs or 1)
        seconds = t_us * 1e-6
        flops, moved = max(k.cost.flops, 0.0), k.cost.bytes
        intensity = flops / moved
        bound = "compute" if intensity >= top / peaks.bandwidth else "memory"
        achieved_bw, achieved_fl = moved / seconds, flops / seconds
        eff = achieved_fl / top if bound == "compute" else achieved_bw / peaks.bandwidth
        roof_us = max(moved / peaks.bandwidth, flops / top) * 1e6
        roof = KernelRoof(
            k.name, k.kind, t_us, flops, moved, intensity, achieved_bw, achieved_fl,
            bound, eff, roof_us, k.known, per_execution, top,
        )  # fmt: skip
        out.append(roof)
    out.sort(key=lambda r: (r.efficiency, -r.time_us, r.name))
    return out
