"""The modules of a run analysed in worker processes give what a serial run gives."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

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
