"""What the CLI says, read as text: the glossary, help written for the terminal, and
piped output that is never wrapped."""

from __future__ import annotations

import inspect
import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.inspection import inspect_run
from hloscope.render.glossary import GLOSSARY
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
WIDE = {"COLUMNS": "2000", "NO_COLOR": "1", "TERM": "dumb"}


def _words(text: str) -> str:
    """Text with its line breaks, box-drawing borders and runs of spaces as one space."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def _commands() -> list[str]:
    import typer

    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_the_glossary_is_in_help_and_in_the_readme() -> None:
    shown = _words(runner.invoke(app, ["--help"], env=WIDE).stdout)
    readme = _words((ROOT / "README.md").read_text(encoding="utf-8"))
    for word, meaning in GLOSSARY:
        assert _words(f"{word}: {meaning}") in shown, word
        assert _words(meaning) in readme, word


@pytest.mark.parametrize("command", _commands())
def test_help_is_written_for_the_terminal(command: str) -> None:
    """On a wide terminal each paragraph of a command's description is one line (the
    docstring's own line breaks are not kept), flags show no `<bool>` type, and text in
    square brackets is shown, not read as markup."""
    out = runner.invoke(app, [command, "--help"], env=WIDE).stdout
    assert "<bool>" not in out
    (callback,) = [
        c.callback
        for c in app.registered_commands
        if c.callback is not None and (c.name or c.callback.__name__) == command
    ]
    lines = {" ".join(line.strip(" │").split()) for line in out.splitlines()}
    for para in inspect.cleandoc(inspect.getdoc(callback) or "").split("\n\n"):
        # a paragraph is one line, but for its list items and indented lines
        logical: list[str] = []
        for line in para.split("\n"):
            if logical and not line.startswith(("- ", "* ", " ")):
                logical[-1] += " " + line
            else:
                logical.append(line)
        for one in logical:
            assert " ".join(one.split()) in lines, (command, one[:60])
    if command == "report":
        assert "[default: the table of common GPUs/TPUs by device name" in out


def test_command_summaries_are_one_sentence() -> None:
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "100", "NO_COLOR": "1"}).stdout
    listed = [line for line in out.splitlines() if re.match(r"│ (\w+)\s{2,}\S", line)]
    assert len(listed) == len(_commands())
    assert all(len(line) <= 100 for line in listed)


def test_piped_output_is_never_wrapped(tmp_path: Path) -> None:
    """`diff`, `check` and `report` piped: each line as the renderer made it, however
    wide, never broken at 80 columns, and no line padded with trailing spaces."""
    from hloscope.analysis.diff import diff_runs
    from hloscope.render.diff_text import diff_view

    a, b = DATA / "jax_mlp", DATA / "jax_mlp_no_fusion_pass"
    out = runner.invoke(app, ["diff", str(a), str(b)], env={"COLUMNS": "80"}).stdout
    wide = Console(width=100_000, soft_wrap=True, record=True, file=io.StringIO())
    ia, ib = inspect_run(a, bench=False), inspect_run(b, bench=False)
    wide.print(diff_view(diff_runs(ia.report, ib.report)))
    expected = [line.rstrip() for line in wide.export_text().splitlines()]
    assert out.splitlines() == expected
    assert max(map(len, expected)) > 80
    assert not [line for line in out.splitlines() if line != line.rstrip()]
    # check's ok line: one line, its module's name whole
    run = tmp_path / "resnet"
    shutil.copytree(DATA / "tf_resnet50", run)
    args = ["check", str(run), "--max-kernels", "200", "--min-ops-per-kernel", "2"]
    ok = runner.invoke(app, args, env={"COLUMNS": "80"}).stdout
    assert ok.splitlines() == [
        "ok 0000.a_inference__lambda__4081.6  kernels 165 ≤ 200, HLO ops per kernel 7.62 ≥ 2"
    ]


def test_a_terminal_report_fits_its_width_and_cuts_only_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an 80-column terminal the tables take its width: the kernel names (`kernel ·
    ops`) are cut to make room, never the figures."""
    import sys

    for name in ("hloscope.cli.app", "hloscope.cli.inspect"):
        monkeypatch.setattr(sys.modules[name], "_stdout_is_terminal", lambda: True)
    run = DATA / "jax_mlp_profile"
    args = ["report", str(run), "--peak-bandwidth", "12", "--peak-tflops", "0.2"]
    out = runner.invoke(app, args, env={"COLUMNS": "80", "NO_COLOR": "1"}).stdout
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    inspection = inspect_run(run)
    measured = inspection.timing(inspection.main[0].key)
    assert measured is not None
    rows = []
    for k in measured.kernels[:10]:  # the report's timing table shows ten, first
        row = next(line for line in lines if line.startswith(k.name + " ·"))
        assert row.endswith(f"{100 * k.share:.1f}%"), row
        rows.append(row)
    assert any("…" in row for row in rows)  # some were cut, at their words
