"""DenseNet121 (weights=None), one forward pass compiled with XLA, small input."""
import numpy as np
import tensorflow as tf
import keras

model = keras.applications.DenseNet121(weights=None, input_shape=(32, 32, 3), classes=10)
f = tf.function(lambda x: model(x, training=False), jit_compile=True)
out = f(np.zeros((1, 32, 32, 3), "float32"))
print("densenet:", out.shape)
