"""The op graph of a big before-optimization module, this checkout against another
(issue 27): `kernels_of_before_ops` and `op_graph` on the parsed pair, timed, with the
peak resident memory they add, and the DOT they draw compared byte for byte.

Each checkout runs in a process of its own (its hloscope first on the path), parses the
pair once (`inspect_run`, as `hloscope graph` does), then draws `--reps` times, as
`hloscope graph X.before_optimizations.txt` would; the two checkouts take turns,
`--rounds` times each, so that the load of a shared machine falls on both alike.

    git archive main | tar -x -C /tmp/hloscope-main
    python benchmarks/op_graph_bench.py --old /tmp/hloscope-main \
        [--file /tmp/hloscope-scale/105mb/module_0001.jit_train.before_optimizations.txt]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FILE = (
    Path(tempfile.gettempdir())
    / "hloscope-scale"
    / "105mb"
    / "module_0001.jit_train.before_optimizations.txt"
)


def worker(path: Path, reps: int) -> None:
    """Parse `path` with its partner, draw its op graph `reps` times; print JSON."""
    from hloscope.analysis.provenance import kernels_of_before_ops
    from hloscope.hlo.parser import paused_gc
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import module_diagram
    from hloscope.render.dot import to_dot

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6

    with paused_gc():  # as `hloscope graph` runs
        ins = inspect_run(path, bench=False, drawn="both")
        m = ins.main[0]
        assert m.before_module is not None and m.after_module is not None
        assert m.provenance is not None and m.after is not None
        parsed = rss()
        runs = []
        for _ in range(reps):
            t0 = time.perf_counter()
            spec = module_diagram(m, stage="before")  # kernels_of_before_ops inside
            t1 = time.perf_counter()
            kernels_of_before_ops(m.before_module, m.after_module, m.provenance, m.after)
            t2 = time.perf_counter()
            runs.append({"diagram": t1 - t0, "kernels_of": t2 - t1})
        dot = to_dot(spec)
    print(
        json.dumps(
            {
                "runs": runs,
                "parsed_mb": parsed,
                "peak_mb": rss(),
                "dot": hashlib.sha256(dot.encode()).hexdigest(),
            }
        )
    )


def main() -> None:
    """Run both checkouts in turn and print their figures side by side."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="the other checkout's root (required)")
    ap.add_argument("--file", type=Path, default=FILE)
    ap.add_argument("--reps", type=int, default=1, help="drawings per process")
    ap.add_argument("--rounds", type=int, default=2, help="processes per checkout")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.file, args.reps)
        return
    if args.old is None:
        ap.error("--old is required")
    if not args.file.exists():
        raise SystemExit(f"{args.file}: generate it with benchmarks/scale_bench.py --mb 105")
    env = {**os.environ, "HLOSCOPE_CACHE_MB": "0"}
    found: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for label, root in (("old", args.old.resolve()), ("new", ROOT)):
            cmd = [sys.executable, __file__, "--worker", "--file", str(args.file)]
            cmd += ["--reps", str(args.reps)]
            out = subprocess.run(
                cmd,
                check=True,
                capture_output=True,
                text=True,
                env={**env, "PYTHONPATH": str(root)},
            )
            found[label].append(json.loads(out.stdout.splitlines()[-1]))
    print(f"{args.file} ({args.file.stat().st_size / 1e6:.1f} MB)")
    best: dict[str, float] = {}
    for label, results in found.items():
        diagrams = [r["diagram"] for res in results for r in res["runs"]]
        kernels = [r["kernels_of"] for res in results for r in res["runs"]]
        added = [res["peak_mb"] - res["parsed_mb"] for res in results]
        best[label] = min(diagrams)
        print(
            f"{label}: module_diagram(before) {min(diagrams):5.2f}-{max(diagrams):5.2f} s "
            f"(kernels_of_before_ops alone, again after: {min(kernels):4.2f}-{max(kernels):4.2f} s), "
            f"peak RSS {min(added):5.0f}-{max(added):5.0f} MB over the parsed pair"
        )
    same = {res["dot"] for results in found.values() for res in results}
    print(f"new/old: {best['new'] / best['old']:.2f}x the time; DOT identical: {len(same) == 1}")
    if len(same) != 1:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
