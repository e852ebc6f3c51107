"""Fuzzing at length: every reader of hloscope, each case under a time and memory limit.

The same generators and contract as the CI test (`tests/fuzz/test_readers.py`, see
`tests/fuzz/readers.py`): binary HLO (`*.hlo.pb[.xz]`), HLO text, Chrome traces
(`*.trace.json[.gz]`), XSpaces (`*.xplane.pb`), nsys-jax archives (zip or folder) and
run folders with their caches, each mutated from real files (tests/data, and
../shared/gpu where present). Each case runs in a worker process with `RLIMIT_AS` at
`--memory-gb` and is killed past `--limit` seconds. Prints, per reader, how many cases
ran, were read, were refused with a clean error, and broke the contract (a traceback,
a hang, a memory blow-up, or a contract breach: a file outside the run read, a forged
or stale cache shown, a raw control character on the terminal, a negative or infinite
figure), with the slowest case and the peak memory; then every violation, with the
command that replays it.

    PYTHONPATH=$PWD python benchmarks/fuzz_bench.py [--reader NAME ...] [--cases 2000]
        [--first 0] [--seed 25] [--limit 60] [--memory-gb 2] [--code PATH] [--json FILE]

`--code PATH` fuzzes another copy of the `hloscope` package (e.g. an older commit's,
from `git archive COMMIT hloscope | tar -x -C PATH`) with the same generators. Exit
status 1 when any case broke the contract.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import LIMIT_S, MEMORY_BYTES, Campaign, Summary  # noqa: E402
from tests.fuzz.readers import READERS, available  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reader", nargs="*", default=sorted(READERS), choices=sorted(READERS))
    ap.add_argument("--cases", type=int, default=2000, help="cases per reader")
    ap.add_argument("--first", type=int, default=0, help="number of the first case")
    ap.add_argument("--seed", type=int, default=25, help="campaign seed (cases replay)")
    ap.add_argument("--limit", type=float, default=LIMIT_S, help="seconds allowed per case")
    ap.add_argument("--memory-gb", type=float, default=MEMORY_BYTES / 2**30)
    ap.add_argument("--code", type=Path, help="fuzz the hloscope package in this folder")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    if args.code is not None:
        os.environ["FUZZ_CODE"] = str(args.code.resolve())

    figures = {}
    failed = False
    t0 = time.perf_counter()
    with Campaign(limit=args.limit, memory=int(args.memory_gb * 2**30)) as campaign:
        for reader in args.reader:
            if not available(reader):
                print(f"{reader}: skipped, its seeds need ../shared/gpu", flush=True)
                continue
            summary = Summary(reader)
            started = time.perf_counter()
            for i in range(args.first, args.first + args.cases):
                summary.add(campaign.run(reader, args.seed, i))
            print(f"{summary.line()}; {time.perf_counter() - started:.0f} s", flush=True)
            for v in summary.violations:
                failed = True
                print(f"  case {v.index} {v.kind}: replay with python -m tests.fuzz.harness "
                      f"--replay {reader} {args.seed} {v.index}\n    "
                      + v.detail.strip().replace("\n", "\n    ")[-1500:], flush=True)  # fmt: skip
            figures[reader] = {
                "cases": summary.cases - summary.counts["unbuilt"],
                "read": summary.counts["read"],
                "clean_errors": summary.counts["rejected"],
                "tracebacks": summary.counts["traceback"],
                "hangs": summary.counts["hang"],
                "blow_ups": summary.counts["blow-up"],
                "contract": summary.counts["contract"],
                "unbuilt": summary.counts["unbuilt"],
                "slowest_s": round(summary.slowest.seconds, 3) if summary.slowest else 0,
                "peak_mib": round(summary.biggest.peak_bytes / 2**20) if summary.biggest else 0,
            }
    print(f"total {time.perf_counter() - t0:.0f} s; limits {args.limit:g} s and "
          f"{args.memory_gb:g} GB per case; seed {args.seed}")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
