"""The modules of a run analysed in worker processes give what a serial run gives."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.analysis import pool
from hloscope.analysis.cost import module_cost
from hloscope.analysis.report import ModuleReport, analyze_dump
from hloscope.errors import HloParseError
from hloscope.runs import load_run
from tests.conftest import DATA

RUNS = ["jax_mlp", "jax_transformer_block"]
# Forking a process that imported JAX (other tests here do) warns; the workers only run
# hloscope's own code. The CLI never forks with a framework imported (`pool._threaded`).
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


def _dumps(name: str) -> list:
    return list(load_run(DATA / name).modules)


@pytest.mark.parametrize("name", RUNS)
def test_parallel_reports_equal_serial_ones(name: str) -> None:
    dumps = _dumps(name)
    serial = pool.analyze_dumps(dumps, analyze_dump, jobs=1)
    parallel = pool.analyze_dumps(dumps, analyze_dump, jobs=3)
    assert [r.key for r in parallel] == [d.key for d in dumps]
    # a module's name and header come with it (the grouping of compilations reads its
    # entry layout): not parsed again for that
    sent = [m for r in parallel for m in (r.before_module, r.after_module) if m is not None]
    assert any(isinstance(m, pool._SentModule) for m in sent)
    for r, s in zip(parallel, serial, strict=True):
        for mine, theirs in ((s.before_module, r.before_module), (s.after_module, r.after_module)):
            if mine is not None and theirs is not None:
                assert (theirs.name, theirs.attributes) == (mine.name, mine.attributes)
    assert not any("computations" in vars(m) for m in sent if isinstance(m, pool._SentModule))
    assert parallel == serial  # analyses and provenance, placements included
    for s, p in zip(serial, parallel, strict=True):
        # Modules a worker parsed are parsed again here when asked: the same model.
        for mine, theirs in ((s.before_module, p.before_module), (s.after_module, p.after_module)):
            assert (mine is None) == (theirs is None)
            if mine is not None and theirs is not None:
                assert theirs.path == mine.path
                assert theirs.computations == mine.computations
                assert theirs.stack_frames == mine.stack_frames
        if s.after is not None and p.after is not None:
            assert [k.ops for k in p.after.kernels] == [k.ops for k in s.after.kernels]
            assert s.after_module is not None and p.after_module is not None
            assert module_cost(p.after_module, p.after) == module_cost(s.after_module, s.after)


def test_a_worker_sends_small_reports() -> None:
    """What crosses the pipe is the analysis, not the parsed modules."""
    dumps = _dumps("jax_transformer_block")
    pool._TODO, pool._ANALYZE[:] = [[], dumps], [analyze_dump]
    try:
        sent = pool._analyze_share(1)
    finally:
        pool._TODO, pool._ANALYZE[:] = [], []
    reports = pool.analyze_dumps(dumps, analyze_dump, jobs=1)
    whole = pickle.dumps(reports, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(sent) < len(whole) / 2


def test_the_cli_prints_the_same_report() -> None:
    """In a fresh process (nothing else imported), as a user runs it: workers forked."""
    root = Path(__file__).resolve().parents[2]
    outputs = []
    for jobs in ("1", "3"):
        env = {**os.environ, "PYTHONPATH": str(root), pool.JOBS_VARIABLE: jobs}
        for extra in (["--all"], ["--json"]):
            done = subprocess.run(
                [sys.executable, "-m", "hloscope", "report", str(DATA / "jax_mlp"), *extra],
                env=env,
                capture_output=True,
                check=True,
            )
            outputs.append(done.stdout)
    assert outputs[:2] == outputs[2:]
    assert b"kernels" in outputs[0]


def test_an_error_in_a_worker_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    dumps = _dumps("jax_mlp")
    bad = dumps[-1].key

    def analyze(dump: object) -> ModuleReport:
        if getattr(dump, "key", None) == bad:
            raise HloParseError("made to fail", path="x")
        return real(dump)  # type: ignore[arg-type]

    real = analyze_dump
    with pytest.raises(HloParseError, match="made to fail"):
        pool.analyze_dumps(dumps, analyze, jobs=3)


def test_jobs_follow_the_machine_and_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pool.JOBS_VARIABLE, raising=False)
    monkeypatch.setattr(pool.os, "sched_getaffinity", lambda _: set(range(8)))
    monkeypatch.setattr(pool, "_threaded", lambda: True)
    assert pool.jobs_for(100, 50 << 20) == 1  # never fork a threaded process
    monkeypatch.setattr(pool, "_threaded", lambda: False)
    assert pool.jobs_for(100, 50 << 20) == 8
    assert pool.jobs_for(3, 50 << 20) == 1  # few modules
    assert pool.jobs_for(100, 1000) == 1  # little HLO
    monkeypatch.setattr(pool.os, "sched_getaffinity", lambda _: {0, 1})
    assert pool.jobs_for(100, 50 << 20) == 1  # two cores: serial by default
    monkeypatch.setenv(pool.JOBS_VARIABLE, "2")
    assert pool.jobs_for(100, 1000) == 2
    monkeypatch.setenv(pool.JOBS_VARIABLE, "1")
    assert pool.jobs_for(100, 50 << 20) == 1


def test_shares_take_about_as_long() -> None:
    shares = pool._balance([100, 90, 10, 10, 5, 1], 2)
    assert sorted(i for s in shares for i in s) == list(range(6))
    assert all(s == sorted(s) for s in shares)
    # this process (share 0) takes more: a worker also pickles what it sends
    assert sum([100, 90, 10, 10, 5, 1][i] for i in shares[0]) >= 100


# --- one module's two sides at once (`pool.beside`) --------------------------------------


@pytest.fixture
def sides_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split every module with two sides, however small, as a big one on 2 cores is."""
    monkeypatch.delenv(pool.JOBS_VARIABLE, raising=False)
    monkeypatch.setattr(pool, "MIN_SIDE_BYTES", 0)
    monkeypatch.setattr(pool, "_threaded", lambda: False)
    monkeypatch.setattr(pool, "_cores", lambda: 2)


