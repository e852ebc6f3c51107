"""How long a profiled run takes to read: `report --json` the first time (nothing kept),
later (the document read back from the run folder), and with only the timings kept (the
document computed again: the pipeline's own speed); `report --html` the first time and
later; `report --json` of the same dump without its profile; and the profile decoded in
pure Python and by the protobuf runtime.

Makes the run when none is given: Keras DenseNet121 (random weights, 64x64 images) on
JAX, `hloscope dump --profile benchmarks/models/densenet121.py`. Everything is measured
side by side in one run of this script.

    python benchmarks/profile_read.py [RUN] [--repeats 3]

RUN's caches (`.hloscope-*.json`) are removed before each round: give a copy of a run you
want to keep as it is. Targets (issue 13): first `report --json` <= 5 s, later ones
<= 1 s, `report --html` <= 10 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"

ROOT = Path(__file__).resolve().parents[1]
CACHES = (".hloscope-timings.json", ".hloscope-report.json")


def timed(args: list[str]) -> tuple[float, bytes]:
    """Seconds `hloscope ARGS` takes in a fresh process, and what it printed."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *args], check=True, cwd=ROOT, stdout=subprocess.PIPE
    )
    return time.perf_counter() - start, done.stdout


def make_run(tmp: Path) -> Path:
    run = tmp / "densenet121"
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "hloscope", "dump", "--profile"]
    cmd += ["benchmarks/models/densenet121.py", "-o", str(run)]
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return run


def decode_times(run: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from hloscope.timing.xplane import find_profiles, read_trace

    for path in find_profiles(run):
        t0 = time.perf_counter()
        pure = read_trace(path)
        t1 = time.perf_counter()
        fast = read_trace(path, xla_only=True)
        t2 = time.perf_counter()
        print(
            f"decode {path.stat().st_size / 1e6:.1f} MB: pure Python {t1 - t0:.2f} s "
            f"({len(pure.events)} events), protobuf runtime + XLA events only {t2 - t1:.2f} s "
            f"({len(fast.events)} events): {(t1 - t0) / (t2 - t1):.1f}x faster"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", help="a profiled run folder (default: make one)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hloscope-read-bench-"))
    try:
        run = Path(args.run).resolve() if args.run else make_run(tmp)
        time.sleep(1.1)  # a report does not keep output of files written within a second
        rows = measure(run, tmp / "report.html", args.repeats)
        for label, ts, target in rows:
            goal = f"  target <= {target:.0f} s" if target else ""
            shown = ", ".join(f"{t:.2f}" for t in ts)
            print(f"{label:52} median {statistics.median(ts):5.2f} s ({shown}){goal}")
        m = statistics.median
        first, later, recomputed, bare = rows[0][1], rows[1][1], rows[2][1], rows[5][1]
        print(
            f"later/first = {m(later) / m(first):.2f}x; the document computed again with the "
            f"timings kept: {m(recomputed):.2f} s; timings add {m(first) - m(bare):.2f} s "
            "to the first report"
        )
        decode_times(run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(run: Path, html: Path, repeats: int) -> list[tuple[str, list[float], float | None]]:
    """Each way of reading the run, `repeats` times, side by side (caches removed before
    each round); the read-back documents are checked byte-equal to the computed ones."""
    times: list[list[float]] = [[] for _ in range(6)]
    report = ["report", str(run), "--json"]
    for _ in range(repeats):
        for name in CACHES:
            (run / name).unlink(missing_ok=True)
        first, computed = timed(report)
        later, kept = timed(report)
        if kept != computed:
            raise SystemExit("the read-back report differs from the computed one")
        (run / CACHES[1]).unlink()
        recomputed, again = timed(report)
        if again != computed:
            raise SystemExit("the report computed again differs from the first")
        (run / CACHES[0]).unlink()
        page_first, _ = timed(["report", str(run), "--html", str(html)])
        page_later, _ = timed(["report", str(run), "--html", str(html)])
        bare, _ = timed(["report", str(run / "dump"), "--json"])
        for i, t in enumerate((first, later, recomputed, page_first, page_later, bare)):
            times[i].append(t)
    return [
        ("report --json, first (nothing kept)", times[0], 5.0),
        ("report --json, later (document read back)", times[1], 1.0),
        ("report --json, timings kept, document computed", times[2], None),
        ("report --html, first (nothing kept)", times[3], 10.0),
        ("report --html, later (timings kept)", times[4], None),
        ("report --json of the dump alone (no timings)", times[5], None),
    ]


if __name__ == "__main__":
    main()
