"""hloscope.cli.teardown: what `keep` holds is never freed in a one-command process, and
freed blocks go back to the OS there."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

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


def _run(mode: str, script: str = SCRIPT) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", script, mode],
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


FREEING = """
import sys
from hloscope.cli import teardown

if sys.argv[1] == "cli":
    teardown.one_command()

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

big = bytearray(16 << 20)  # mapped on its own; freed, it raises glibc's threshold to 16 MiB
del big
before = resident()
blocks = [bytearray(1 << 20) for _ in range(64)]  # under that threshold: from the heap
pin = bytearray(256 << 10)  # above them there, so that the heap's top is not free
del blocks
print((resident() - before) >> 20)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc on Linux only",
)
def test_a_one_command_process_gives_freed_blocks_back_to_the_os() -> None:
    """After a 16 MiB block is freed, 64 MiB freed in 1 MiB blocks stay resident in a
    library caller's process (glibc raised its mmap threshold), and go back to the OS in
    a one-command process (`one_command` keeps the threshold at 128 KiB)."""
    assert int(*_run("library", FREEING)) >= 48  # the heap keeps them: what the fix is for
    assert int(*_run("cli", FREEING)) <= 4
