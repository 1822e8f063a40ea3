"""NaN bug: an eager op takes the log of zero."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)
logits = tf.constant([2.0, 1.0, 0.0, 3.0])
scaled = logits * 0.5
log_probs = tf.math.log(scaled)  # BUG
loss = -tf.reduce_mean(log_probs)
instrument.disable_dump_debug_info()
