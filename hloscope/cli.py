"""The `hloscope` command: a thin typer layer over the library.

Each command parses its options, calls one library function, and hands the result to a
renderer. Library errors (`HloscopeError`) become one line on stderr and an exit code;
nothing else is caught. Heavy modules are imported inside the commands that need them,
so `hloscope --help` starts fast and never imports TensorFlow or JAX.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from hloscope.errors import HloscopeError

app = typer.Typer(
    name="hloscope",
    help=(
        "See what the XLA compiler fused. Run a TensorFlow or JAX script under XLA's dump "
        "flags, then count kernels before vs after optimization, find which source ops "
        "fused into which kernel, draw the fusions, and time them."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"hloscope: error: {message}", err=True)
    return typer.Exit(code)


def _command(fn: F) -> F:
    """Map library errors to one line on stderr and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HloscopeError as e:
            raise _fail(str(e), e.exit_code) from None
        except BrokenPipeError:  # `hloscope ... | head`
            sys.stderr.close()
            raise typer.Exit(0) from None

    return wrapper  # type: ignore[return-value]


def _print(renderable: Any) -> None:
    from rich.console import Console

    Console(highlight=False).print(renderable)


def _print_json(doc: Any) -> None:
    from hloscope.render.json import dumps

    sys.stdout.write(dumps(doc) + "\n")


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (stable schema, see README).")]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Fail on anything the tolerant parser would only count."),
]


