"""hloscope.cli.teardown: what `keep` holds is never freed in a one-command process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
from hloscope.cli import teardown

class Loud:
    def __del__(self):
        print("freed", flush=True)

if sys.argv[1] == "cli":
    teardown.one_command()
teardown.keep(Loud())
print("end", flush=True)
"""


def _run(mode: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
    )
    return out.stdout.split()


def test_kept_objects_are_never_freed_in_a_one_command_process() -> None:
    assert _run("cli") == ["end"]


def test_keep_does_nothing_elsewhere() -> None:
    # a library caller or a test: the object goes as soon as nothing holds it
    assert _run("library") == ["freed", "end"]


LEAVING = """
import atexit, sys
from hloscope.cli import teardown

class Loud:
    def __del__(self):
        print("freed", flush=True)

memo = [Loud()]  # not kept: freed as the interpreter ends, unless the process leaves
if sys.argv[1] != "library":
    teardown.one_command()
if sys.argv[1] == "kept":
    teardown.keep(object())
atexit.register(lambda: sys.stdout.write("handler "))  # unflushed too
sys.stdout.write("unflushed ")
teardown.leave(3)
print("returned")
"""


def test_a_process_that_kept_its_objects_leaves_without_freeing_anything() -> None:
    """`leave`: the exit handlers run and the output is flushed, as the end of the
    interpreter would, with the code given; nothing is freed. A process that kept
    nothing (or is not a one-command one) ends as usual."""

    def run(mode: str) -> tuple[int, list[str]]:
        out = subprocess.run(
            [sys.executable, "-c", LEAVING, mode],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT)},
        )
        return out.returncode, out.stdout.split()

    assert run("kept") == (3, ["unflushed", "handler"])
    assert run("cli") == (0, ["unflushed", "returned", "handler", "freed"])
    assert run("library") == (0, ["unflushed", "returned", "handler", "freed"])
