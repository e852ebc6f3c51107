"""The run folder of `hloscope dump`: chosen, and claimed with one `mkdir` so that two
dumps started in the same second never share one.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
from collections.abc import Sequence
from pathlib import Path

from hloscope.errors import UsageError

__all__ = ["DEFAULT_RUNS_DIR", "choose_run_dir", "claim_run_dir", "release_run_dir"]

DEFAULT_RUNS_DIR = "hloscope-runs"
"""Where runs go without `--out`: `hloscope-runs/<script>-<timestamp>/`."""


def choose_run_dir(
    out: str | Path | None, stem: str, force: bool, now: _dt.datetime
) -> tuple[Path, bool, tuple[Path, ...]]:
    """`(run folder, replace an earlier run, folders created here)`."""
    if out is None:
        return claim_run_dir(Path(DEFAULT_RUNS_DIR), f"{stem}-{now:%Y%m%d-%H%M%S}")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {path}: is a file; give a folder for the run")
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise UsageError(
                f"{path} exists and is not empty; pass --force to replace the run there, "
                "or -o DIR for another folder"
            )
        return path, True, ()
    return path, False, ()


def claim_run_dir(runs: Path, name: str) -> tuple[Path, bool, tuple[Path, ...]]:
    """Create `runs/name` (or `name-2`, `name-3`, ...) with one `mkdir` each: exactly
    one of several dumps started in the same second gets each name."""
    made: list[Path] = []
    try:
        if not runs.is_dir():
            runs.mkdir(parents=True, exist_ok=True)
            made.append(runs)
        for n in itertools.count(1):
            candidate = runs / (name if n == 1 else f"{name}-{n}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            return candidate, False, (candidate, *made)
    except OSError as e:
        release_run_dir(made)
        raise UsageError(
            f"{runs}: cannot create the run folder ({e.strerror or e}); pass -o DIR"
        ) from None
    raise AssertionError("unreachable")


def release_run_dir(made: Sequence[Path]) -> None:
    """Remove the folders `plan_dump` created, if they are still empty (innermost
    first), so that a dump that never ran leaves nothing behind."""
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()
