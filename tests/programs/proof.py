"""One op per fix of the proof's table, each dumped as its own run in one process, in
FULL_TENSOR (the proof reruns the op on its stored inputs); ``log_summary`` is
``log_zero`` in FULL_HEALTH (no values: the proof says which mode gives them);
``log_xla`` a log in a ``jit_compile=True`` function, in FULL_HEALTH (traced inside
XLA; FULL_TENSOR records no values there), and ``log_xla_tensor`` the same in
FULL_TENSOR.

``python proof.py LOGDIR [CASE ...]`` writes ``LOGDIR/<case>`` for each case (all by
default); each case marks its culprit's line with ``# BUG <case>``.
"""

import sys

import numpy as np
import tensorflow as tf

import instrument

# 100 exact zeros among 1000 probabilities: "-inf in 100 of 1000".
PROBS = np.where(np.arange(1000) % 10 == 0, 0.0, 0.5).astype(np.float32)


def log_zero():
    @tf.function
    def loss(probs):
        probs = probs * 1.0
        return -tf.reduce_sum(tf.math.log(probs))  # BUG log_zero

    loss(tf.constant(PROBS))


def log1p_below():
    @tf.function
    def layer(x):
        x = x - 1.5
        return tf.math.log1p(x)  # BUG log1p_below

    layer(tf.constant([1.0, 0.25, 2.0, 3.0]))


def sqrt_negative():
    @tf.function
    def spread(x):
        variance = x - 2.0
        return tf.sqrt(variance)  # BUG sqrt_negative

    spread(tf.constant([1.0, 4.0, 9.0]))


def div_zero():
    @tf.function
    def mean(total, mask):
        count = tf.reduce_sum(mask, axis=0)
        return total / count  # BUG div_zero

    mean(tf.constant([3.0, 4.0]), tf.constant([[1.0, 0.0], [1.0, 0.0]]))


def pow_negative():
    @tf.function
    def root(x):
        x = x - 1.0
        return tf.pow(x, 0.5)  # BUG pow_negative

    root(tf.constant([4.0, 0.5, 2.0]))


def acos_domain():
    @tf.function
    def angle(x):
        x = x * 1.25
        return tf.math.acos(x)  # BUG acos_domain

    angle(tf.constant([0.5, 1.0, -0.2]))


def exp_overflow():
    @tf.function
    def scores(logits):
        return tf.exp(logits * 1.0)  # BUG exp_overflow

    scores(tf.constant([1.0, 100.0, 2.0]))


def norm_grad():
    weights = tf.Variable([0.0, 0.0, 0.0])

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            norm = tf.norm(weights)  # BUG norm_grad
        return tape.gradient(norm, weights)

    grads()


def log_bfloat16():
    """bfloat16 keeps 8 significant bits: 1 - exp(-x) rounds to 0 for small x."""

    @tf.function
    def loss(x):
        p = 1.0 - tf.exp(-tf.cast(x, tf.bfloat16))
        return tf.math.log(p)  # BUG log_bfloat16

    loss(tf.constant([1e-4, 0.5, 2.0]))


def eager_log():
    probs = tf.constant([0.5, 0.0]) * 1.0
    return tf.math.log(probs)  # BUG eager_log


def log_summary():
    log_zero()


def log_xla():
    @tf.function(jit_compile=True)
    def loss(probs):
        probs = probs * 1.0
        return tf.math.log(probs)  # BUG log_xla

    loss(tf.constant(PROBS))


def log_xla_tensor():
    log_xla()


MODES = {"log_summary": "FULL_HEALTH", "log_xla": "FULL_HEALTH"}
CASES = {
    f.__name__: f
    for f in (
        log_zero,
        log1p_below,
        sqrt_negative,
        div_zero,
        pow_negative,
        acos_domain,
        exp_overflow,
        norm_grad,
        log_bfloat16,
        eager_log,
        log_summary,
        log_xla,
        log_xla_tensor,
    )
}

if __name__ == "__main__":
    logdir = sys.argv[1]
    for name in sys.argv[2:] or CASES:
        instrument.enable_dump_debug_info(
            f"{logdir}/{name}",
            tensor_debug_mode=MODES.get(name, "FULL_TENSOR"),
            circular_buffer_size=-1,
        )
        CASES[name]()
        instrument.disable_dump_debug_info()
