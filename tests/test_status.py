"""The steps long work says (`hloscope.status`), and the commands' status line that shows
them on a terminal (`hloscope.cli.status_line`)."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len

from hloscope import status
from hloscope.cli import status_line
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def heard() -> Iterator[list[tuple[str, bool]]]:
    seen: list[tuple[str, bool]] = []
    status.listen(lambda text, long: seen.append((text, long)))
    try:
        yield seen
    finally:
        status.listen(None)


def test_steps_reach_the_listener_only_while_it_listens(heard: list[tuple[str, bool]]) -> None:
    status.step("reading a")
    status.step("drawing b", long=True)
    status.listen(None)
    status.step("not heard")
    assert heard == [("reading a", False), ("drawing b", True)]


# In a fresh interpreter: this one may run JAX's threads, which a fork must not copy.
_FORKED = """
import os
from hloscope import status
heard = []
status.listen(lambda text, long: heard.append(text))
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the child says a step, and reports whether anyone heard it
    status.step("in the child")
    os.write(write, b"heard" if heard else b"silent")
    os._exit(0)
os.waitpid(pid, 0)
status.step("in the parent")
print(os.read(read, 16).decode(), heard)
"""


def test_a_forked_worker_passes_no_step_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FORKED], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout == "silent ['in the parent']\n"


def test_reading_a_module_and_diffing_runs_say_their_steps(
    heard: list[tuple[str, bool]],
) -> None:
    import hloscope

    a = hloscope.inspect_run(DATA / "jax_mlp").report
    b = hloscope.inspect_run(DATA / "jax_mlp_no_fusion_pass").report
    hloscope.diff_runs(a, b)
    said = [text for text, _ in heard]
    assert any(t.startswith("reading module_") and t.endswith(" MB)") for t in said)
    assert "matching the kernels of 0030.jit_mlp" in said
    assert not any(long for _, long in heard)  # small files: quick steps


def test_a_big_file_read_is_a_long_step(heard: list[tuple[str, bool]], tmp_path: Path) -> None:
    big, small = tmp_path / "big.txt", tmp_path / "small.txt"
    with big.open("wb") as f:
        f.truncate(status.LONG_READ_BYTES)  # sparse: no disk spent
    small.write_text("HloModule m\n")
    status.reading(big, "the profile ")
    status.reading(small)
    status.reading(tmp_path / "missing.txt")  # nothing to say: its reader says why
    assert heard == [
        ("reading the profile big.txt (25 MB)", True),
        ("reading small.txt (0.0 MB)", False),
    ]


def test_reading_a_profile_says_its_step(heard: list[tuple[str, bool]]) -> None:
    import hloscope

    path = next((DATA / "jax_mlp_profile").rglob("*.xplane.pb"))
    hloscope.read_trace(path)
    assert heard[0][0].startswith(f"reading the profile {path.name} (")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _terminal(monkeypatch: pytest.MonkeyPatch, delay: float = 0.0) -> tuple[_Terminal, _Terminal]:
    """stdout and stderr on a terminal, for this test's body (pytest's own capture sets
    them again after the fixtures), and steps shown after `delay` seconds."""
    out, err = _Terminal(), _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(status_line, "DELAY_S", delay)
    return out, err


def test_the_line_shows_each_step_then_clears_before_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, err = _terminal(monkeypatch)
    with status_line.showing():
        status.step("reading x.txt (107 MB)")
        status.step("drawing \x1b[2J the ops")  # escaped, never obeyed
        assert sys.stdout is not out  # what writes to the terminal ends the line first
        print("the report")
        status.step("after the output: not shown")
    assert sys.stdout is out and sys.stderr is err
    assert err.getvalue() == (
        "\r\x1b[Khloscope: reading x.txt (107 MB)..."
        "\r\x1b[Khloscope: drawing \\x1b[2J the ops..."
        "\r\x1b[K"
    )
    assert out.getvalue() == "the report\n"


def test_quick_steps_show_nothing_and_long_ones_show_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, err = _terminal(monkeypatch, delay=60.0)
    with status_line.showing():
        status.step("counting the ops of m")
    assert err.getvalue() == ""
    with status_line.showing():
        status.step("reading big.txt (500 MB)", long=True)
        status.step("a quick one")
    assert err.getvalue() == "\r\x1b[Khloscope: reading big.txt (500 MB)...\r\x1b[K"


def test_a_long_step_is_cut_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    _, err = _terminal(monkeypatch)
    with status_line.showing():  # a stream without a file descriptor: 80 columns
        status.step("reading " + "x" * 200)
        status.step("reading " + "漢" * 100)  # two columns each
    shown = err.getvalue().split("\r\x1b[K")[1:3]
    assert len(shown[0]) == 76 + 3 and shown[0].endswith("x...")
    assert cell_len(shown[1]) == 76 + 3 and len(shown[1]) == 18 + 29 + 3  # on screen
    assert shown[1].endswith("漢...")


def test_piped_nothing_is_shown_nor_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(status_line, "DELAY_S", 0.0)
    with status_line.showing():
        assert sys.stdout is out and sys.stderr is err
        status.step("reading x.txt", long=True)
    assert err.getvalue() == ""


def _report(stderr_on_a_terminal: bool) -> tuple[bytes, bytes]:
    """`hloscope report` of a captured run, its steps shown at once: (stdout, what the
    terminal, or the pipe, got on stderr)."""
    code = (
        "import sys; from hloscope.cli import status_line; status_line.DELAY_S = 0.0; "
        "from hloscope.cli.app import main; sys.argv = ['hloscope', *sys.argv[1:]]; main()"
    )
    argv = [sys.executable, "-c", code, "report", str(DATA / "jax_mlp"), "--no-cache"]
    if not stderr_on_a_terminal:
        done = subprocess.run(argv, capture_output=True, cwd=ROOT, check=True)
        return done.stdout, done.stderr
    parent, child = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=child, cwd=ROOT)
    os.close(child)
    got = b""
    while True:
        try:
            data = os.read(parent, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        got += data
    out, _ = proc.communicate()
    os.close(parent)
    assert proc.returncode == 0
    return out, got


def test_a_command_on_a_terminal_shows_its_steps_and_prints_the_same() -> None:
    out, shown = _report(True)
    piped_out, piped_err = _report(False)
    assert out == piped_out and out.startswith(b"run ")  # stdout is a pipe both times
    assert piped_err == b""
    assert b"\r\x1b[Khloscope: reading module_0030.jit_mlp" in shown
    assert shown.endswith(b"\r\x1b[K")  # cleared at the end
