"""NaN bug: an op inside a tf.function takes the log of zero."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)


@tf.function
def cross_entropy(probs, labels):
    clipped = probs * 1.0
    log_probs = tf.math.log(clipped)  # BUG
    return -tf.reduce_sum(labels * log_probs)


cross_entropy(tf.constant([0.5, 0.0, 0.5]), tf.constant([0.0, 1.0, 0.0]))
instrument.disable_dump_debug_info()
