"""Fusion budgets for CI: hold one run's modules to limits (`hloscope check`).

Reads per-module reports from `analysis.report` and returns `Violation`s, the record
both CI guards share (`analysis.diff.regressions` makes them too); it compares nothing
between runs. Nothing here prints or reads files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.errors import UsageError

__all__ = [
    "KERNELS",
    "LAUNCHES",
    "OPS_PER_KERNEL",
    "Budget",
    "Violation",
    "check_run",
    "select_checked",
]

# The metric names a budget limits, as `Violation.metric` (and `Metric.name` in a diff).
KERNELS = "kernels"
LAUNCHES = "launches"
OPS_PER_KERNEL = "ops_per_kernel"


@dataclass(frozen=True)
class Budget:
    """Limits `check_run` holds each module to; None leaves a limit unchecked.

    Attributes:
        max_kernels: Most kernels a module may have.
        max_launches: Most kernel launches per execution.
        min_ops_per_kernel: Fewest ops before optimization per kernel after.

    Example:
        >>> budget = hloscope.Budget(max_kernels=12, min_ops_per_kernel=4)
        >>> budget.empty, hloscope.Budget().empty
        (False, True)
    """

    max_kernels: int | None = None
    max_launches: int | None = None
    min_ops_per_kernel: float | None = None

    @property
    def empty(self) -> bool:
        """No limit is set."""
        return (self.max_kernels, self.max_launches, self.min_ops_per_kernel) == (None,) * 3


# A metric in the words every view uses (`hloscope --help`, README "Words").
_WORDS = {OPS_PER_KERNEL: "HLO ops per kernel", "launches": "launches per execution"}


@dataclass(frozen=True)
class Violation:
    """A budget exceeded (`check_run`) or a regression from A to B (`regressions`).

    Attributes:
        module: The module key (`0030.jit_mlp`, or `A-key -> B-key`).
        metric: `kernels`, `launches`, `ops_per_kernel` or `time_us`.
        value: The value that failed (B's value for a regression).
        limit: The budget, or A's value for a regression.
        tolerance: For a regression, the tolerance it exceeded (fraction); None for a
            budget.

    Example:
        >>> report = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> v = hloscope.check_run(report.main, hloscope.Budget(max_kernels=5))[0]
        >>> v.metric, v.value, v.limit
        ('kernels', 11, 5)
    """

    module: str
    metric: str
    value: float
    limit: float
    tolerance: float | None = None

    @property
    def message(self) -> str:
        """One line: module, metric, the values and the budget or tolerance."""
        what = _WORDS.get(self.metric, self.metric.replace("_", " "))
        value, limit = _num(self.value), _num(self.limit)
        if self.tolerance is None:
            sign = ">" if self.metric != OPS_PER_KERNEL else "<"
            return f"{self.module}: {what} {value} {sign} budget {limit}"
        change = ""
        if self.limit:
            change = f"{(self.value - self.limit) / abs(self.limit):+.1%}, "
        return (
            f"{self.module}: {what} {limit} (A) -> {value} (B) "
            f"({change}tolerance {self.tolerance:.0%})"
        )


def select_checked(report: RunReport, *, selected: bool = False) -> tuple[ModuleReport, ...]:
    """The modules `hloscope check` holds to a budget.

    Args:
        report: The analysed run; when modules were picked by pattern
            (`analyze_run(run, patterns)`), it holds only those.
        selected: Whether `report` holds modules picked by pattern: then all of them are
            checked, else only the non-trivial ones.

    Returns:
        The modules with an after-optimization dump, in report order.

    Raises:
        UsageError: None is left to check.
    """
    checked = tuple(m for m in (report.modules if selected else report.main) if m.after is not None)
    if not checked:
        raise UsageError(
            f"{report.run.path}: no {'selected' if selected else 'non-trivial'} module has an "
            "after-optimization dump to check; pass --module"
        )
    return checked


def check_run(modules: Iterable[ModuleReport], budget: Budget) -> tuple[Violation, ...]:
    """Hold modules to a budget.

    Args:
        modules: The modules to check (see `select_checked`).
        budget: The limits.

    Returns:
        Every limit a module exceeds, in module order; empty when all are within budget.
        A module without an after-optimization dump has no kernels to check; one
        without a before dump has no ops per kernel.

    Example:
        >>> report = hloscope.inspect_run("tests/data/jax_mlp").report
        >>> budget = hloscope.Budget(max_kernels=5)
        >>> [(v.module, v.metric) for v in hloscope.check_run(report.main, budget)]
        [('0030.jit_mlp', 'kernels')]
    """
    out = []
    for m in modules:
        a = m.after
        if a is None:
            continue
        if budget.max_kernels is not None and a.kernel_count > budget.max_kernels:
            out.append(Violation(m.key, KERNELS, a.kernel_count, budget.max_kernels))
        if budget.max_launches is not None and a.launches > budget.max_launches:
            out.append(Violation(m.key, LAUNCHES, a.launches, budget.max_launches))
        opk = m.ops_per_kernel
        if (
            budget.min_ops_per_kernel is not None
            and opk is not None
            and opk < budget.min_ops_per_kernel
        ):
            out.append(Violation(m.key, OPS_PER_KERNEL, opk, budget.min_ops_per_kernel))
    return tuple(out)


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