def _serial(dump: object, monkeypatch: pytest.MonkeyPatch, **kw: object) -> ModuleReport:
    with monkeypatch.context() as m:
        m.setenv(pool.JOBS_VARIABLE, "1")
        return analyze_dump(dump, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [*RUNS, "tf_dense_relu", "torch_mlp"])
def test_two_sides_read_at_once_equal_a_serial_read(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = [d for d in _dumps(name) if d.before is not None and d.after is not None]
    assert both
    for dump in both:
        serial = _serial(dump, monkeypatch)
        split = analyze_dump(dump)
        after = split.after_module
        assert isinstance(after, pool._SentModule)  # the after side came from a worker
        assert split.provenance is not None and serial.provenance is not None
        assert split.provenance.placements == serial.provenance.placements
        assert split.provenance.kernels_by_line == serial.provenance.kernels_by_line
        assert split.after is not None and serial.after is not None
        assert module_cost(after, split.after) == module_cost(serial.after_module, serial.after)  # type: ignore[arg-type]
        assert "computations" not in vars(after)  # none of that needed its file again
        assert split == serial  # analyses too (their kernels' instructions: read now)


@pytest.mark.parametrize("name", [*RUNS, "torch_mlp"])
def test_a_diff_of_sides_read_at_once_reads_no_file_again(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hloscope diff` matches kernels on their opcodes, which a worker sends with its
    kernels: the after file is not parsed again here for them."""
    from hloscope.analysis.diff import diff_modules

    for dump in [d for d in _dumps(name) if d.before is not None and d.after is not None]:
        serial = _serial(dump, monkeypatch)
        split = analyze_dump(dump)
        assert split.after is not None and serial.after is not None
        opcodes = [k.opcodes for k in serial.after.kernels]
        assert [k.opcodes for k in split.after.kernels] == opcodes
        assert opcodes == [tuple(i.opcode for i in k.ops) for k in serial.after.kernels]
        diffed = diff_modules(split, split)
        assert "computations" not in vars(split.after_module)
        assert diffed == diff_modules(serial, serial)
        assert diff_modules(serial, split) == diff_modules(serial, serial)


@pytest.mark.parametrize("name", [*RUNS, "tf_dense_relu"])
def test_the_counts_alone_are_those_of_the_whole_report(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`provenance=False` (`hloscope check`): the same analyses of both sides, serial
    or with the after side in a worker, and no provenance."""
    for dump in [d for d in _dumps(name) if d.before is not None and d.after is not None]:
        whole = _serial(dump, monkeypatch)
        assert whole.provenance is not None
        for counted in (
            _serial(dump, monkeypatch, provenance=False),
            analyze_dump(dump, provenance=False),
        ):
            assert counted.provenance is None
            assert (counted.before, counted.after) == (whole.before, whole.after)
            assert (counted.trivial, counted.error, counted.key) == (whole.trivial, "", whole.key)


@pytest.mark.parametrize("name", RUNS)
def test_a_drawing_of_the_before_side_reads_the_after_side_once(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hloscope.analysis.provenance import kernels_of_before_ops

    for dump in [d for d in _dumps(name) if d.before is not None and d.after is not None]:
        serial = _serial(dump, monkeypatch, drawn="both")
        split = analyze_dump(dump, drawn="both")
        assert split.provenance is not None and split.provenance._index is not None
        found = [
            kernels_of_before_ops(r.before_module, r.after_module, r.provenance, r.after)  # type: ignore[arg-type]
            for r in (serial, split)
        ]
        assert found[1] == found[0]
        assert "computations" not in vars(split.after_module)


def test_a_side_worker_that_dies_is_done_here(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = next(d for d in _dumps("jax_mlp") if d.before is not None and d.after is not None)
    serial = _serial(dump, monkeypatch)
    monkeypatch.setattr(pool, "_task_worker", lambda *args: os._exit(9))
    again = analyze_dump(dump)
    assert again == serial
    assert not isinstance(again.after_module, pool._SentModule)


def test_an_error_in_a_side_worker_is_raised_here(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hloscope.analysis import report

    dump = next(d for d in _dumps("jax_mlp") if d.before is not None and d.after is not None)

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("made to fail in the worker")

    monkeypatch.setattr(report, "_after_side", broken)
    with pytest.raises(RuntimeError, match="made to fail in the worker"):
        analyze_dump(dump)


def test_a_module_splits_only_where_it_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pool.JOBS_VARIABLE, raising=False)
    monkeypatch.setattr(pool, "_threaded", lambda: False)
    monkeypatch.setattr(pool, "_cores", lambda: 2)
    big = pool.MIN_SIDE_BYTES
    assert pool.beside_pays([big, big])
    assert not pool.beside_pays([big, big - 1])  # a small side: not worth a process
    assert not pool.beside_pays([big, 0])  # one side only
    monkeypatch.setenv(pool.JOBS_VARIABLE, "2")
    assert pool.beside_pays([10, 10])  # asked for: any size
    monkeypatch.setenv(pool.JOBS_VARIABLE, "1")
    assert not pool.beside_pays([big, big])
    monkeypatch.delenv(pool.JOBS_VARIABLE)
    monkeypatch.setattr(pool, "_cores", lambda: 1)
    assert not pool.beside_pays([big, big])
    monkeypatch.setattr(pool, "_cores", lambda: 2)
    monkeypatch.setattr(pool, "_threaded", lambda: True)
    assert not pool.beside_pays([big, big])


def test_the_cli_prints_the_same_with_both_sides_at_once(tmp_path: Path) -> None:
    """A fresh process, as a user runs it; the one module with `HLOSCOPE_JOBS=2` (which
    lifts the size threshold) is read in two processes."""
    root = Path(__file__).resolve().parents[2]
    before = next(
        d.before for d in _dumps("jax_mlp") if d.key == "0030.jit_mlp" and d.before is not None
    )
    outputs = []
    for jobs in ("1", "2"):
        env = {**os.environ, "PYTHONPATH": str(root), pool.JOBS_VARIABLE: jobs}
        (tmp_path / jobs).mkdir()
        commands = [
            ["report", str(DATA / "jax_mlp"), "--module", "jit_mlp", "--all"],
            ["report", str(DATA / "jax_mlp"), "--module", "jit_mlp", "--json"],
            ["ops", str(DATA / "jax_mlp"), "--module", "jit_mlp"],
            ["graph", str(before), "-o", "before.dot"],
            ["graph", str(before), "--side-by-side", "-o", "both.dot"],
            ["report", str(DATA / "jax_mlp"), "--module", "jit_mlp", "--html", "page.html"],
        ]
        for command in commands:
            done = subprocess.run(
                [sys.executable, "-m", "hloscope", *command, "--no-cache"],
                env=env,
                capture_output=True,
                check=True,
                cwd=tmp_path / jobs,
            )
            outputs.append(done.stdout)
        outputs.append((tmp_path / jobs / "before.dot").read_bytes())
        outputs.append((tmp_path / jobs / "both.dot").read_bytes())
        outputs.append((tmp_path / jobs / "page.html").read_bytes())
    half = len(outputs) // 2
    assert outputs[:half] == outputs[half:]
    assert b"jit_mlp" in outputs[0] and b"digraph" in outputs[half - 2]
    assert (
        b"before optimization" in outputs[half - 2] and b"after optimization" in outputs[half - 2]
    )
    assert b"\\u003csvg" in outputs[half - 1]  # the page, with its diagrams (escaped)


def test_a_drawing_reads_the_after_side_only_when_it_needs_its_kernels(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hloscope.render.diagram import views

    dump = next(d for d in _dumps("jax_mlp") if d.key == "0030.jit_mlp")
    serial = _serial(dump, monkeypatch, drawn="both")
    split = analyze_dump(dump, drawn="both")
    assert "_finish" in vars(split)  # the worker's result not taken yet
    kernels = views._kernels_of(split)
    spec = views.op_graph(split.before_module, None, kernels_of=None)  # type: ignore[arg-type]
    assert spec.nodes and "_finish" in vars(split)  # drawn uncoloured: still not taken
    assert dict(kernels) == dict(views._kernels_of(serial))  # read: taken now
    assert "_finish" not in vars(split)
    assert (split.after, split.provenance, split.error) == (serial.after, serial.provenance, "")


def _side_by_side(report: ModuleReport, **drawing: object) -> str:
    """`graph --side-by-side` of `report` as DOT, its after side drawn in the worker
    that analysed it where one did (`drawn_after`), else here."""
    from hloscope.analysis.report import drawn_after
    from hloscope.render.diagram import DiagramSpec, module_diagram
    from hloscope.render.dot import to_dot

    def there() -> DiagramSpec | None:
        found = drawn_after(report)
        return found if isinstance(found, DiagramSpec) else None

    return to_dot(module_diagram(report, both=True, after=there, **drawing))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", RUNS)
def test_both_sides_drawn_at_once_are_drawn_as_here(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graph --side-by-side`: the worker that analyses the after side draws it
    (`draw_after`) while the before side is drawn here; the picture is the serial one,
    and the after file is never parsed here."""
    from hloscope.render.diagram import after_half

    for dump in [d for d in _dumps(name) if d.before is not None and d.after is not None]:
        for drawing in ({}, {"max_nodes": 6}, {"expand": "all", "max_nodes": 1000}):
            serial = _serial(dump, monkeypatch, drawn="both")
            split = analyze_dump(dump, drawn="both", draw_after=partial(after_half, **drawing))
            assert "_drawing" in vars(split)  # drawn there
            assert _side_by_side(split, **drawing) == _side_by_side(serial, **drawing)
            assert "computations" not in vars(split.after_module)


def test_an_after_side_not_drawn_in_its_worker_is_drawn_here(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker dies before it has drawn (killed for memory): drawn here, the same;
    an option that names nothing there raises here what it raises serially."""

    from hloscope.analysis import report
    from hloscope.errors import UsageError
    from hloscope.render.diagram import after_half

    dump = next(d for d in _dumps("jax_mlp") if d.key == "0030.jit_mlp")
    serial = _side_by_side(_serial(dump, monkeypatch, drawn="both"))
    with pytest.raises(UsageError) as here:
        _side_by_side(_serial(dump, monkeypatch, drawn="both"), expand=["nothing"])
    split = analyze_dump(dump, drawn="both", draw_after=partial(after_half, expand=["nothing"]))
    with pytest.raises(UsageError) as there:
        _side_by_side(split, expand=["nothing"])
    assert str(there.value) == str(here.value)
    monkeypatch.setattr(report, "_drawn", lambda *args: os._exit(9))
    split = analyze_dump(dump, drawn="both", draw_after=after_half)
    assert _side_by_side(split) == serial
    assert "computations" in vars(split.after_module)  # drawn here: its file read again


def test_a_side_worker_costs_the_kernels_after_it_sent_the_side(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The costs come in a second message, found while the sides are joined here: when
    the worker dies before it, they are found here; when it fails, the error is raised
    here."""
    from hloscope.analysis import report

    dump = next(d for d in _dumps("jax_mlp") if d.before is not None and d.after is not None)
    serial = _serial(dump, monkeypatch)
    monkeypatch.setattr(report, "_derived", lambda side: os._exit(9))
    again = analyze_dump(dump)
    assert isinstance(again.after_module, pool._SentModule)  # the side came
    assert again.provenance is not None and serial.provenance is not None
    assert again.provenance.placements == serial.provenance.placements
    cost = module_cost(again.after_module, again.after)  # type: ignore[arg-type]
    assert cost == module_cost(serial.after_module, serial.after)  # type: ignore[arg-type]
    assert "computations" in vars(again.after_module)  # found here: its file read again

    def broken(side: object) -> None:
        raise RuntimeError("made to fail while costing")

    monkeypatch.setattr(report, "_derived", broken)
    with pytest.raises(RuntimeError, match="made to fail while costing"):
        analyze_dump(dump)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("name", [*RUNS, "tf_dense_relu", "torch_mlp"])
def test_a_page_finds_the_after_side_in_another_worker(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report --html` of a module whose after side a worker parsed: the kernels'
    instructions, HLO and diagram are found in another worker, with the kernel index
    that colours the op diagram drawn here. The page's data is that of a serial run,
    and the after file is never parsed here."""
    from hloscope.inspection import inspect_run
    from hloscope.render.html import graphviz_diagrams, page_data

    with monkeypatch.context() as m:
        m.setenv(pool.JOBS_VARIABLE, "1")
        serial = page_data(inspect_run(DATA / name), diagrams=graphviz_diagrams)
    inspection = inspect_run(DATA / name)
    split = [m for m in inspection.main if isinstance(m.after_module, pool._SentModule)]
    assert split  # read at once
    assert page_data(inspection, diagrams=graphviz_diagrams) == serial
    assert not any("computations" in vars(m.after_module) for m in split)
    drawn = [d["diagrams"] for d in serial["modules"] if d["diagrams"] is not None]
    assert drawn and all(d["after"] and d["before"] and not d["note"] for d in drawn)
    # the page's worker dies (killed for memory): its part is found here, the same
    inspection = inspect_run(DATA / name)
    monkeypatch.setattr(pool, "_task_worker", lambda *args: os._exit(9))
    assert page_data(inspection, diagrams=graphviz_diagrams) == serial
    split = [m for m in inspection.main if isinstance(m.after_module, pool._SentModule)]
    assert split and all("computations" in vars(m.after_module) for m in split)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("name", [*RUNS, "tf_dense_relu", "torch_transformer"])
def test_a_page_finds_the_after_side_in_the_worker_that_analysed_it(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report --html` of a run without timings: the worker that analysed a module's
    after side then sends the kernel index and the page's after half (`page_after`)
    while the op diagram is drawn here. The page's data is that of a serial run; no
    process parses the after file again; a report of it pickles (is kept) as the plain
    report; and when the worker dies first, its part is found here, the same."""
    from hloscope.analysis.report import draws_after
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import views, walk_ops_ahead
    from hloscope.render.html import Embedded, graphviz_diagrams, page_after, page_data

    with monkeypatch.context() as m:
        m.setenv(pool.JOBS_VARIABLE, "1")
        serial = page_data(inspect_run(DATA / name), diagrams=graphviz_diagrams)
    inspection = inspect_run(DATA / name, draw_after=page_after, before_ahead=walk_ops_ahead)
    split = [m for m in inspection.main if draws_after(m)]
    assert split  # read at once, drawn there
    # the op diagram's ops to place were found here, and its ops walked, while the
    # worker sent its side
    from hloscope.analysis import provenance

    kept = provenance._ops_to_place._kept
    assert all(id(m.before_module) in kept for m in split)
    walked = views._page_walk._kept
    assert all(id(m.before_module) in walked for m in split)
    # kept as the cache keeps it: the plain report, the worker still drawing
    dumps = [d for d in _dumps(name) if d.key == split[0].key]
    (plain,) = pool.unpack_reports(pool.pack_reports(split[:1]), pool.file_loaders(dumps))
    assert type(plain) is ModuleReport and plain.key == split[0].key
    monkeypatch.setattr(pool, "elsewhere", None)  # no other worker is asked
    page = page_data(inspection, diagrams=graphviz_diagrams)
    assert page == serial
    assert not any(draws_after(m) for m in split)  # each drawing taken once
    assert not any(id(m.before_module) in kept for m in split)  # taken by the op diagram
    assert not any(id(m.before_module) in walked for m in split)
    # the kernels' instructions and HLO came written (`Embedded`): one string sent
    docs = {doc["key"]: doc for doc in page["modules"]}
    assert all(type(docs[m.key][part]) is Embedded for m in split for part in ("fused", "hlo"))
    assert not any("computations" in vars(m.after_module) for m in split)
    # the worker dies once it has sent the costs: its part is found here
    from hloscope.analysis import report

    monkeypatch.setattr(report, "_index", lambda side: os._exit(9))
    inspection = inspect_run(DATA / name, draw_after=page_after)
    assert any(draws_after(m) for m in inspection.main)
    assert page_data(inspection, diagrams=graphviz_diagrams) == serial


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_a_page_is_written_up_to_the_worker_part_before_it_is_asked_for(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's text before a module's after half (its overview, the module's
    placements and kernels) is made before the worker's part is asked for, so that it
    is written while the worker ends that part; then the rest, the serial page."""
    from hloscope.analysis.report import draws_after
    from hloscope.inspection import inspect_run
    from hloscope.render import html

    inspection = inspect_run(DATA / "tf_dense_relu", draw_after=html.page_after)
    split = [m for m in inspection.main if draws_after(m)]
    assert split
    pieces = html._report_chunks(inspection, html.graphviz_diagrams, None, True, None)
    written = ""
    for piece in pieces:
        written += piece
        if '"fused":' in piece:
            break
    assert '"provenance":' in written and '"kernels":' in written
    assert all(draws_after(m) for m in split)  # the worker's part not asked for yet
    written += "".join(pieces)
    assert not any(draws_after(m) for m in split)
    monkeypatch.setenv(pool.JOBS_VARIABLE, "1")
    serial = inspect_run(DATA / "tf_dense_relu")
    assert written == html.report_page(serial, diagrams=html.graphviz_diagrams)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("name", ["tf_dense_relu", "torch_transformer"])
def test_a_page_spills_the_worker_part_to_files_it_copies_in(
    name: str, sides_split: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With a spill folder (what `report --html` gives), the worker that analysed the
    after side writes the kernels' instructions and HLO there, and sends their files'
    names: the page's data is that of a serial run, and `report --html` writes the
    serial page and removes its folder."""
    from hloscope.analysis.report import draws_after
    from hloscope.cli import app
    from hloscope.inspection import inspect_run
    from hloscope.render.html import Embedded, graphviz_diagrams, page_after, page_data

    def page(out: str) -> None:
        args = ["report", str(DATA / name), "--no-cache", "--html", str(tmp_path / out)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output

    with monkeypatch.context() as m:
        m.setenv(pool.JOBS_VARIABLE, "1")
        serial = page_data(inspect_run(DATA / name), diagrams=graphviz_diagrams)
        page("serial.html")
    inspection = inspect_run(DATA / name, draw_after=partial(page_after, spill=tmp_path))
    split = [m for m in inspection.main if draws_after(m)]
    assert split
    data = page_data(inspection, diagrams=graphviz_diagrams)
    assert data == serial
    docs = {doc["key"]: doc for doc in data["modules"]}
    parts = [docs[m.key][part] for m in split for part in ("fused", "hlo")]
    assert all(type(p) is Embedded and p.path and p.path.parent == tmp_path for p in parts)
    page("split.html")
    assert (tmp_path / "split.html").read_bytes() == (tmp_path / "serial.html").read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".hloscope")]


def test_a_measured_page_draws_its_kernel_times_here(
    sides_split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profiled run's kernel diagram shows the times read here: the worker's drawing
    (asked for all the same) is not used, and the page is the serial one."""
    from hloscope.inspection import inspect_run
    from hloscope.render.html import graphviz_diagrams, page_after, page_data
    from hloscope.timing.sources import measured

    assert measured(load_run(DATA / "torch_mlp"))
    with monkeypatch.context() as m:
        m.setenv(pool.JOBS_VARIABLE, "1")
        serial = page_data(inspect_run(DATA / "torch_mlp"), diagrams=graphviz_diagrams)
    inspection = inspect_run(DATA / "torch_mlp", draw_after=page_after)
    assert any(inspection.kernel_times(m.key) for m in inspection.main)
    assert page_data(inspection, diagrams=graphviz_diagrams) == serial