@app.command(rich_help_panel="Capture")
@_command
def dump(
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
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also run the framework's profiler around the script (TensorFlow "
            "tf.profiler, JAX jax.profiler) and keep the profile in the run: per-kernel "
            "times in report, graph and the HTML page.",
        ),
    ] = False,
    framework: Annotated[
        str | None,
        typer.Option(
            "--framework",
            help="tf or jax, for --profile [default: from the script's imports].",
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
) -> None:
    """Run a TensorFlow or JAX script under XLA's dump flags and keep the run.

    The script runs in a child Python with XLA_FLAGS set to dump HLO text before and
    after optimization (your own XLA_FLAGS are kept); its output streams live and is
    saved. The run folder holds the raw dump, the logs and run.json, and every other
    command reads it later. Exits with the script's status when it fails.

    Example: hloscope dump samples/dense_relu.py -- --batch 32
             hloscope dump --profile samples/jax_mlp.py
    """
    from rich.console import Console

    from hloscope.analysis.report import analyze_run
    from hloscope.capture.run import plan_dump, run_dump
    from hloscope.errors import UsageError
    from hloscope.render.progress import DumpProgress, outcome
    from hloscope.render.text import modules_table

    script_args = list(args or [])
    if run_module is not None and script is not None:
        script_args.insert(0, script)  # `-m pkg -- a b`: the first positional is an arg
        script = None
    if run_module is None and script is None:
        raise UsageError("give a script to run: hloscope dump SCRIPT.py [-- ARGS...]")
    plan = plan_dump(
        script,
        script_args,
        module=run_module,
        python=python,
        module_re=module_re,
        out=out,
        force=force,
        command=[
            "hloscope",
            "dump",
            *(["-m", run_module] if run_module else []),
            *(["--python", python] if python else []),
            *(["--module", module_re] if module_re else []),
            *(["-o", str(out)] if out else []),
            *(["--force"] if force else []),
            *(["--profile"] if profile else []),
            *(["--framework", framework] if framework else []),
            *(["--skip-first", str(skip_first)] if profile and skip_first != 1 else []),
            *(["--profile-steps", str(profile_steps)] if profile_steps else []),
            *([script] if script else []),
            *(["--", *script_args] if script_args else []),
        ],
        profile=profile,
        framework=framework,
        skip_first=skip_first,
        profile_steps=profile_steps,
    )
    err = Console(stderr=True, highlight=False)
    if plan.flag_conflicts:
        err.print(
            "hloscope: warning: overriding XLA_FLAGS "
            + "; ".join(plan.flag_conflicts)
            + " (the rest of XLA_FLAGS is kept)",
            style="yellow",
            markup=False,
        )
    with DumpProgress(plan, console=err) as progress:
        result = run_dump(
            plan, out=progress.out, err=progress.err, on_interrupt=progress.interrupting
        )
    if result.status == "module-not-found":
        raise UsageError(
            f"-m {plan.target}: no module named {plan.target!r} (run hloscope from the folder "
            "that holds it, or install it in that Python)"
        )
    if result.run.modules:
        _print(modules_table(analyze_run(result.run), show_all=show_all))
    err.print(outcome(result), soft_wrap=True)
    raise typer.Exit(result.command_exit_code)


RunArgument = Annotated[
    Path,
    typer.Argument(
        help="A run folder (from `hloscope dump`), a bare XLA dump folder, or one HLO file.",
        show_default=False,
    ),
]
ModuleOption = Annotated[
    list[str] | None,
    typer.Option(
        "--module",
        "-M",
        help="Only this module (key, name, id or unique part of the key); repeatable.",
        show_default=False,
    ),
]


@app.command(rich_help_panel="Inspect")
@_command
def report(
    run: RunArgument,
    module: ModuleOption = None,
    json: JsonOption = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list JAX's trivial helper modules.")
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write a self-contained HTML report (diagrams, tables, timings) to this file.",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
) -> None:
    """What XLA fused, per module: instructions before → after, kernels by kind,
    launches per execution, ops per kernel, the biggest unfused ops, and the source lines
    that produce the most kernels.

    Reads a run again without re-running the model. `--json` prints the stable schema
    documented in README.md (for CI scripts). `--html report.html` writes one file that
    opens from disk in any browser (no server, no network): the kernel and op diagrams
    side by side, searchable kernel and op tables, and kernel times when the run was
    profiled.
    """
    from hloscope.inspection import inspect_run

    inspection = inspect_run(run, module or (), sources=html is not None)
    if inspection.timing_error:  # an unreadable profile must not hide the fusion report
        typer.echo(f"hloscope: warning: no timings: {inspection.timing_error}", err=True)
    if html is not None:
        from hloscope.render.format import fmt_bytes
        from hloscope.render.html import write_html

        written = write_html(inspection, html)
        size = fmt_bytes(written.stat().st_size)
        typer.echo(f"wrote {written} ({size}, {len(inspection.modules)} modules)", err=True)
        if not json:
            return
    if json:
        from hloscope.render.json import report_doc

        _print_json(report_doc(inspection))
        return
    from hloscope.render.text import report_view

    _print(report_view(inspection, show_all=show_all))


@app.command(rich_help_panel="Inspect")
@_command
def ops(
    run: RunArgument,
    module: ModuleOption = None,
    op: Annotated[
        str | None,
        typer.Option(
            "--op",
            help="Only source ops whose name, TF op type or source location contains this.",
            show_default=False,
        ),
    ] = None,
    unfused: Annotated[
        bool,
        typer.Option(
            "--unfused", help="Only ops that run as a kernel of their own, biggest first."
        ),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Where did each of my ops go? One line per source op: the kernel it fused into and
    with which other ops, or that it runs alone (and the evidence why), or that
    optimization removed it.

    Example: `hloscope ops RUN --op Relu` answers "did my Relu fuse with the MatMul?";
    `hloscope ops RUN --unfused` lists the ops that did not fuse, by bytes moved.
    """
    from hloscope.inspection import inspect_run

    inspection = inspect_run(run, module or (), timings=False, bench=False)
    shown = [m for m in (inspection.modules if module else inspection.main) if m.provenance]
    selected = [(m, m.placements(op, unfused=unfused)) for m in shown]
    if json:
        from hloscope.render.json import placement_doc

        _print_json(
            [
                {"module": m.key, "name": m.name, "ops": [placement_doc(p) for p in ps]}
                for m, ps in selected
            ]
        )
        return
    from rich.text import Text

    from hloscope.render.format import short_name
    from hloscope.render.text import module_heading, placement_line

    if not shown:
        raise _fail(f"{run}: no module has an after-optimization dump to trace ops in", 1)
    for m, placements in selected:
        assert m.after is not None
        kinds = {k.name: k.kind for k in m.after.kernels}
        _print(
            Text.assemble(("── ", "dim"), module_heading(m), (f"  {len(placements)} ops", "dim"))
        )
        if not placements:
            what = "runs alone" if unfused else f"matches {op!r}"
            _print(Text(f"no source op {what}", style="dim"))
        width = min(40, max((len(short_name(p.op.label, 56)) for p in placements), default=0))
        for p in placements:
            _print(placement_line(p, kinds, width))


@app.command(rich_help_panel="Time")
@_command
def profile(
    path: Annotated[
        Path,
        typer.Argument(
            help="A run folder, a profiler log dir, or one *.xplane.pb / *.trace.json.gz file."
        ),
    ],
    module: Annotated[
        str | None,
        typer.Option("--module", help="Show only this module (name or a part of it).", metavar="M"),
    ] = None,
    skip_first: Annotated[
        int,
        typer.Option("--skip-first", help="Executions per module left out as warm-up.", min=0),
    ] = 1,
    top: Annotated[int, typer.Option("--top", help="Modules that get a kernel table.", min=1)] = 3,
    json: JsonOption = False,
) -> None:
    """Time each compiled module and its kernels from a TensorFlow or JAX profile.

    Reads the profile (an *.xplane.pb is preferred to a *.trace.json.gz), attributes
    every XLA op event to its module and HLO instruction, leaves out each module's
    first execution as warm-up, and compares the launches with the HLO dump when the
    folder has one. Never imports TensorFlow or JAX.

    Example: hloscope profile tests/data/jax_mlp_profile
    """
    from hloscope.timing.sources import load_profile

    timings = load_profile(path, skip_first=skip_first)
    key = None
    if module is not None:
        chosen = timings.module(module)
        key = next(k for k, m in timings.modules.items() if m is chosen)
    if json:
        from hloscope.render.timing import profile_doc, timings_doc

        if key is not None:
            _print_json(timings_doc(timings.modules[key]))
        else:
            _print_json(profile_doc(timings))
        return
    from hloscope.render.timing import profile_table

    _print(profile_table(timings, module=key, top=top))


@app.command(rich_help_panel="Time")
@_command
def bench(
    target: Annotated[
        str,
        typer.Argument(
            help="SCRIPT.py:FUNCTION; FUNCTION() returns (fn, args) with fn the plain function.",
            metavar="SCRIPT.py:FUNCTION",
        ),
    ],
    repeats: Annotated[
        int | None,
        typer.Option(
            "--repeats",
            "-n",
            help="Timed calls per mode [default: adaptive, about --min-time seconds].",
            min=1,
            show_default=False,
        ),
    ] = None,
    min_time: Annotated[
        float,
        typer.Option("--min-time", help="Seconds of timed calls per mode (adaptive).", min=0.0),
    ] = 1.0,
    rounds: Annotated[
        int,
        typer.Option(
            "--rounds",
            help="Rounds the timed calls are split into, visiting the modes in turn.",
            min=1,
        ),
    ] = 3,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Write bench.json into this run folder.", metavar="RUN_DIR"),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Time a function eagerly and under XLA, side by side, in this process.

    TensorFlow: eager, tf.function without XLA, tf.function(jit_compile=True). JAX: op by
    op (jax.disable_jit) and jax.jit. Each mode reports its first call (tracing and
    compilation), the median and p10/p90 of the steady-state calls, the speed-up against
    eager, and peak device memory where the framework reports it.

    Example: hloscope bench samples/recsys_scores.py:bench
    """
    from hloscope.errors import UsageError

    if save is not None and not save.is_dir():
        raise UsageError(
            f"--save {save}: no such run folder; run `hloscope dump` first or give an "
            "existing folder"
        )
    from hloscope.render.timing import bench_doc
    from hloscope.timing.bench import bench as run_bench
    from hloscope.timing.bench import load_target

    fn, args = load_target(target)
    result = run_bench(fn, *args, repeats=repeats, min_time=min_time, rounds=rounds, target=target)
    doc = bench_doc(result)
    if save is not None:
        from hloscope.render.json import dumps

        (save / "bench.json").write_text(dumps(doc) + "\n", encoding="utf-8")
    if json:
        _print_json(doc)
        return
    from hloscope.render.timing import bench_table

    _print(bench_table(result))
    if save is not None:
        typer.echo(f"saved {save / 'bench.json'}", err=True)


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
) -> None:
    """What changed between two runs of the same program: per module, instructions,
    kernels by kind, launches, ops per kernel and kernel time, A vs B; which kernels
    split, merged, appeared, disappeared or changed kind (matched by the source ops they
    hold, not by XLA's names); and which source ops stopped or started fusing.

    Modules pair by name (numeric suffixes and TensorFlow's hashes ignored), else by
    structure. Kernel changes are ordered by time where both runs were profiled, else by
    bytes moved. Exit codes: 0 ok, 1 regression (with --fail-on-regression), 2 usage.

    Example: hloscope diff runs/before runs/after --fail-on-regression --tolerance 5%
    """
    from hloscope.analysis.diff import diff_runs, parse_tolerance, regressions
    from hloscope.errors import UsageError
    from hloscope.inspection import inspect_run

    tol = parse_tolerance(tolerance)
    a, b = inspect_run(run_a, bench=False), inspect_run(run_b, bench=False)
    result = diff_runs(
        a.report,
        b.report,
        timings_a=a.all_kernel_times() or None,
        timings_b=b.all_kernel_times() or None,
    )
    selected = None
    if module:
        picked = []
        for pattern in module:
            found = [
                d
                for d in result.modules
                if pattern in (d.a.key, d.b.key, d.a.name, d.b.name)
                or (pattern.isdigit() and int(pattern) in _ids(d.a.key, d.b.key))
                or pattern in d.a.key
                or pattern in d.b.key
            ]
            if not found:
                keys = ", ".join(d.label for d in result.modules[:12]) or "none"
                raise UsageError(f"no module of both runs matches {pattern!r}; matched: {keys}")
            picked += [d for d in found if d not in picked]
        selected = tuple(picked)
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

            html.write_text(diff_page(doc), encoding="utf-8")
            typer.echo(f"wrote {html}", err=True)
        if json:
            _print_json(doc)
    if not json:
        from hloscope.render.diff_text import diff_view

        _print(diff_view(result, show_all=show_all, modules=selected))
    if found_regressions:
        typer.echo(_one_line("regression", found_regressions), err=True)
        raise typer.Exit(1)


def _ids(*keys: str) -> set[int]:
    return {int(k.split(".", 1)[0]) for k in keys if k.split(".", 1)[0].isdigit()}


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
            help="Fewest ops (before optimization) per kernel (after).",
            min=0.0,
            metavar="X",
        ),
    ] = None,
) -> None:
    """Hold a run to a fusion budget, for CI: exit 1 with one line naming the module, the
    metric, its value and the budget when a non-trivial module (or each --module) has
    more kernels or launches, or fewer ops per kernel, than allowed.

    Exit codes: 0 within budget, 1 budget exceeded, 2 usage error.

    Example: hloscope check runs/latest --max-kernels 12 --min-ops-per-kernel 4
    """
    from hloscope.analysis.diff import Budget, check_run
    from hloscope.errors import UsageError
    from hloscope.inspection import inspect_run

    budget = Budget(max_kernels, max_launches, min_ops_per_kernel)
    if budget.empty:
        raise UsageError(
            "give at least one budget: --max-kernels N, --max-launches N or --min-ops-per-kernel X"
        )
    inspection = inspect_run(run, module or (), timings=False, bench=False)
    checked = [m for m in (inspection.modules if module else inspection.main) if m.after]
    if not checked:
        raise UsageError(
            f"{run}: no {'selected' if module else 'non-trivial'} module has an "
            "after-optimization dump to check; pass --module"
        )
    violations = check_run(checked, budget)
    if violations:
        typer.echo(_one_line("budget exceeded", violations), err=True)
        raise typer.Exit(1)
    from hloscope.render.diff_text import check_line

    for m in checked:
        _print(check_line(m, budget))


