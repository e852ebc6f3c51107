"""Reading an nsys-jax archive: the real MaxText one (../shared/gpu), first read and warm.

Each repeat starts a fresh Python process (the first read of a session: imports pyarrow,
opens the zip, reads `nvtx_gpu_proj_trace/trace.parquet`, builds the executions and the
timings) and times its phases; then times warm reads in this process. As the floor, it
times pyarrow alone reading the same parquet columns from the zip, and prints the ratio.

    python benchmarks/nsys_bench.py [--archive PATH] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "gpu" / "maxtext_fsdp4_h100.nsys-jax.zip"

FIRST_READ = """
import json, sys, time
t0 = time.perf_counter()
import pyarrow.parquet
t1 = time.perf_counter()
from hloscope.timing.nsys import nsys_timings, read_nsys
t2 = time.perf_counter()
archive = read_nsys(sys.argv[1])
t3 = time.perf_counter()
timings = nsys_timings(archive)
t4 = time.perf_counter()
print(json.dumps({"import_pyarrow": t1 - t0, "import_hloscope": t2 - t1, "read": t3 - t2,
                  "timings": t4 - t3, "total": t4 - t0, "executions": len(archive.executions),
                  "thunks": timings.op_events, "modules": len(timings.modules)}))
"""

FLOOR = """
import io, json, sys, time, zipfile
t0 = time.perf_counter()
import pyarrow.parquet as pq
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith("nvtx_gpu_proj_trace/trace.parquet"))
    table = pq.read_table(io.BytesIO(z.read(name)))
cols = {c: table.column(c).to_pylist() for c in table.column_names}
print(json.dumps({"total": time.perf_counter() - t0, "rows": table.num_rows}))
"""


def _fresh(script: str, archive: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", script, str(archive)], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", type=Path, default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not args.archive.is_file():
        sys.exit(f"{args.archive}: not found (see ../shared/gpu/README.md)")

    firsts, floors = [], []
    for _ in range(args.repeats):  # alternate, so both see the same machine load
        firsts.append(_fresh(FIRST_READ, args.archive))
        floors.append(_fresh(FLOOR, args.archive))

    from hloscope.timing.nsys import nsys_timings, read_nsys

    warm = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        nsys_timings(read_nsys(args.archive))
        warm.append(time.perf_counter() - t0)

    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    one = firsts[0]
    print(f"archive: {args.archive.name} ({args.archive.stat().st_size / 1e6:.1f} MB)")
    print(
        f"  {one['executions']:.0f} module executions, {one['thunks']:.0f} thunk calls, "
        f"{one['modules']:.0f} modules; {floors[0]['rows']:.0f} parquet rows"
    )
    print(f"first read, fresh process (median of {args.repeats}):")
    for key in ("import_pyarrow", "import_hloscope", "read", "timings", "total"):
        print(f"  {key:16s} {med(firsts, key) * 1e3:8.1f} ms")
    print(f"pyarrow alone, all columns to Python: {med(floors, 'total') * 1e3:8.1f} ms")
    print(f"warm read + timings, in process:      {statistics.median(warm) * 1e3:8.1f} ms")
    print(
        f"ratio first read / pyarrow floor:     {med(firsts, 'total') / med(floors, 'total'):.2f}x"
    )


if __name__ == "__main__":
    main()
