"""Each module's analysis kept in the user's cache folder (`hloscope.analysis.kept`): read
back, it equals the one computed, without parsing; a changed file, a forged or damaged
entry, or a file changed too recently to trust is analysed again."""

from __future__ import annotations

import io
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import hloscope.hlo.parser
import hloscope.runs
from hloscope import user_cache
from hloscope.analysis import kept, pool
from hloscope.analysis.cost import module_cost
from hloscope.analysis.report import analyze_dump
from hloscope.cli import app
from hloscope.inspection import inspect_run
from hloscope.render.json import report_doc
from hloscope.render.text import report_view
from hloscope.runs import load_run
from hloscope.store import signature
from tests.conftest import DATA

runner = CliRunner()
OLD = 1_000_000_000  # a time long past: the copies' files are settled, not racy

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of its own, on (the suite runs with it off: conftest). Files the
    tests copied are trusted at once (their change times are now: in use, a file changed
    less than a second before is not, `test_nothing_kept_from_files_just_changed`)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(folder))
    monkeypatch.setenv(user_cache.CACHE_MB_VARIABLE, "256")
    monkeypatch.setattr(kept, "RACY_NS", 0)
    monkeypatch.setattr(user_cache, "RACY_NS", 0)
    return folder / "analyses"


def _copy(name: str, tmp_path: Path) -> Path:
    """A test run copied, its files' modification times set long past."""
    run = tmp_path / name
    shutil.copytree(DATA / name, run)
    for p in run.rglob("*"):
        os.utime(p, (OLD, OLD))
    return run


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.pickle"))


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any parse from here on fails the test."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed a module kept in the cache")

    hloscope.runs._load_cached.cache_clear()
    monkeypatch.setattr(hloscope.hlo.parser._Parser, "parse", fail)


