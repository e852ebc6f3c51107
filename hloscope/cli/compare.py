"""`hloscope diff` and `hloscope check`: runs against each other and against budgets (CI)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from hloscope.cli.app import (
    JsonOption,
    ModuleOption,
    NoCacheOption,
    RunArgument,
    _command,
    _echo,
    _print,
    _print_json,
    app,
)


def _one_line(kind: str, violations: Any) -> str:
    """The line a CI log shows: the first violation, and how many more there are."""
    first, rest = violations[0], violations[1:]
    more = ""
    if rest:
        listed = ", ".join(f"{v.metric} in {v.module}" for v in rest[:3])
        more = f" (and {len(rest)} more: {listed}{', …' if len(rest) > 3 else ''})"
    return f"hloscope: {kind}: {first.message}{more}"


@app.command(rich_help_panel="Compare (CI)")
@_command
def diff(
    run_a: Annotated[
        Path,
        typer.Argument(
            help="The baseline run (a run folder, a bare XLA dump folder, or one HLO file).",
            metavar="RUN_A",
            show_default=False,
        ),
    ],
    run_b: Annotated[
        Path,
        typer.Argument(help="The run to compare with it.", metavar="RUN_B", show_default=False),
    ],
    module: ModuleOption = None,
    json: JsonOption = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write the diff as a self-contained HTML page.",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when B has more kernels or launches, fewer ops per kernel, or "
            "more kernel time (both runs profiled) than A, beyond --tolerance.",
        ),
    ] = False,
    tolerance: Annotated[
        str,
        typer.Option(
            "--tolerance", help="Allowed change before it is a regression, e.g. 5%.", metavar="PCT"
        ),
    ] = "0%",
    show_all: Annotated[
        bool, typer.Option("--all", help="Also show JAX's trivial helper modules.")
    ] = False,
    no_cache: NoCacheOption = False,
) -> None:
    """What changed between two runs of the same program, module by module.

    Per module: instructions, kernels by kind, launches, HLO ops per kernel and kernel
    time, A vs B; which kernels split, merged, appeared, disappeared or changed kind
    (matched by the source ops they hold, not by XLA's names); and which source ops
    stopped or started fusing.

    Modules pair by name (numeric suffixes and TensorFlow's hashes ignored), else by
    structure. Kernel changes are ordered by time where both runs were profiled, else by
    bytes moved. Exit codes: 0 ok, 1 regression (with --fail-on-regression), 2 usage.

    Example: hloscope diff runs/before runs/after --fail-on-regression --tolerance 5%
    """
    from hloscope.analysis.diff import diff_runs, parse_tolerance, regressions, select_diffs
    from hloscope.cli.teardown import keep
    from hloscope.errors import UsageError
    from hloscope.hlo.parser import paused_gc
    from hloscope.inspection import inspect_run

    tol = parse_tolerance(tolerance)
    # Millions of objects each on big dumps: not walked by the collector while the other
    # run is read, nor freed one by one at exit. Each run, and the diff (as many again),
    # is kept before the collector runs: once something is frozen, what a paused step
    # made stays young, and the first collection after it walked it all (issue 27).
    with paused_gc():
        a = inspect_run(run_a, bench=False, cache=not no_cache)
        keep(a)
        # a run diffed with itself (a check that a CI job's diff is wired up) is read once
        b = a if _same(run_a, run_b) else inspect_run(run_b, bench=False, cache=not no_cache)
        keep(b)
        result = diff_runs(
            a.report,
            b.report,
            timings_a=a.all_kernel_times() or None,
            timings_b=b.all_kernel_times() or None,
        )
        keep(result)
    selected = select_diffs(result, module) if module else None
    judged = selected if selected is not None else (result.modules if show_all else result.main)
    if fail_on_regression and not judged:
        raise UsageError(
            f"no {'' if show_all else 'non-trivial '}module of {run_a} has a counterpart in "
            f"{run_b}: nothing to judge (check that both runs are of the same program)"
        )
    found_regressions = regressions(judged, tol) if fail_on_regression else None
    if json or html is not None:
        from hloscope.render.json import diff_doc

        shown = selected if selected is not None else (None if show_all else result.main)
        doc = diff_doc(result, modules=shown, regressions=found_regressions, tolerance=tol)
        if html is not None:
            from hloscope.render.diff_html import diff_page

            try:
                html.write_text(diff_page(doc), encoding="utf-8")
            except OSError as e:
                raise UsageError(f"--html {html}: cannot write ({e.strerror or e})") from None
            _echo(f"wrote {html}", err=True)
        if json:
            _print_json(doc)
    if not json:
        from hloscope.render.diff_text import diff_view

        _print(diff_view(result, show_all=show_all, modules=selected))
    if found_regressions:
        _echo(_one_line("regression", found_regressions), err=True)
        raise typer.Exit(1)


@app.command(rich_help_panel="Compare (CI)")
@_command
def check(
    run: RunArgument,
    module: ModuleOption = None,
    max_kernels: Annotated[
        int | None,
        typer.Option("--max-kernels", help="Most kernels a module may have.", min=0, metavar="N"),
    ] = None,
    max_launches: Annotated[
        int | None,
        typer.Option(
            "--max-launches", help="Most kernel launches per execution.", min=0, metavar="N"
        ),
    ] = None,
    min_ops_per_kernel: Annotated[
        float | None,
        typer.Option(
            "--min-ops-per-kernel",
            help="Fewest HLO ops (before optimization) per kernel (after).",
            min=0.0,
            metavar="X",
        ),
    ] = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Hold a run to a fusion budget, for CI.

    Exit 1 with one line naming the module, the metric, its value and the budget when a
    non-trivial module (or each --module) has more kernels or launches per execution,
    or fewer HLO ops per kernel, than allowed.

    A run whose script failed (or compiled nothing) fails the check: exit 1 with its
    error. Exit codes: 0 within budget, 1 budget exceeded or run failed, 2 usage error.

    Example: hloscope check runs/latest --max-kernels 12 --min-ops-per-kernel 4
    """
    from hloscope.analysis.budget import Budget, check_run, select_checked
    from hloscope.cli.teardown import keep
    from hloscope.errors import UsageError
    from hloscope.inspection import inspect_run

    budget = Budget(max_kernels, max_launches, min_ops_per_kernel)
    if budget.empty:
        raise UsageError(
            "give at least one budget: --max-kernels N, --max-launches N or --min-ops-per-kernel X"
        )
    from hloscope.render.compilations import run_outcome
    from hloscope.runs import load_run

    loaded = load_run(run)
    failure = run_outcome(loaded.manifest)
    if failure is not None:  # a run that failed fails the check, whatever it dumped
        _echo(f"hloscope: {loaded.manifest.script or run}: {failure}", err=True)
        raise typer.Exit(1)
    inspection = inspect_run(
        loaded, module or (), timings=False, bench=False, provenance=False, cache=not no_cache
    )
    keep(inspection)  # millions of objects on a big dump: not freed one by one at exit
    checked = select_checked(inspection.report, selected=bool(module))
    violations = check_run(checked, budget)
    if violations:
        _echo(_one_line("budget exceeded", violations), err=True)
        raise typer.Exit(1)
    from hloscope.render.diff_text import check_line

    for m in checked:
        _print(check_line(m, budget))


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name the same file or folder."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is missing: reading it says so
        return False