_PICTURE_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}


@app.command(rich_help_panel="Inspect")
@_command
def graph(
    run: RunArgument,
    module: Annotated[
        str | None,
        typer.Option(
            "--module",
            "-M",
            help="The module (key, name, id or unique part of the key); default: the biggest.",
            show_default=False,
        ),
    ] = None,
    stage: Annotated[
        str | None,
        typer.Option(
            "--stage",
            help="after: kernels; before: ops, coloured by the kernel each went to "
            "(default: after, or the stage of the one file given).",
            metavar="before|after",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Picture to write: .svg, .png, .pdf, or .dot for the DOT source only "
            "(default: <module>.<stage>.svg here). The .dot is always written beside it.",
            show_default=False,
        ),
    ] = None,
    expand: Annotated[
        list[str] | None,
        typer.Option(
            "--expand",
            help="Draw this fusion as a box of its fused ops; 'all' for every fusion "
            "(small modules); repeatable.",
            metavar="NAME|all",
            show_default=False,
        ),
    ] = None,
    side_by_side: Annotated[
        bool,
        typer.Option("--side-by-side", help="Before and after in one picture (small modules)."),
    ] = False,
    max_nodes: Annotated[
        int,
        typer.Option(
            "--max-nodes",
            help="Node budget; over it, parameters fold away and kernels collapse by name "
            "scope and repeated blocks.",
            min=2,
        ),
    ] = 300,
    around: Annotated[
        str | None,
        typer.Option(
            "--around",
            help="Only the neighbourhood of this kernel or instruction.",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    depth: Annotated[
        int, typer.Option("--depth", help="Edges to follow from --around.", min=0)
    ] = 2,
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            help="Only what comes from this name scope (e.g. resnet50/conv2_block1, "
            "jit(f)/layer_3).",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to give Graphviz `dot`.", min=1.0)
    ] = 60.0,
) -> None:
    """Draw what XLA fused with Graphviz: kernels after optimization, ops before.

    The after graph has one node per kernel, coloured by kind, with its source ops,
    and edges labelled with tensor shapes and bytes; the before graph colours each op by
    the kernel it went to. Big modules collapse by name scope to stay readable. Needs the
    Graphviz `dot` binary (apt-get install graphviz).

    Example: hloscope graph tests/data/tf_dense_relu --expand all -o dense.svg
    """
    import re

    from hloscope.errors import UsageError
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import module_diagram
    from hloscope.render.dot import render
    from hloscope.render.format import short_name
    from hloscope.runs import load_run

    if stage not in (None, "before", "after"):
        raise UsageError(f"--stage {stage!r}: use before or after")
    loaded = load_run(run)
    dump = _graph_module(loaded, module)
    inspection = inspect_run(loaded, [dump.key], bench=False)
    analysed = inspection.module(dump.key)
    if stage is None:
        given_before = run.is_file() and dump.before is not None and run == dump.before
        stage = "before" if given_before or analysed.after_module is None else "after"
    expand_arg: list[str] | str = list(expand or ())
    if "all" in expand_arg:
        expand_arg = "all"
    spec = module_diagram(
        analysed,
        stage="before" if stage == "before" else "after",
        both=side_by_side,
        timings=inspection.kernel_times(dump.key),
        expand=expand_arg,
        max_nodes=max_nodes,
        around=around,
        depth=depth,
        scope=scope,
    )
    if out is None:
        name = re.sub(r"[^\w.\-]+", "_", short_name(dump.name, 80))
        out = Path(f"{name}.{'side-by-side' if side_by_side else stage}.svg")
    fmt = _PICTURE_FORMATS.get(out.suffix.lower())
    if fmt is None:
        kind = out.suffix or "(none)"
        raise UsageError(f"-o {out}: unknown picture type {kind}; use .svg, .png, .pdf or .dot")
    result = render(spec, out, fmt, timeout=timeout)
    what = f"{len(spec.nodes)} nodes, {len(spec.edges)} edges"
    if spec.collapsed:
        what += f"; {spec.units} {spec.unit}s collapsed by name scope"
    if result.out is not None:
        typer.echo(f"wrote {result.out} ({what}) and its DOT source {result.dot}")
    else:
        typer.echo(f"wrote {result.dot} ({what})")
    for note in spec.notes[1:]:
        typer.echo(f"  {note}")


@app.command(rich_help_panel="Inspect")
@_command
def parse(
    file: Annotated[Path, typer.Argument(help="An HLO text file (.txt or .hlo).")],
    json: JsonOption = False,
    strict: StrictOption = False,
) -> None:
    """Parse an HLO text file and summarise it: computations, instructions, fusions, opcodes.

    A file holding several modules separated by `// -----` (FileCheck tests) is parsed
    module by module; `--json` then prints a list instead of one object.
    """
    from hloscope.analysis.stats import module_stats
    from hloscope.hlo.parser import parse_modules

    modules = parse_modules(file, strict=strict)
    stats = [module_stats(m) for m in modules]
    if json:
        from hloscope.render.json import parse_doc

        docs = [parse_doc(s) for s in stats]
        _print_json(docs[0] if len(docs) == 1 else docs)
        return
    from hloscope.render.text import parse_summary

    for s in stats:
        _print(parse_summary(s))


def _graph_module(loaded: Any, pattern: str | None) -> Any:
    """The module to draw: the one asked for, else the biggest non-trivial one."""
    if pattern is not None:
        return loaded.module(pattern)
    chosen = loaded.main()
    if len(loaded.modules) > 1:
        typer.echo(
            f"drawing {chosen.key}, the biggest of {len(loaded.modules)} modules "
            "(pick one with --module)",
            err=True,
        )
    return chosen


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", is_eager=True)
    ] = False,
) -> None:
    if version:
        from hloscope import __version__

        typer.echo(f"hloscope {__version__}")
        raise typer.Exit(0)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("hloscope: interrupted", err=True)
        sys.exit(130)
