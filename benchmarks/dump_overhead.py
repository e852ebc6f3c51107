"""Overhead of `hloscope dump` over running the script by hand with the same XLA_FLAGS.

Runs, alternating in one process so that both see the same machine state:
  A: hloscope dump SCRIPT -o TMP/runN -- ARGS
  B: XLA_FLAGS="--xla_dump_to=TMP/dumpN --xla_dump_hlo_as_text" python SCRIPT ARGS
and prints the wall time of each, the medians and the ratio A/B (target: <= 1.15x).
Both write their output to /dev/null; A's time includes parsing the dump for its summary.

    python benchmarks/dump_overhead.py [--script samples/resnet50.py] [--rounds 3] [-- ARGS]
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


def hloscope_command() -> list[str]:
    """The installed entry point next to this Python, else `python -m hloscope`."""
    entry = Path(sys.executable).with_name("hloscope")
    return [str(entry)] if entry.exists() else [sys.executable, "-m", "hloscope"]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", default=str(ROOT / "samples" / "resnet50.py"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("args", nargs="*", help="arguments for the script (after --)")
    opts = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    tmp = Path(tempfile.mkdtemp(prefix="hloscope-bench-"))
    a_times: list[float] = []
    b_times: list[float] = []
    try:
        for n in range(opts.rounds):
            run_dir = tmp / f"run{n}"
            a_cmd = [*hloscope_command(), "dump", opts.script, "-o", str(run_dir)]
            a_cmd += ["--", *opts.args] if opts.args else []
            dump_dir = tmp / f"dump{n}"
            b_env = {**env, "XLA_FLAGS": f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"}
            b_cmd = [sys.executable, opts.script, *opts.args]
            # alternate which goes first, so that neither always runs on a warmer machine
            order = [("A", a_cmd, env), ("B", b_cmd, b_env)]
            for label, cmd, cmd_env in order if n % 2 == 0 else order[::-1]:
                t = timed(cmd, cmd_env)
                (a_times if label == "A" else b_times).append(t)
                print(f"round {n + 1} {label}: {t:6.2f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for label, times in (("hloscope dump ", a_times), ("python + flags", b_times)):
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(
            f"{label} median {statistics.median(times):6.2f} s  min {min(times):6.2f} s  ({shown})"
        )
    median_ratio = statistics.median(a_times) / statistics.median(b_times)
    # the minimum is the least disturbed by other load on the machine
    print(
        f"ratio {median_ratio:.3f}x median, {min(a_times) / min(b_times):.3f}x min (target <= 1.15x)"
    )


if __name__ == "__main__":
    main()
