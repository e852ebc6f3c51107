"""One pre-LayerNorm transformer block in JAX under ``jax.jit``.

Layer norm -> q/k/v projections -> softmax attention -> output projection ->
residual, then layer norm -> GELU MLP -> residual.  Every stage sits in a
``jax.named_scope`` (``attn/ln``, ``attn/qkv``, ``attn/softmax``, ``mlp/up``,
...) so the optimized HLO's fusions can be traced back to the model code via
``metadata={op_name=...}``.

Run::

    python samples/jax_transformer_block.py [--batch 2] [--seq 64] [--d-model 128] [--heads 4] [--calls 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp

Params = dict[str, jax.Array]


def init_params(d_model: int = 128, d_ff: int = 512, seed: int = 0) -> Params:
    """Deterministic parameter dict."""
    ks = jax.random.split(jax.random.PRNGKey(seed), 6)

    def dense(key: jax.Array, d_in: int, d_out: int) -> jax.Array:
        return jax.random.normal(key, (d_in, d_out), jnp.float32) / jnp.sqrt(d_in)

    return {
        "ln1_g": jnp.ones((d_model,)),
        "ln1_b": jnp.zeros((d_model,)),
        "wq": dense(ks[0], d_model, d_model),
        "wk": dense(ks[1], d_model, d_model),
        "wv": dense(ks[2], d_model, d_model),
        "wo": dense(ks[3], d_model, d_model),
        "ln2_g": jnp.ones((d_model,)),
        "ln2_b": jnp.zeros((d_model,)),
        "w1": dense(ks[4], d_model, d_ff),
        "b1": jnp.zeros((d_ff,)),
        "w2": dense(ks[5], d_ff, d_model),
        "b2": jnp.zeros((d_model,)),
    }


def layer_norm(x: jax.Array, g: jax.Array, b: jax.Array, eps: float = 1e-5) -> jax.Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def block(params: Params, x: jax.Array, heads: int = 4) -> jax.Array:
    """x: [batch, seq, d_model] -> same shape."""
    bsz, seq, d_model = x.shape
    dh = d_model // heads
    with jax.named_scope("attn"):
        with jax.named_scope("ln"):
            h = layer_norm(x, params["ln1_g"], params["ln1_b"])
        with jax.named_scope("qkv"):

            def split(t: jax.Array) -> jax.Array:
                return t.reshape(bsz, seq, heads, dh).transpose(0, 2, 1, 3)

            q = split(h @ params["wq"])
            k = split(h @ params["wk"])
            v = split(h @ params["wv"])
        with jax.named_scope("scores"):
            s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(dh))
        with jax.named_scope("softmax"):
            p = jax.nn.softmax(s, axis=-1)
        with jax.named_scope("context"):
            o = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(bsz, seq, d_model)
        with jax.named_scope("out_proj"):
            x = x + o @ params["wo"]
    with jax.named_scope("mlp"):
        with jax.named_scope("ln"):
            h = layer_norm(x, params["ln2_g"], params["ln2_b"])
        with jax.named_scope("up"):
            h = jax.nn.gelu(h @ params["w1"] + params["b1"])
        with jax.named_scope("down"):
            x = x + h @ params["w2"] + params["b2"]
    return x


block_jit = jax.jit(block, static_argnames=("heads",))


def make_inputs(batch: int = 2, seq: int = 64, d_model: int = 128) -> tuple[Params, jax.Array]:
    """Deterministic ``(params, x)``."""
    params = init_params(d_model, 4 * d_model)
    x = jax.random.normal(jax.random.PRNGKey(1), (batch, seq, d_model), jnp.float32)
    return params, x


def bench() -> tuple[Callable[..., jax.Array], tuple[Params, jax.Array]]:
    """Return ``(fn, args)``: the plain (non-jitted) computation and inputs."""
    return block, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    params, x = make_inputs(args.batch, args.seq, args.d_model)
    y = None
    for _ in range(args.calls):
        y = block_jit(params, x, heads=args.heads).block_until_ready()
    assert y is not None
    print(
        f"jax_transformer_block: out shape {tuple(y.shape)}, mean {float(y.mean()):.4f}, std {float(y.std()):.4f}"
    )


if __name__ == "__main__":
    main()
