"""Profile readers at scale: time and peak memory grow with the input, not its square.

Issue 25's cases, each read as `hloscope profile FILE` reads it (`read_trace(...,
xla_only=True)` then `attribute`), in a fresh process that reports its own time and peak
resident memory, a small size and a big one side by side:

- modules: a TPU profile (`XLA Modules` and `XLA Ops` lines, as ../shared/gpu's) of
  5,000 and of 50,000 modules, two executions of three ops each;
- loops: TPU profiles whose every op is a `while` nesting the next, 30 deep (the loop
  self-time sweep), 2,000 and 20,000 modules;
- events: a JAX CPU profile (thunk events with `hlo_op`/`hlo_module`/`program_id`/
  `run_id` stats, as tests/data/jax_mlp_profile's) of 1 million and of 10 million events.

The profiles are written by `tests/fuzz/xspace_build.py` into a temp folder. Prints per
case the file size, seconds and peak MB of each size and the ratios big/small: linear
work shows a time ratio near the size ratio (10x), quadratic work its square.

    PYTHONPATH=$PWD python benchmarks/reader_scale_bench.py [--events 10000000]
        [--modules 50000] [--only modules|loops|events] [--code PATH]

`--code PATH` reads with another copy of the `hloscope` package (a folder holding it,
e.g. an older commit's from `git archive COMMIT hloscope | tar -x -C PATH`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_MEASURE = """
import json, resource, sys, time
from hloscope.timing.attribution import attribute
from hloscope.timing.xplane import read_trace
t0 = time.perf_counter()
trace = read_trace(sys.argv[1], xla_only=True)
t1 = time.perf_counter()
timings = attribute(trace)
t2 = time.perf_counter()
print(json.dumps({
    "events": len(trace.events), "modules": len(timings.modules),
    "read_s": t1 - t0, "attribute_s": t2 - t1,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""

_BUILD = """
import sys
from tests.fuzz.xspace_build import cpu_xspace, tpu_xspace
kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if kind == "modules":
    data = tpu_xspace(n, executions=2, ops=3)
elif kind == "loops":
    data = tpu_xspace(n, executions=2, ops=30, control=True)
else:
    data = cpu_xspace(n)
open(path, "wb").write(data)
"""


def _run(code: str, *args: str, package: Path = ROOT) -> str:
    env = {"PYTHONPATH": str(package), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=package
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return out.stdout


def measure(kind: str, n: int, folder: Path, package: Path = ROOT) -> dict[str, float]:
    path = folder / f"{kind}-{n}.xplane.pb"
    _run(_BUILD, kind, str(n), str(path))
    doc = json.loads(_run(_MEASURE, str(path), package=package))
    doc["file_mb"] = path.stat().st_size / 2**20
    path.unlink()
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", type=int, default=50_000, help="the big module count")
    ap.add_argument("--events", type=int, default=10_000_000, help="the big event count")
    ap.add_argument("--only", choices=["modules", "loops", "events"])
    ap.add_argument("--code", type=Path, default=ROOT, help="a folder holding another hloscope")
    args = ap.parse_args()
    cases = {
        "modules": (args.modules // 10, args.modules),
        "loops": (args.modules // 25, args.modules // 2.5),
        "events": (args.events // 10, args.events),
    }
    with tempfile.TemporaryDirectory(prefix="hloscope-scale-") as tmp:
        for kind, (small, big) in cases.items():
            if args.only and kind != args.only:
                continue
            a = measure(kind, int(small), Path(tmp), args.code.resolve())
            b = measure(kind, int(big), Path(tmp), args.code.resolve())
            for n, r in ((small, a), (big, b)):
                total = r["read_s"] + r["attribute_s"]
                print(
                    f"{kind:7} {int(n):>10,}: {r['events']:>10,} events {r['modules']:>6,} modules, "
                    f"file {r['file_mb']:.1f} MB; read {r['read_s']:.2f} s + attribute "
                    f"{r['attribute_s']:.2f} s = {total:.2f} s; peak {r['peak_mb']:.0f} MB",
                    flush=True,
                )
            time_ratio = (b["read_s"] + b["attribute_s"]) / (a["read_s"] + a["attribute_s"])
            print(
                f"{kind:7} {big / small:.0f}x the input: {time_ratio:.1f}x the time, "
                f"attribution {b['attribute_s'] / a['attribute_s']:.1f}x, "
                f"{b['peak_mb'] / a['peak_mb']:.1f}x the peak memory",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
