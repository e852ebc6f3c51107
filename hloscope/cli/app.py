"""The typer app every command registers on, the options they share, the
error-to-exit-code mapping, and the one way out to the terminal.

Library errors (`HloscopeError`) become one line on stderr and an exit code; nothing
else is caught. Everything a command prints goes through `_print` (rich renderables),
`_echo` (lines), `_print_json` or `_fail`, and each shows control characters escaped:
names, paths and messages come from dumps, scripts and run folders hloscope did not
write, and an escape sequence in an op name must not clear the screen or write the
clipboard.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import itertools
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from hloscope.errors import HloscopeError


def _reflow(text: str | None) -> str | None:
    """Help text written for the terminal: each paragraph one line for the terminal to
    wrap (docstrings are wrapped for the source file, and rich keeps their line breaks),
    list items and indented lines kept on lines of their own, and square brackets shown
    rather than read as rich markup (`[default: ...]` would vanish)."""
    if text is None:
        return None
    from rich.markup import escape

    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in para.split("\n"):
            if lines and not line.startswith(("- ", "* ", " ")):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return escape("\n\n".join(paragraphs))


def _for_terminal(command: Any) -> None:
    """A command's help and its options' as the terminal shows them (`_reflow`); flags
    show no `<bool>` type, as they take no value."""
    command.help = _reflow(command.help)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = _reflow(param.help)
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    get_help_option = command.get_help_option

    def help_option(ctx: Any) -> Any:
        option = get_help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    command.get_help_option = help_option


class _Group(typer.core.TyperGroup):
    """The `hloscope` command group, its help and each command's fitted to the terminal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _for_terminal(self)
        for command in self.commands.values():
            _for_terminal(command)


def _epilog() -> str:
    from hloscope.render.glossary import glossary_text

    return 'Words used throughout (README.md, "Words"):\n\n' + glossary_text()


