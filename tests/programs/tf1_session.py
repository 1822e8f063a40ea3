"""A TF1 graph run through tf.compat.v1.Session. Usage: python tf1_session.py LOGDIR MODE."""

import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

import instrument  # noqa: E402

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)
x = tf.compat.v1.placeholder(tf.float32, shape=[3], name="x")
y = tf.math.log(x, name="log")  # TF1_LOG_LINE
z = tf.reduce_sum(y * 2.0, name="total")
with tf.compat.v1.Session() as session:
    for _ in range(2):
        print("RESULT", session.run(z, feed_dict={x: np.array([0.0, 1.0, 2.0], "float32")}))
instrument.disable_dump_debug_info()
try:
    instrument.enable_dump_debug_info(
        sys.argv[1], tensor_debug_mode=sys.argv[2], stop_on_alert=True
    )
except ValueError as error:
    print("STOP_ON_ALERT_REFUSED", "eager execution" in str(error))
