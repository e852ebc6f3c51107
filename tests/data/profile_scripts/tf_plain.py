"""Plain TensorFlow: a jit-compiled dense + relu, called three times."""

import tensorflow as tf

w = tf.random.stateless_normal((16, 32), seed=(1, 2))


@tf.function(jit_compile=True)
def layer(x: tf.Tensor) -> tf.Tensor:
    return tf.nn.relu(tf.matmul(x, w) + 1.0)


x = tf.ones((8, 16))
for _ in range(3):
    out = layer(x)
print("tf", out.shape)
