"""Executions on several devices -> figures of one device: the per-device step of timing.

A module compiled for several devices (SPMD partitions, replicas, `pmap`) runs once on
every device per step, and a profile records each device's run: on its own device plane
(GPU, TPU), as the `device_ordinal` of the host's thunks (XLA's CPU devices), or on the
host thread that drives a GPU (nsys). The readers (`attribution`, `nsys`) gather every
device's steady executions; a `DeviceTally` sums them per device and gives back what
one device did -- the mean over the devices that ran the module -- with each device's
own totals and the spread between the slowest device and the median one.
"""

from __future__ import annotations

from collections import defaultdict

from hloscope.timing.results import DeviceTiming, device_spread

__all__ = ["DeviceTally"]


class DeviceTally:
    """Per-device sums of one module's steady executions, in the source's time unit.

    Args:
        per_us: Units per microsecond (1e6 for picoseconds, 1e3 for nanoseconds).
    """

    def __init__(self, per_us: float) -> None:
        self.per_us = per_us
        self._executions: dict[str, int] = defaultdict(int)
        self._wall: dict[str, int] = defaultdict(int)
        self._kernel: dict[str, int] = defaultdict(int)
        self._by_kernel: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def execution(self, device: str, wall: int, kernel: int) -> None:
        """Count one steady execution on a device: its wall time and kernel time."""
        self._executions[device] += 1
        self._wall[device] += wall
        self._kernel[device] += kernel

    def call(self, kernel: str, device: str, duration: int) -> None:
        """Count one call of a kernel on a device."""
        self._by_kernel[kernel][device] += duration

    @property
    def count(self) -> int:
        """Devices that ran the module's steady executions (at least 1, so that it can
        divide)."""
        return max(1, len(self._executions))

    def per_device(self) -> tuple[DeviceTiming, ...]:
        """Each device's executions and times, by device name; () for one device."""
        if len(self._executions) < 2:
            return ()
        return tuple(
            DeviceTiming(
                device=d,
                executions=self._executions[d],
                total_us=self._wall[d] / self.per_us,
                kernel_us=self._kernel[d] / self.per_us,
            )
            for d in sorted(self._executions, key=_device_order)
        )

    def kernel_fields(self, kernel: str) -> dict[str, int | float | str | None]:
        """`KernelTiming`'s device fields for a kernel: the devices it ran on, the
        slowest one's time over the median device's, and which device that is. A device
        that ran the module but not this kernel counts as zero time."""
        on = self._by_kernel.get(kernel, {})
        times = {d: on.get(d, 0) / self.per_us for d in self._executions}
        spread, slowest = device_spread(times)
        return {"device_count": max(1, len(on)), "spread": spread, "slowest_device": slowest}

    def mean(self, total: float) -> float:
        """A sum over every device as the mean per device."""
        return total / self.count

    def mean_count(self, total: int) -> int:
        """A count over every device as the mean per device, rounded (executions)."""
        return round(total / self.count)


def _device_order(name: str) -> tuple[str, int, str]:
    """`/device:GPU:10` after `/device:GPU:9`: the trailing number compared as one."""
    head, _, tail = name.rpartition(":")
    if tail.isdigit():
        return head, int(tail), name
    digits = name.rsplit(" ", 1)[-1]
    if digits.isdigit():
        return name[: -len(digits)], int(digits), name
    return name, -1, name
