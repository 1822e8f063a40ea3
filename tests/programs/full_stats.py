"""A custom training loop that diverges (learning rate far too high), in FULL_STATS.

Usage: python full_stats.py LOGDIR. The weights grow step by step until the predictions
overflow to infinity (those of the largest inputs first) and the loss goes NaN. The
last line printed is a JSON list of the predictions of every step, for the test to
compare with the dump.
"""

import json
import sys

import numpy as np
import tensorflow as tf

import instrument

STEPS = 12
LEARNING_RATE = 0.5

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_STATS", circular_buffer_size=-1
)
rng = np.random.default_rng(3)
# Rows of very different scales: some predictions overflow a step before the others.
scales = 10.0 ** np.repeat(np.arange(-4, 4), 8)[:, np.newaxis]
x = tf.constant((rng.normal(size=(64, 4)) * scales).astype(np.float32))
y = tf.constant(rng.normal(size=(64, 1)).astype(np.float32))
w = tf.Variable(tf.ones([4, 1]))


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w)  # PRED_LINE
        loss = tf.reduce_mean(tf.square(pred - y))
    w.assign_sub(LEARNING_RATE * tape.gradient(loss, w))
    # The loss is returned, as a training step's is: a value nothing uses is never
    # computed, nor traced (docs/instrument.md, "What is recorded").
    return pred, loss


predictions = [train_step()[0].numpy().ravel().tolist() for _ in range(STEPS)]
instrument.disable_dump_debug_info()
print(json.dumps(predictions))
