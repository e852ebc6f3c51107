"""`hloscope report`, `ops`, `graph` and `parse`: read a run and show what fused.

Each command is load (`inspect_run`) -> render; nothing here computes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from hloscope.cli.app import (
    JsonOption,
    ModuleOption,
    NoCacheOption,
    RunArgument,
    StrictOption,
    _command,
    _echo,
    _fail,
    _json_text,
    _print,
    _print_json,
    _print_lines,
    _stdout_is_terminal,
    _stream_json,
    _width,
    app,
)

if TYPE_CHECKING:
    from hloscope.analysis.report import BeforeAhead, DrawAfter
    from hloscope.runs import Run

FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        help="text, or tsv: one tab-separated record per line with a header (for grep, "
        "cut, spreadsheets); --json for the full schema.",
        metavar="text|tsv",
    ),
]


def _cached(run: Path, command: str, options: dict[str, Any], body: Any, no_cache: bool) -> None:
    """Run a command's body through the user's output cache (`cli.output_cache`)."""
    from hloscope.cli.output_cache import cached_command

    cached_command(run, command, options, body, enabled=not no_cache)


@app.command(rich_help_panel="Inspect")
@_command
def report(
    run: RunArgument,
    module: ModuleOption = None,
    json: JsonOption = False,
    fmt: FormatOption = "text",
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
    peak_bandwidth: Annotated[
        float | None,
        typer.Option(
            "--peak-bandwidth",
            help="The device's memory bandwidth in GB/s for the roofline [default: the "
            "table of common GPUs/TPUs by device name; a CPU is measured once and cached].",
            show_default=False,
        ),
    ] = None,
    peak_flops: Annotated[
        float | None,
        typer.Option(
            "--peak-tflops", help="The device's peak TFLOP/s for the roofline.", show_default=False
        ),
    ] = None,
    no_cache: NoCacheOption = False,
) -> None:
    """What XLA fused, module by module: counts, kernels, loops, time, cost and memory.

    Each module is one section, in a fixed order: instructions before → after, HLO ops
    before → kernels after, fusions, launches per execution, HLO ops per kernel, ops and
    ops alone; kernels by kind; loops with their trip counts; the biggest unfused ops
    and the source lines that produce the most kernels; for a profiled run its timing
    and kernel times (each kernel named with the ops it holds); bytes and FLOPs per
    execution, XLA's planned peak memory, and the kernels furthest below the device's
    roofline. Words as `hloscope --help` defines them.

    Reads a run again without re-running the model. `--json` prints the stable schema
    documented in README.md (for CI scripts). `--html report.html` writes one file that
    opens from disk in any browser (no server, no network): the kernel and op diagrams
    side by side, searchable kernel and op tables, and kernel times when the run was
    profiled.
    """
    if json and html is None:
        from hloscope.cli.cached import keeps_output

        if keeps_output(run):  # kept in the run folder itself
            _report_json(run, module or [], peak_bandwidth, peak_flops, no_cache, not no_cache)
            return
    options = {
        "module": module or [],
        "json": json,
        "format": fmt,
        "all": show_all,
        "html": str(html) if html is not None else None,
        "peak_bandwidth": peak_bandwidth,
        "peak_tflops": peak_flops,
    }
    peaks = (peak_bandwidth, peak_flops)

    def body() -> list[Path]:
        from hloscope.hlo.parser import paused_gc

        # The JSON stream makes cyclic garbage: with the collector paused, the 107 MB
        # pair's document peaked at 10.5x its text (7.6x with it running).
        if json:
            with _spilling(html) as spill:
                return _report(run, module, json, fmt, show_all, html, spill, peaks, not no_cache)
        # as `graph`'s: one module's objects, acyclic, kept to the end
        with paused_gc(), _spilling(html) as spill:
            return _report(run, module, json, fmt, show_all, html, spill, peaks, not no_cache)

    _cached(run, "report", options, body, no_cache)


def _report(
    run: Path,
    module: list[str] | None,
    json: bool,
    fmt: str,
    show_all: bool,
    html: Path | None,
    spill: Path | None,
    roofs: tuple[float | None, float | None],
    cache: bool,
) -> list[Path]:
    """`report`, computed (each module's analysis read back from the user's cache folder
    where kept, with `cache`); the files it wrote (the HTML page, whose parts made by a
    worker process go to `spill`, `_spilling`)."""
    peak_bandwidth, peak_flops = roofs
    if json and html is None:
        _report_json(run, module or [], peak_bandwidth, peak_flops, True, cache)
        return []
    from hloscope.cli.teardown import keep
    from hloscope.inspection import inspect_run

    source, draw_after, before_ahead = (
        _page_source(run, spill) if html is not None else (run, None, None)
    )
    inspection = inspect_run(
        source,
        module or (),
        passes=html is not None,
        cache=cache,
        draw_after=draw_after,
        before_ahead=before_ahead,
    )
    keep(inspection)  # millions of objects on a big dump: not freed one by one at exit
    _something_read(inspection)
    for line in _warnings(inspection):
        _echo(line, err=True)
    peaks = _peaks(inspection, peak_bandwidth, peak_flops)
    if html is not None:
        from hloscope.render.format import counted, fmt_bytes
        from hloscope.render.html import write_html

        written = write_html(inspection, html, peaks=peaks)
        size = fmt_bytes(written.stat().st_size)
        _echo(f"wrote {written} ({size}, {counted(len(inspection.modules), 'module')})", err=True)
        if not json:
            return [written]
    if json:
        from hloscope.render.json import report_fields

        _stream_json(report_fields(inspection, peaks))
        return [] if html is None else [html]
    if _format(fmt) == "tsv":
        from hloscope.render.text import MODULE_COLUMNS, module_row, tsv

        shown = inspection.report.modules if show_all else inspection.report.main
        sys.stdout.write(tsv(MODULE_COLUMNS, (module_row(m) for m in shown)))
        return []
    from hloscope.render.text import report_view

    full = not _stdout_is_terminal()
    view = report_view(inspection, show_all=show_all, full_names=full, peaks=peaks, width=_width())
    _print(view)
    return []


def _spilling(html: Path | None) -> AbstractContextManager[Path | None]:
    """The folder that a page's parts made by a worker process are written to, removed
    when the block ends (`render.html.spill_folder`); None without a page."""
    if html is None:
        return nullcontext()
    from hloscope.render.html import spill_folder

    return spill_folder(html)


def _page_source(run: Path, spill: Path | None) -> tuple[Run, DrawAfter | None, BeforeAhead]:
    """The run a page is made of; what of a big module's page the worker process that
    analyses its after side finds (`render.html.page_after`, writing its kernels' text
    to `spill`): for a run without kernel times, which the kernel diagram would show;
    and what this process finds of its before side meanwhile: the op diagram walked
    (issue 27)."""
    from hloscope.render.diagram import walk_ops_ahead
    from hloscope.render.html import page_after
    from hloscope.runs import load_run
    from hloscope.timing.sources import measured

    loaded = load_run(run)
    return loaded, None if measured(loaded) else partial(page_after, spill=spill), walk_ops_ahead


def _report_json(
    run: Path,
    modules: list[str],
    bandwidth_gbs: float | None,
    tflops: float | None,
    no_cache: bool,
    cache: bool,
) -> None:
    """`report --json`: read back from the run folder when nothing it depends on changed
    (`cli.cached`: no HLO parsed, no profile read), else computed and kept there; what
    is not a run folder (or `--no-cache`) keeps nothing here, and its document is
    written as it is made; its modules' analyses are read back from the user's cache
    folder where kept, with `cache`."""
    from hloscope.cli.cached import Output, cached_output, keeps_output

    if no_cache or not keeps_output(run):
        from hloscope.cli.teardown import keep
        from hloscope.hlo.parser import paused_gc
        from hloscope.inspection import inspect_run
        from hloscope.render.json import report_fields

        with paused_gc():  # and frozen by `keep` before the collector runs again
            inspection = inspect_run(run, modules, cache=cache)
            keep(inspection)  # not freed one by one at exit, nor walked by the collector
        _something_read(inspection)
        peaks = _peaks(inspection, bandwidth_gbs, tflops)
        for line in _warnings(inspection):
            _echo(line, err=True)
        _stream_json(report_fields(inspection, peaks))
        return

    def compute() -> Output:
        from hloscope.inspection import inspect_run
        from hloscope.render.json import report_doc

        inspection = inspect_run(run, modules, cache=cache)
        _something_read(inspection)
        peaks = _peaks(inspection, bandwidth_gbs, tflops)
        return Output(_json_text(report_doc(inspection, peaks)), _warnings(inspection))

    from hloscope.render.format import printable

    options = {"module": modules, "peak_bandwidth": bandwidth_gbs, "peak_tflops": tflops}
    output = cached_output(run, "report --json", options, compute)
    for line in output.warnings:
        _echo(line, err=True)
    # A kept document is a file in a run folder, which anyone may have written: escaped
    # like all else from one (a no-op on what `_json_text` made, which holds no control).
    sys.stdout.write(printable(output.stdout))


def _something_read(inspection: Any) -> None:
    """Stop when no module of the run could be read at all (a malformed HLO file, a dump
    of damaged files): a report of empty rows is no answer.

    Raises:
        UsageError: Every module failed on both sides; the first reason, one line.
    """
    modules = inspection.report.modules
    if not modules or any(m.before is not None or m.after is not None for m in modules):
        return
    from hloscope.errors import UsageError

    first = modules[0].error or "unreadable"
    if len(modules) == 1:
        raise UsageError(first)
    raise UsageError(f"none of the {len(modules)} modules could be read; the first: {first}")


def _warnings(inspection: Any) -> tuple[str, ...]:
    """What `report` says on stderr: an unreadable profile, or dump files not read (links
    out of the run, FIFOs), must not hide the fusion report, but must not pass unseen
    either. One line each (`_echo` escapes the other control characters)."""
    lines = [f"hloscope: warning: {why}".replace("\n", "\\n") for why in inspection.run.left_out]
    if inspection.timing_error:
        lines.append(f"hloscope: warning: no timings: {inspection.timing_error}")
    return tuple(lines)


def _peaks(inspection: Any, bandwidth_gbs: float | None, tflops: float | None) -> Any:
    """The roofs for a profiled run (None when it holds no timings: nothing to place)."""
    if not inspection.module_timings:
        return None
    from hloscope.timing.roofline import device_peaks

    run = inspection.run
    measured = inspection.timings.device if inspection.timings is not None else None
    return device_peaks(
        run.manifest.device or measured,
        run.platform,
        bandwidth=bandwidth_gbs * 1e9 if bandwidth_gbs else None,
        flops=tflops * 1e12 if tflops else None,
    )


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
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            help="Only the ops this kernel holds: its HLO name, as timing tables, the "
            "roofline and graphs print it (e.g. fusion.3).",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    json: JsonOption = False,
    fmt: FormatOption = "text",
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="Also say which compiler pass made each op's kernel, and where an op that "
            "runs alone left a fusion (needs `hloscope dump --passes`; see `hloscope passes`).",
        ),
    ] = False,
    no_cache: NoCacheOption = False,
) -> None:
    """Where did each of my ops go, and what does each kernel hold?

    One line per source op: the kernel it fused into and with which other ops, or that
    it runs alone (and the evidence why), or that optimization removed it.

    `--kernel NAME` turns it around: what a kernel holds, its HLO ops and the source
    ops whose work it does. `--op` given a kernel's name does the same.

    Example: `hloscope ops RUN --op Relu` answers "did my Relu fuse with the MatMul?";
    `hloscope ops RUN --unfused` lists the ops that did not fuse, by bytes moved;
    `hloscope ops RUN --kernel fusion.3` what the kernel fusion.3 runs.
    """
    options = {
        "module": module or [],
        "op": op,
        "unfused": unfused,
        "kernel": kernel,
        "json": json,
        "format": fmt,
        "history": history,
    }

    def body() -> list[Path]:
        _ops(run, module, op, unfused, kernel, json, fmt, history, not no_cache)
        return []

    _cached(run, "ops", options, body, no_cache)


def _ops(
    run: Path,
    module: list[str] | None,
    op: str | None,
    unfused: bool,
    kernel: str | None,
    json: bool,
    fmt: str,
    history: bool,
    cache: bool,
) -> None:
    """`ops`, computed (each module's analysis read back from the user's cache folder
    where kept, with `cache`)."""
    from hloscope.cli.teardown import keep
    from hloscope.inspection import inspect_run

    inspection = inspect_run(run, module or (), timings=False, bench=False, cache=cache)
    keep(inspection)  # millions of objects on a big dump: not freed one by one at exit
    _something_read(inspection)
    _say_outcome(inspection)
    shown = [m for m in (inspection.modules if module else inspection.main) if m.provenance]
    if kernel is None and op is not None and _kernel_named(shown, op) and not _any_op(shown, op):
        _echo(f"hloscope: --op {op!r} names no op but a kernel: what it holds (--kernel)", err=True)
        kernel, op = op, None
    if kernel is not None:
        shown = _holding(shown, kernel, run)
        kernel = _kernel_in(shown[0], kernel) or kernel
    selected = [(m, m.placements(op, unfused=unfused, kernel=kernel)) for m in shown]
    stories = _stories(inspection, shown) if history else {}
    if json:
        from hloscope.render.json import placement_doc, placement_records
        from hloscope.render.json_stream import Fields, Items

        def with_history(p: Any, story: Any) -> dict[str, Any]:
            from hloscope.render.passes import op_history_doc

            return {**placement_doc(p), "history": op_history_doc(p, story)}

        def module_doc(m: Any, ps: list[Any]) -> Fields:
            story = stories.get(m.key)
            ops: Items = (
                placement_records(lambda: ps)
                if story is None
                else Items(lambda: (with_history(p, story) for p in ps))
            )
            fields = Fields(module=m.key, name=m.name, ops=ops)
            if kernel is not None:
                fields["kernel"] = _kernel_doc(m, kernel)
            return fields

        _stream_json(Items(lambda: (module_doc(m, ps) for m, ps in selected)))
        return
    if _format(fmt) == "tsv":
        from hloscope.render.text import PLACEMENT_COLUMNS, placement_row, tsv

        rows = [
            placement_row(m.key, p, {k.name: k.kind for k in m.after.kernels} if m.after else {})
            for m, ps in selected
            for p in ps
        ]
        sys.stdout.write(tsv(PLACEMENT_COLUMNS, rows))
        return
    from rich.text import Text

    from hloscope.render.format import counted, short_names
    from hloscope.render.text import module_heading, no_user_frames

    if not shown:
        raise _fail(f"{run}: no module has an after-optimization dump to trace ops in", 1)
    terminal = _stdout_is_terminal()
    for m, placements in selected:
        assert m.after is not None
        kinds = {k.name: k.kind for k in m.after.kernels}
        _print(
            Text.assemble(
                ("── ", "dim"), module_heading(m), (f"  {counted(len(placements), 'op')}", "dim")
            )
        )
        if kernel is not None:
            from hloscope.render.text import kernel_line

            _print(kernel_line(m, kernel))
        if not placements:
            what = "runs alone" if unfused else f"matches {op!r}" if op else "in this module"
            if kernel is not None:
                what = f"of {kernel}" + (f" {what}" if op or unfused else "")
            _print(Text(f"no source op {what}", style="dim"))
        note = no_user_frames(placements)
        if note is not None:
            _print(note)
        # On a terminal names are cut to fit, keeping different names different; piped,
        # they print in full, one op per line, for grep.
        labels = [p.op.label for p in placements]
        others = [o for p in placements for o in p.shares_with]
        names = short_names([*labels, *others], 56) if terminal else {}
        width = min(40, max((len(names.get(x, x)) for x in labels), default=0))
        _print_lines(_op_lines(placements, kinds, width, names, stories.get(m.key)))


def _op_lines(
    placements: list[Any],
    kinds: dict[str, str],
    width: int,
    names: dict[str, str],
    story: Any,
) -> Iterator[Any]:
    """`ops`' line for each placement, with its pass-by-pass history when `story`."""
    from hloscope.render.text import placement_line

    for p in placements:
        line = placement_line(p, kinds, width, names)
        if story is not None:
            from hloscope.render.passes import op_history_text

            told = op_history_text(p, story)
            if told:
                line.append(f"  ⟨{told}⟩", style="dim")
        yield line


