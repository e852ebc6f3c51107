"""Result objects -> one self-contained HTML page: the `hloscope report --html` file.

`report_page` turns an `Inspection` (the analysed run with its timings, `bench` results
and HLO text) and its Graphviz diagrams into a single HTML file that needs no server and no network: CSS, JS
and data are inline, a Content-Security-Policy lets only that inline code run, and every
string from HLO or user code reaches the page as JSON data that the script turns into
DOM text, never into markup. Notebooks show the same page in an iframe (`iframe_html`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import resources
from itertools import islice
from pathlib import Path
from typing import Any, Protocol, cast

from hloscope.analysis.memo import Later
from hloscope.analysis.report import ModuleReport, drawn_after, draws_after
from hloscope.errors import HloscopeError, UsageError
from hloscope.hlo.model import HloModule
from hloscope.hlo.printer import computation_text, instruction_text
from hloscope.inspection import Inspection
from hloscope.render.compilations import (
    cold_start_line,
    compilations_page_doc,
    module_compile_doc,
    run_outcome,
)
from hloscope.render.diagram import PAGE_MAX_NODES, SIDES
from hloscope.render.figures import figure_cells, module_figures
from hloscope.render.holds import kernel_holds
from hloscope.render.json import SCHEMA_VERSION, module_fields, roofline_keys, run_doc
from hloscope.render.json_stream import Fields, Items, Records, Value, built
from hloscope.render.passes import story_doc
from hloscope.render.timing_json import timings_doc
from hloscope.runs import ModuleDump, Run
from hloscope.status import step
from hloscope.timing.roofline import Peaks

__all__ = [
    "DIAGRAM_MAX_NODES",
    "Diagram",
    "Diagrams",
    "DiagramsFn",
    "Embedded",
    "embed_json",
    "graphviz_diagrams",
    "iframe_html",
    "page_after",
    "page_data",
    "report_html",
    "report_page",
    "sanitize_svg",
    "spill_folder",
    "write_html",
]

# The HLO shown for one kernel is cut at these sizes; the page says how much was left out.
HLO_MAX_LINES = 400
HLO_MAX_CHARS = 60_000
# Heaviest kernels the overview charts, over all modules.
TOP_KERNELS = 20


@dataclass(frozen=True)
class Diagram:
    """One drawn diagram and how its SVG nodes relate to kernels.

    Attributes:
        svg: The SVG document (Graphviz output).
        nodes: SVG element id of each node -> the kernels it stands for (a kernel node:
            itself; an op: the kernel it went to; a collapsed group: its kernels).
        notes: What the diagram left out or collapsed, one line each.
    """

    svg: str
    nodes: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Diagrams:
    """The two diagrams of one module.

    Attributes:
        after: The kernel diagram (after optimization), or None.
        before: The op diagram (before optimization), or None.
        note: Why a diagram is missing ("" when nothing to say).
    """

    after: Diagram | None = None
    before: Diagram | None = None
    note: str = ""


class DiagramsFn(Protocol):
    """Draws one module's diagrams from its report and its kernel times (µs per
    execution), only those of `sides` (of `diagram.SIDES`); `graphviz_diagrams` is the
    one the report uses."""

    def __call__(
        self, m: ModuleReport, times: Mapping[str, float] | None, *, sides: Collection[str] = ...
    ) -> Diagrams: ...


# ---------------------------------------------------------------------------------------
# Entry points


def report_html(
    inspection: Inspection,
    *,
    diagrams: bool = True,
    title: str | None = None,
    peaks: Peaks | None = None,
) -> str:
    """The HTML report of an inspected run.

    Args:
        inspection: From `inspect_run`.
        diagrams: Draw the Graphviz diagrams (a missing `dot` binary leaves a note).
        title: The page title; the run's script or folder name by default.
        peaks: The device's roofs, for the roofline plot of a profiled run.

    Returns:
        The page, one self-contained HTML document.

    Example:
        >>> inspection = hloscope.inspect_run("tests/data/tf_dense_relu")
        >>> hloscope.report_html(inspection, diagrams=False).startswith('<!DOCTYPE html>')
        True
    """
    draw = graphviz_diagrams if diagrams else None
    return report_page(inspection, diagrams=draw, title=title, peaks=peaks)


def write_html(
    inspection: Inspection,
    path: str | Path,
    *,
    diagrams: bool = True,
    title: str | None = None,
    peaks: Peaks | None = None,
) -> Path:
    """Write `report_html(inspection, ...)` to a file (`hloscope report --html`), piece by
    piece: the page of a 100 MB module is hundreds of MB, never held whole.

    Returns:
        The file written.

    Raises:
        UsageError: The file cannot be written (missing folder, permissions).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / 'report.html'
        >>> inspection = hloscope.inspect_run("tests/data/tf_dense_relu")
        >>> hloscope.write_html(inspection, out, diagrams=False) == out
        True
    """
    out = Path(path)
    draw = graphviz_diagrams if diagrams else None
    chunks = _report_chunks(inspection, draw, title, True, peaks)  # the data found first
    step(f"writing {out}")
    try:
        with out.open("w", encoding="utf-8") as f:
            for chunk in chunks:
                f.write(chunk)
    except OSError as e:
        raise UsageError(
            f"--html {out}: cannot write ({e.strerror}); give a path in an existing folder"
        ) from None
    return out


def report_page(
    inspection: Inspection,
    *,
    diagrams: DiagramsFn | None = None,
    title: str | None = None,
    open_first: bool = True,
    peaks: Peaks | None = None,
) -> str:
    """Build the HTML page of an inspected run.

    Args:
        inspection: The analysed run, with its timings, bench results and HLO text.
        diagrams: Draws each module's diagrams; None leaves them out.
        title: The page title.
        open_first: Open the biggest module's section when the page loads.
        peaks: The device's roofs (the roofline plot needs them and kernel times).

    Returns:
        The page.
    """
    return "".join(_report_chunks(inspection, diagrams, title, open_first, peaks))


def _report_chunks(
    inspection: Inspection,
    diagrams: DiagramsFn | None,
    title: str | None,
    open_first: bool,
    peaks: Peaks | None,
) -> Iterator[str]:
    """`report_page`'s page in pieces: its data found now, its text made as it is read
    (each module's kernels and provenance among it, `_page_data`)."""
    data = _page_data(inspection, diagrams, peaks)
    data["overview"]["open_first"] = open_first
    return _page(data, title or _title(inspection))


# What the overview keeps of each module document.
_SUMMARY_KEYS = (
    "key", "name", "platform", "trivial", "before", "after", "ops_per_kernel", "alone", "error",
    "function", "compilation", "inputs", "outputs", "compile_s",
)  # fmt: skip


def page_data(
    inspection: Inspection, *, diagrams: DiagramsFn | None = None, peaks: Peaks | None = None
) -> dict[str, Any]:
    """The data the page embeds: an overview document and one document per module.

    The overview is `report_doc`'s `run` plus each module's summary (with its
    `render.figures` as the page prints them: `cells` of the modules table and
    `figures`); each module document is `module_doc` plus those figures, what each
    kernel holds (`holds`), the fused instructions and HLO text of every kernel (each an
    `Embedded` mapping where a worker process wrote it) and the diagrams. Modules are
    embedded separately so the page parses a module's data only when its section is
    opened.

    Returns:
        `{"overview": {...}, "modules": [{...}, ...]}`, modules in report order.
    """
    data = _page_data(inspection, diagrams, peaks)
    data["modules"] = [built(doc) for doc in data["modules"]]
    return data


def _page_data(
    inspection: Inspection, diagrams: DiagramsFn | None, peaks: Peaks | None
) -> dict[str, Any]:
    """`page_data` with each module's kernels and provenance (`Items`) made only as the
    page is written (`embed_chunks`): after the diagrams are drawn, a batch at a time.
    Made here, the 318k placements of a 107 MB module were 216 MB of dicts, held while
    both sides' diagrams were drawn."""
    report = inspection.report
    dumps = {d.key: d for d in report.run.modules}
    summaries: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    heaviest: list[dict[str, Any]] = []
    for index, m in enumerate(report.modules):
        measured = inspection.timing(m.key)
        timing = timings_doc(measured) if measured is not None else None
        extra = module_compile_doc(inspection.compilations, m.key)
        doc = module_fields(m, timing=timing, extra=extra | roofline_keys(inspection, m.key, peaks))
        # Helper modules get no diagrams: they are many, tiny, and would dominate the file.
        draw = diagrams if not m.trivial else None
        extras = _module_extras(m, dumps.get(m.key), draw, inspection.kernel_times(m.key))
        story = inspection.passes.get(m.key)
        extras["passes"] = story_doc(story, extras=True) if story is not None else None
        # the figures as every view prints them, and what each kernel holds, in words
        figures = module_figures(m, measured)
        extras["figures"] = [
            {"name": f.name, "label": f.label, "text": f.text} for f in figures.values()
        ]
        extras["holds"] = holds = kernel_holds(m)
        doc.update(extras)
        details.append(doc)
        summaries.append(
            {key: doc[key] for key in _SUMMARY_KEYS}
            | {
                "index": index,
                "timing": _timing_summary(timing),
                "cells": figure_cells(figures),
                "figures": extras["figures"],
            }
        )
        if timing is not None:
            # each kernel's kind as its document gives it, read from the analysis: the
            # documents (`Items`) are made as the page is written, not here as well
            kinds = {k.name: k.kind for k in m.after.kernels} if m.after is not None else {}
            for k in timing.get("kernels", ()):
                heaviest.append(
                    {
                        "module": m.key,
                        "index": index,
                        "kernel": k.get("name"),
                        "holds": holds.get(k.get("name"), ""),
                        "kind": kinds.get(k.get("name"), "?"),
                        "total_us": k.get("total_us"),
                        "mean_us": k.get("mean_us"),
                        "calls": k.get("calls"),
                        "share": k.get("share"),
                    }
                )
    heaviest.sort(key=lambda k: -(k["total_us"] or 0))
    run = report.run
    comps = inspection.compilations
    cold = cold_start_line(comps)
    indices = {m.key: i for i, m in enumerate(report.modules)}
    overview = {
        "schema_version": SCHEMA_VERSION,
        "run": run_doc(run) | _run_extras(run) | {"cold_start": cold.plain if cold else None},
        "modules": summaries,
        "compilations": compilations_page_doc(comps, indices),
        "torch_xla": _torch_xla_doc(inspection, indices),
        "heaviest": heaviest[:TOP_KERNELS],
        "timed": bool(inspection.module_timings),
        "bench": _bench(inspection),
    }
    return {"overview": overview, "modules": details}


def _torch_xla_doc(inspection: Inspection, indices: Mapping[str, int]) -> dict[str, Any] | None:
    """A PyTorch/XLA run's graphs for the page (`render.torch_xla`); None for others."""
    if inspection.torch_xla is None:
        return None
    from hloscope.render.torch_xla import torch_xla_page_doc

    return torch_xla_page_doc(inspection.torch_xla, indices)


def _timing_summary(timing: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if timing is None:
        return None
    return {
        key: timing.get(key)
        for key in ("executions", "total_us", "kernel_us", "mean_us", "median_us")
        if key in timing
    }


def _bench(inspection: Inspection) -> dict[str, Any] | None:
    """The page's eager-vs-XLA section: the run's `bench.json`, or why it was not read."""
    if inspection.bench is not None:
        return inspection.bench.to_json()
    return {"error": inspection.bench_error} if inspection.bench_error else None


def _run_extras(run: Run) -> dict[str, Any]:
    return {"modules_total": len(run.modules), "outcome": run_outcome(run.manifest)}


# ---------------------------------------------------------------------------------------
# Per-module data: fused instructions, HLO text, diagrams


def _module_extras(
    m: ModuleReport,
    dump: ModuleDump | None,
    draw: DiagramsFn | None,
    times: Mapping[str, float] | None,
) -> dict[str, Any]:
    """A module's files, the fused instructions and HLO of its kernels, and its diagrams
    (when `draw`).

    When its after module was parsed by a worker process and is not here (the two
    sides of a big module are read at once, `analysis.pool.beside`), all that reads it
    is done there: by that worker, when it was asked to (`inspect_run`'s `draw_after`
    of `page_after`, which draws with `graphviz_diagrams` and no kernel times), else
    in another worker (`analysis.pool.elsewhere`): the kernels' instructions and HLO,
    the kernel diagram, and first the kernel index that colours the op diagram, which
    is drawn here meanwhile. This process never parses the after module then.
    """
    extras: dict[str, Any] = {
        "files": {
            "before": str(dump.before) if dump and dump.before else None,
            "after": str(dump.after) if dump and dump.after else None,
        },
        "fused": {},
        "hlo": {},
        "diagrams": None,
    }
    if draws_after(m) and (draw is None or (draw is graphviz_diagrams and times is None)):
        # the worker that analysed the after side finds its part (`page_after`): the
        # op diagram is drawn here meanwhile, and what the page holds before that part
        # written while the worker ends it (`Value`s, waited for as they are reached)
        before = _diagrams_doc(draw, m, times, ("before",)) if draw is not None else None
        half = Value(partial(_after_half, m))
        for key in ("fused", "hlo"):
            extras[key] = Value(partial(_after_part, half, key, extras[key]))
        if before is not None:
            extras["diagrams"] = Value(partial(_after_diagrams, half, before))
    elif draw is None:
        extras.update(_after_extras(m))
    elif _apart(m):
        after, before = _drawn_apart(m, draw, times)
        extras.update(after[0])
        extras["diagrams"] = _joined(after[1], before)
    else:
        extras.update(_after_extras(m))
        extras["diagrams"] = _diagrams_doc(draw, m, times, SIDES)
    return extras


def _after_half(m: ModuleReport) -> _Half:
    """The after half of a module's page, as the worker that drew it sent it, else (it
    died) found here."""
    found = cast("_Half | None", drawn_after(m))
    return found if found is not None else page_after(m)


def _after_part(half: Value, key: str, default: Any) -> Any:
    """Part `key` of an after half (`_after_half`), `default` where it has none."""
    found: _Half = half.get()
    return found[0].get(key, default)


def _after_diagrams(half: Value, before: dict[str, Any]) -> dict[str, Any]:
    """The diagrams doc of an after half (`_after_half`) and the `before` one."""
    found: _Half = half.get()
    return _joined(found[1], before)


def page_after(m: ModuleReport, spill: Path | None = None) -> _Half:
    """The after side's part of a module's page, as `write_html` draws it: its kernels'
    instructions and HLO (each already written as the page embeds it, `Embedded`), and
    its kernel diagram, without kernel times.

    `inspect_run(draw_after=page_after)` has the worker process that analyses a big
    module's after side find it (`hloscope.analysis.report.drawn_after`), so that the
    page of a run without timings draws only the op diagram here: what `hloscope
    report --html` does.

    Args:
        m: The module's report, its after module parsed.
        spill: A folder (`spill_folder`) to write the kernels' instructions and HLO to
            as they are made: then neither this process nor the one that writes the
            page holds them (130 MB of text for a 153 MB module), and the page copies
            them in from there.
    """
    extras = None
    if spill is not None and _unique_kernels(m):
        try:
            extras = {key: Embedded.spilled(items, spill) for key, items in _after_items(m).items()}
        except OSError:  # the disk is full, or the folder gone: held here then, as before
            extras = None
    if extras is None:
        extras = {key: Embedded.of(doc) for key, doc in _after_extras(m).items()}
    return extras, _diagrams_doc(graphviz_diagrams, m, None, ("after",))


@contextmanager
def spill_folder(page: str | Path) -> Iterator[Path | None]:
    """A folder beside `page` for `page_after` to write to, removed with what it holds
    when the block ends; None where none can be made there (then nothing is spilled,
    and writing the page says why it cannot)."""
    try:  # an error that stops the command is not hidden by one removing the folder
        folder = tempfile.TemporaryDirectory(
            prefix=".hloscope-page-", dir=Path(page).parent, ignore_cleanup_errors=True
        )
    except OSError:
        yield None
        return
    with folder as name:
        yield Path(name)


class Embedded(Later[str, Any]):
    """A dict of the page, already written as the page embeds it (`embed_json`'s text),
    and read back from that text when first asked as a mapping.

    A worker process writes the kernels' instructions and HLO of a big module this way
    (`page_after`): it sends one string, not a hundred thousand lists, and this process
    neither reads them back nor writes them again (for the page of a 153 MB module, the
    JSON written here took 2.7 s instead of 3.8 s). Spilled (`spilled`), the text is a
    file that the page copies in (`chunks`), held by neither process.
    """

    def __init__(self, text: str | None, path: Path | None = None) -> None:
        super().__init__(partial(_read_back, text, path))
        self._text = text
        self.path = path

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Embedded:
        """`doc`, written."""
        return cls(embed_json(doc))

    @classmethod
    def spilled(cls, items: Iterable[tuple[str, Any]], folder: Path) -> Embedded:
        """`of(dict(items))`, written an item at a time to a new file in `folder` (the
        keys are distinct)."""
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", newline="", dir=folder, suffix=".json", delete=False
        ) as f:
            for chunk in _object_chunks(items):
                f.write(chunk)
        return cls(None, Path(f.name))

    @property
    def text(self) -> str:
        """The written text (read from its file, spilled)."""
        return _written_text(self._text, self.path)

    def chunks(self) -> Iterator[str]:
        """The written text in pieces (a few MB each, spilled)."""
        if self.path is None:
            yield self.text
            return
        with self.path.open(encoding="utf-8", newline="") as f:
            while chunk := f.read(_SPILL_CHUNK):
                yield chunk

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Embedded, (self._text, self.path))


