"""JAX cases: one computation called several times, CSE, reduce-window."""
import jax
import jax.numpy as jnp


@jax.jit
def _var(x):
    return jnp.var(x, axis=-1)


def norm(x, s):
    # Two layer norms over the same input: XLA's CSE merges the repeated reduce_sums.
    with jax.named_scope("norm_a"):
        a = (x - x.mean(-1, keepdims=True)) * s
    with jax.named_scope("norm_b"):
        b = (x - x.mean(-1, keepdims=True)) / s
    return a, b


@jax.jit
def step(x, s):
    v = _var(x) + _var(x * 2) + _var(x + 1)
    a, b = norm(x, s)
    pooled = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 2), (2, 2), "VALID")
    return v.sum() + a.sum() + b.sum() + pooled.sum()


x = jnp.arange(64.0).reshape(8, 8) / 7.0
print("jax cases:", float(step(x, 3.0)))
