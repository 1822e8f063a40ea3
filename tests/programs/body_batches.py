"""A while loop whose body holds a cond, and a loop with its gradient: control-flow
bodies (and their gradients) enqueue their traces in batches, once a run (an
iteration, a branch taken), not once a traced tensor.

Usage: python body_batches.py LOGDIR MODE

Prints a JSON line: per function made of a loop body, loop condition or cond branch,
its number of enqueue ops and of traced tensors in its graph.
"""

import json
import sys

import tensorflow as tf
from tensorflow.python.eager import context

import instrument

ITERATIONS = 4

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)


@tf.function
def f(x):
    def body(i, y):
        y = tf.sin(y) * 0.5 + tf.cos(y)
        y = tf.cond(tf.reduce_sum(y) > 0.0, lambda: tf.sqrt(y * y) * 2.0, lambda: tf.abs(y) - 1.0)
        return i + 1, tf.tanh(y)

    return tf.while_loop(lambda i, y: i < ITERATIONS, body, (tf.constant(0), x))[1]


@tf.function
def g(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.while_loop(
            lambda i, y: i < ITERATIONS, lambda i, y: (i + 1, tf.sin(y)), (tf.constant(0), x)
        )[1]
        total = tf.reduce_sum(y)
    return tape.gradient(total, x)  # the gradient loop: Cos, then Mul, per iteration


f(tf.constant([0.5, -1.0, 2.0]))
g(tf.constant([0.5, -1.0, 2.0]))
instrument.disable_dump_debug_info()
functions = {}
ctx = context.context()
for name in ctx.list_function_names():
    if name.startswith(("while_body", "while_cond", "cond_true", "cond_false")):
        nodes = ctx.get_function_def(name).node_def
        functions[name] = sum(node.op == "QueueEnqueueV2" for node in nodes)
print(json.dumps(functions))
