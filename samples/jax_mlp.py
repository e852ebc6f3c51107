"""A small JAX MLP (GELU hidden layers, softmax output) under ``jax.jit``.

Each layer runs inside ``jax.named_scope("layerN")`` so the HLO ops carry the
scope in their ``metadata={op_name="jit(mlp)/layer0/..."}``.  After XLA's
optimizations every layer becomes one ``dot`` plus one fused elementwise
kernel (bias add + GELU), and the softmax becomes a few reduce/elementwise
fusions.

Run::

    python samples/jax_mlp.py [--batch 32] [--width 256] [--depth 3] [--classes 10] [--calls 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp

Params = list[tuple[jax.Array, jax.Array]]


def init_params(
    in_dim: int = 128, width: int = 256, depth: int = 3, classes: int = 10, seed: int = 0
) -> Params:
    """Deterministic parameters: a list of ``(w, b)`` pairs, last one is the output layer."""
    dims = [in_dim] + [width] * depth + [classes]
    keys = jax.random.split(jax.random.PRNGKey(seed), len(dims) - 1)
    params: Params = []
    for key, d_in, d_out in zip(keys, dims[:-1], dims[1:], strict=True):
        w = jax.random.normal(key, (d_in, d_out), jnp.float32) / jnp.sqrt(d_in)
        params.append((w, jnp.zeros((d_out,), jnp.float32)))
    return params


def mlp(params: Params, x: jax.Array) -> jax.Array:
    """GELU MLP with a softmax output; one named scope per layer."""
    *hidden, (w_out, b_out) = params
    for i, (w, b) in enumerate(hidden):
        with jax.named_scope(f"layer{i}"):
            x = jax.nn.gelu(x @ w + b)
    with jax.named_scope("output"):
        return jax.nn.softmax(x @ w_out + b_out, axis=-1)


mlp_jit = jax.jit(mlp)


def make_inputs(
    batch: int = 32, in_dim: int = 128, width: int = 256, depth: int = 3, classes: int = 10
) -> tuple[Params, jax.Array]:
    """Deterministic ``(params, x)``."""
    params = init_params(in_dim, width, depth, classes)
    x = jax.random.normal(jax.random.PRNGKey(1), (batch, in_dim), jnp.float32)
    return params, x


def bench() -> tuple[Callable[[Params, jax.Array], jax.Array], tuple[Params, jax.Array]]:
    """Return ``(fn, args)``: the plain (non-jitted) computation and inputs."""
    return mlp, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--in-dim", type=int, default=128)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    params, x = make_inputs(args.batch, args.in_dim, args.width, args.depth, args.classes)
    y = None
    for _ in range(args.calls):
        y = mlp_jit(params, x).block_until_ready()
    assert y is not None
    print(
        f"jax_mlp: out shape {tuple(y.shape)}, row sums {float(y.sum(axis=-1).mean()):.4f}, argmax[0] {int(y[0].argmax())}"
    )


if __name__ == "__main__":
    main()