_SPILL_CHUNK = 1 << 22  # characters


def _written_text(text: str | None, path: Path | None) -> str:
    if path is None:
        assert text is not None
        return text
    return path.read_text(encoding="utf-8")


def _read_back(text: str | None, path: Path | None) -> Any:
    return json.loads(_written_text(text, path))


def _object_chunks(items: Iterable[tuple[str, Any]], batch: int = 1024) -> Iterator[str]:
    """`embed_json(dict(items))` in pieces of `batch` items, for distinct string keys
    (the same text: compact JSON puts only a comma between entries, as `_embed_items`
    writes an array)."""
    opening = "{"
    made = iter(items)
    while chunk := dict(islice(made, batch)):
        yield opening + embed_json(chunk)[1:-1]
        opening = ","
    yield "{}" if opening == "{" else "}"


def _unique_kernels(m: ModuleReport) -> bool:
    """Whether no two kernels of a module share a name (as XLA names them), so that
    their items can be written without a dict (`_object_chunks`)."""
    names = [k.name for k in m.after.kernels] if m.after is not None else []
    return len(set(names)) == len(names)


def _after_extras(m: ModuleReport) -> dict[str, Any]:
    """The fused instructions and HLO text of each kernel (both read the after module)."""
    return {key: dict(items) for key, items in _after_items(m).items()}


