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
