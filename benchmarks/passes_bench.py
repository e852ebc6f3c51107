"""`hloscope passes` against `hloscope report` on a 96-layer JAX model, side by side.

Generates the model of `parse_bench.py` (a JAX MLP of N unrolled layers and its
gradient: about 14.8k instructions before and 31k after optimization at 96 layers)
with `hloscope dump --passes` into a temporary run folder (XLA writes ~125 MB of
per-pass dumps and the pass-timer log), then times, alternating in one process so that
both see the same machine state:

  A: hloscope passes RUN --module jit_model
  B: hloscope report RUN --module jit_model

and prints the wall time of each, the medians and the ratio A/B. Target (issue 23):
A/B <= 3. The run folder is deleted afterwards (pass --keep DIR to keep it there).
`--scan` builds the same layers under `jax.lax.scan` instead (one layer's body, looped).

    python benchmarks/passes_bench.py [--layers 96] [--rounds 3] [--scan] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UNROLLED = """
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
jax.jit(jax.grad(model)).lower(params, x).compile()
"""

SCAN = """
import sys
import jax, jax.numpy as jnp

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"

def layer(x, wb):
    w, b = wb
    h = jax.nn.gelu(x @ w + b)
    h = h - h.mean(-1, keepdims=True)
    h = h / jnp.sqrt((h * h).mean(-1, keepdims=True) + 1e-5)
    return x + jax.nn.softmax(h, axis=-1), None

def model(params, x):
    x, _ = jax.lax.scan(layer, x, params)
    return (x ** 2).mean()

layers = int(sys.argv[1])
params = (jnp.ones((layers, 64, 64)) * 0.01, jnp.zeros((layers, 64)))
x = jnp.ones((8, 64))
jax.jit(jax.grad(model)).lower(params, x).compile()
"""


def hloscope_command() -> list[str]:
    """The installed entry point next to this Python, else `python -m hloscope`."""
    entry = Path(sys.executable).with_name("hloscope")
    return [str(entry)] if entry.exists() else [sys.executable, "-m", "hloscope"]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return elapsed


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scan", action="store_true", help="the layers under lax.scan")
    parser.add_argument("--keep", type=Path, help="make the run here and keep it")
    opts = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="hloscope-passes-bench-"))
    run = opts.keep or tmp / "run"
    try:
        script = tmp / "model.py"
        script.write_text(SCAN if opts.scan else UNROLLED)
        dump = [*hloscope_command(), "dump", "--passes", "--module", "jit_model", "--force"]
        subprocess.run(
            [*dump, str(script), "-o", str(run), "--", str(opts.layers)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        passes_cmd = [*hloscope_command(), "passes", str(run), "--module", "jit_model"]
        report_cmd = [*hloscope_command(), "report", str(run), "--module", "jit_model"]
        a_times: list[float] = []
        b_times: list[float] = []
        for _ in range(opts.rounds):
            a_times.append(timed(passes_cmd))
            b_times.append(timed(report_cmd))
        dumps = sorted((run / "dump").glob("module_*.jit_model.0*.txt"))
        print(
            f"{opts.layers}-layer JAX model{' (lax.scan)' if opts.scan else ''}: "
            f"{len(dumps)} per-pass dumps, {folder_size(run / 'dump') / 1e6:.1f} MB in dump/"
        )
        a, b = statistics.median(a_times), statistics.median(b_times)
        print(f"A hloscope passes: {', '.join(f'{t:.2f}' for t in a_times)} s (median {a:.2f})")
        print(f"B hloscope report: {', '.join(f'{t:.2f}' for t in b_times)} s (median {b:.2f})")
        print(f"A/B = {a / b:.2f}x (target <= 3x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
