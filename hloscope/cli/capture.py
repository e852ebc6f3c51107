"""`hloscope dump`: run a script under XLA's dump flags and keep the run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hloscope.cli.app import (
    _command,
    _console,
    _invocation,
    _print,
    _print_records,
    _stdout_is_terminal,
    _width,
    app,
)

if TYPE_CHECKING:
    from hloscope.capture.run import DumpPlan, DumpResult
    from hloscope.runs import Run


@app.command(rich_help_panel="Capture")
@_command
def dump(
    ctx: typer.Context,
    script: Annotated[
        str | None,
        typer.Argument(
            help="The Python script to run (with -m: the first script argument).",
            metavar="SCRIPT",
            show_default=False,
        ),
    ] = None,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Arguments for the script; put them after `--`.",
            metavar="ARGS",
            show_default=False,
        ),
    ] = None,
    run_module: Annotated[
        str | None,
        typer.Option(
            "-m", help="Run a module as `python -m` does.", metavar="MODULE", show_default=False
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="The interpreter to run it with (default: the one running hloscope).",
            metavar="PATH",
        ),
    ] = None,
    module_re: Annotated[
        str | None,
        typer.Option(
            "--module",
            help="Dump only modules whose name matches (--xla_dump_hlo_module_re).",
            metavar="REGEX",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="The run folder (default: hloscope-runs/<script>-<timestamp>/).",
            metavar="DIR",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the run in a non-empty --out folder.")
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list JAX's trivial helper modules.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show every line the script writes to stderr, TensorFlow/XLA INFO "
            "logging included (stderr.log keeps them all either way).",
        ),
    ] = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also run the framework's profiler around the script (TensorFlow "
            "tf.profiler, JAX jax.profiler, torch_xla.debug.profiler) and keep the profile "
            "in the run: per-kernel times in report, graph and the HTML page.",
        ),
    ] = False,
    framework: Annotated[
        str | None,
        typer.Option(
            "--framework",
            help="tf, jax or torch: with --profile, profile only this framework [default: the "
            "one the script imports and compiles with, decided while it runs].",
            show_default=False,
        ),
    ] = None,
    skip_first: Annotated[
        int,
        typer.Option(
            "--skip-first",
            help="With --profile: executions of each module left out as warm-up "
            "(the first one compiles).",
            min=0,
        ),
    ] = 1,
    python_trace: Annotated[
        bool,
        typer.Option(
            "--python-trace",
            help="With --profile: also record every Python call (slow, and the profile "
            "grows large; kernel times do not need it).",
        ),
    ] = False,
    profile_steps: Annotated[
        int | None,
        typer.Option(
            "--profile-steps",
            help="With --profile: keep at most this many executions of each module after "
            "the warm-up ones [default: all].",
            min=1,
            show_default=False,
        ),
    ] = None,
    passes: Annotated[
        bool,
        typer.Option(
            "--passes",
            help="Also dump the module after every pass that changed it "
            "(--xla_dump_hlo_pass_re=.*) and log XLA's time for every pass: `hloscope "
            "passes RUN` tells the story. Big models write a lot (~125 MB for 96 layers).",
        ),
    ] = False,
    pass_re: Annotated[
        str | None,
        typer.Option(
            "--pass-re",
            help="With or without --passes: dump only around passes whose name matches "
            "(--xla_dump_hlo_pass_re; matching passes are dumped changed or not).",
            metavar="REGEX",
            show_default=False,
        ),
    ] = None,
    compare_unfused: Annotated[
        bool,
        typer.Option(
            "--compare-unfused",
            help="Run the script a second time with XLA's fusion passes disabled "
            "(--xla_disable_hlo_passes) into <run>-unfused/, and print both side by side: "
            "kernels, launches, bytes moved, peak planned memory (and kernel time with "
            "--profile).",
        ),
    ] = False,
) -> None:
    """Run a TensorFlow or JAX script under XLA's dump flags and keep the run.

    The script runs in a child Python with XLA_FLAGS set to dump HLO text before and
    after optimization (your own XLA_FLAGS are kept); its output streams live and is
    saved. The run folder holds the raw dump, the logs and run.json, and every other
    command reads it later. Exits with the script's status when it fails.

    Example: hloscope dump samples/dense_relu.py -- --batch 32
             hloscope dump --profile samples/jax_mlp.py
             hloscope dump --passes samples/dense_relu.py
    """
    from hloscope.capture.run import DumpRequest
    from hloscope.errors import UsageError

    script_args = list(args or [])
    if run_module is not None and script is not None:
        script_args.insert(0, script)  # `-m pkg -- a b`: the first positional is an arg
        script = None
    if run_module is None and script is None:
        raise UsageError("give a script to run: hloscope dump SCRIPT.py [-- ARGS...]")
    pass_regex = pass_re if pass_re is not None else (".*" if passes else None)
    request = DumpRequest(
        script=script,
        args=tuple(script_args),
        module=run_module,
        python=python,
        module_re=module_re,
        out=out,
        force=force,
        profile=profile,
        framework=framework,
        skip_first=skip_first,
        profile_steps=profile_steps,
        python_trace=python_trace,
        passes=pass_regex,
    )
    plan = request.plan(command=_invocation(ctx))
    raise typer.Exit(_dump(plan, show_all=show_all, verbose=verbose, unfused=compare_unfused))


def _dump(plan: DumpPlan, *, show_all: bool, verbose: bool, unfused: bool) -> int:
    """Run the plan and show what it made; the exit code `dump` exits with."""
    from hloscope.errors import UsageError
    from hloscope.manifest import RunStatus
    from hloscope.render.progress import outcome

    err = _console(stderr=True)
    if plan.flag_conflicts:
        err.print(
            "hloscope: warning: overriding XLA_FLAGS "
            + "; ".join(plan.flag_conflicts)
            + " (the rest of XLA_FLAGS is kept)",
            style="yellow",
            markup=False,
        )
    for note in plan.env_notes:
        err.print(f"hloscope: warning: {note}", style="yellow", markup=False, soft_wrap=True)
    result, hidden = _run(plan, err, verbose=verbose)
    for line in _capture_notes(result):
        err.print(f"hloscope: {line}", style="yellow", markup=False, soft_wrap=True)
    if result.status is RunStatus.MODULE_NOT_FOUND:
        raise UsageError(
            f"-m {plan.target}: no module named {plan.target!r} (run hloscope from the folder "
            "that holds it, or install it in that Python)"
        )
    if result.run.modules:
        _print_modules(result.run, show_all=show_all)
    err.print(outcome(result), soft_wrap=True)
    if hidden:
        err.print(
            f"({hidden} lines of TensorFlow/XLA INFO logging hidden: in stderr.log; "
            "--verbose shows them)",
            style="dim",
            soft_wrap=True,
            markup=False,
        )
    if plan.passes is not None:
        _pass_dump_note(result, err)
    if unfused and result.command_exit_code == 0:
        _dump_unfused(plan, result.run.path, err)
    return result.command_exit_code


def _run(plan: DumpPlan, err: Any, *, verbose: bool = False) -> tuple[DumpResult, int]:
    """Run a plan under the live progress display: the result, and how many lines of
    framework logging the display hid."""
    from hloscope.capture.run import run_dump
    from hloscope.render.progress import DumpProgress

    with DumpProgress(plan, console=err, verbose=verbose) as progress:
        result = run_dump(
            plan, out=progress.out, err=progress.err, on_interrupt=progress.interrupting
        )
    return result, progress.hidden


def _print_modules(run: Run, *, show_all: bool) -> None:
    """The dumped modules, one row each, then recompiled functions and the cold start,
    and a PyTorch/XLA run's graphs."""
    from hloscope.analysis.compilations import run_compilations
    from hloscope.analysis.report import analyze_run
    from hloscope.render.compilations import compilations_summary
    from hloscope.render.text import modules_table

    full = not _stdout_is_terminal()  # piped: whole names, one line a module
    analysed = analyze_run(run)
    _print_records(modules_table(analysed, show_all=show_all, full_names=full, width=_width()))
    summary = compilations_summary(run_compilations(run, analysed.modules), show_all=show_all)
    if summary is not None:  # recompiled functions and the JIT cold start
        _print_records(summary)
    from hloscope.analysis.torch_graphs import torch_xla_run
    from hloscope.render.torch_xla import torch_xla_summary

    torch_xla = torch_xla_run(run)
    if torch_xla is not None:  # each graph's executions, ops that ran on the CPU
        _print_records(torch_xla_summary(torch_xla))


