"""A ``jax.jit`` attention called at several sequence lengths: one compile per length.

XLA compiles for static shapes, so every new length is a new trace, lowering and XLA
compile of ``attend`` (a new ``jit_attend`` module), paid before that length's first
call. On the CPU some lengths also fuse differently: at 48 the softmax is split over
more loop fusions, and from 64 the second matmul joins a library call. The script
prints JAX's own count of compiled variants (``attend_jit._cache_size()``), which
``hloscope report`` should match.

Run::

    python samples/jax_recompile.py [--lengths 8,16,24,32,48,64] [--dim 64] [--calls 2]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

LENGTHS = (8, 16, 24, 32, 48, 64)


def attend(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Self-attention of one sequence (no heads, no mask), then GELU."""
    s = q @ k.T / jnp.sqrt(q.shape[-1])
    s = s - jnp.max(s, axis=-1, keepdims=True)
    p = jnp.exp(s)
    p = p / jnp.sum(p, axis=-1, keepdims=True)
    return jax.nn.gelu(p @ v)


attend_jit = jax.jit(attend)


def make_inputs(length: int = 32, dim: int = 64) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Deterministic ``(q, k, v)`` of one sequence of ``length`` tokens (made with NumPy,
    so that no random-number helpers are compiled per length)."""
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.standard_normal((length, dim), dtype=np.float32)) for _ in "qkv")
    return q, k, v


def bench() -> tuple[Callable[..., jax.Array], tuple[jax.Array, jax.Array, jax.Array]]:
    """Return ``(fn, args)``: the plain (non-jitted) computation at one length."""
    return attend, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args()

    lengths = [int(x) for x in args.lengths.split(",") if x]
    inputs = {n: make_inputs(n, args.dim) for n in lengths}
    total = 0.0
    for n in lengths:
        for _ in range(args.calls):
            total += float(attend_jit(*inputs[n]).sum())
    print(f"jax_recompile: {len(lengths)} lengths, sum {total:.4f}")
    print(f"jax_recompile: JAX cache size {attend_jit._cache_size()}")


if __name__ == "__main__":
    main()
