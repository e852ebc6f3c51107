"""relu(x @ w + b).sum() under jax.jit: the hand-checked pass story of issue 23."""

import jax
import numpy as np


def f(x, w, b):
    return jax.nn.relu(x @ w + b).sum()


x = np.ones((8, 16), np.float32)
w = np.ones((16, 4), np.float32)
b = np.ones((4,), np.float32)
print(jax.jit(f)(x, w, b))
