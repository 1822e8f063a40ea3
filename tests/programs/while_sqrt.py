"""NaN bug: inside a while loop, a square root of a value that turns negative."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)


@tf.function
def shrink(x):
    def body(i, x):
        x = x - 1.5
        x = tf.math.sqrt(x)  # BUG
        return i + 1, x

    return tf.while_loop(lambda i, x: i < 4, body, [tf.constant(0), x])


shrink(tf.constant([6.0, 9.0]))
instrument.disable_dump_debug_info()
