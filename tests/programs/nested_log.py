"""NaN bug: the log of a negative number in a tf.function called by another one."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)


@tf.function
def log_likelihood(x):
    shifted = x - 2.0
    return tf.math.log(shifted)  # BUG


@tf.function
def model(x):
    doubled = x * 2.0
    return log_likelihood(doubled) + 1.0


model(tf.constant([3.0, 0.5]))
instrument.disable_dump_debug_info()
