"""A TF1 training loop: placeholders, feed_dict, an optimizer's minimize, an accuracy
evaluated every third batch. The eighth batch (step 7) holds a NaN feature.

Usage: python tf1_training.py LOGDIR MODE.
"""

import logging
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

import instrument  # noqa: E402

# The line enabling logs, on stdout for the test.
logging.getLogger("instrument").addHandler(logging.StreamHandler(sys.stdout))
logging.getLogger("instrument").setLevel(logging.INFO)
instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)
x = tf.compat.v1.placeholder(tf.float32, shape=[None, 4], name="features")
y = tf.compat.v1.placeholder(tf.float32, shape=[None, 1], name="labels")
w = tf.compat.v1.get_variable("w", initializer=tf.ones([4, 1]) * 0.1)
prediction = tf.matmul(x, w, name="prediction")
loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
error = tf.reduce_mean(tf.abs(prediction - y), name="error")
rng = np.random.default_rng(0)
with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for batch in range(10):
        features = rng.normal(size=(8, 4)).astype(np.float32)
        if batch == 7:
            features[3, 2] = np.nan  # NAN_BATCH_LINE
        labels = features.sum(axis=1, keepdims=True)
        session.run([train, loss], feed_dict={x: features, y: labels})
        if batch % 3 == 0:
            session.run(error, feed_dict={x: features, y: labels})
instrument.disable_dump_debug_info()
print("DONE")
