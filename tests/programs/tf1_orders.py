"""A TF1 session program with a while loop, enabled before or after eager execution is
disabled. Usage: python tf1_orders.py LOGDIR ORDER [fallback] (ORDER: "enable_first" or
"disable_first"; "fallback": as in a TensorFlow without Operation._add_control_input)."""

import sys

import numpy as np
import tensorflow as tf

import instrument
from instrument.tf_internals import graph_edits

logdir, order = sys.argv[1:3]
if sys.argv[3:] == ["fallback"]:
    graph_edits.can_add_control_input = lambda: False
if order == "enable_first":
    instrument.enable_dump_debug_info(
        logdir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
    )
tf.compat.v1.disable_eager_execution()
if order == "disable_first":
    instrument.enable_dump_debug_info(
        logdir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
    )
x = tf.compat.v1.placeholder(tf.float32, shape=[3], name="x")
_, halved = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5), (0, x))
y = tf.math.log(halved, name="log")  # TF1_LOG_LINE
total = tf.reduce_sum(y * 2.0, name="total")
with tf.compat.v1.Session() as session:
    for _ in range(2):
        print("RESULT", session.run(total, feed_dict={x: np.array([0.0, 1.0, 2.0], "float32")}))
