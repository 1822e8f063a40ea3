"""A sum that overflows only under XLA (`tfdbg-tui run --ab xla`).

Eight 3e38 and eight -3e38: TensorFlow's CPU kernel adds them in vector lanes, each
lane 3e38 + -3e38 = 0; XLA's compiled reduction adds 3e38 + 3e38 first: +inf.
"""

import tensorflow as tf


@tf.function(jit_compile=True)
def step(x):
    return tf.reduce_sum(x) * 0.5  # SUM_LINE


x = tf.constant([3e38] * 8 + [-3e38] * 8)
for _ in range(3):
    loss = step(x)
print("loss", float(loss), flush=True)
