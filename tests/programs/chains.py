"""One small program per kind of origin of the chain upstream of a root cause, and per
fix that fits (reader.analysis.diagnosis.chain_rules, fixes), each dumped in
FULL_HEALTH as its own run, all in one process.

``python chains.py LOGDIR [CASE[:MODE] ...]`` writes ``LOGDIR/<case>`` for each case
(all by default, and `OTHER_MODES`), ``LOGDIR/<case>-<MODE>`` for another mode than
FULL_HEALTH. Each case marks its origin's line ``# ORIGIN <case>`` and its root cause's
``# BUG <case>``; what the tests expect of each is in tests/reader/test_chain_tf.py.
"""

import sys

import keras
import numpy as np
import tensorflow as tf

import instrument


def sigmoid_saturation():
    @tf.function
    def loss(logits):
        p = tf.sigmoid(logits)  # ORIGIN sigmoid_saturation
        q = 1.0 - p
        return -tf.reduce_mean(tf.math.log(q))  # BUG sigmoid_saturation

    loss(tf.constant([0.5, 40.0, -2.0, 50.0]))


def cast_rounding():
    @tf.function
    def gap(p):
        low = tf.cast(p, tf.bfloat16)  # ORIGIN cast_rounding
        margin = 1.0 - low
        return tf.math.log(margin)  # BUG cast_rounding

    gap(tf.constant([0.5, 0.999, 0.25]))


def exp_underflow():
    @tf.function
    def likelihood(x):
        p = tf.exp(-x)  # ORIGIN exp_underflow
        return tf.math.log(p * 1.0)  # BUG exp_underflow

    likelihood(tf.constant([1.0, 200.0, 3.0]))


def dead_relu():
    @tf.function
    def normalise(x, w):
        h = tf.nn.relu(tf.matmul(x, w) - 10.0)  # ORIGIN dead_relu
        return h / tf.reduce_sum(h)  # BUG dead_relu

    normalise(tf.ones([2, 3]), tf.ones([3, 4]))


def integer_division():
    rows = tf.data.Dataset.from_tensor_slices({"hits": [3, 4, 5], "count": [1, 0, 2]})

    def ratio(row):
        return row["hits"] / row["count"]  # BUG integer_division

    for value in rows.map(ratio):
        tf.reduce_sum(value * 2.0)


class Spread(keras.layers.Layer):
    def call(self, x):
        return tf.math.log1p(x)  # BUG log1p_layer


def log1p_layer():
    layer = Spread()

    @tf.function
    def forward(x):
        return layer(x - 1.0)

    forward(tf.constant([0.5, -0.5, 2.0]))


def norm_gradient():
    v = tf.Variable(tf.zeros([3]))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            length = tf.norm(v)
        return tape.gradient(length, v)  # BUG norm_gradient

    step()


CASES = {
    f.__name__: f
    for f in (
        sigmoid_saturation,
        cast_rounding,
        exp_underflow,
        dead_relu,
        integer_division,
        log1p_layer,
        norm_gradient,
    )
}

# Cases run again in a mode without counts: the chain says which mode would show it.
OTHER_MODES = ("sigmoid_saturation:CURT_HEALTH",)

if __name__ == "__main__":
    np.seterr(all="ignore")
    logdir = sys.argv[1]
    for spec in sys.argv[2:] or (*CASES, *OTHER_MODES):
        name, _, mode = spec.partition(":")
        instrument.enable_dump_debug_info(
            f"{logdir}/{name}" + (f"-{mode}" if mode else ""),
            tensor_debug_mode=mode or "FULL_HEALTH",
            circular_buffer_size=-1,
        )
        CASES[name]()
        instrument.disable_dump_debug_info()