def _after_items(m: ModuleReport) -> dict[str, Iterator[tuple[str, Any]]]:
    """`_after_extras`, each kernel's made as it is read."""
    if m.after is None:
        return {}
    kernels = m.after.kernels
    extras: dict[str, Iterator[tuple[str, Any]]] = {
        "fused": ((k.name, [[i.opcode, i.name, i.shape.text] for i in k.ops]) for k in kernels)
    }
    if m.after_module is not None:
        extras["hlo"] = _kernel_hlo(m.after_module, m)
    return extras


def _apart(m: ModuleReport) -> bool:
    """Whether a module's after-side extras are found in a worker process: its after
    module is not in this process (a worker parsed it), its before module is (the op
    diagram is drawn here), and a worker can be forked."""
    from hloscope.analysis import pool

    return (
        m.provenance is not None
        and m.after is not None
        and m.before_module is not None
        and not pool.parsed_here(m.after_module)
        and pool.may_split()
    )


_Half = tuple[dict[str, Any], dict[str, Any]]  # the after side's extras and diagram doc


def _drawn_apart(
    m: ModuleReport, draw: DiagramsFn, times: Mapping[str, float] | None
) -> tuple[_Half, dict[str, Any]]:
    """The after side's extras and diagram, found in a worker process, and the before
    side's diagram, drawn here meanwhile with the worker's kernel index."""
    from hloscope.analysis import pool
    from hloscope.analysis.provenance import expect_index, kernel_index

    assert m.provenance is not None and m.after_module is not None

    def after_half(index: object) -> _Half:
        return _after_extras(m), _diagrams_doc(draw, m, times, ("after",))

    away = pool.elsewhere(partial(kernel_index, m.after_module, m.provenance, m.after), after_half)
    try:
        expect_index(m.provenance, away.result)  # the op diagram's colours, read last
        before = _diagrams_doc(draw, m, times, ("before",))
        found = away.then()
    finally:
        away.close()
    return (found if found is not None else after_half(None)), before  # else it died


