"""Many modules on many cores (issue 27): `hloscope report` of a 165-module folder, the
analysis serial (`HLOSCOPE_JOBS=1`) against in parallel (one process per core), side by
side in one run, each command in a fresh process, alternating.

The folder is the dump of a Keras EfficientNetB0 inference run on JAX
(`benchmarks/models/efficientnet_b0.py`: Keras compiles each helper of its predict
loop as a module of its own), made once with `hloscope dump` into the temp dir; its bare
`dump/` folder is reported, so nothing is read back from a run folder's cache. Python
compiles hloscope's sources once into a bytecode cache in the temp dir first, as an
installed package would have (this project's shells set PYTHONDONTWRITEBYTECODE).
Prints the median and best wall time of each, their ratio, whether the outputs are
byte-identical, and the goal: at most 1.5 s on 2 cores. Before and after, it measures
what the cores give a process pool at that moment: how much faster N forked processes
get through a fixed pure-Python loop than one (N on idle cores; near 1 where other
programs keep the other cores busy, as on this project's shared 2-core machine).

    python benchmarks/parallel_bench.py [RUN_OR_DUMP] [--repeats 5] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 1.5
MIN_CORES = 3  # hloscope.analysis.pool.MIN_CORES: from how many cores a run is parallel


def make_dump(tmp: Path) -> Path:
    """The EfficientNetB0 run's dump folder (made once, kept in the temp dir)."""
    run = tmp / "hloscope-bench-efficientnet"
    if not (run / "run.json").exists():
        env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(ROOT)}
        env.pop("XLA_FLAGS", None)
        cmd = [sys.executable, "-m", "hloscope", "dump", "--force"]
        cmd += ["benchmarks/models/efficientnet_b0.py", "-o", str(run)]
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return run / "dump"


def timed(args: list[str], jobs: int, cache: Path) -> tuple[float, bytes]:
    """Seconds `hloscope ARGS` takes in a fresh process with HLOSCOPE_JOBS=jobs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HLOSCOPE_JOBS": str(jobs)}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        check=True,
        env=env,
        stdout=subprocess.PIPE,
        cwd=ROOT,  # `-m` reads the working folder first: this checkout's code, wherever run
    )
    return time.perf_counter() - start, done.stdout


def core_speedup(jobs: int, loops: int = 3_000_000) -> float:
    """How many times faster `jobs` forked processes each running the same loop finish
    than one process running it once would, were it run `jobs` times (`jobs` at best)."""

    def spin() -> None:
        total = 0
        for i in range(loops):
            total += i

    def wall(n: int) -> float:
        start = time.perf_counter()
        children = []
        for _ in range(n - 1):
            pid = os.fork()
            if pid == 0:
                spin()
                os._exit(0)
            children.append(pid)
        spin()
        for pid in children:
            os.waitpid(pid, 0)
        return time.perf_counter() - start

    one = min(wall(1) for _ in range(3))
    many = min(wall(jobs) for _ in range(3))
    return jobs * one / many


def main() -> None:
    """Make the folder if needed, then time each command serial and parallel."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    tmp = Path(tempfile.gettempdir())
    folder = (args.folder or make_dump(tmp)).resolve()  # the CLI runs in this checkout
    if (folder / "dump").is_dir():
        folder = folder / "dump"
    modules = len(list(folder.glob("*before_optimizations.txt")))
    mb = sum(p.stat().st_size for p in folder.glob("*optimizations.txt")) / 1e6
    cache = tmp / "hloscope-bench-pycache"
    print(f"{folder}: {modules} modules, {mb:.1f} MB of HLO text; {args.jobs} cores")
    print(
        f"cores now: {args.jobs} processes run a loop {core_speedup(args.jobs):.2f}x as fast as 1"
    )
    for extra in ([], ["--json"]):
        argv = ["report", str(folder), *extra, "--no-cache"]  # computed, not printed back
        timed(argv, 1, cache)  # bytecode compiled, files in the page cache
        serial: list[float] = []
        parallel: list[float] = []
        outputs = set()
        for _ in range(args.repeats):
            for jobs, times in ((1, serial), (args.jobs, parallel)):
                seconds, out = timed(argv, jobs, cache)
                times.append(seconds)
                outputs.add(out)
        s, p = statistics.median(serial), statistics.median(parallel)
        # What `hloscope report` does by default on this machine (analysis.pool.jobs_for)
        default = p if args.jobs >= MIN_CORES else s
        label = " ".join(["report", *extra])
        print(
            f"{label:14s} serial median {s:.2f} s (best {min(serial):.2f})  "
            f"{args.jobs} processes median {p:.2f} s (best {min(parallel):.2f})  "
            f"parallel/serial {p / s:.2f}x  outputs identical: {len(outputs) == 1}  "
            f"default ({'parallel' if args.jobs >= MIN_CORES else 'serial'}) {default:.2f} s: "
            f"goal <= {GOAL_S} s {'met' if default <= GOAL_S else 'not met'}"
        )
    print(
        f"cores now: {args.jobs} processes run a loop {core_speedup(args.jobs):.2f}x as fast as 1"
    )


if __name__ == "__main__":
    main()