def _kernel_named(modules: list[Any], name: str) -> bool:
    return any(_kernel_in(m, name) for m in modules)


def _kernel_in(m: Any, name: str) -> str | None:
    """The kernel of a module called `name`, or reported under it by the runtime (the
    wrapped `all-to-all.3` of an async pair); None when it has none."""
    if m.after is None:
        return None
    if name in m.after.kernel_of.values():
        return name
    found: str | None = m.after.kernel_of.get(name)
    return found


def _any_op(modules: list[Any], pattern: str) -> bool:
    return any(m.provenance.find(pattern) for m in modules if m.provenance is not None)


def _holding(modules: list[Any], kernel: str, run: Path) -> list[Any]:
    """The modules that have a kernel of this name; a name no module has is an error
    naming the closest kernels."""
    found = [m for m in modules if _kernel_in(m, kernel) is not None]
    if found:
        return found
    import difflib

    from hloscope.errors import UsageError

    names = sorted({k.name for m in modules if m.after is not None for k in m.after.kernels})
    close = difflib.get_close_matches(kernel, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(
        f"--kernel {kernel!r}: no kernel of that name in {run}{hint} (kernels are named by "
        "their HLO instruction, as the timing tables and `hloscope graph` print them)"
    )


def _kernel_doc(m: Any, name: str) -> dict[str, Any]:
    """`ops --kernel --json`: the kernel itself, beside the ops it holds."""
    k = next(k for k in m.after.kernels if k.name == name)
    inferred = m.provenance.inferred.get(name) if m.provenance else None
    return {
        "name": k.name,
        "kind": k.kind,
        "launches": k.launches,
        "hlo_ops": list(k.opcodes),
        "inferred": {"ops": list(inferred.ops), "how": inferred.how} if inferred else None,
    }


def _stories(inspection: Any, shown: list[Any]) -> dict[str, Any]:
    """The pass stories of the shown modules that have per-pass dumps (`--history`)."""
    from hloscope.analysis.passes import no_pass_dumps_hint, pass_stories
    from hloscope.errors import UsageError
    from hloscope.passes import pass_dumps

    found = pass_dumps(inspection.run)
    keys = [m.key for m in shown if m.key in found]
    if not keys:
        raise UsageError(no_pass_dumps_hint(inspection.run))
    reports = {m.key: m for m in shown}
    return {s.key: s for s in pass_stories(inspection.run, keys, reports=reports)}


def _say_outcome(inspection: Any) -> None:
    """A run that failed says so first, on stderr (stdout keeps its records)."""
    from hloscope.render.compilations import run_outcome

    outcome = run_outcome(inspection.run.manifest)
    if outcome is not None:
        n = len(inspection.run.modules)
        _echo(f"hloscope: {outcome}; {n} module{'' if n == 1 else 's'} dumped", err=True)


def _format(fmt: str) -> str:
    if fmt not in ("text", "tsv"):
        raise _fail(f"--format {fmt!r}: use text or tsv (or --json)", 2)
    return fmt


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
            help="The module (key, name, id or unique part of the key; one compilation of a "
            "function compiled several times as NAME#N or NAME(SHAPE)); default: the biggest.",
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
        int | None,
        typer.Option(
            "--max-nodes",
            help="Node budget; over it, parameters fold away and kernels collapse by name "
            "scope and repeated blocks (raise it to draw finer; at the kernel count, "
            "everything) [default: 60].",
            min=2,
            show_default=False,
        ),
    ] = None,
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
    no_cache: NoCacheOption = False,
) -> None:
    """Draw what XLA fused with Graphviz: kernels after optimization, ops before.

    The after graph has one node per kernel, coloured by kind, with its source ops,
    and edges labelled with tensor shapes and bytes; the before graph colours each op by
    the kernel it went to. Big modules collapse by name scope to stay readable. Needs the
    Graphviz `dot` binary (apt-get install graphviz).

    Example: hloscope graph tests/data/tf_dense_relu --expand all -o dense.svg
    """
    options = {
        "module": module,
        "stage": stage,
        "out": str(out) if out is not None else None,
        "expand": expand or [],
        "side_by_side": side_by_side,
        "max_nodes": max_nodes,
        "around": around,
        "depth": depth,
        "scope": scope,
        "timeout": timeout,
    }

    def body() -> list[Path]:
        from hloscope.hlo.parser import paused_gc

        # One pass over a whole module's objects, acyclic, kept to the end: the collector
        # would walk them again after each paused step (a tenth of `graph`, issue 27)
        with paused_gc():
            return _graph(
                run,
                module,
                stage,
                out,
                expand,
                side_by_side,
                max_nodes,
                around,
                depth,
                scope,
                timeout,
            )

    _cached(run, "graph", options, body, no_cache)


