"""The real MaxText nsys-jax archive (../shared/gpu) read as a run, end to end, as a user
runs it: `report --json`, `graph` of the biggest module and of `jit_train_step`, and
`report --html` (time and page size), each a fresh process, side by side in one run.

    python benchmarks/gpu_run_bench.py [--repeats 3]

Targets (issue 12): report --json <= 3 s, graph <= 5 s, report --html <= 15 s and <= 8 MB.
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

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"

ARCHIVE = Path(__file__).resolve().parents[2] / "shared" / "gpu" / "maxtext_fsdp4_h100.nsys-jax.zip"


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hloscope", *args], check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if not ARCHIVE.is_file():
        sys.exit(f"{ARCHIVE} is absent: this benchmark needs ../shared/gpu")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        commands = {
            "report --json": ["report", str(ARCHIVE), "--json"],
            "graph (biggest)": ["graph", str(ARCHIVE), "-o", f"{tmp}/a.svg"],
            "graph jit_train_step": [
                "graph",
                str(ARCHIVE),
                "-M",
                "train_step",
                "-o",
                f"{tmp}/b.svg",
            ],
            "report --html": ["report", str(ARCHIVE), "--html", str(page)],
        }
        timed(commands["report --json"])  # unpack the archive's dump once, as a first run does
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():  # interleaved: load hits all alike
                times[name].append(timed(command))
        for name, ts in times.items():
            print(f"{name:22s} median {statistics.median(ts):5.2f} s  (min {min(ts):.2f})")
        print(f"{'html page':22s} {page.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
