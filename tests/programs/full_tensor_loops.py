"""FULL_TENSOR values of loops: a while loop of many small batches, and a Keras LSTM fit.

Usage: python full_tensor_loops.py LOGDIR. Each loop iteration enqueues its own batch
of values, so the drain takes many batches a dequeue; the test
(tests/instrument/test_full_tensor_loops.py) recomputes every value and prints nothing
it needs from here but the data (stdout: one JSON line).
"""

import json
import sys

import numpy as np
import tensorflow as tf

import instrument

LOGDIR = sys.argv[1]
ITERATIONS = 40
CALLS = 3
TIMESTEPS, FEATURES, BATCH, FIT_STEPS = 6, 3, 4, 3

instrument.enable_dump_debug_info(LOGDIR, tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1)


@tf.function
def loop(v):
    def body(i, v, text):
        # Values of several dtypes and shapes an iteration (a bool, an int, a scalar,
        # strings through their serialized protos); all used, so all computed.
        scaled = tf.math.multiply(v, 0.5, name="scaled")
        grown = tf.math.add(scaled, tf.cast(i, tf.float32), name="grown")
        big = tf.math.greater(grown, 3.0, name="big")
        label = tf.strings.as_string(i, name="label")
        wide = tf.tile(grown[tf.newaxis], [3, 1], name="wide")
        folded = tf.reduce_sum(wide, axis=0, name="folded")
        chosen = tf.where(big, folded, folded, name="chosen")
        return i + 1, tf.math.multiply(chosen, 0.25, name="quarter"), label

    _, v, _ = tf.while_loop(
        lambda i, v, text: i < ITERATIONS, body, [tf.constant(0), v, tf.constant("")]
    )
    return v


for call in range(CALLS):
    loop(tf.fill([5], float(call)))

rng = np.random.default_rng(7)
x = rng.normal(size=(BATCH * FIT_STEPS, TIMESTEPS, FEATURES)).astype(np.float32)
y = rng.integers(0, 2, size=(BATCH * FIT_STEPS,)).astype(np.int32)
model = tf.keras.Sequential(
    [
        tf.keras.Input((TIMESTEPS, FEATURES)),
        tf.keras.layers.LSTM(4, use_cudnn=False),
        tf.keras.layers.Dense(2),
    ]
)
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
instrument.disable_dump_debug_info()
print(json.dumps({"x": x.tolist()}))
