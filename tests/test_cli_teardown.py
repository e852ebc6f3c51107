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
