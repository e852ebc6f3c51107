"""Parse speed and memory: hloscope's parser against XLA's C++ parser, side by side.

Generates a large after-optimization module (a JAX model with many unrolled layers and
its gradient: about 3.4 MB and 27k instructions at the default 85 layers), or reads the
one given with `--file` (the 107 MB module of `benchmarks/scale_bench.py`), then times
`hloscope.parse_module` and `jaxlib._hlo.hlo_module_from_text` on the same text in the
same process, alternating, and prints the ratio of the medians (and of the best runs:
the machine is shared). Also reports the memory the parsed model keeps (and the peak
while parsing) relative to the text size, and, for the generated module, the time to
build the networkx graphs. `--profile` prints where the parse spends its time.

    python benchmarks/parse_bench.py [--layers 85] [--repeats 5] [--file F] [--profile]

Goals (issue 27): time at most 0.8x XLA's, on the 3.4 MB and on the 107 MB module; the
model at most 5.3x the text in memory.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from hloscope.hlo.graph import call_graph, to_networkx
from hloscope.hlo.parser import parse_module

GENERATOR = """
import sys
import jax, jax.numpy as jnp

def model(params, x):
    for i, (w, b) in enumerate(params):
        with jax.named_scope(f"layer_{i}"):
            h = jax.nn.gelu(x @ w + b)
            h = h - h.mean(-1, keepdims=True)
            h = h / jnp.sqrt((h * h).mean(-1, keepdims=True) + 1e-5)
            x = x + jax.nn.softmax(h, axis=-1)
    return (x ** 2).mean()

layers = int(sys.argv[1])
params = [(jnp.ones((64, 64)) * 0.01, jnp.zeros((64,))) for _ in range(layers)]
x = jnp.ones((8, 64))
print(jax.jit(jax.grad(model)).lower(params, x).compile().as_text())
"""


def big_module_file(layers: int) -> Path:
    """A file holding the after-optimization text of the generated model (cached in the
    temp dir; the other benchmarks use the same file)."""
    cache = Path(tempfile.gettempdir()) / f"hloscope-bench-{layers}-layers.hlo.txt"
    if not cache.exists():
        import subprocess

        text = subprocess.run(
            [sys.executable, "-c", GENERATOR, str(layers)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        cache.write_text(text)
    return cache


def big_module(layers: int) -> str:
    """The after-optimization text of the generated model (see `big_module_file`)."""
    return big_module_file(layers).read_text()


GOAL_RATIO = 0.8
GOAL_MEMORY = 5.3


def profile(text: str) -> None:
    """Where one parse spends its time, by function (cProfile; C calls are their own
    lines, the regex scan is inside `scan`)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    parse_module(text)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=85)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--file", type=Path, help="parse this module instead of the generated one")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one parse")
    args = ap.parse_args()

    from jaxlib import _hlo as xla  # XLA's own C++ parser

    text = args.file.read_text() if args.file else big_module(args.layers)
    ours, theirs = [], []
    module = None
    for _ in range(args.repeats):
        gc.collect()
        t0 = time.perf_counter()
        module = parse_module(text)
        t1 = time.perf_counter()
        xla.hlo_module_from_text(text)
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
        del module
    module = parse_module(text)
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)

    del module
    gc.collect()
    tracemalloc.start()
    module = parse_module(text)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    t0 = time.perf_counter()
    graphs = to_networkx(module)
    calls = call_graph(module)
    graph_s = time.perf_counter() - t0

    mb = len(text) / 1e6
    print(
        f"module: {module.name}, {mb:.2f} MB, {module.instruction_count} instructions, "
        f"{len(module.computations)} computations"
    )
    print(
        f"hloscope parse: median {ours_s * 1000:.0f} ms  (runs: "
        + ", ".join(f"{t * 1000:.0f}" for t in ours)
        + ")"
    )
    print(
        f"XLA C++ parse:  median {theirs_s * 1000:.0f} ms  (runs: "
        + ", ".join(f"{t * 1000:.0f}" for t in theirs)
        + ")"
    )
    ratio, best = ours_s / theirs_s, min(ours) / min(theirs)
    print(
        f"ratio hloscope/XLA: {ratio:.2f}x of the medians, {best:.2f}x of the best runs  "
        f"(goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'not met'})"
    )
    print(
        f"memory kept by the model: {kept / 1e6:.1f} MB = {kept / len(text):.1f}x the text; "
        f"peak while parsing {peak / 1e6:.1f} MB = {peak / len(text):.1f}x  "
        f"(goal <= {GOAL_MEMORY}x: {'met' if kept / len(text) <= GOAL_MEMORY else 'not met'})"
    )
    if args.profile:
        profile(text)
    if args.file:
        return
    print(
        f"networkx graphs: {graph_s * 1000:.0f} ms for {len(graphs)} computation graphs "
        f"and the call graph ({calls.number_of_edges()} call edges)"
    )


if __name__ == "__main__":
    main()
