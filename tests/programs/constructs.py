"""Exercise every construct the instrumentation must handle, once per tensor debug mode.

Usage: python constructs.py LOGDIR MODE [MODE ...]. Each mode writes one run into
LOGDIR/MODE/. The last line printed is a JSON object with what the API checks saw.
"""

import json
import os
import sys
from typing import Any

import numpy as np
import tensorflow as tf

import instrument

LOGDIR, MODES = sys.argv[1], sys.argv[2:]
WHILE_ITERATIONS = 3


def program():
    """One pass over the constructs; returns nothing, the dump is what is checked."""
    x = tf.constant([0.0, -1.0, 2.0]) * 1.0  # eager op: Mul

    @tf.function
    def inner(z):
        return tf.math.log(z) * 2.0  # LOG_LINE

    @tf.function
    def outer(x):
        i = tf.constant(0)
        _, y = tf.while_loop(
            lambda i, y: i < WHILE_ITERATIONS, lambda i, y: (i + 1, y * 2.0), [i, x]
        )
        z = tf.cond(tf.reduce_sum(y) > 0.0, lambda: y + 1.0, lambda: y - 1.0)
        return inner(tf.abs(z) - 1.0)

    outer(x)
    outer(x)

    @tf.function(jit_compile=True)
    def compiled(x):
        return tf.nn.relu(x) * 3.0

    compiled(x)

    @tf.function
    def low_precision(x):
        half = tf.cast(x, tf.float16) * tf.constant(2.0, tf.float16)
        brain = tf.cast(x, tf.bfloat16) + tf.constant(1.0, tf.bfloat16)
        return tf.cast(half, tf.float32) + tf.cast(brain, tf.float32)

    low_precision(x)

    dataset = tf.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32))
    dataset = dataset.map(lambda v: tf.math.sqrt(v) - 0.5)
    total = 0.0
    for item in dataset:
        total += float(item)
    return total


api: dict[str, Any] = {}
for mode in MODES:
    logdir = os.path.join(LOGDIR, mode)
    path = instrument.enable_dump_debug_info(
        logdir, tensor_debug_mode=mode, circular_buffer_size=-1
    )
    if mode == MODES[0]:
        api["idempotent"] = (
            instrument.enable_dump_debug_info(
                logdir, tensor_debug_mode=mode, circular_buffer_size=-1
            )
            == path
        )
        try:
            instrument.enable_dump_debug_info(
                logdir,
                tensor_debug_mode="SHAPE" if mode != "SHAPE" else "NO_TENSOR",
                circular_buffer_size=-1,
            )
            api["conflict"] = "no error"
        except ValueError as error:
            api["conflict"] = str(error)
    program()
    # A lambda outside any function, converted by AutoGraph (which names no function).
    for _ in tf.data.Dataset.from_tensor_slices([1.0, 4.0]).map(lambda v: v * 0.5):  # LAMBDA
        pass
    instrument.disable_dump_debug_info()

# A second run into the first mode's logdir, and a run with op and dtype filters.
instrument.enable_dump_debug_info(
    os.path.join(LOGDIR, MODES[0]), tensor_debug_mode=MODES[0], circular_buffer_size=-1
)
tf.constant([1.0]) + 1.0
instrument.disable_dump_debug_info()
instrument.enable_dump_debug_info(
    os.path.join(LOGDIR, "filtered"),
    tensor_debug_mode="FULL_HEALTH",
    circular_buffer_size=-1,
    op_regex="^(Log|Mul)$",
    tensor_dtypes=[tf.float32],
)
program()
instrument.disable_dump_debug_info()
print(json.dumps(api))