def _graph(
    run: Path,
    module: str | None,
    stage: str | None,
    out: Path | None,
    expand: list[str] | None,
    side_by_side: bool,
    max_nodes: int | None,
    around: str | None,
    depth: int,
    scope: str | None,
    timeout: float,
) -> list[Path]:
    """`graph`, computed; the files it wrote (the picture and its DOT source)."""
    import re

    from hloscope.analysis.report import analyze_run, drawn_after
    from hloscope.cli.teardown import keep
    from hloscope.errors import UsageError
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import DiagramSpec, after_half, module_diagram
    from hloscope.render.dot import render
    from hloscope.render.format import counted, short_name
    from hloscope.runs import load_run
    from hloscope.timing.sources import measured

    if stage not in (None, "before", "after"):
        raise UsageError(f"--stage {stage!r}: use before or after")
    expand_arg: list[str] | Literal["all"] = list(expand or ())
    if "all" in expand_arg:
        expand_arg = "all"
    drawing: dict[str, Any] = {"expand": expand_arg, "depth": depth, "scope": scope}
    if max_nodes is not None:
        drawing["max_nodes"] = max_nodes
    loaded = load_run(run)
    dump = _graph_module(loaded, module)
    given_before = run.is_file() and dump.before is not None and run == dump.before
    # The kernel graph alone reads nothing of the before side (issue 27: its parse and
    # analysis were a third of `graph`); an unreadable after side falls back to both,
    # whose errors the message gives
    only_after = not side_by_side and stage != "before" and not given_before
    drawn: Literal["after", "both"] = "after" if only_after and dump.after else "both"
    op_graph_alone = not side_by_side and (stage or ("before" if given_before else "")) == "before"
    # Both sides of a big module not measured: its after side is drawn in the worker
    # process that analyses it, while this process draws the before side (issue 27)
    apart = side_by_side and not around and not measured(loaded)
    if op_graph_alone or apart:
        # No kernel times to read, and the after side, analysed in a worker process when
        # big (`pool.beside`), is waited for only for the colours, once the before side
        # is walked and folded
        draw = partial(after_half, **drawing) if apart else None
        inspection, analysed = (
            None,
            analyze_run(loaded, [dump.key], drawn, draw_after=draw).modules[0],
        )
        stage = "before" if op_graph_alone else stage
    else:
        inspection = inspect_run(loaded, [dump.key], bench=False, drawn=drawn)
        analysed = inspection.module(dump.key)
        if drawn == "after" and analysed.after_module is None:
            inspection = inspect_run(loaded, [dump.key], bench=False, drawn="both")
            analysed = inspection.module(dump.key)
    if stage is None and not side_by_side:  # (both sides drawn: the after one may be away)
        stage = "before" if given_before or analysed.after_module is None else "after"

    def drawn_there() -> DiagramSpec | None:  # None: drawn here
        found = drawn_after(analysed)
        return found if isinstance(found, DiagramSpec) else None

    spec = module_diagram(
        analysed,
        stage="before" if stage == "before" else "after",
        both=side_by_side,
        timings=inspection.kernel_times(dump.key) if inspection is not None else None,
        around=around,
        after=drawn_there,
        **drawing,
    )
    if out is None:
        name = re.sub(r"[^\w.\-]+", "_", short_name(dump.name, 80))
        out = Path(f"{name}.{'side-by-side' if side_by_side else stage}.svg")
    fmt = _PICTURE_FORMATS.get(out.suffix.lower())
    if fmt is None:
        kind = out.suffix or "(none)"
        raise UsageError(f"-o {out}: unknown picture type {kind}; use .svg, .png, .pdf or .dot")
    result = render(spec, out, fmt, timeout=timeout)
    what = f"{counted(len(spec.nodes), 'node')}, {counted(len(spec.edges), 'edge')}"
    if spec.collapsed:
        what += f"; {counted(spec.units, spec.unit)} collapsed by name scope"
    if result.out is not None:
        _echo(f"wrote {result.out} ({what}) and its DOT source {result.dot}")
    else:
        _echo(f"wrote {result.dot} ({what})")
    for note in spec.notes[1:]:
        _echo(f"  {note}")
    keep(loaded, inspection, analysed)  # millions of objects: not freed one by one at exit
    return [p for p in (result.out, result.dot) if p is not None]


