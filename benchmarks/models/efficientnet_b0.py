"""Keras EfficientNetB0 (random weights) inference on small images: the many-module run
that `benchmarks/parallel_bench.py` reads. Keras on JAX compiles each helper of the
predict loop as a module of its own (about 165 modules in all). The backend is Keras's
own choice (`KERAS_BACKEND`, else ~/.keras/keras.json).

    KERAS_BACKEND=jax hloscope dump benchmarks/models/efficientnet_b0.py
"""

import argparse

import keras
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=64, help="image height and width")
parser.add_argument("--batches", type=int, default=2)
args = parser.parse_args()

model = keras.applications.EfficientNetB0(weights=None, input_shape=(args.size, args.size, 3))
x = np.random.default_rng(0).random((2 * args.batches, args.size, args.size, 3), "float32")
out = model.predict(x, batch_size=2, verbose=0)
print(f"efficientnetb0 on {keras.backend.backend()}: out {out.shape}, sum {float(out.sum()):.4f}")
