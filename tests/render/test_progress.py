"""Tests for what `hloscope dump` shows: the live status line and the summary table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from hloscope.capture.run import DumpPlan, plan_dump
from hloscope.render.progress import DumpProgress, is_framework_noise


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


# Real stderr of `hloscope dump tests/data/tf_gelu/script.py` (TensorFlow 2.21, CPU).
TF_NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796286015.272195   12415 port.cc:153] oneDNN custom operations are on. "
    "You may see slightly different numerical results due to floating-point round-off "
    "errors from different computation orders. To turn them off, set the environment "
    "variable `TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1796286015.426979   12415 cpu_feature_guard.cc:227] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in "
    "other operations, rebuild TensorFlow with the appropriate compiler flags.",
    "I0000 00:00:1796286027.094728   12415 service.cc:153] XLA service 0x559cb4e004a0 "
    "initialized for platform Host (this does not guarantee that XLA will be used). Devices:",
    "I0000 00:00:1796286027.098042   12415 dump.cc:441] HloModule dump enabled with path "
    "prefix: , suffix: before_optimizations",
]
SCRIPT_LINES = [
    "tracing scaled_gelu",
    "W0000 00:00:1796286027.1   12415 op_level_cost_estimator.cc:699] Error in "
    "PredictCost() for the op",
    "UserWarning: something the user should see",
    "Traceback (most recent call last):",
]


def test_framework_info_lines_are_noise_warnings_and_output_are_not() -> None:
    assert all(is_framework_noise(line) for line in TF_NOISE)
    assert not any(is_framework_noise(line) for line in SCRIPT_LINES)


def _mixed() -> bytes:
    lines = [TF_NOISE[0], SCRIPT_LINES[0], *TF_NOISE[1:4], *SCRIPT_LINES[1:], *TF_NOISE[4:]]
    return ("\n".join(lines) + "\n").encode()


def test_stderr_without_a_terminal_hides_info_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    with DumpProgress(_plan(tmp_path), console=console, clock=FakeClock()) as progress:
        data = _mixed()
        progress.err(data[:50])  # a line split over reads is judged whole
        progress.err(data[50:])
    err = capsys.readouterr().err
    assert err.splitlines() == SCRIPT_LINES
    assert progress.hidden == len(TF_NOISE)


def test_verbose_shows_every_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    with DumpProgress(_plan(tmp_path), console=console, verbose=True) as progress:
        progress.err(_mixed())
    assert len(capsys.readouterr().err.splitlines()) == len(TF_NOISE) + len(SCRIPT_LINES)
    assert progress.hidden == 0


def test_live_display_hides_info_lines_and_never_splits_the_scripts_lines(
    tmp_path: Path,
) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with DumpProgress(_plan(tmp_path), console=console, clock=FakeClock()) as progress:
        progress._stdout_is_terminal = True  # the script's stdout shares the terminal
        progress.out(b"dense_relu: out shape (64, 128), sum 2701.2217")
        progress.err(_mixed())
        progress.out(b"\n")
    text = buffer.getvalue()
    assert "port.cc" not in text and "cpu_feature_guard" not in text
    assert "dense_relu: out shape (64, 128), sum 2701.2217\n" in text.replace("\r", "")
    assert "UserWarning: something the user should see" in text
