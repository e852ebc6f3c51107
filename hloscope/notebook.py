"""Notebooks: a run and its modules as objects that show themselves.

`hloscope.open_run` and `hloscope.inspect` return a `RunView`; `run.main()` and
`run.module(...)` return `ModuleView`s. They are a facade: every table, list and
picture comes from one inspection of the run (`hloscope.inspection.inspect_run`), built
on first use and kept, and the same renderers the command line uses, so a notebook shows
what `hloscope report --html` and `hloscope graph` show. A `ModuleView` reads its
module from its run's inspection: nothing is analysed twice.

`hloscope.load_run` is the plain loader (`hloscope.runs.load_run`, a `Run`), for
scripts that call `hloscope.inspect_run` themselves; `RunView(run)` wraps such a run.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hloscope.analysis.fusion import Kernel
from hloscope.analysis.provenance import Placement, SourceOp
from hloscope.analysis.report import ModuleReport
from hloscope.errors import MissingDependencyError
from hloscope.hlo.model import Instruction, Shape, SourceLocation
from hloscope.inspection import Inspection, inspect_run
from hloscope.manifest import RunManifest
from hloscope.render.figures import module_figures
from hloscope.runs import ModuleDump, Run, load_run
from hloscope.timing.results import ModuleTiming

__all__ = ["SVG", "ModuleView", "RunView", "inspect", "open_run", "summary_row", "to_dataframe"]

RUN_FRAME_HEIGHT = 900
MODULE_FRAME_HEIGHT = 820


@dataclasses.dataclass(frozen=True)
class SVG:
    """An SVG picture that notebooks display inline.

    Attributes:
        data: The SVG document, sanitised (no scripts, no event handlers).

    Example:
        >>> svg = hloscope.open_run("tests/data/tf_dense_relu").graph()
        >>> isinstance(svg, hloscope.SVG), svg.data.lstrip().startswith('<svg')
        (True, True)
    """

    data: str

    def _repr_svg_(self) -> str:
        return self.data

    def __str__(self) -> str:
        return self.data

    def save(self, path: str | Path) -> Path:
        """Write the SVG to a file and return its path."""
        out = Path(path)
        out.write_text(self.data, encoding="utf-8")
        return out


class RunView:
    """A run in a notebook: its modules, summary, kernels, ops, diagrams and HTML report.

    Attributes:
        run: The run folder as loaded (`hloscope.runs.Run`).

    Example:
        >>> view = hloscope.RunView(hloscope.load_run("tests/data/jax_mlp"))
        >>> view.main().key, len(view.kernels())
        ('0030.jit_mlp', 11)
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        # One view per module, so each module is analysed once however often it is asked
        # for (`run.kernels()` then `run.ops()` is one analysis, not two).
        self._views: dict[str, ModuleView] = {}

    def _view(self, dump: ModuleDump) -> ModuleView:
        view = self._views.get(dump.key)
        if view is None:
            view = self._views[dump.key] = ModuleView(self, dump)
        return view

    def __repr__(self) -> str:
        return f"RunView({str(self.run.path)!r}, {len(self.run.modules)} modules)"

    @property
    def path(self) -> Path:
        """Where the run was loaded from."""
        return self.run.path

    @property
    def manifest(self) -> RunManifest:
        """How the run was made (`run.json`)."""
        return self.run.manifest

    @property
    def modules(self) -> tuple[ModuleView, ...]:
        """Every module of the run, in module-id order."""
        return tuple(self._view(d) for d in self.run.modules)

    @functools.cached_property
    def inspection(self) -> Inspection:
        """Every module analysed and timed (built on first use, then kept: the one
        inspection of the run that every view of it reads)."""
        return inspect_run(self.run)

    def summary(self) -> list[dict[str, Any]]:
        """One row per module, biggest first, trivial helper modules last: `key`,
        `name`, `platform`, `trivial`, the figures of `hloscope.render.figures`
        (`instructions_before`, `instructions_after`, `hlo_ops` (HLO ops before
        optimization), `kernels`, `fusions`, `launches` (per execution),
        `ops_per_kernel` (HLO ops per kernel), `source_ops` (the ops `ops()` lists),
        `alone`, and, when profiled, `executions`, `wall_per_execution`,
        `kernel_time_per_execution` in µs), `error` (None where a side is missing).
        `to_dataframe` turns them into a DataFrame."""
        ins = self.inspection
        return [summary_row(m, ins.timing(m.key)) for m in ins.modules]

    def main(self) -> ModuleView:
        """The biggest module that is not a trivial helper (what `graph` draws by default).

        Raises:
            UsageError: The run holds no modules.
        """
        return self._view(self.run.main())

    def module(self, pattern: str) -> ModuleView:
        """One module by key, name, id or unique part of its key (see `Run.module`)."""
        return self._view(self.run.module(pattern))

    def kernels(self) -> list[Kernel]:
        """The kernels of the main module (see `main`)."""
        return self.main().kernels()

    def ops(self) -> list[Placement]:
        """Where each source op of the main module went (see `main`)."""
        return self.main().ops()

    def graph(self, **options: Any) -> SVG:
        """The diagram of the main module (see `ModuleView.graph`)."""
        return self.main().graph(**options)

    def _repr_html_(self) -> str:
        from hloscope.render.html import iframe_html, report_html

        return iframe_html(report_html(self.inspection), height=RUN_FRAME_HEIGHT)