app = typer.Typer(
    name="hloscope",
    cls=_Group,
    help=(
        "See what the XLA compiler fused. Run a TensorFlow or JAX script under XLA's dump "
        "flags, then count kernels before vs after optimization, find which source ops "
        "fused into which kernel, draw the fusions, and time them."
    ),
    epilog=_epilog(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> typer.Exit:
    message = " ".join(message.splitlines())  # one line, whatever a library said
    _echo(f"hloscope: error: {message}", err=True)
    return typer.Exit(code)


def _echo(message: str, *, err: bool = False) -> None:
    """Print one line, control characters escaped."""
    from hloscope.render.format import printable

    typer.echo(printable(message), err=err)


def _command(fn: F) -> F:
    """Map library errors to one line on stderr and the error's exit code.

    An `OSError` (an output folder that does not exist, a disk that is full) is the
    environment's, not a bug: one line and exit 2 too, never a traceback. While the
    command works, a terminal shows its steps on one line (`cli.status_line`).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from hloscope.cli.status_line import showing

        try:
            with showing():
                return fn(*args, **kwargs)
        except HloscopeError as e:
            raise _fail(str(e), e.exit_code) from None
        except BrokenPipeError:  # `hloscope ... | head`
            sys.stderr.close()
            raise typer.Exit(0) from None
        except OSError as e:  # a file the user named cannot be written or read
            where = f"{e.filename}: " if e.filename else ""
            raise _fail(f"{where}{e.strerror or e}", 2) from None

    return wrapper  # type: ignore[return-value]


def _console(*, stderr: bool = False, **options: Any) -> Any:
    """A rich Console whose text shows control characters escaped.

    Segments that rich itself marks as control (cursor moves of a live display) pass;
    the text of every other segment goes through `printable` after layout, before rich
    adds its own colour sequences, so a sequence in the input is shown, never obeyed.
    """
    from rich.console import Console
    from rich.segment import Segment

    from hloscope.render.format import printable

    class _SafeConsole(Console):
        def print(self, *objects: Any, **options: Any) -> None:
            super().print(*map(_escaped, objects), **options)

        def render(self, renderable: Any, options: Any = None) -> Any:
            for segment in super().render(renderable, options):
                if segment.control is None:
                    text = printable(segment.text)
                    if text is not segment.text:
                        segment = Segment(text, segment.style)
                yield segment

    return _SafeConsole(stderr=stderr, highlight=False, **options)


def _escaped(renderable: Any) -> Any:
    """`renderable` with its text, and that of the groups and table cells in it, escaped
    (`printable`) before rich lays it out, so that columns are measured, wrapped and cut
    on what will show (`\\x1b[2J` takes 7 cells, the raw sequence 3)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from hloscope.render.format import printable

    if isinstance(renderable, str):
        return printable(renderable)
    if isinstance(renderable, Text):
        return _escaped_text(renderable)
    if isinstance(renderable, Group):
        return Group(*map(_escaped, renderable.renderables), fit=renderable.fit)
    if isinstance(renderable, Table):
        return _escaped_table(renderable)
    return renderable


def _escaped_table(original: Any) -> Any:
    """A copy of a rich `Table`, rebuilt through its public API with every header and
    cell escaped."""
    table = copy.copy(original)
    table.title = _escaped(table.title) if table.title is not None else None
    table.columns, table.rows = [], []
    cells = [[*map(_escaped, c.cells)] for c in original.columns]
    for c in original.columns:
        settings = {f.name: getattr(c, f.name) for f in dataclasses.fields(c)}
        table.add_column(
            **{k: v for k, v in settings.items() if not k.startswith("_") and k != "header"},
            header=_escaped(c.header),
        )
    for i, row in enumerate(original.rows):
        table.add_row(
            *(column[i] for column in cells), style=row.style, end_section=row.end_section
        )
    return table


def _escaped_text(text: Any) -> Any:
    """A rich `Text` escaped, its styles moved with the characters they cover."""
    from rich.text import Span

    from hloscope.render.format import printable

    plain = text.plain
    if printable(plain) is plain:
        return text
    pieces = [printable(c) for c in plain]
    at = [0, *itertools.accumulate(map(len, pieces))]
    out = text.copy()
    out.plain = "".join(pieces)
    out.spans = [Span(at[s.start], at[s.end], s.style) for s in text.spans]
    return out


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


# What a piped output's lines are grouped to where hloscope groups them itself (cells of
# a counts line); nothing piped is wrapped or cut.
PIPE_WIDTH = 100


def _width() -> int:
    """The columns output is fitted to: the terminal's width, or `PIPE_WIDTH` piped."""
    return _console().width if _stdout_is_terminal() else PIPE_WIDTH


_PIPED_WIDTH = 100_000  # what a piped console is laid out to: nothing is wrapped


def _print(renderable: Any) -> None:
    """Print to a terminal, fitted to its width; piped, never wrap or cut a line (rich
    would wrap at 80 columns), so that each record stays one line for grep and diff."""
    if _stdout_is_terminal():
        _console().print(renderable)
        return
    import io

    console = _console(soft_wrap=True, width=_PIPED_WIDTH, file=io.StringIO())
    console.print(renderable)
    sys.stdout.write(_piped(console.file.getvalue()))


def _piped(text: str) -> str:
    """Printed text as written piped: no line ends in blanks (rich pads every cell of a
    table's last column to its widest: not worth a diff line)."""
    return "\n".join([line.rstrip() for line in text.split("\n")])


_print_records = _print
"""What commands that print one record per line call (`ops`, `report`): `_print`."""


def _print_lines(lines: Iterable[Any]) -> None:
    """`_print` of each of `lines` (rich `Text`s or `render.text.Line`s, one record
    each). Piped, a plain line is written as `_print` writes it, without a console laid
    out for it, and a `Line` without the `Text` it would make: `ops` of a big module
    prints 300k lines, 200 µs each through rich. A line rich would change beyond that
    (tabs to expand, a justification, a line past `_print`'s width, controls its `Text`
    strips) goes through `_print`."""
    from hloscope.render.format import printable
    from hloscope.render.text import Line, as_printed

    terminal = _stdout_is_terminal()
    out: list[str] = []
    for line in lines:
        plain = None if terminal else as_printed(line, _PIPED_WIDTH)
        if plain is None:
            if out:
                sys.stdout.write("".join(out))
                out.clear()
            _print(line.text() if type(line) is Line else line)
            continue
        out.append(_piped(printable(plain) + "\n"))
        if len(out) >= 4096:
            sys.stdout.write("".join(out))
            out.clear()
    sys.stdout.write("".join(out))


def _print_json(doc: Any) -> None:
    sys.stdout.write(_json_text(doc))


def _stream_json(doc: Any) -> None:
    """`_print_json` of a document made as it is written (`render.json_stream`): the
    same text, never held whole."""
    from hloscope.render.format import json_printable
    from hloscope.render.json_stream import chunks, write_chunks

    write_chunks(chunks(doc), lambda text: sys.stdout.write(json_printable(text)))
    sys.stdout.write("\n")


def _json_text(doc: Any) -> str:
    """What `_print_json` prints."""
    from hloscope.render.format import json_printable
    from hloscope.render.json import dumps

    return json_printable(dumps(doc)) + "\n"


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (stable schema, see README).")]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Fail on anything the tolerant parser would only count."),
]


NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Compute again, and keep nothing: each module's analysis, and the output of "
        "report, ops, graph and parse, are otherwise kept in the user's cache folder "
        "(~/.cache/hloscope, or $HLOSCOPE_CACHE_DIR) by the content of the files read, and "
        "read back while they are unchanged.",
    ),
]


RunArgument = Annotated[
    Path,
    typer.Argument(
        help=(
            "A run folder (from `hloscope dump`), a bare XLA dump folder, one HLO file, an "
            "nsys-jax archive, or a profile (*.xplane.pb: the HLO it carries is the run)."
        ),
        metavar="RUN",
        show_default=False,
    ),
]
ModuleOption = Annotated[
    list[str] | None,
    typer.Option(
        "--module",
        "-M",
        help="Only this module (key, name, id or unique part of the key), or one "
        "compilation of a function compiled several times: NAME#N (compile order, from 0) or "
        "NAME(SHAPE) (an input shape, e.g. 'jit_f(f32[8,16])'); repeatable.",
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

        _echo(f"hloscope {__version__}")
        raise typer.Exit(0)


def _invocation(ctx: typer.Context) -> list[str]:
    """The command line of the running command, as the user typed it: `hloscope`, the
    command, each option given on the command line (not those left at their default),
    then the arguments, a variadic one after `--`. Rebuilt from what the command line
    parser read (the command's `ctx`), for the records a command keeps (run.json's
    `command`)."""
    names: list[str] = []
    at: Any = ctx
    while at.parent is not None:  # the subcommands' names, whatever ran the root
        names.append(at.info_name or "")
        at = at.parent
    words = ["hloscope", *reversed(names)]
    positional: list[str] = []
    variadic: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        source = ctx.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = ctx.params.get(name)
        if param.param_type_name == "argument":
            values = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
            (variadic if param.nargs == -1 else positional).extend(values)
        elif getattr(param, "is_flag", False) and isinstance(value, bool):
            words += (param.opts if value else param.secondary_opts)[:1]
        else:
            for v in value or () if param.multiple else [value]:
                words += [param.opts[0], str(v)]
    if any(v.startswith("-") for v in positional):
        return [*words, "--", *positional, *variadic]
    return [*words, *positional, *(["--", *variadic] if variadic else [])]


def main() -> None:
    """Console-script entry point."""
    from hloscope.cli.teardown import leave, one_command

    one_command()  # the process ends after this command: big objects are left to the OS
    try:
        app()
    except KeyboardInterrupt:
        _echo("hloscope: interrupted", err=True)
        sys.exit(130)
    except SystemExit as e:  # how a typer app ends, success included
        if e.code is None or isinstance(e.code, int):
            leave(e.code or 0)  # a command that kept its objects: not freed one by one
        raise
