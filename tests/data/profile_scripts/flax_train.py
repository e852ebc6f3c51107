"""Flax (NNX) MLP: three jitted SGD train steps."""

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.hidden = nnx.Linear(16, 32, rngs=rngs)
        self.out = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.out(jax.nn.relu(self.hidden(x)))


@nnx.jit
def train_step(model: MLP, x: jax.Array, y: jax.Array) -> jax.Array:
    def loss_fn(m: MLP) -> jax.Array:
        return jnp.mean((m(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    params = nnx.state(model, nnx.Param)
    nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
    return loss


model = MLP(nnx.Rngs(0))
x, y = jnp.ones((8, 16)), jnp.zeros((8, 4))
for _ in range(3):
    loss = train_step(model, x, y)
print("flax loss", float(loss))
