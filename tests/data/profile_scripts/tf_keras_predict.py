"""tf-keras (Keras 2 on TensorFlow): Sequential + predict, compiled with XLA."""

import numpy as np
import tf_keras

model = tf_keras.Sequential([tf_keras.layers.Dense(32, "relu", input_shape=(16,)), tf_keras.layers.Dense(4)])
model.compile(jit_compile=True)
out = model.predict(np.ones((12, 16), "float32"), batch_size=4, verbose=0)
print("tf_keras:", out.shape)
