"""Non-finite values made outside a training step, and a step that consumed them
late: each case dumped as its own run in one process (the variables' cases in
FULL_TENSOR, which gives the index of the first non-finite value; the rest FULL_HEALTH).

``python phases.py LOGDIR [CASE ...]`` writes ``LOGDIR/<case>`` for each case (all by
default); each case marks its culprit's line with ``# BUG <case>``.

- ``restored``: a checkpoint whose kernel holds a NaN in row 2, restored before any
  step (the NaN was put there by hand, as a user might).
- ``set_weights``: a Keras layer's weights set with a NaN in row 1.
- ``initial``: a variable created with a NaN at index 3.
- ``metric``: a Keras fit whose loss, gradients and weights stay finite and whose
  custom metric divides by zero.
- ``generator``: a ``from_generator`` pipeline, prefetched, whose generator yields a NaN
  in its fourth element (batch 1 of batches of 2): the step that consumes it is step 1.
"""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import instrument


def _model() -> tf.keras.Model:
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2, name="dense")])
    model.compile(optimizer="sgd", loss="mse")
    return model


def restored():
    model = _model()
    kernel = model.get_layer("dense").kernel
    edited = kernel.numpy()
    edited[2, 0] = np.nan  # an edit by hand
    kernel.assign(edited)
    directory = tempfile.mkdtemp()
    path = tf.train.Checkpoint(model=model).write(os.path.join(directory, "ckpt"))
    instrument.enable_dump_debug_info(
        sys.argv[1] + "/restored", tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1
    )
    fresh = _model()
    tf.train.Checkpoint(model=fresh).read(path).expect_partial()  # BUG restored
    fresh(np.ones((2, 4), np.float32))


def set_weights():
    model = _model()
    kernel, bias = model.get_layer("dense").get_weights()
    kernel[1, 1] = np.nan
    model.get_layer("dense").set_weights([kernel, bias])  # BUG set_weights
    model(np.ones((2, 4), np.float32))


def initial():
    weights = tf.Variable(np.array([1.0, 2.0, 3.0, np.nan], np.float32))  # BUG initial
    (weights * 2.0).numpy()


class ZeroRate(tf.keras.metrics.Metric):
    """A ratio whose denominator is always zero: NaN, and only here."""

    def __init__(self, name="zero_rate"):
        super().__init__(name=name)
        self.hits = self.add_weight(name="hits", initializer="zeros")
        self.count = self.add_weight(name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.hits.assign_add(tf.reduce_sum(tf.cast(y_pred > 1e9, tf.float32)))

    def result(self):
        return self.hits / self.count  # BUG metric


def metric():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=[ZeroRate()])
    x = np.ones((8, 4), np.float32)
    model.fit(x, np.zeros((8, 1), np.float32), batch_size=4, epochs=1, verbose=0)


def _rows():
    for i in range(6):
        row = np.ones((4,), np.float32)
        if i == 3:
            row[2] = np.nan
        yield row


def generator():
    data = tf.data.Dataset.from_generator(  # stream the export
        _rows, output_signature=tf.TensorSpec((4,), tf.float32)
    )
    data = data.batch(2).prefetch(2)
    weights = tf.Variable(tf.ones((4,)))

    @tf.function
    def step(x):
        return tf.reduce_sum(x * weights)  # BUG generator

    for x in data:
        step(x)


# Cases that enable the dump themselves (after their setup).
SELF_ENABLED = {"restored"}
MODES = {"set_weights": "FULL_TENSOR", "initial": "FULL_TENSOR"}
CASES = {f.__name__: f for f in (restored, set_weights, initial, metric, generator)}

if __name__ == "__main__":
    logdir = sys.argv[1]
    for name in sys.argv[2:] or CASES:
        if name not in SELF_ENABLED:
            instrument.enable_dump_debug_info(
                f"{logdir}/{name}",
                tensor_debug_mode=MODES.get(name, "FULL_HEALTH"),
                circular_buffer_size=-1,
            )
        CASES[name]()
        instrument.disable_dump_debug_info()
