"""Time on a trace's clock: the units profile readers count in, and interval unions.

XSpace profiles (`xplane`, `attribution`) count picoseconds, nsys-jax traces (`nsys`)
nanoseconds; every figure hloscope shows is microseconds. The conversions are named by
the unit they take, so that no reader divides by the other's factor, and the union of
intervals (how long at least one of several overlapping ops ran) is computed once.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["NS_PER_US", "PS_PER_US", "ns_to_us", "ps_to_us", "union_length"]

PS_PER_US = 1_000_000
"""Picoseconds per microsecond (XSpace's clock)."""
NS_PER_US = 1_000
"""Nanoseconds per microsecond (nsys's clock)."""


def ps_to_us(ps: float) -> float:
    """Picoseconds as microseconds."""
    return ps / PS_PER_US


def ns_to_us(ns: float) -> float:
    """Nanoseconds as microseconds."""
    return ns / NS_PER_US


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """How long at least one of the intervals covers: the length of their union.

    Args:
        intervals: `(start, end)` pairs on one clock, in any order; an interval whose end
            is before its start counts as empty.

    Returns:
        The covered length, in the intervals' unit.

    Example:
        >>> union_length([(0, 10), (5, 15), (20, 25)])
        20
    """
    total = 0
    start = end = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if start is not None and end is not None:
                total += end - start
            start, end = s, max(s, e)
        else:
            end = max(end, e)
    if start is not None and end is not None:
        total += end - start
    return total
