"""`hloscope report --json` on the big benchmark module, end to end, as a user runs it.

Writes the 27k-instruction module of `parse_bench.py` to a temporary file and times the
whole command (process start, parse, analysis, provenance, JSON) in a subprocess, next
to `hloscope parse --json` on the same file, in one run.

    python benchmarks/report_bench.py [--layers 85] [--repeats 3]

Target (issue 4): under 3 s here.
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

sys.path.insert(0, str(Path(__file__).parent))
from parse_bench import big_module

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hloscope", *args], check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=85)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    text = big_module(args.layers)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module_0000.jit_model.cpu_after_optimizations.txt"
        path.write_text(text)
        report, parse = [], []
        for _ in range(args.repeats):
            report.append(timed(["report", str(path), "--json"]))
            parse.append(timed(["parse", str(path), "--json"]))
    n = text.count("\n")
    print(f"module: {len(text) / 1e6:.2f} MB, {n} lines")
    print(
        f"hloscope report --json: median {statistics.median(report):.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in report)}); target < 3 s"
    )
    print(
        f"hloscope parse --json:  median {statistics.median(parse):.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in parse)})"
    )


if __name__ == "__main__":
    main()
