import os, sys
os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/pp/dump --xla_dump_hlo_as_text"
import jax, jax.numpy as jnp
from jax import lax

def layers(w, x):
    def step(h, wi):
        h = jnp.tanh(h @ wi)
        return h, jnp.sum(h)
    h, s = lax.scan(step, x, w)
    return jnp.sort(h, axis=-1), s

w = jnp.ones((6, 16, 16)); x = jnp.ones((4, 16)); k = jax.random.key(0)
f = jax.jit(layers); g = jax.jit(lambda k: jax.random.split(k, 3))
f(w, x)[0].block_until_ready(); g(k).block_until_ready(); jax.random.split(k, 4).block_until_ready()
jax.profiler.start_trace("/tmp/pp/prof")
for _ in range(5):
    f(w, x)[0].block_until_ready(); g(k).block_until_ready(); jax.random.split(k, 4).block_until_ready()
jax.profiler.stop_trace()
