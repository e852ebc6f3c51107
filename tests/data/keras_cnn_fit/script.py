"""A Keras Conv+Relu model, one `fit` step compiled with XLA (jit_compile=True)."""
import keras
import numpy as np
from keras import layers

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((8, 8, 1)),
    layers.Conv2D(4, 3, activation="relu"),
    layers.Conv2D(4, 3, activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dense(3),
])
model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
x = np.random.rand(8, 8, 8, 1).astype("float32")
y = np.random.randint(0, 3, size=(8,))
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
print("cnn fit: done")
