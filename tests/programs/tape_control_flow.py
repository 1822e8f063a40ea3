"""A GradientTape around eager calls of tf.functions whose bodies hold a tf.while_loop
and a tf.cond: TensorFlow builds their gradients from graphs holding trace ops.

Usage: python tape_control_flow.py LOGDIR MODE

Prints a JSON line with the gradients computed.
"""

import json
import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)
v = tf.Variable([1.0, 2.0, 3.0])


@tf.function
def looped(x):
    def body(i, y):
        return i + 1, tf.sin(y) * v  # while body: Sin

    _, y = tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), x])
    return tf.reduce_sum(y)


@tf.function
def branched(x):
    y = tf.cond(
        tf.reduce_sum(x) > 0.0,
        lambda: tf.sqrt(x) * v,  # cond true branch: Sqrt
        lambda: tf.square(x) * v,
    )  # cond false branch: Square
    return tf.reduce_sum(y)


x = tf.constant([1.0, 2.0, 4.0])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = looped(x)
g_loop = tape.gradient(y, [x, v])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = branched(x)
g_cond = tape.gradient(y, [x, v])
instrument.disable_dump_debug_info()
print(
    json.dumps(
        {"loop": [g.numpy().tolist() for g in g_loop], "cond": [g.numpy().tolist() for g in g_cond]}
    )
)
