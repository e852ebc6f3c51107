"""Start-up time of `hloscope --help`, and of `hloscope --version` (what every command
pays before its work: the CLI imported and its options parsed), next to a bare
`python -c pass`, in one run.

    python benchmarks/startup_bench.py [--repeats 10]

Target (issue 2): `hloscope --help` under 0.5 s here. Also checks that neither `--help`
nor a read-only command imports TensorFlow or JAX.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    hloscope = [sys.executable, "-m", "hloscope", "--help"]
    version = [sys.executable, "-m", "hloscope", "--version"]
    bare = [sys.executable, "-c", "pass"]
    ours, versions, base = [], [], []
    for _ in range(args.repeats):
        ours.append(timed(hloscope))
        versions.append(timed(version))
        base.append(timed(bare))
    probe = (  # checked as the process ends (`main` may end it)
        "import atexit, sys\nfrom hloscope.cli import main\n"
        "atexit.register(lambda: print("
        "sorted({'tensorflow', 'jax', 'jaxlib'} & set(sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['hloscope', 'report', {str(ROOT / 'tests/data/jax_mlp')!r}, '--json']\n"
        "main()\n"
    )
    heavy = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    print(
        f"hloscope --help: median {statistics.median(ours) * 1000:.0f} ms "
        f"(min {min(ours) * 1000:.0f}); bare python: {statistics.median(base) * 1000:.0f} ms; "
        f"target < 500 ms"
    )
    print(
        f"hloscope --version: median {statistics.median(versions) * 1000:.0f} ms "
        f"(min {min(versions) * 1000:.0f})"
    )
    print(f"frameworks imported by `hloscope report --json`: {heavy.stderr.strip()}")


if __name__ == "__main__":
    main()
