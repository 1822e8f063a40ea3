"""Calls whose traces wait in the queue together must each keep their own call ordinal.

Usage: python call_counter.py LOGDIR VARIANT

Runs the same calls in FULL_HEALTH, FULL_TENSOR and NO_TENSOR (one run directory each
under LOGDIR). Call k of ``f`` gets k negative elements in ``x``, so every trace shows
which call it ran in: a batched segment, a while body (one enqueue per tensor), and
the gradient of a while loop (whose graphs look the counter up by name). VARIANT
``view`` advances the counter through its host view (the default on a CPU), ``eager``
by the eager op (the view made unavailable, as on a GPU), ``async`` starts on the view
and runs the calls on an asynchronous executor. Prints a JSON line: whether the view
was in use before and after the calls, TensorFlow's cached int64 zero after them, and
the losses of a Keras predict-then-fit (which counts its steps from such zeros).
"""

import json
import os
import sys
from typing import Any

import numpy as np
import tensorflow as tf

import instrument
from instrument import api
from instrument.tracing import call_counter

CALLS = 6

logdir, variant = sys.argv[1], sys.argv[2]
if variant == "eager":
    call_counter.host_int64_view = lambda tensor: None


def counter():
    assert api._active is not None
    return api._active.callback.trace_queue._calls


def functions():
    """Fresh functions: each run traces its own graphs."""

    @tf.function
    def f(x):
        y = tf.math.abs(x) * 2.0 + x
        i = tf.constant(0)
        while i < 2:
            y = y + x
            i += 1
        return tf.reduce_sum(y)

    @tf.function
    def g(x):
        return tf.reduce_sum(
            tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), (tf.constant(0), x))[1]
        )

    return f, g


result: dict[str, Any] = {}
for mode in ("FULL_HEALTH", "FULL_TENSOR", "NO_TENSOR"):
    instrument.enable_dump_debug_info(
        os.path.join(logdir, mode), tensor_debug_mode=mode, circular_buffer_size=-1
    )
    result.setdefault("view_before", []).append(counter()._view is not None)
    f, g = functions()
    if variant == "async":
        tf.config.experimental.set_synchronous_execution(False)
    for k in range(CALLS):
        x = tf.constant(np.where(np.arange(8) < k, -1.0, 1.0).astype(np.float32))
        f(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        tape.gradient(y, x)
    if variant == "async":
        tf.config.experimental.set_synchronous_execution(True)
    result.setdefault("view_after", []).append(counter()._view is not None)
    if mode == "FULL_HEALTH":
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
        model.compile(loss="mse", optimizer="sgd")
        model.predict(np.ones([4, 3]), verbose=0)
        history = model.fit(np.ones([4, 3]), np.ones([4, 1]), epochs=2, verbose=0)
        result["keras_losses"] = len(history.history.get("loss", []))
    result.setdefault("int64_zero", []).append(int(tf.constant(0, dtype=tf.int64).numpy()))
    instrument.disable_dump_debug_info()
print(json.dumps(result))
