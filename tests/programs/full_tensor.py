"""FULL_TENSOR values of every dtype, through each route from a graph to the dump.

Usage: python full_tensor.py LOGDIR. Graph ops are named after what they check; the
test (tests/instrument/test_full_tensor.py) recomputes the expected values.
"""

import sys

import tensorflow as tf

import instrument

LOGDIR = sys.argv[1]
# Loop-body traces take the per-tensor route, one queue element each: this many
# iterations in one call are several times the FULL_TENSOR queue's capacity, so the
# graph must wait for the drain (and nothing may be lost or reordered).
LOOP_ITERATIONS = 300
BIG = 512  # a BIG x BIG float32 ReLU output: a megabyte, half zeros

instrument.enable_dump_debug_info(LOGDIR, tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1)

x = tf.constant([[1.5, -2.0, 0.0], [3.25, -0.5, 7.0]])


@tf.function
def every_dtype(x):
    # Returned, so computed: a value nothing uses is neither computed nor traced.
    values = [
        tf.math.multiply(x, 2.0, name="f32"),
        tf.cast(x, tf.float64, name="f64"),
        tf.cast(x, tf.float16, name="f16"),
        tf.cast(x, tf.bfloat16, name="bf16"),
    ]
    for dtype in (
        tf.int8,
        tf.uint8,
        tf.int16,
        tf.uint16,
        tf.int32,
        tf.uint32,
        tf.int64,
        tf.uint64,
        tf.complex64,
        tf.complex128,
    ):
        values.append(tf.cast(tf.abs(x), dtype, name=dtype.name))
    values += [
        tf.math.greater(x, 0.0, name="bool"),
        tf.strings.as_string(x, precision=2, name="string"),
        tf.reduce_sum(x, name="scalar"),
        tf.slice(x, [0, 0], [0, 3], name="empty"),
    ]
    big = tf.nn.relu(tf.random.stateless_normal([BIG, BIG], seed=[1, 2]), name="big")
    return big, values


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
def dynamic_shape(x):
    return tf.math.subtract(x, 1.0, name="dynamic")


@tf.function
def loop(v):
    _, v = tf.while_loop(
        lambda i, v: i < LOOP_ITERATIONS,
        lambda i, v: (i + 1, tf.math.add(v, 1.0, name="step")),
        [tf.constant(0), v],
    )
    return v


every_dtype(x)
dynamic_shape(x)
loop(tf.zeros([4]))
instrument.disable_dump_debug_info()
