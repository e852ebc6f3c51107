"""Dense + ReLU under TensorFlow XLA (``jit_compile=True``).

Shows the simplest fusion story: ``relu(matmul(x, w) + b)`` is three ops in
TensorFlow, but XLA turns it into one ``dot`` (the matmul, sent to the Eigen /
oneDNN GEMM on CPU) plus one fused elementwise kernel (bias add + ReLU, a
``kLoop`` fusion).

Run::

    python samples/dense_relu.py [--batch 64] [--n-in 256] [--n-out 128] [--calls 3]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf


def dense_relu(x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """The plain computation: ``relu(x @ w + b)``."""
    return tf.nn.relu(tf.matmul(x, w) + b)


f = tf.function(dense_relu, jit_compile=True)


def make_inputs(
    batch: int = 64, n_in: int = 256, n_out: int = 128
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Deterministic float32 inputs ``(x, w, b)``."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((batch, n_in), dtype=np.float32))
    w = tf.constant(rng.standard_normal((n_in, n_out), dtype=np.float32) * 0.05)
    b = tf.constant(rng.standard_normal((n_out,), dtype=np.float32) * 0.1)
    return x, w, b


def bench() -> tuple[Callable[..., tf.Tensor], tuple[tf.Tensor, tf.Tensor, tf.Tensor]]:
    """Return ``(fn, args)``: the plain (non-tf.function) computation and inputs."""
    return dense_relu, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--n-in", type=int, default=256)
    parser.add_argument("--n-out", type=int, default=128)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    x, w, b = make_inputs(args.batch, args.n_in, args.n_out)
    y = None
    for _ in range(args.calls):
        y = f(x, w, b)
    assert y is not None
    print(f"dense_relu: out shape {tuple(y.shape)}, sum {float(tf.reduce_sum(y)):.4f}")


if __name__ == "__main__":
    main()