def _joined(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """The diagrams doc of the two sides drawn apart, as `_diagrams_doc` of both: a note
    of either (a missing `dot`) leaves both out."""
    note = after["note"] or before["note"]
    if note:
        return {"after": None, "before": None, "note": note}
    return {"after": after["after"], "before": before["before"], "note": ""}


def _diagrams_doc(
    draw: DiagramsFn, m: ModuleReport, times: Mapping[str, float] | None, sides: Sequence[str]
) -> dict[str, Any]:
    """The drawn `sides` of a module, as the page embeds them."""
    try:
        d = draw(m, times, sides=sides)
    except HloscopeError as e:
        d = Diagrams(note=f"no diagrams: {e}")
    drawn = {"after": d.after, "before": d.before}
    return {
        side: {"svg": sanitize_svg(dg.svg), "nodes": dict(dg.nodes), "notes": list(dg.notes)}
        if (dg := drawn[side]) is not None
        else None
        for side in sides
    } | {"note": d.note}


def _kernel_hlo(module: HloModule, m: ModuleReport) -> Iterator[tuple[str, str]]:
    """Each kernel's HLO, printed from the parsed module: its own instruction (kind,
    backend_config), then the fused computation(s) it calls, without metadata."""
    assert m.after is not None
    comps = module.computation_map
    for k in m.after.kernels:
        comp = comps.get(k.computation)
        inst = comp.by_name.get(k.name) if comp else None
        text = instruction_text(inst) if inst is not None else ""
        if k.fused_computation and k.fused_computation in comps:
            names = _nested_fusions(module, k.fused_computation)
            text = "\n\n".join([text, *(computation_text(comps[n]) for n in names)])
        yield k.name, _cap(text.strip("\n"))


def _nested_fusions(module: HloModule, name: str) -> list[str]:
    """A fused computation and the fused computations it calls, depth first."""
    comps = module.computation_map
    seen: list[str] = []
    # a stack, not a function calling itself: each one a reference cycle, which the
    # paused collector would keep (one per kernel of the page's after half)
    todo = [(name, 0)]
    while todo:
        n, depth = todo.pop()
        if n in seen or n not in comps or depth > 16:
            continue
        seen.append(n)
        callees = [c for i in comps[n].instructions if i.opcode == "fusion" for c in i.calls()]
        todo.extend((callee, depth + 1) for callee in reversed(callees))
    return seen


def _cap(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= HLO_MAX_LINES and len(text) <= HLO_MAX_CHARS:
        return text
    kept = "\n".join(lines[:HLO_MAX_LINES])[:HLO_MAX_CHARS]
    left = len(lines) - kept.count("\n") - 1
    return kept + f"\n… {left} more lines (see the dump file)"


# ---------------------------------------------------------------------------------------
# Diagrams

DIAGRAM_MAX_NODES = PAGE_MAX_NODES
"""Node budget of each diagram in the page (bigger graphs are collapsed by name scope)."""


def graphviz_diagrams(
    m: ModuleReport,
    times: Mapping[str, float] | None = None,
    *,
    max_nodes: int = DIAGRAM_MAX_NODES,
    sides: Collection[str] = SIDES,
) -> Diagrams:
    """Draw a module's kernel and op diagrams with `hloscope.render.diagram` and `dot`.

    Args:
        m: The module's report (with its parsed modules).
        times: µs per execution of each kernel, to show on the kernel diagram.
        max_nodes: Node budget of each diagram.
        sides: Only these diagrams (of `diagram.SIDES`).

    Returns:
        The diagrams; a missing side (no dump for it) is None. A missing `dot` binary
        gives no diagrams and a note saying what to install, not an error.
    """
    from hloscope.errors import MissingDependencyError
    from hloscope.render import diagram, dot

    specs = diagram.module_diagrams(m, timings=times or None, max_nodes=max_nodes, sides=sides)
    try:
        out = {side: _diagram(dot, spec) for side, spec in specs.items()}
    except MissingDependencyError as e:
        return Diagrams(note=f"no diagrams: {e}")
    return Diagrams(after=out.get("after"), before=out.get("before"))


def _diagram(dot: Any, spec: Any) -> Diagram:
    """Render a `DiagramSpec` to SVG (in memory) and map its SVG node ids to kernels."""
    svg = dot.render_svg(spec)
    # the SVG element id is the node id as `to_dot` escapes it
    nodes = {dot.safe_id(node): kernels for node, kernels in spec.node_kernels.items()}
    return Diagram(svg=svg, nodes=nodes, notes=tuple(spec.notes))


# ---------------------------------------------------------------------------------------
# Safe embedding


_SVG_NS = "http://www.w3.org/2000/svg"
_XLINK_NS = "http://www.w3.org/1999/xlink"
# Elements an SVG diagram may hold; anything else (script, foreignObject, iframe, use of
# external resources, animation that can set attributes) is dropped with its content.
_SVG_ELEMENTS = frozenset(
    {
        "svg", "g", "title", "desc", "path", "polygon", "polyline", "ellipse", "circle",
        "rect", "line", "text", "tspan", "defs", "linearGradient", "radialGradient",
        "stop", "clipPath", "marker", "a",
    }
)  # fmt: skip


def sanitize_svg(svg: str) -> str:
    """Keep only drawing elements and plain attributes of an SVG document.

    Scripts, `foreignObject`, event-handler attributes (`on*`), `style` attributes (the
    page's Content-Security-Policy forbids them) and links that are not fragment links
    are removed; the XML prologue and DOCTYPE are dropped. The page's script sanitises
    again when it inserts the SVG; this pass also protects notebooks, which insert SVG
    as it is.

    Args:
        svg: An SVG document (Graphviz output).

    Returns:
        The SVG element serialised, or "" when the text is not well-formed SVG.
    """
    text = re.sub(r"<\?xml[^>]*\?>|<!DOCTYPE[^>[]*(\[[^\]]*\])?\s*>", "", svg)
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return ""
    if _local(root.tag) != "svg":
        return ""
    _clean(root)
    return _serialize(root)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _clean(elem: ET.Element) -> None:
    for child in list(elem):
        if not isinstance(child.tag, str) or _local(child.tag) not in _SVG_ELEMENTS:
            elem.remove(child)
        else:
            _clean(child)
    for attr in list(elem.attrib):
        name = _local(attr).lower()
        value = elem.attrib[attr]
        if (
            name.startswith("on")
            or name == "style"
            or (name == "href" and not value.startswith("#"))
            or "javascript:" in value.lower().replace(" ", "")
        ):
            del elem.attrib[attr]


def _serialize(elem: ET.Element) -> str:
    """Serialise without ElementTree's `ns0:` prefixes: SVG as the default namespace."""
    parts: list[str] = []

    def name_of(tag: str) -> str:
        if tag.startswith("{"):
            ns, local = tag[1:].split("}", 1)
            if ns == _XLINK_NS:
                return f"xlink:{local}"
            return local
        return tag

    def write(e: ET.Element, top: bool) -> None:
        tag = name_of(e.tag)
        attrs = "".join(
            f' {name_of(k)}="{html.escape(v, quote=True)}"' for k, v in e.attrib.items()
        )
        if top:
            attrs = f' xmlns="{_SVG_NS}" xmlns:xlink="{_XLINK_NS}"' + attrs
        parts.append(f"<{tag}{attrs}>")
        if e.text:
            parts.append(html.escape(e.text, quote=False))
        for child in e:
            write(child, False)
            if child.tail:
                parts.append(html.escape(child.tail, quote=False))
        parts.append(f"</{tag}>")

    write(elem, True)
    return "".join(parts)


_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _finite(doc: Any) -> Any:
    """NaN and infinities (which JSON cannot hold) as null, anywhere in a document."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, Mapping):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_finite(v) for v in doc]
    return doc


def embed_json(doc: Any) -> str:
    """JSON for a `<script type="application/json">` block that no data can break out of.

    `<`, `>` and `&` (so no `</script>` or `<!--` can end or change the block) and
    U+2028/U+2029 are written as `\\uXXXX` escapes, which JSON.parse reads back as the
    same characters.
    """
    try:  # seldom needed: a document is copied as plain lists and dicts without NaN
        text = _compact(doc)  # and infinities only when it holds other kinds or those
    except (ValueError, TypeError):
        text = _compact(_finite(doc))
    return _escaped(text)


def _escaped(text: str) -> str:
    """JSON text with what could end or change a `<script>` block escaped (`embed_json`)."""
    # A search per character, most finding none, and a replace where one does: a
    # fifth of a regex's time on the 330 MB page of a 107 MB module (0.2 s against
    # 0.9 s). No escape holds a character another one replaces.
    for unsafe, escape in _JSON_ESCAPES.items():
        if unsafe in text:
            text = text.replace(unsafe, escape)
    return text


def embed_chunks(doc: Any, depth: int = 2) -> Iterator[str]:
    """`embed_json(built(doc))` in pieces: a dict of string keys is written entry by
    entry, to `depth` levels, so that only one entry's text is held at a time (a
    module's kernels' HLO is a hundred MB on a 100 MB module), unless it maps them to
    strings short in all (`_short_strings`), and an `Items` array a batch of items at a
    time, as they are made."""
    kind = type(doc)
    if kind is Embedded:
        yield from doc.chunks()
    elif kind is Value:  # found only now: what comes before it is written
        yield from embed_chunks(doc.get(), depth)
    elif depth and isinstance(doc, Items):  # `Records` too
        yield from _embed_items(doc)
    elif kind is dict and _short_strings(doc):  # each kernel's words: 44k entries at once
        yield embed_json(doc)
    elif depth and (kind is dict or kind is Fields) and doc and all(type(k) is str for k in doc):
        opening = "{"
        for key, value in doc.items():
            yield opening + embed_json(key) + ":"
            yield from embed_chunks(value, depth - 1)
            opening = ","
        yield "}"
    else:
        yield embed_json(built(doc))


def _short_strings(doc: dict[Any, Any], most: int = _SPILL_CHUNK) -> bool:
    """Whether `doc` maps strings to strings of at most `most` characters in all: its
    text is written whole (the same text as entry by entry), not in a piece per key and
    value."""
    size = 0
    for key, value in doc.items():
        if type(key) is not str or type(value) is not str:
            return False
        size += len(value)
        if size > most:
            return False
    return True


def _embed_items(items: Iterable[Any], batch: int = 4096) -> Iterator[str]:
    """`embed_json(built(items))` of an array, `batch` items at a time (the same text:
    compact JSON puts only a comma between items, and each escape is one character's)."""
    opening = "["
    if isinstance(items, Records):  # each object's text straight from its row
        rows, text = iter(items.rows()), items.text
        while chunk := list(islice(rows, batch)):
            try:
                yield opening + _escaped(",".join([text(row, None) for row in chunk]))
            except (ValueError, TypeError):  # a NaN, an infinity, another mapping (a
                # hand-made row): written as `embed_json` writes its document
                yield opening + embed_json([items.doc(row) for row in chunk])[1:-1]
            opening = ","
    else:
        made = iter(items)
        while chunk := [built(item) for item in islice(made, batch)]:
            yield opening + embed_json(chunk)[1:-1]
            opening = ","
    yield "[]" if opening == "[" else "]"


def _compact(doc: Any) -> str:
    """`doc` as compact JSON; ValueError if it holds NaN or an infinity, TypeError if it
    holds a mapping other than a dict."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ---------------------------------------------------------------------------------------
# The page


def _asset(name: str) -> str:
    return (resources.files("hloscope.render") / "assets" / name).read_text(encoding="utf-8")


# The page script's pieces in assets/report/, one job each. They share one scope, so they
# are joined in this order inside one function; dom.js opens with the script's contract
# (strings from HLO or user code reach the DOM as text, never as markup).
_REPORT_JS = (
    "dom.js",
    "table.js",
    "diagram.js",
    "overview.js",
    "torch_xla.js",
    "module.js",
    "page.js",
)


def _script() -> str:
    """roofline.js, then the report's pieces in one `(function () { ... })();`."""
    pieces = "\n".join(_asset(f"report/{name}") for name in _REPORT_JS)
    report = '(function () {\n  "use strict";\n\n' + pieces + "})();\n"
    return _asset("roofline.js") + "\n" + report


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def _title(inspection: Inspection) -> str:
    script = inspection.run.manifest.script
    name = Path(str(script)).name if script else inspection.run.path.name
    return f"hloscope report · {name}"


def _page(data: Mapping[str, Any], title: str) -> Iterator[str]:
    """The page of `data`, in pieces: its head, each JSON block (in `embed_chunks`)
    and its script."""
    css, js = _asset("report.css"), _script()
    # The assets are ours; this guards against an edit that would end the block early.
    assert "</style" not in css.lower() and "</script" not in js.lower()
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src '{_sha256(js)}'",
            f"style-src '{_sha256(css)}'",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    yield "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="hloscope">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{css}</style>",
            "</head>",
            "<body>",
            '<div id="hs-app" class="hs-app"><p class="hs-loading">Loading the report…</p></div>',
            "<noscript><p>This report is built by JavaScript in the page; allow it to run "
            "(the data is embedded below as JSON).</p></noscript>",
            "",
        ]
    )
    blocks = [("hs-overview", data["overview"])]
    blocks += [(f"hs-module-{i}", doc) for i, doc in enumerate(data["modules"])]
    for name, doc in blocks:
        yield f'<script type="application/json" id="{name}">'
        yield from embed_chunks(doc)
        yield "</script>\n"
    yield f"<script>{js}</script>\n</body>\n</html>\n"


def iframe_html(page: str, *, height: int = 720) -> str:
    """Wrap a page in an `<iframe srcdoc>` for a notebook cell.

    The page keeps its own styles, script and Content-Security-Policy inside the frame,
    so it cannot disturb the notebook and the notebook's styles do not leak in.
    """
    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" '
        f'style="width:100%;height:{height}px;border:1px solid #ddd;resize:vertical" '
        'sandbox="allow-scripts" title="hloscope report"></iframe>'
    )