def _dump_unfused(fused: DumpPlan, folder: Path, err: Any) -> None:
    """The second run of `--compare-unfused`, then both runs side by side."""
    import os

    from hloscope.capture.compare import unfused_environ
    from hloscope.inspection import inspect_run
    from hloscope.render.progress import outcome
    from hloscope.render.unfused import unfused_table

    request = fused.request.replaced(out=folder.with_name(folder.name + "-unfused"), force=True)
    plan = request.plan(command=fused.command, environ=unfused_environ(os.environ))
    result, _ = _run(plan, err)
    err.print(outcome(result), soft_wrap=True)
    _print(unfused_table(inspect_run(folder), inspect_run(result.run)))


def _pass_dump_note(result: DumpResult, err: Any) -> None:
    """How much `--passes` wrote, with a warning when it is a lot."""
    from hloscope.capture.passes import pass_dump_size
    from hloscope.render.format import fmt_bytes

    size = pass_dump_size(result.plan.dump_dir)
    if not size.files:
        err.print(
            "hloscope: --passes: XLA wrote no per-pass dumps (did the script compile?)",
            style="yellow",
            markup=False,
        )
        return
    line = (
        f"per-pass dumps: {size.files} files, {fmt_bytes(size.bytes)} in "
        f"{result.plan.dump_dir}; `hloscope passes {result.run.path}` tells the story"
    )
    err.print(f"hloscope: {line}", markup=False, soft_wrap=True)
    if size.big:
        err.print(
            "hloscope: warning: that is a lot of disk: dump fewer passes with --pass-re "
            "REGEX or fewer modules with --module REGEX",
            style="yellow",
            markup=False,
            soft_wrap=True,
        )


def _capture_notes(result: DumpResult) -> list[str]:
    """What `--force` removed, and a profile that could not be recorded, one line each."""
    from hloscope.manifest import RunStatus

    notes = []
    if result.removed:
        notes.append(  # the folder is named by the run's last line
            "--force: removed the earlier run's files (other files there were kept):\n  "
            + ", ".join(result.removed)
        )
    profile = result.run.manifest.profile
    if profile is not None and not profile.profiled and result.status is RunStatus.OK:
        wanted = " or ".join(f"{f}" for f in profile.frameworks) or "JAX, TensorFlow or torch_xla"
        notes.append(
            f"warning: --profile recorded nothing: the script never compiled with {wanted} "
            "(JAX's profiler starts at its first compile, TensorFlow's when it is imported)"
        )
    return notes
