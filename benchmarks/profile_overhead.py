"""What `--profile` costs: `hloscope dump --profile` next to plain `hloscope dump`.

For each JAX sample, runs alternating in one process (so that both see the same machine
state): A `hloscope dump --profile SAMPLE`, B `hloscope dump SAMPLE`, and with
`--python-trace` also C `hloscope dump --profile --python-trace SAMPLE` (what profiling
cost before the Python tracer was made optional). Prints each wall time, the medians,
the ratios A/B (target: <= 1.3x) and C/B, and the profile sizes.

    python benchmarks/profile_overhead.py [--rounds 3] [--python-trace] [SAMPLE ...]
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
SAMPLES = ("samples/jax_mlp.py", "samples/jax_transformer_block.py")


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]!r}")
    return elapsed


def profile_bytes(run: Path) -> int:
    return sum(p.stat().st_size for p in run.rglob("*.xplane.pb"))


def bench(sample: str, rounds: int, python_trace: bool, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    base = [sys.executable, "-m", "hloscope", "dump"]
    kinds = {"plain": [], "profile": ["--profile"]}
    if python_trace:
        kinds["python-trace"] = ["--profile", "--python-trace"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    sizes: dict[str, int] = {}
    for n in range(rounds):
        order = list(kinds) if n % 2 == 0 else list(kinds)[::-1]
        for kind in order:
            run = tmp / f"{Path(sample).stem}-{kind}-{n}"
            times[kind].append(timed([*base, *kinds[kind], sample, "-o", str(run)], env))
            sizes[kind] = profile_bytes(run)
            shutil.rmtree(run, ignore_errors=True)
        print(f"  round {n + 1}: " + ", ".join(f"{k} {times[k][-1]:.2f} s" for k in kinds))
    plain = statistics.median(times["plain"])
    fastest = min(times["plain"])
    for kind, ts in times.items():
        ratio = statistics.median(ts) / plain
        size = f", profile {sizes[kind] / 1e6:.2f} MB" if sizes[kind] else ""
        print(
            f"  {kind:13} median {statistics.median(ts):6.2f} s ({ratio:.2f}x plain), "
            f"min {min(ts):6.2f} s ({min(ts) / fastest:.2f}x){size}"
        )
    median_ratio = statistics.median(times["profile"]) / plain
    # the minimum is the least disturbed by other load on the machine
    min_ratio = min(times["profile"]) / fastest
    print(
        f"{sample}: dump --profile / dump = {median_ratio:.2f}x median, {min_ratio:.2f}x min "
        "(target <= 1.3x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="*", default=list(SAMPLES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python-trace", action="store_true", help="also time --python-trace")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hloscope-profile-bench-"))
    try:
        for sample in args.samples:
            print(sample)
            bench(sample, args.rounds, args.python_trace, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
