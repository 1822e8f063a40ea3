"""A tf.function called eagerly, plainly and under GradientTapes (first and second order).

Usage: python tape_and_fallback.py LOGDIR MODE normal|fallback

``fallback`` renames the TensorFlow tracing frame and capture method that instrument
looks for, as a TensorFlow release that renamed them would: traces must then take the
per-tensor route and still be complete. A function taking an iterator as its argument
(a resource Placeholder that captures nothing) is no sign of a renamed capture. Prints
a JSON line: whether batching was used, and the debug messages of
``instrument.tf_internals``.
"""

import json
import logging
import sys

import tensorflow as tf

import instrument
from instrument.tf_internals import graph_frames

messages: list[str] = []


class Collect(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())


logging.getLogger("instrument.tf_internals").addHandler(Collect())
logging.getLogger("instrument.tf_internals").setLevel(logging.DEBUG)
if sys.argv[3] == "fallback":
    graph_frames.TRACING_FUNCTION = "_a_renamed_tracing_function"
    graph_frames.CAPTURE_HELPER = "_a_renamed_capture_helper"

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)
v = tf.Variable([1.0, 2.0, 3.0])


@tf.function
def nested(x):
    # Control flow: segments in the batched route, per-tensor enqueues in the fallback.
    y = tf.math.log(x) * v
    if tf.reduce_sum(y) > 0:
        y = tf.sqrt(y + 1.0)
    else:
        y = y - 1.0
    i = tf.constant(0)
    while i < 2:
        y = y * 2.0
        i += 1
    return tf.reduce_sum(y)


@tf.function
def f(x):
    # Under a GradientTape (tape_control_flow.py covers one with control flow).
    return tf.reduce_sum(tf.sqrt(tf.math.log(x) * v + 1.0) * 2.0)


@tf.function
def h(x):
    return tf.reduce_sum(tf.math.log(x) * v)


x = tf.constant([1.0, 2.0, 4.0])
nested(x)  # plain calls: __inference_nested, __inference_f
f(x)
with tf.GradientTape() as tape:  # __forward_f and __backward_f
    tape.watch(x)
    y = f(x)
tape.gradient(y, [x, v])
with tf.GradientTape() as outer:  # second order: a __forward_ of a backward graph
    outer.watch(x)
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = h(x)
    g = inner.gradient(y, x)
outer.gradient(g, x)


@tf.function
def next_of(iterator):
    return next(iterator)


next_of(iter(tf.data.Dataset.range(3)))
instrument.disable_dump_debug_info()
print(json.dumps({"batching": graph_frames.graph_batching_supported(), "messages": messages}))
