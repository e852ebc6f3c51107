"""`hloscope passes`: the fusion story of a run, pass by pass.

Load the run, tell each module's story from its per-pass dumps
(`analysis.passes.pass_stories`), render it as text or JSON (`render.passes`); nothing
here computes.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hloscope.cli.app import (
    JsonOption,
    ModuleOption,
    RunArgument,
    _command,
    _print_json,
    _print_records,
    _stdout_is_terminal,
    app,
)


@app.command(rich_help_panel="Inspect")
@_command
def passes(
    run: RunArgument,
    module: ModuleOption = None,
    json: JsonOption = False,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="List every kernel and every op that runs alone (else the first 20), and "
            "JAX's trivial helper modules.",
        ),
    ] = False,
) -> None:
    """Which compiler pass made each kernel, and where compile time goes.

    Reads the per-pass dumps of `hloscope dump --passes` (or XLA's
    --xla_dump_hlo_pass_re): the passes that changed each module, in the order they
    ran, with instructions, fusions, kernels and launches after each; the pass that
    made each kernel (created, merged, grew, split, renamed); where each op that runs
    alone left a fusion; and, from XLA's own pass timers in the run's log, the time of
    each pass and the slowest passes.

    Example: hloscope dump --passes samples/dense_relu.py
             hloscope passes hloscope-runs/dense_relu-<timestamp>
    """
    from hloscope.analysis.passes import pass_stories
    from hloscope.runs import load_run

    stories = pass_stories(load_run(run), module or (), include_trivial=show_all)
    if json:
        from hloscope.render.passes import passes_doc

        _print_json(passes_doc(stories))
        return
    from hloscope.render.passes import story_text

    full = not _stdout_is_terminal()
    for story in stories:
        _print_records(story_text(story, show_all=show_all, full_names=full))
