"""Keras 3 on the backend Keras itself chooses (KERAS_BACKEND, else keras.json):
three lines of Sequential + predict, compiled with XLA."""

import keras
import numpy as np

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, "relu"), keras.layers.Dense(4)])
model.compile(jit_compile=True)
x = np.ones((12, 16), "float32")
out = model.predict(x, batch_size=4, verbose=0)  # three executions of one compiled step
print(f"keras on {keras.backend.backend()}: {out.shape}")
