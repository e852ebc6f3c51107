"""A ``tf.function(jit_compile=True)`` attention retraced for each sequence length.

Each new input shape makes TensorFlow trace ``attend`` again (a new concrete function,
``__inference_attend_<n>``) and XLA compile it (a new ``a_inference_attend_<n>`` module);
after five retraces TensorFlow warns about it. ``input_signature`` with a ``None``
length, or ``reduce_retracing=True``, would trace once, but XLA still compiles each
shape. The script prints TensorFlow's own count of concrete functions, which
``hloscope report`` should match.

Run::

    python samples/tf_retrace.py [--lengths 8,16,24,32,40,48] [--dim 32] [--calls 2]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

LENGTHS = (8, 16, 24, 32, 40, 48)


def attend(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """Self-attention of one sequence (no heads, no mask), then GELU."""
    s = tf.matmul(q, k, transpose_b=True) / tf.sqrt(tf.cast(tf.shape(q)[-1], tf.float32))
    return tf.nn.gelu(tf.matmul(tf.nn.softmax(s, axis=-1), v))


attend_xla = tf.function(attend, jit_compile=True)


def make_inputs(length: int = 32, dim: int = 32) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Deterministic float32 ``(q, k, v)`` of one sequence of ``length`` tokens."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((length, dim), dtype=np.float32) for _ in range(3))
    return tf.constant(q), tf.constant(k), tf.constant(v)


def bench() -> tuple[Callable[..., tf.Tensor], tuple[tf.Tensor, tf.Tensor, tf.Tensor]]:
    """Return ``(fn, args)``: the plain (non-tf.function) computation at one length."""
    return attend, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args()

    lengths = [int(x) for x in args.lengths.split(",") if x]
    total = 0.0
    for n in lengths:
        inputs = make_inputs(n, args.dim)
        for _ in range(args.calls):
            total += float(tf.reduce_sum(attend_xla(*inputs)))
    concrete = attend_xla._list_all_concrete_functions()
    print(f"tf_retrace: {len(lengths)} lengths, sum {total:.4f}")
    print(f"tf_retrace: TensorFlow concrete functions {len(concrete)}")


if __name__ == "__main__":
    main()
