import os
os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/pj/dump --xla_dump_hlo_as_proto --xla_dump_hlo_as_text"
import jax, jax.numpy as jnp
from jax import lax

def layers(w, x):
    def step(h, wi):
        h = jnp.tanh(h @ wi)
        return h, jnp.sum(h)
    h, s = lax.scan(step, x, w)
    return jnp.sort(h, axis=-1), s

w = jnp.ones((6, 16, 16)); x = jnp.ones((4, 16))
jax.jit(layers).lower(w, x).compile()
k = jax.random.key(0)
jax.jit(lambda k: jax.random.split(k, 3)).lower(k).compile()
