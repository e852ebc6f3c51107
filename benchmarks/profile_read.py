"""How long a profiled run takes to read: `report --json` (first, and later with the
cached timings) and `report --html`, next to `report --json` of the same dump without
its profile, plus the profile decoded in pure Python and by the protobuf runtime.

Makes the run when none is given: Keras DenseNet121 (random weights, 64x64 images) on
JAX, `hloscope dump --profile benchmarks/models/densenet121.py`. Everything is measured
side by side in one run of this script.

    python benchmarks/profile_read.py [RUN] [--repeats 3]

Targets (issue 13): first `report --json` <= 5 s, later ones <= 1 s, `report --html`
<= 10 s.
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

ROOT = Path(__file__).resolve().parents[1]
CACHE = ".hloscope-timings.json"


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "hloscope", *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - start


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
        html = tmp / "report.html"
        first, later, pages, bare = [], [], [], []
        for _ in range(args.repeats):
            (run / CACHE).unlink(missing_ok=True)
            first.append(timed(["report", str(run), "--json"]))
            later.append(timed(["report", str(run), "--json"]))
            pages.append(timed(["report", str(run), "--html", str(html)]))
            bare.append(timed(["report", str(run / "dump"), "--json"]))
        rows = [
            ("report --json, first (timings computed)", first, 5.0),
            ("report --json, later (timings cached)", later, 1.0),
            ("report --html", pages, 10.0),
            ("report --json of the dump alone (no timings)", bare, None),
        ]
        for label, ts, target in rows:
            goal = f"  target <= {target:.0f} s" if target else ""
            shown = ", ".join(f"{t:.2f}" for t in ts)
            print(f"{label:46} median {statistics.median(ts):5.2f} s ({shown}){goal}")
        m = statistics.median
        print(
            f"timings add {m(first) - m(bare):.2f} s to the first report and "
            f"{m(later) - m(bare):.2f} s to later ones; later/first = {m(later) / m(first):.2f}x"
        )
        decode_times(run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
