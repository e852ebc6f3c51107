"""Tests for what `hloscope dump` shows: the live status line and the summary table."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from hloscope.capture.run import DumpPlan, plan_dump
from hloscope.render.progress import DumpProgress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plan(tmp_path: Path) -> DumpPlan:
    script = tmp_path / "model.py"
    script.write_text("print('hi')\n")
    return plan_dump(script, out=tmp_path / "run", environ={})


def test_status_line_counts_modules_and_time(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    clock = FakeClock()
    console = Console(file=io.StringIO(), force_terminal=False)
    progress = DumpProgress(plan, console=console, clock=clock)
    with progress:
        assert not progress.is_live  # not a terminal: no status line
        plan.dump_dir.mkdir(parents=True)
        for name in ("module_0000.jit_a", "module_0001.jit_b"):
            (plan.dump_dir / f"{name}.before_optimizations.txt").write_text("")
            (plan.dump_dir / f"{name}.cpu_after_optimizations.txt").write_text("")
        clock.now += 12.34
        assert progress.status_text() == f"running {plan.target} · 12.3 s · 2 modules compiled"
        progress.interrupting()
        assert progress.status_text().startswith("stopping ")
    assert "Ctrl-C again to force" in console.file.getvalue()  # type: ignore[attr-defined]


def test_live_output_goes_above_the_status_line_line_by_line(tmp_path: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with DumpProgress(_plan(tmp_path), console=console, clock=FakeClock()) as progress:
        assert progress.is_live
        progress.err(b"first line\nsecond ")
        progress.err("lin\u00e9\n".encode()[:4])  # a UTF-8 character split over reads
        progress.err("lin\u00e9\n".encode()[4:])
        progress.err(b"no newline at the end")
    text = buffer.getvalue()
    assert "first line" in text
    assert "second lin\u00e9" in text
    assert "no newline at the end" in text