@app.command(rich_help_panel="Inspect")
@_command
def parse(
    file: Annotated[Path, typer.Argument(help="An HLO text file (.txt or .hlo).")],
    json: JsonOption = False,
    strict: StrictOption = False,
    no_cache: NoCacheOption = False,
) -> None:
    """Parse an HLO text file and summarise it: computations, instructions, fusions, opcodes.

    A file holding several modules separated by `// -----` (FileCheck tests) is parsed
    module by module; `--json` then prints a list instead of one object.
    """

    def body() -> list[Path]:
        _parse(file, json, strict)
        return []

    _cached(file, "parse", {"json": json, "strict": strict}, body, no_cache)


def _parse(file: Path, json: bool, strict: bool) -> None:
    """`parse`, computed."""
    from hloscope.analysis.stats import module_stats
    from hloscope.errors import UsageError
    from hloscope.hlo.parser import parse_modules

    if file.exists() and not file.is_file() and not file.is_dir():  # a FIFO would hang
        raise UsageError(f"{file}: not a regular file (a device or a pipe?); give an HLO file")
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
        from hloscope.analysis.compilations import find_module

        return find_module(loaded, pattern)
    chosen = loaded.main()
    if len(loaded.modules) > 1:
        _echo(
            f"drawing {chosen.key}, the biggest of {len(loaded.modules)} modules "
            "(pick one with --module)",
            err=True,
        )
    return chosen