class ModuleView:
    """One module of a run in a notebook, read from its run's inspection.

    Attributes:
        view: The run it belongs to.
        dump: Its dump files.

    Example:
        >>> m = hloscope.open_run("tests/data/jax_mlp").module('jit_mlp')
        >>> m.key, len(m.kernels()), len(m.ops())
        ('0030.jit_mlp', 11, 27)
    """

    def __init__(self, view: RunView, dump: ModuleDump) -> None:
        self.view, self.dump = view, dump

    @property
    def run(self) -> Run:
        """The run folder it belongs to, as loaded."""
        return self.view.run

    def __repr__(self) -> str:
        """`ModuleView('0008.jit_mlp': 11 kernels, 11 launches, 18 ops, 2 alone)`; the
        figures once the module has been analysed (a repr reads no file)."""
        inspection = self.__dict__.get("inspection")
        if inspection is None:
            return f"ModuleView({self.key!r})"
        f = module_figures(inspection.modules[0])
        shown = [f"{f[n].text} {f[n].label}" for n in ("kernels", "launches", "source_ops")]
        return f"ModuleView({self.key!r}: {', '.join(shown)}, {f['alone'].text} alone)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleView) and (other.run.path, other.dump) == (
            self.run.path,
            self.dump,
        )

    def __hash__(self) -> int:
        return hash((self.run.path, self.dump))

    @property
    def key(self) -> str:
        """The module's key in its run (`0030.jit_mlp`)."""
        return self.dump.key

    @property
    def name(self) -> str:
        """The HloModule name."""
        return self.dump.name

    @functools.cached_property
    def inspection(self) -> Inspection:
        """The run's inspection narrowed to this module (`Inspection.select`)."""
        return self.view.inspection.select([self.dump.key])

    @property
    def report(self) -> ModuleReport:
        """Before vs after, with provenance and the parsed modules."""
        return self.inspection.modules[0]

    def summary(self) -> list[dict[str, Any]]:
        """This module's row of the run summary (see `RunView.summary`)."""
        return [summary_row(self.report, self.inspection.timing(self.key))]

    def kernels(self) -> list[Kernel]:
        """The kernels after optimization, in program order (empty without an
        after-optimization dump)."""
        after = self.report.after
        return list(after.kernels) if after else []

    def ops(self) -> list[Placement]:
        """Where each source op went: one `Placement` per op, first seen first."""
        provenance = self.report.provenance
        return list(provenance.placements) if provenance else []

    def graph(self, *, before: bool = False, **options: Any) -> SVG:
        """The module's Graphviz diagram as an SVG that displays inline.

        Args:
            before: Draw the ops before optimization (coloured by the kernel each went
                to) instead of the kernels after optimization.
            **options: `max_nodes`, `expand`, `around`, `depth`, `scope`, `both` (as
                `hloscope graph` takes them); kernel times come from the run's profile.

        Raises:
            UsageError: The module lacks the dump that side needs, or an option names
                nothing in it.
            MissingDependencyError: The Graphviz `dot` binary is not installed.
        """
        from hloscope.render import dot
        from hloscope.render.diagram import module_diagram
        from hloscope.render.html import sanitize_svg

        options.setdefault("timings", self.inspection.kernel_times(self.key))
        spec = module_diagram(self.report, stage="before" if before else "after", **options)
        return SVG(sanitize_svg(dot.render_svg(spec)))

    def _repr_html_(self) -> str:
        from hloscope.render.html import graphviz_diagrams, iframe_html, report_page

        page = report_page(
            self.inspection, diagrams=graphviz_diagrams, title=f"hloscope · {self.name}"
        )
        return iframe_html(page, height=MODULE_FRAME_HEIGHT)


