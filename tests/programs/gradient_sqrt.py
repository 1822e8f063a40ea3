"""Infinity bug: the gradient of sqrt at zero (the forward pass is finite)."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)
weights = tf.Variable([0.0, 4.0])


@tf.function
def grads():
    with tf.GradientTape() as tape:
        norm = tf.reduce_sum(tf.sqrt(weights))
    return tape.gradient(norm, weights)  # BUG


grads()
instrument.disable_dump_debug_info()
