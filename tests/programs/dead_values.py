"""A training step that computes values nothing uses, in the modes given.

Usage: python dead_values.py LOGDIR MODE... (a run in LOGDIR/MODE per mode). The step's
`Sin` and the `AddV2` after it feed nothing, and the gradient of the MatMul with
respect to its input `x` (not a variable) is not asked for: TensorFlow prunes them
when it runs the function, so a traced step must not compute them either.
"""

import sys

import numpy as np
import tensorflow as tf

import instrument


def record(logdir: str, mode: str) -> None:
    x = tf.constant(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4))
    w = tf.Variable(tf.ones([4, 2]))
    instrument.enable_dump_debug_info(
        f"{logdir}/{mode}", tensor_debug_mode=mode, circular_buffer_size=-1
    )

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)  # as Keras' first layer's input is: both gradients are built
            z = tf.matmul(x, w)
            loss = tf.reduce_sum(z * z)
        unused = tf.sin(z, name="unused_sin") + 1.0
        del unused
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    for _ in range(3):
        step(x).numpy()
    instrument.disable_dump_debug_info()


for mode in sys.argv[2:]:
    record(sys.argv[1], mode)
