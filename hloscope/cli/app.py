"""The typer app every command registers on, the options they share, and the
error-to-exit-code mapping.

Library errors (`HloscopeError`) become one line on stderr and an exit code; nothing
else is caught.
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
