"""One small bug per NaN/inf pattern, each dumped as its own run in one process;
``late_log`` repeats one after 250 good steps (the culprit's history).

``python patterns.py LOGDIR [CASE ...]`` writes ``LOGDIR/<case>`` for each case (all by
default). Each case marks the line of its culprit with ``# BUG <case>`` and declares,
with `case`, what its diagnosis must say: the op of the diagnosed alert, the pattern and
the expression. `tests.reader.conftest` reads those declarations without running this
file (`tests.program_runs.declared_cases`), so a case is written here only.
"""

import sys
from collections.abc import Callable

import numpy as np
import tensorflow as tf

import instrument

CASES: dict[str, Callable[[], object]] = {}


def case(op_type: str, pattern: str, expression: str, *, name: str | None = None):
    """Declare a case: its diagnosis names ``pattern`` at an alert of ``op_type`` and the
    expression ``expression``. Without ``name`` the case is the function's run and its
    root cause; with ``name``, a case of its own diagnosed on the function's run, at the
    first alert of ``op_type`` (the user selected it)."""

    def declare(function):
        CASES[function.__name__] = function
        return function

    return declare


@case("Log", "log_of_nonpositive", "tf.math.log(probs)")
def log_zero():
    @tf.function
    def loss(probs):
        probs = probs * 1.0
        return -tf.reduce_sum(tf.math.log(probs))  # BUG log_zero

    loss(tf.constant([0.5, 0.0, 0.25, 0.25]))


@case("RealDiv", "division_by_zero", "total / count")
def div_zero():
    @tf.function
    def mean(total, mask):
        count = tf.reduce_sum(mask, axis=0)
        return total / count  # BUG div_zero

    mean(tf.constant([3.0, 4.0]), tf.constant([[1.0, 0.0], [1.0, 0.0]]))


@case("RealDiv", "division_by_zero", "hits / count")
def zero_by_zero():
    @tf.function
    def ratio(hits, mask):
        count = tf.reduce_sum(mask, axis=0)
        hits = hits * 1.0
        return hits / count  # BUG zero_by_zero

    ratio(tf.constant([0.0, 2.0]), tf.constant([[0.0, 1.0]]))


@case("RealDiv", "division_by_zero", "total / count")
def eager_div():
    mask = tf.constant([[1.0, 0.0], [1.0, 0.0]])
    count = tf.reduce_sum(mask, axis=0)
    total = count * 3.0
    return total / count  # BUG eager_div


@case("Sqrt", "sqrt_domain", "tf.sqrt(variance)")
def sqrt_negative():
    @tf.function
    def spread(x):
        variance = tf.reduce_mean(x * x) - tf.reduce_mean(x) ** 2 - 1.0
        return tf.sqrt(variance)  # BUG sqrt_negative

    spread(tf.constant([1.0, 1.0, 1.0]))


# A negative base.
@case("Pow", "domain_error", "tf.pow(x, 0.5)")
def pow_half():
    @tf.function
    def root(x):
        x = x - 1.0
        return tf.pow(x, 0.5)  # BUG pow_half

    root(tf.constant([4.0, 0.5, 2.0]))


@case("Exp", "overflow", "tf.exp(logits * 1.0)")
@case("Sub", "inf_arithmetic", "big - big", name="inf_minus_inf")
def exp_overflow():
    @tf.function
    def softmax(logits):
        big = tf.exp(logits * 1.0)  # BUG exp_overflow
        spread = big - big  # BUG inf_minus_inf
        return big / tf.reduce_sum(big) + spread

    softmax(tf.constant([1.0, 100.0, 2.0]))


# A keyword argument.
@case("Cast", "overflow", "tf.cast(x, dtype=tf.float16)")
def cast_half():
    @tf.function
    def to_half(x):
        x = x * 2.0
        return tf.cast(x, dtype=tf.float16)  # BUG cast_half

    to_half(tf.constant([1.0, 40000.0]))


@case("SqrtGrad", "singular_gradient", "tape.gradient(norm, weights)")
def sqrt_grad():
    weights = tf.Variable([0.0, 4.0])

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            norm = tf.reduce_sum(tf.sqrt(weights))
        return tape.gradient(norm, weights)  # BUG sqrt_grad

    grads()


@case("ReadVariableOp", "nonfinite_input", "x * weights")
def nan_variable():
    weights = tf.Variable(np.array([1.0, np.nan], np.float32))

    @tf.function
    def predict(x):
        return x * weights  # BUG nan_variable

    predict(tf.constant([2.0, 3.0]))


@case("Atanh", "domain_error", "tf.math.atanh(x)")
def atanh_one():
    @tf.function
    def squash(x):
        x = x * 1.0
        return tf.math.atanh(x)  # BUG atanh_one

    squash(tf.constant([0.5, 1.0]))


@case("Log", "log_of_nonpositive", "tf.math.log(probs)")
def late_log():
    """log_zero's bug after 250 good steps: the culprit's history shows when it broke."""

    @tf.function
    def loss(probs):
        probs = probs * 1.0
        return -tf.reduce_sum(tf.math.log(probs))  # BUG late_log

    good, bad = tf.constant([0.5, 0.25, 0.25]), tf.constant([0.5, 0.0, 0.5])
    for step in range(LATE_STEPS):
        loss(bad if step >= LATE_FIRST_BAD_STEP else good)


LATE_STEPS, LATE_FIRST_BAD_STEP = 300, 250


if __name__ == "__main__":
    logdir = sys.argv[1]
    for name in sys.argv[2:] or CASES:
        instrument.enable_dump_debug_info(
            f"{logdir}/{name}", tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
        )
        CASES[name]()
        instrument.disable_dump_debug_info()
