"""Helper modules are folded only while they are cheap: the four-device profile in
tests/data/jax_four_devices_profile (see its HOW.md) holds a `jit_gather` (one device's
row of a `pmap` result) with an all-reduce across the devices, and a few helpers that
took next to nothing. Shares are computed from the raw profile (`_raw`)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from rich.console import Console

from hloscope.inspection import inspect_run
from hloscope.render.text import modules_table
from hloscope.runs import is_trivial, load_run
from hloscope.timing.helpers import COSTLY_SHARE, folded_time
from hloscope.timing.xplane import find_profile
from tests.timing.test_devices import FOLDER, _raw


def test_a_costly_helper_is_shown_and_the_cheap_ones_are_folded_with_their_time() -> None:
    raw = _raw(find_profile(FOLDER), programs=True)
    per_device = {
        name: statistics.mean(d["wall_ps"] for d in devices.values()) / 1e6
        for name, devices in raw.items()
    }
    total = sum(per_device.values())
    helpers = {
        f"{m.name}({int(m.module_id or 0)})" for m in load_run(FOLDER).modules if is_trivial(m)
    }
    assert {"jit_gather(38)", "jit__multi_slice(32)"} <= helpers
    costly = {n for n in helpers if per_device[n] / total >= COSTLY_SHARE}
    cheap = helpers - costly
    assert "jit_gather(38)" in costly and cheap  # the data holds both kinds

    def key(m: Any) -> str:
        return f"{m.name}({int(m.module_id or 0)})"

    inspection = inspect_run(FOLDER)
    assert {key(m) for m in inspection.main} >= costly
    assert {key(m) for m in inspection.report.trivial} == cheap
    held = folded_time(inspection.report, inspection.module_timings)
    assert held is not None
    assert held[0] == pytest.approx(sum(per_device[n] for n in cheap), rel=1e-9)
    assert held[1] == pytest.approx(held[0] / total, rel=1e-9)

    console = Console(width=400, record=True)
    console.print(
        modules_table(inspection.report, timings=inspection.module_timings, full_names=True)
    )
    text = console.export_text()
    assert "jit_gather" in text
    assert f"{len(cheap)} trivial helper modules" in text
    assert f"({100 * held[1]:.1f}% of the time)" in text


def test_without_a_profile_helpers_fold_by_size_alone() -> None:
    inspection = inspect_run(FOLDER, timings=False)
    assert "jit_gather" in {m.name for m in inspection.report.trivial}
