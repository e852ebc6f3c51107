"""Helper modules weighed by their measured time: nothing costly is folded away.

A module is a trivial helper by its name and size (`hloscope.runs.is_trivial`): JAX's
`jit_broadcast_in_dim`, `jit__multi_slice`, a `jit_gather` that reads one device's row
of a `pmap` result. Small is not cheap: such a gather holds an all-reduce across every
device, and can take longer than any kernel of the model. `weigh_helpers` keeps a
helper folded only while, when profiled, it takes under `COSTLY_SHARE` of the measured
time; `folded_time` says how much the folded ones hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hloscope.analysis.report import RunReport
from hloscope.timing.results import ModuleTiming

__all__ = ["COSTLY_SHARE", "folded_time", "weigh_helpers"]

COSTLY_SHARE = 0.01
"""A helper module taking this part of the measured time or more is shown, not folded."""


def weigh_helpers(
    report: RunReport, timings: Mapping[str, ModuleTiming], share: float = COSTLY_SHARE
) -> RunReport:
    """The report with every trivial helper that takes `share` of the measured time or
    more marked as not trivial (re-sorted among the main modules).

    Args:
        report: The run's report.
        timings: Measured timings by module key (`Inspection.module_timings`).
        share: The part of the summed module time (`ModuleTiming.total_us`, per device)
            from which a helper is shown.
    """
    total = sum(t.total_us for t in timings.values())
    if total <= 0:
        return report
    costly = {k for k, t in timings.items() if t.total_us / total >= share}
    if not any(m.trivial and m.key in costly for m in report.modules):
        return report
    modules = [replace(m, trivial=False) if m.key in costly else m for m in report.modules]
    modules.sort(key=lambda r: (r.trivial, -r.size, r.key))
    return replace(report, modules=tuple(modules))


def folded_time(
    report: RunReport, timings: Mapping[str, ModuleTiming]
) -> tuple[float, float] | None:
    """(µs the folded helpers took, their part of all measured time), or None when none
    of them was measured."""
    measured = [timings[m.key].total_us for m in report.trivial if m.key in timings]
    total = sum(t.total_us for t in timings.values())
    if not measured or total <= 0:
        return None
    return sum(measured), sum(measured) / total
