"""A TensorFlow function that XLA refuses to compile (``jit_compile=True``).

``tf.unique_with_counts`` returns tensors whose length depends on the *values*
of the input, and TF 2.21 has no XLA kernel for it, so compiling the function
with ``jit_compile=True`` fails with "Detected unsupported operations when
trying to compile graph ... on XLA_CPU_JIT: UniqueWithCounts ...".
``--op as_string`` shows the other classic failure: string ops have no XLA
kernels at all.

Note: plain ``tf.unique`` and ``tf.boolean_mask`` *do* compile on TF 2.21 (XLA
pads them to a static upper bound), so they are not used here.

The script prints one line with the error and exits with status 1.

Run::

    python samples/dynamic_shape_fails.py [--n 16] [--op unique_with_counts|as_string]
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf


@tf.function(jit_compile=True)
def count_values(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Distinct values of ``x`` and their counts: output length depends on data."""
    y, _, counts = tf.unique_with_counts(x)
    return y, counts


@tf.function(jit_compile=True)
def format_values(x: tf.Tensor) -> tf.Tensor:
    """Integers to strings: XLA has no string type."""
    return tf.strings.as_string(x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument(
        "--op", choices=["unique_with_counts", "as_string"], default="unique_with_counts"
    )
    args = parser.parse_args()

    x = tf.constant([i % 5 for i in range(args.n)], dtype=tf.int32)
    fn = count_values if args.op == "unique_with_counts" else format_values
    try:
        result = fn(x)
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as err:
        first = err.message.strip().splitlines()[0]
        print(f"dynamic_shape_fails: XLA compile error ({type(err).__name__}): {first}")
        return 1
    print(f"dynamic_shape_fails: unexpectedly compiled, got {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
