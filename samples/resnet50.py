"""Keras ResNet-50 inference under TensorFlow XLA (``jit_compile=True``).

Builds ``keras.applications.ResNet50(weights=None)`` (random weights, no
download) and runs inference through ``tf.function(model, jit_compile=True)``.
On CPU XLA keeps the 3x3/7x7 convolutions as ``convolution`` ops and turns
the 1x1 ones into ``dot``s; each batch norm becomes a small per-channel
``add_rsqrt_fusion`` (the weights are variables, so nothing is constant
folded) plus an elementwise ``kLoop`` fusion after its convolution that also
absorbs the ReLU or the residual add + ReLU (``add_maximum_fusion``).  A large
optimized module (321 parameters, ~110 fusions), good for exercising the
fusion views.

Run::

    python samples/resnet50.py [--batch 1] [--size 224] [--calls 3]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf


def build_model(size: int = 224) -> tf.keras.Model:
    """ResNet-50 with random weights (deterministic seed), input ``size x size x 3``."""
    tf.keras.utils.set_random_seed(0)
    return tf.keras.applications.ResNet50(weights=None, input_shape=(size, size, 3))


def make_inputs(batch: int = 1, size: int = 224) -> tf.Tensor:
    rng = np.random.default_rng(0)
    return tf.constant(rng.uniform(0.0, 255.0, (batch, size, size, 3)).astype(np.float32))


def bench() -> tuple[Callable[[tf.Tensor], tf.Tensor], tuple[tf.Tensor]]:
    """Return ``(fn, args)``: the plain Keras inference call and an example batch."""
    model = build_model()

    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (make_inputs(),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", type=int, default=224, help="image side (>= 32)")
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    model = build_model(args.size)
    infer = tf.function(lambda x: model(x, training=False), jit_compile=True)
    x = make_inputs(args.batch, args.size)
    y = None
    for _ in range(args.calls):
        y = infer(x)
    assert y is not None
    top = int(tf.argmax(y[0]))
    print(
        f"resnet50: batch {args.batch} size {args.size}, out shape {tuple(y.shape)}, top class {top}"
    )


if __name__ == "__main__":
    main()
