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


@app.command()
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


@app.command()
@_command
def report(
    run: RunArgument,
    module: ModuleOption = None,
    json: JsonOption = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list JAX's trivial helper modules.")
    ] = False,
) -> None:
    """What XLA fused, per module: instructions before → after, kernels by kind,
    launches per execution, ops per kernel, the biggest unfused ops, and the source lines
    that produce the most kernels.

    Reads a run again without re-running the model. `--json` prints the stable schema
    documented in README.md (for CI scripts).
    """
    from hloscope.analysis.report import analyze_run
    from hloscope.runs import load_run

    result = analyze_run(load_run(run), module or ())
    if json:
        from hloscope.render.json import report_doc

        _print_json(report_doc(result))
        return
    from hloscope.render.text import report_view

    _print(report_view(result, show_all=show_all))


@app.command()
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
    from hloscope.analysis.provenance import ALONE
    from hloscope.analysis.report import analyze_run
    from hloscope.runs import load_run

    result = analyze_run(load_run(run), module or ())
    shown = [m for m in (result.modules if module else result.main) if m.provenance]
    selected = []
    for m in shown:
        assert m.provenance is not None and m.after is not None
        placements = m.provenance.find(op) if op else list(m.provenance.placements)
        if unfused:
            placements = sorted(
                (p for p in placements if p.status == ALONE), key=lambda p: -p.bytes
            )
        selected.append((m, placements))
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

    from hloscope.render.text import placement_line, short_name

    if not shown:
        raise _fail(f"{run}: no module has an after-optimization dump to trace ops in", 1)
    for m, placements in selected:
        assert m.after is not None
        kinds = {k.name: k.kind for k in m.after.kernels}
        _print(
            Text.assemble(
                ("── ", "dim"),
                (short_name(m.name, 70), "bold cyan"),
                (f"  [{m.key}]  {len(placements)} ops", "dim"),
            )
        )
        if not placements:
            what = "runs alone" if unfused else f"matches {op!r}"
            _print(Text(f"no source op {what}", style="dim"))
        for p in placements:
            _print(placement_line(p, kinds))


@app.command()
@_command
def dump(
    script: Annotated[
        str | None,
        typer.Argument(
            help="The Python script to run (with -m: the first script argument).",
            show_default=False,
        ),
    ] = None,
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Arguments for the script; put them after `--`.", show_default=False),
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
            "--python", help="The interpreter to run it with [default: this one].", metavar="PATH"
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
            help="The run folder [default: hloscope-runs/<script>-<timestamp>/].",
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
) -> None:
    """Run a TensorFlow or JAX script under XLA's dump flags and keep the run.

    The script runs in a child Python with XLA_FLAGS set to dump HLO text before and
    after optimization (your own XLA_FLAGS are kept); its output streams live and is
    saved. The run folder holds the raw dump, the logs and run.json, and every other
    command reads it later. Exits with the script's status when it fails.

    Example: hloscope dump samples/dense_relu.py -- --batch 32
    """
    from rich.console import Console

    from hloscope.capture.display import DumpProgress, outcome, summary_table
    from hloscope.capture.run import plan_dump, run_dump
    from hloscope.capture.summary import summarize_run
    from hloscope.errors import UsageError

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
        command=["hloscope", *sys.argv[1:]],
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
        _print(summary_table(summarize_run(result.run), show_all=show_all))
    err.print(outcome(result), soft_wrap=True)
    raise typer.Exit(result.command_exit_code)


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
