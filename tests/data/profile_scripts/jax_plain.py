"""Plain JAX: a jitted dense + tanh, called three times (and nothing compiled before)."""

import jax
import jax.numpy as jnp


@jax.jit
def layer(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w) + 1.0


x, w = jnp.ones((8, 16)), jnp.ones((16, 32))
for _ in range(3):
    out = layer(x, w).block_until_ready()
print("jax", out.shape)
