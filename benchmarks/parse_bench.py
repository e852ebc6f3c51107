"""Parse speed and memory: hloscope's parser against XLA's C++ parser, side by side.

Generates a large after-optimization module (a JAX model with many unrolled layers and
its gradient: about 3.4 MB and 27k instructions at the default 85 layers), then times
`hloscope.parse_module` and `jaxlib._hlo.hlo_module_from_text` on the same text in the
same process, alternating, and prints the ratio of the medians. Also reports the memory
the parsed model keeps (and the peak while parsing) relative to the text size, and the
time to build the networkx graphs.

    python benchmarks/parse_bench.py [--layers 85] [--repeats 5]

Targets (issue 2): time <= 1.5x XLA's (aiming for 1.0x), model memory <= 10x the text.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=85)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from jaxlib import _hlo as xla  # XLA's own C++ parser

    text = big_module(args.layers)
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
    print(f"ratio hloscope/XLA: {ours_s / theirs_s:.2f}x  (target <= 1.5x, aim 1.0x)")
    print(
        f"memory kept by the model: {kept / 1e6:.1f} MB = {kept / len(text):.1f}x the text; "
        f"peak while parsing {peak / 1e6:.1f} MB = {peak / len(text):.1f}x  (target <= 10x)"
    )
    print(
        f"networkx graphs: {graph_s * 1000:.0f} ms for {len(graphs)} computation graphs "
        f"and the call graph ({calls.number_of_edges()} call edges)"
    )


if __name__ == "__main__":
    main()
