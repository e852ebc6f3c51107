"""Cached output equals a serial, uncached run (issue 27): every command on each run,
byte for byte, computed serially without caches (`HLOSCOPE_JOBS=1 --no-cache`) against
computed with its modules' analyses read back from the user's cache folder (another
command kept them; `hloscope.analysis.kept`) and against printed back from the output
cache (`hloscope.cli.output_cache`), each command in a fresh process.

The runs are the captured ones in tests/data (run folders, bare dump folders and
profiles; or those named) and, with `--pair MB`, the
generated pair of `benchmarks/scale_bench.py`. Cached runs use `HLOSCOPE_JOBS` as set
(2 forces the worker processes on 2 cores). Compared: stdout, stderr, the exit code and
the file written (`--html`). Prints one line per run and the commands that differ.

    python benchmarks/cache_identity.py [RUN ...] [--pair 25]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

COMMANDS = [
    ["report"],
    ["report", "--all"],
    ["report", "--json"],
    ["report", "--format", "tsv"],
    ["ops"],
    ["ops", "--json"],
    ["ops", "--unfused"],
    ["check", "--max-kernels", "100000"],
    ["diff", "{run}"],
    ["report", "--html", "page.html"],
]


def run_folders() -> list[Path]:
    """The captured runs of tests/data: run folders (a run.json), bare dump folders (XLA's
    module files) and profiles (a plugins/ folder)."""

    def is_run(p: Path) -> bool:
        marks = (p / "run.json").exists() or (p / "plugins").is_dir() or (p / "dump").is_dir()
        return marks or any(p.glob("module_*.txt"))

    return sorted(p for p in DATA.iterdir() if p.is_dir() and is_run(p))


def output(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes, bytes, bytes]:
    """What `hloscope ARGV` made in a fresh process: exit code, stdout, stderr, page."""
    page = cwd / "page.html"
    page.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *argv], env=env, cwd=cwd, capture_output=True
    )
    return done.returncode, done.stdout, done.stderr, page.read_bytes() if page.exists() else b""


def main() -> None:
    """Compare each command on each run."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--pair", type=float, help="also the generated pair of MB (scale_bench)")
    args = ap.parse_args()
    runs = [p.resolve() for p in args.runs] or run_folders()
    if args.pair:
        folder = Path(tempfile.gettempdir()) / "hloscope-scale" / f"{args.pair:g}mb"
        runs.append(folder / "module_0001.jit_train.before_optimizations.txt")
    work = Path(tempfile.mkdtemp(prefix="hloscope-cache-identity-"))
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    base.pop("HLOSCOPE_CACHE_MB", None)
    differ = 0
    for run in runs:
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        # the roofline's CPU probe is kept in the cache folder: one probe for all three
        env = {**base, "HLOSCOPE_CACHE_DIR": str(cache)}
        serial = {**env, "HLOSCOPE_JOBS": "1"}
        subprocess.run(
            [sys.executable, "-m", "hloscope", "report", str(run)],
            env=env,
            cwd=work,
            capture_output=True,
        )  # keeps every module's analysis (and the CPU roofs, when profiled)
        bad = []
        for command in COMMANDS:
            argv = [a.format(run=run) for a in command[:1]] + [str(run)]
            argv += [a.format(run=run) for a in command[1:]]
            computed = output([*argv, "--no-cache"], serial, work)
            for entry in (cache / "outputs").glob("*.out"):  # not the digests
                entry.unlink()
            read_back = output(argv, env, work)
            printed_back = output(argv, env, work)
            if not computed == read_back == printed_back:
                bad.append(" ".join(command))
        kept = len(list((cache / "analyses").glob("*.pickle")))
        name = run.name if run.is_dir() else f"{run.parent.name}/{run.name}"
        verdict = "identical" if not bad else "DIFFER: " + ", ".join(bad)
        print(f"{name}: {len(COMMANDS)} commands, {kept} analyses kept: {verdict}", flush=True)
        differ += len(bad)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(runs)} runs x {len(COMMANDS)} commands: {differ} differ")
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
