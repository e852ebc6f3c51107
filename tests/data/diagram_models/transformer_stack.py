"""A JAX stack of 6 pre-norm transformer layers (attention + MLP), one jit forward."""
import jax
import jax.numpy as jnp

D, H, L, T = 32, 4, 6, 16


def layer(p, x):
    h = (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)
    q, k, v = (h @ p["wq"]), (h @ p["wk"]), (h @ p["wv"])
    q, k, v = (t.reshape(T, H, D // H).transpose(1, 0, 2) for t in (q, k, v))
    a = jax.nn.softmax(q @ k.transpose(0, 2, 1) / jnp.sqrt(D // H), axis=-1) @ v
    x = x + a.transpose(1, 0, 2).reshape(T, D) @ p["wo"]
    h = (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


@jax.jit
def forward(params, x):
    for i, p in enumerate(params):
        with jax.named_scope(f"layer_{i}"):
            x = layer(p, x)
    return x


key = jax.random.PRNGKey(0)
shapes = {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, 4 * D), "w2": (4 * D, D)}
params = [{n: jax.random.normal(jax.random.fold_in(key, i * 10 + j), s) * 0.02 for j, (n, s) in enumerate(shapes.items())} for i in range(L)]
print("transformer:", forward(params, jnp.ones((T, D))).shape)
