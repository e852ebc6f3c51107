"""Recommender scoring under TensorFlow XLA (``jit_compile=True``).

Scores one user embedding against N item embeddings
(``tf.matmul(item_embs, user_emb, transpose_b=True)``), squashes the scores
with a sigmoid and takes the top-k items.  Shows a matrix-vector ``dot``
followed by a fused elementwise sigmoid and XLA's TopK lowering (a sort or a
``TopK`` custom call on CPU).

Run::

    python samples/recsys_scores.py [--items 100000] [--dim 64] [--k 10] [--calls 3]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

K = 10


def recsys_scores(item_embs: tf.Tensor, user_emb: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Plain computation: sigmoid scores of all items and the top-K of them."""
    logits = tf.matmul(item_embs, user_emb, transpose_b=True)  # [N, 1]
    scores = tf.sigmoid(tf.squeeze(logits, axis=1))  # [N]
    top = tf.math.top_k(scores, k=K)
    return top.values, top.indices


score = tf.function(recsys_scores, jit_compile=True)


def make_inputs(items: int = 100_000, dim: int = 64) -> tuple[tf.Tensor, tf.Tensor]:
    """Deterministic inputs ``(item_embs [items, dim], user_emb [1, dim])``."""
    rng = np.random.default_rng(0)
    item_embs = tf.constant(rng.standard_normal((items, dim), dtype=np.float32) * 0.1)
    user_emb = tf.constant(rng.standard_normal((1, dim), dtype=np.float32))
    return item_embs, user_emb


def bench() -> tuple[Callable[..., tuple[tf.Tensor, tf.Tensor]], tuple[tf.Tensor, tf.Tensor]]:
    """Return ``(fn, args)``: the plain (non-tf.function) computation and inputs."""
    return recsys_scores, make_inputs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    item_embs, user_emb = make_inputs(args.items, args.dim)
    values = indices = None
    for _ in range(args.calls):
        values, indices = score(item_embs, user_emb)
    assert values is not None and indices is not None
    print(
        f"recsys_scores: {args.items} items, top-{K} best item {int(indices[0])} "
        f"score {float(values[0]):.4f}"
    )


if __name__ == "__main__":
    main()