@pytest.mark.parametrize("name", ["jax_mlp_profile", "tf_resnet50", "torch_mlp"])
def test_read_back_equals_computed_without_parsing(
    name: str, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(name, tmp_path)
    computed = inspect_run(run, cache=True)
    modules = len(computed.modules)
    assert len(_entries(cache)) == modules  # one per module
    doc = report_doc(computed)
    _no_parsing(monkeypatch)
    again = inspect_run(run, cache=True)
    assert report_doc(again) == doc  # the whole JSON report: counts, placements, costs
    for m in again.modules:
        assert not pool.parsed_here(m.after_module)
        assert not pool.parsed_here(m.before_module)
    monkeypatch.undo()  # parsed again for what follows: the kernels' instructions
    assert again.report.modules == computed.report.modules  # analyses and provenance


def test_read_back_modules_parse_again_when_drawn(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What reads instructions (a diagram, the HTML page) has the file parsed again:
    the same module, the same kernels and costs."""
    run = _copy("jax_mlp", tmp_path)
    computed = inspect_run(run, ["jit_mlp"], cache=True)
    again = inspect_run(run, ["jit_mlp"], cache=True)
    (mine,), (theirs,) = computed.modules, again.modules
    assert theirs.after_module is not None and mine.after_module is not None
    assert not pool.parsed_here(theirs.after_module)
    assert theirs.after_module.computations == mine.after_module.computations
    assert theirs.after is not None and mine.after is not None
    assert [k.ops for k in theirs.after.kernels] == [k.ops for k in mine.after.kernels]
    assert module_cost(theirs.after_module, theirs.after) == module_cost(
        mine.after_module, mine.after
    )


def test_kernels_and_their_costs_are_unpickled_when_first_read(cache: Path, tmp_path: Path) -> None:
    """A report read back makes no kernel of its after sides and no kernel cost until
    something reads them (the text report reads neither); unread, they are kept again
    as the bytes they came as; read, they equal those computed."""
    run = _copy("jax_mlp", tmp_path)
    computed = inspect_run(run, cache=True)
    again = inspect_run(run, cache=True)
    Console(file=io.StringIO(), width=100).print(report_view(again, show_all=True))
    mine = {m.key: m for m in computed.modules}
    checked = 0
    for m in again.modules:
        if m.after is None:
            continue
        kernels, costs = m.after.kernels, again.cost(m.key).kernels
        assert isinstance(kernels, pool._Later) and kernels.data is not None
        assert isinstance(costs, pool._Later) and costs.data is not None
        assert kernels.data in pool.pack_reports([m])
        assert len(kernels) == mine[m.key].after.kernel_count  # known without them
        assert tuple(kernels) == tuple(mine[m.key].after.kernels)
        assert tuple(costs) == tuple(computed.cost(m.key).kernels)
        assert kernels.data is None and costs.data is None  # read once
        checked += 1
    assert checked == len(computed.modules) > 1


def test_the_cli_reads_back_what_another_command_kept(cache: Path, tmp_path: Path) -> None:
    """`report` keeps each module's analysis; `ops` then reads it back and prints what
    it prints computed; `--no-cache` reads and keeps nothing."""
    run = _copy("jax_transformer_block", tmp_path)
    first = runner.invoke(app, ["report", str(run)])
    assert first.exit_code == 0, first.output
    kept_now = _entries(cache)
    assert kept_now
    stamps = {p: p.stat().st_mtime_ns for p in kept_now}
    read_back = runner.invoke(app, ["ops", str(run), "--json"])
    computed = runner.invoke(app, ["ops", str(run), "--json", "--no-cache"])
    assert read_back.exit_code == computed.exit_code == 0
    assert read_back.stdout == computed.stdout
    assert _entries(cache) == kept_now  # nothing new: the same analyses
    assert all(p.stat().st_mtime_ns >= stamps[p] for p in kept_now)  # used: newest
    shutil.rmtree(cache)
    assert runner.invoke(app, ["report", str(run), "--no-cache"]).exit_code == 0
    assert not cache.exists() or not _entries(cache)


def test_a_changed_file_is_analysed_again(cache: Path, tmp_path: Path) -> None:
    run = _copy("jax_mlp", tmp_path)
    (before,) = inspect_run(run, ["jit_mlp"], cache=True).modules
    after = before.after_module
    assert after is not None and after.path is not None
    path = Path(after.path)
    path.write_text(path.read_text() + "\n")  # one byte more: the same module, new content
    os.utime(path, (OLD, OLD))  # same times: the content decides
    (again,) = inspect_run(run, ["jit_mlp"], cache=True).modules
    assert pool.parsed_here(again.after_module)  # analysed again, not read back
    assert again == before
    assert len(_entries(cache)) == 2  # the old key and the new one


def test_forged_and_damaged_entries_are_analysed_again(cache: Path, tmp_path: Path) -> None:
    """An entry not signed with this user's secret is never unpickled; one signed but
    damaged, or of another module, is analysed again and replaced."""
    run = _copy("jax_mlp", tmp_path)
    (computed,) = inspect_run(run, ["jit_mlp"], cache=True).modules
    (entry,) = _entries(cache)
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(_Touch(str(marker)))
    entry.write_bytes(b"0" * 64 + b"\n" + payload)  # forged: a pickle that runs code
    (again,) = inspect_run(run, ["jit_mlp"], cache=True).modules
    assert not marker.exists()
    assert again == computed and pool.parsed_here(again.after_module)
    assert entry.read_bytes() != b"0" * 64 + b"\n" + payload  # replaced
    for data in (b"garbage", pickle.dumps(([], [])), pickle.dumps({"headers": 1})):
        _sign(entry, data)
        (again,) = inspect_run(run, ["jit_mlp"], cache=True).modules
        assert again == computed
    other = inspect_run(run, ["jit__threefry_split"], cache=True).modules[0]
    theirs = next(p for p in _entries(cache) if p != entry)
    entry.write_bytes(theirs.read_bytes().partition(b"\n")[2])
    _sign(entry, entry.read_bytes())
    (again,) = inspect_run(run, ["jit_mlp"], cache=True).modules
    assert again == computed and again.key != other.key


def test_nothing_kept_from_files_just_changed(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed less than a second ago could change again with the same times:
    what was computed from it is not kept."""
    monkeypatch.setattr(kept, "RACY_NS", 1_000_000_000)  # as in use
    run = tmp_path / "jax_mlp"
    shutil.copytree(DATA / "jax_mlp", run)  # its files' times: now
    inspect_run(run, ["jit_mlp"], cache=True)
    assert not _entries(cache)


def test_the_folder_is_bounded(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond `HLOSCOPE_CACHE_MB`, the least recently used entries go; 0 keeps none."""
    run = _copy("jax_mlp", tmp_path)
    inspect_run(run, cache=True)
    entries = _entries(cache)
    assert len(entries) > 3
    for n, p in enumerate(entries):
        os.utime(p, ns=(OLD + n, OLD + n))
    # full: the next one evicts (the digest index beside them shrinks to the files the
    # next call reads)
    total = sum(p.stat().st_size for p in entries)
    monkeypatch.setattr(kept, "cache_limit", lambda: total)
    kept.analyses([load_run(run).module("jit_mlp")], analyze_dump, {"another": "key"})
    left = {p.name for p in _entries(cache)}
    assert entries[0].name not in left  # the least recently used went first
    assert entries[-1].name in left
    assert len(left - {p.name for p in entries}) == 1  # the new one
    assert sum(p.stat().st_size for p in cache.iterdir()) <= total
    shutil.rmtree(cache)
    monkeypatch.setattr(kept, "cache_limit", lambda: 0)
    inspect_run(run, cache=True)
    assert not cache.exists()


class _Touch:
    """Unpickled, it makes a file: the proof a pickle was loaded."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (Path(self.path),))


def _sign(path: Path, data: bytes) -> None:
    """Write `data` as this user's hloscope signs an entry under its name."""
    mac = signature(path.name, data)
    assert mac is not None
    path.write_bytes(mac.encode() + b"\n" + data)


def test_a_report_with_source_ops_serves_one_without(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `check` reads (no source ops joined) is read back from what `report` kept,
    without parsing, its provenance left out as computed; nothing more is kept."""
    run = _copy("jax_transformer_block", tmp_path)
    computed = inspect_run(run, provenance=False).report.modules
    inspect_run(run, cache=True)  # keeps the reports with their source ops
    kept_now = _entries(cache)
    _no_parsing(monkeypatch)
    served = inspect_run(run, provenance=False, cache=True).report.modules
    assert all(m.provenance is None for m in served)
    assert _entries(cache) == kept_now
    monkeypatch.undo()
    assert served == computed


@pytest.mark.parametrize("args", [["report", "--json"], ["check", "--max-kernels", "999"], ["ops"]])
def test_no_cache_keeps_no_analysis(args: list[str], cache: Path, tmp_path: Path) -> None:
    """`--no-cache` keeps and reads no analysis, a run folder's `report --json` (kept in
    the run folder otherwise) included."""
    run = _copy("jax_recompile", tmp_path)  # a run folder
    result = runner.invoke(app, [*args[:1], str(run), *args[1:], "--no-cache"])
    assert result.exit_code == 0, result.output
    assert not cache.exists() or not _entries(cache)
    result = runner.invoke(app, [*args[:1], str(run), *args[1:]])
    assert result.exit_code == 0, result.output
    assert _entries(cache)
