"""A small Keras model under TensorFlow's XLA auto-clustering, as many TensorFlow users
turn XLA on: no ``jit_compile=True`` anywhere, ``TF_XLA_FLAGS`` in the environment.

TensorFlow then compiles only the parts of each ``tf.function`` graph that XLA can take
and finds worth it (clusters of at least a few ops); the rest runs as TensorFlow ops.
Here the dense layers do not cluster: on the CPU, TensorFlow's graph optimizer has
already fused each ``MatMul + BiasAdd (+ Relu)`` into a oneDNN ``_FusedMatMul``, which
XLA has no kernel for. ``hloscope report`` lists which ops ran in XLA and which did not.

Run (on the CPU auto-clustering also needs ``--tf_xla_cpu_global_jit``)::

    TF_XLA_FLAGS="--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit" \\
        hloscope dump --profile samples/tf_auto_clustering.py
    python samples/tf_auto_clustering.py [--batch 32] [--features 64] [--calls 5]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf


def build_model(features: int = 64, hidden: int = 128, classes: int = 10) -> tf.keras.Model:
    """Dense + ReLU, layer normalisation, a GELU layer and a linear head."""
    inputs = tf.keras.Input((features,))
    x = tf.keras.layers.Dense(hidden, activation="relu", name="dense_in")(inputs)
    x = tf.keras.layers.LayerNormalization(name="norm")(x)
    x = tf.keras.layers.Dense(hidden, activation="gelu", name="dense_gelu")(x)
    x = tf.keras.layers.Dense(classes, name="head")(x)
    return tf.keras.Model(inputs, x, name="classifier")


def make_inputs(batch: int = 32, features: int = 64) -> tf.Tensor:
    """A deterministic batch."""
    rng = np.random.default_rng(0)
    return tf.constant(rng.normal(size=(batch, features)).astype("float32"))


def make_step(model: tf.keras.Model) -> Callable[[tf.Tensor], tf.Tensor]:
    """The function TensorFlow auto-clusters: the model and a softmax, as a graph."""

    @tf.function
    def predict(x: tf.Tensor) -> tf.Tensor:
        return tf.nn.softmax(model(x))

    return predict


def bench() -> tuple[Callable[[tf.Tensor], tf.Tensor], tuple[tf.Tensor]]:
    """Return ``(fn, args)``: the model's forward pass and a batch."""
    model = build_model()
    return (lambda x: tf.nn.softmax(model(x))), (make_inputs(),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()

    model = build_model(args.features)
    step = make_step(model)
    x = make_inputs(args.batch, args.features)
    y = None
    for _ in range(args.calls):
        y = step(x)
    assert y is not None
    flags = os.environ.get("TF_XLA_FLAGS", "(not set: nothing is auto-clustered)")
    print(
        f"tf_auto_clustering: out shape {tuple(y.shape)}, row sums "
        f"{float(tf.reduce_mean(tf.reduce_sum(y, axis=-1))):.4f}; TF_XLA_FLAGS={flags}"
    )


if __name__ == "__main__":
    main()