def open_run(path: str | Path) -> RunView:
    """Load a run folder, a bare XLA dump folder, or one HLO file for a notebook
    (`hloscope.open_run`; `RunView(hloscope.load_run(path))` is the same).

    Raises:
        UsageError: The path holds no run.

    Example:
        >>> run = hloscope.open_run("tests/data/jax_mlp")
        >>> run.main().key, run.summary()[0]['kernels']
        ('0030.jit_mlp', 11)
    """
    return RunView(load_run(path))


def inspect(
    fn: Any, *example_args: Any, framework: str | None = None, save_to: str | Path | None = None
) -> RunView:
    """Compile `fn(*example_args)` with XLA in this process and show what it fused
    (`hloscope.inspect`; see `hloscope.capture.inprocess.inspect` for the arguments).

    Nothing is kept unless `save_to` names a folder: the HLO lives in a temporary folder
    that is removed with the returned view (or when Python exits). With
    `save_to="runs/layer"` the capture stays there as a run folder that `hloscope
    report runs/layer` and `hloscope.open_run` read later.

    Example:
        >>> import jax.numpy as jnp  # doctest: +SKIP
        >>> run = hloscope.inspect(lambda x: jnp.tanh(x) * 2, jnp.ones((8, 8)))  # doctest: +SKIP
        >>> run.main().kernels()  # doctest: +SKIP
    """
    from hloscope.capture.inprocess import inspect as capture

    return RunView(capture(fn, *example_args, framework=framework, save_to=save_to))


def summary_row(m: ModuleReport, timing: ModuleTiming | None = None) -> dict[str, Any]:
    """A module's row of `RunView.summary`: its figures (`render.figures`), the values
    the terminal, JSON and HTML views print."""
    figures = {name: f.value for name, f in module_figures(m, timing).items()}
    return {
        "key": m.key,
        "name": m.name,
        "platform": m.platform,
        "trivial": m.trivial,
        **figures,
        "error": m.error or None,
    }


def to_dataframe(rows: Iterable[Any]) -> Any:
    """A pandas DataFrame of rows from `summary`, `kernels` or `ops`.

    Dataclass rows become one column per field; shapes, instructions, source ops and
    locations become their text.

    Raises:
        MissingDependencyError: pandas is not installed.

    Example:
        >>> rows = hloscope.open_run("tests/data/jax_mlp").summary()
        >>> df = hloscope.to_dataframe(rows)  # doctest: +SKIP
    """
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError(
            "to_dataframe needs pandas; install it with `pip install pandas` (the tables "
            "are plain lists of rows without it)"
        ) from None
    return pd.DataFrame([_row(r) for r in rows])


def _row(r: Any) -> dict[str, Any]:
    if isinstance(r, Mapping):
        return {str(k): _cell(v) for k, v in r.items()}
    if dataclasses.is_dataclass(r) and not isinstance(r, type):
        return {f.name: _cell(getattr(r, f.name)) for f in dataclasses.fields(r)}
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # a named tuple (`Instruction`)
        return {name: _cell(v) for name, v in zip(r._fields, r, strict=True)}
    return {"value": _cell(r)}


def _cell(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, Shape):
        return v.text
    if isinstance(v, Instruction):
        return v.name
    if isinstance(v, SourceOp):
        return v.label
    if isinstance(v, SourceLocation):
        return str(v)
    if isinstance(v, tuple | list):
        return [_cell(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _cell(x) for k, x in v.items()}
    return str(v)
