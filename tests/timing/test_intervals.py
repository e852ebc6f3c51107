"""Interval unions and clock units, shared by the XSpace and nsys readers."""

from __future__ import annotations

import random

from hloscope.timing.intervals import NS_PER_US, PS_PER_US, ns_to_us, ps_to_us, union_length


def _covered(intervals: list[tuple[int, int]]) -> int:
    """The reference: count each covered tick."""
    ticks: set[int] = set()
    for s, e in intervals:
        ticks.update(range(s, e))
    return len(ticks)


def test_the_union_counts_each_covered_tick_once() -> None:
    rng = random.Random(7)
    for _ in range(200):
        intervals = []
        for _ in range(rng.randrange(0, 12)):
            s = rng.randrange(0, 200)
            intervals.append((s, s + rng.randrange(0, 40)))
        assert union_length(intervals) == _covered(intervals)
    assert union_length([]) == 0
    assert union_length([(5, 3)]) == 0  # an end before its start is empty


def test_units_are_named_by_the_clock_they_take() -> None:
    assert ps_to_us(PS_PER_US) == ns_to_us(NS_PER_US) == 1.0
    assert ps_to_us(2_500_000) == 2.5 and ns_to_us(2_500) == 2.5
