"""Eager vs XLA on this machine: the two TensorFlow measurements of the README.

Runs `hloscope.bench` (eager, tf.function without XLA, tf.function(jit_compile=True)) on
  - samples/recsys_scores.py:bench  (score 100k items, sigmoid, top-10), and
  - samples/resnet50.py:bench       (Keras ResNet-50 inference, batch 1, 224x224),
each in its own child process (so one model's memory and threads do not disturb the
other), and prints the figures and the XLA speed-ups. It prints, never asserts: the
ratios depend on the machine.

    python benchmarks/eager_vs_xla.py [--min-time 2] [--only recsys|resnet50] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {
    "recsys": "samples/recsys_scores.py:bench",
    "resnet50": "samples/resnet50.py:bench",
}

CHILD = """
import json, sys
from hloscope.timing.bench import bench, load_target
from hloscope.render.timing_json import bench_doc
fn, args = load_target(sys.argv[1])
result = bench(fn, *args, min_time=float(sys.argv[2]), target=sys.argv[1])
with open(sys.argv[3], "w") as f:
    json.dump(bench_doc(result), f)
"""


def run_one(target: str, min_time: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        subprocess.run(
            [sys.executable, "-c", CHILD, target, str(min_time), str(out)],
            cwd=ROOT,
            env=env,
            check=True,
        )
        return json.loads(out.read_text())


def show(doc: dict) -> None:
    print(f"\n{doc['target']}  ({doc['framework']} on {doc['device']})")
    print(
        f"  {'mode':32} {'first call':>11} {'median':>10} {'p10':>10} {'p90':>10} {'runs':>5}"
        f" {'speed-up':>9}"
    )
    for m in doc["modes"]:
        if m["error"]:
            print(f"  {m['label']:32} failed: {m['error']}")
            continue
        print(
            f"  {m['label']:32} {m['first_call_s'] * 1e3:9.1f}ms {m['median_s'] * 1e3:8.2f}ms "
            f"{m['p10_s'] * 1e3:8.2f}ms {m['p90_s'] * 1e3:8.2f}ms {m['repeats']:5d} "
            f"{m['speedup']:8.2f}x"
        )
    for note in doc["notes"]:
        print(f"  note: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds per mode")
    parser.add_argument("--only", choices=sorted(TARGETS), action="append")
    parser.add_argument("--json", type=Path, help="also write the documents here")
    args = parser.parse_args()
    names = args.only or list(TARGETS)
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs")
    docs = []
    for name in names:
        doc = run_one(TARGETS[name], args.min_time)
        docs.append(doc)
        show(doc)
    print("\nXLA (jit_compile=True) speed-up over eager, median per call:")
    for doc in docs:
        xla = next((m for m in doc["modes"] if m["name"] == "xla"), None)
        graph = next((m for m in doc["modes"] if m["name"] == "tf.function"), None)
        if xla and xla["speedup"]:
            extra = f" (tf.function without XLA: {graph['speedup']:.2f}x)" if graph else ""
            print(f"  {doc['target']}: {xla['speedup']:.2f}x{extra}")
    if args.json:
        args.json.write_text(json.dumps(docs, indent=2) + "\n")


if __name__ == "__main__":
    main()
