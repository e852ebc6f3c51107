"""`hloscope profile` and `hloscope bench`: kernel times and eager vs XLA."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from hloscope.cli.app import (
    JsonOption,
    _command,
    _echo,
    _print,
    _print_json,
    _stdout_is_terminal,
    _width,
    app,
)


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
        from hloscope.render.timing_json import profile_doc, timings_doc

        if key is not None:
            _print_json(timings_doc(timings.modules[key]))
        else:
            _print_json(profile_doc(timings))
        return
    from hloscope.render.timing import profile_table

    width = _width() if _stdout_is_terminal() else None  # piped: whole names
    _print(profile_table(timings, module=key, top=top, holds=_holds(path, timings), width=width))


def _holds(path: Path, timings: Any) -> dict[str, Mapping[str, str]]:
    """What each kernel holds, by the profile's module key, where the path holds the
    HLO too (a run folder, a profile carrying it); else nothing. Each kernel's words are
    found as the table prints it."""
    from hloscope.errors import HloscopeError
    from hloscope.inspection import inspect_run
    from hloscope.render.holds import KernelHolds

    try:
        inspection = inspect_run(path, timings=False, bench=False)
    except HloscopeError:
        return {}
    keys = {id(t): key for key, t in timings.modules.items()}
    out: dict[str, Mapping[str, str]] = {}
    for m in inspection.modules:
        found = timings.for_dump(m.name, m.module_id)
        if found is not None and id(found) in keys:
            out[keys[id(found)]] = KernelHolds(m)
    return out


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
    op (jax.disable_jit) and jax.jit. PyTorch: eager on the CPU and torch_xla (a
    function or nn.Module, moved to the XLA device with its tensors). Each mode reports its first call (tracing and
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
    from hloscope.render.timing_json import bench_doc
    from hloscope.timing.bench import bench as run_bench
    from hloscope.timing.bench import load_target

    fn, args = load_target(target)
    result = run_bench(fn, *args, repeats=repeats, min_time=min_time, rounds=rounds, target=target)
    doc = bench_doc(result)
    if save is not None:
        from hloscope.inspection import BENCH_FILE
        from hloscope.render.json import dumps

        (save / BENCH_FILE).write_text(dumps(doc) + "\n", encoding="utf-8")
    if json:
        _print_json(doc)
        return
    from hloscope.render.timing import bench_table

    _print(bench_table(result))
    if save is not None:
        _echo(f"saved {save}/bench.json", err=True)
