"""Program shapes beyond a plain tf.function loop, each in its own run of LOGDIR/<part>.

Usage: python shapes.py LOGDIR PART...  Parts:
  xla_<MODE>  a jit_compile=True function with log(0) (and a while loop) next to the
              same function without XLA, both called on the same input
  before      a tf.function traced before enable, called after it
  preflight   op_regex, a circular buffer, run_functions_eagerly
  thread      a tf.function first called from a threading.Thread named "trainer"
  data        a NaN born in a Dataset.map function (num_parallel_calls=2)
  mirrored    a NaN in a MirroredStrategy replica function (2 logical CPUs)
  mirrored_closure  the same with the replica function defined inside the tf.function
"""

import os
import sys
import threading

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import instrument  # noqa: E402 (after the logical devices are set)

LOGDIR = sys.argv[1]
DATA = tf.constant([0.0, 1.0, 2.0, 4.0])
SHORT_THREADS = 4


def enable(part, mode="FULL_HEALTH", **kwargs):
    kwargs.setdefault("circular_buffer_size", -1)
    instrument.enable_dump_debug_info(os.path.join(LOGDIR, part), tensor_debug_mode=mode, **kwargs)


def xla(mode):
    enable(f"xla_{mode}", mode)

    def body(x):
        y = tf.math.log(x)  # XLA_LOG_LINE
        z = tf.sqrt(y + 1.0) * tf.constant([-1.0, 0.0, 2.0, 3.0])
        _, w = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5), (0, z))
        return tf.reduce_sum(w)

    print("XLA", float(tf.function(body, jit_compile=True)(DATA)))
    print("PLAIN", float(tf.function(body)(DATA)))


def before():
    @tf.function
    def early_step(x):
        return tf.reduce_sum(x * 2.0)

    early_step(DATA)
    enable("before")
    early_step(DATA)


def preflight():
    tf.config.run_functions_eagerly(True)
    enable("preflight", op_regex="^Log$", circular_buffer_size=100)
    tf.config.run_functions_eagerly(False)


def thread():
    enable("thread")

    @tf.function
    def thread_step(x):
        return tf.reduce_sum(tf.math.log(x) * 2.0)  # THREAD_LOG_LINE

    worker = threading.Thread(
        target=lambda: print("THREAD", float(thread_step(DATA))), name="trainer"
    )
    worker.start()
    worker.join()
    # Short threads one after another: each ends before the next starts, so the next
    # usually gets its thread ident; each is still seen.
    for number in range(SHORT_THREADS):
        short = threading.Thread(target=lambda: thread_step(DATA), name=f"short-{number}")
        short.start()
        short.join()


def data():
    enable("data")

    def parse(x):
        return tf.math.log(x) + 1.0  # DATA_LOG_LINE

    dataset = tf.data.Dataset.from_tensor_slices(tf.reshape(DATA, [2, 2]))
    for batch in dataset.map(parse, num_parallel_calls=2).batch(1):
        print("DATA", float(tf.reduce_sum(batch)))


def data_filter():
    enable("data_filter")
    dataset = tf.data.Dataset.from_tensor_slices(tf.reshape(DATA, [2, 2]))
    kept = dataset.filter(lambda x: tf.reduce_min(tf.math.log(x)) < 10.0)  # FILTER_LOG_LINE
    for batch in kept:
        print("FILTER", float(tf.reduce_sum(batch)))


def data_interleave():
    enable("data_interleave")

    def element(i):
        value = tf.math.log(tf.cast(i, tf.float32))  # INTERLEAVE_LOG_LINE
        return tf.data.Dataset.from_tensors(value)

    for value in tf.data.Dataset.range(2).interleave(element, cycle_length=2):
        print("INTERLEAVE", float(value))


def data_generator():
    enable("data_generator")

    def rows():
        for value in (1.0, 0.0):
            yield np.log(np.float32(value))  # -inf for 0 (numpy warns on stderr)

    dataset = tf.data.Dataset.from_generator(  # GENERATOR_LINE
        rows, output_signature=tf.TensorSpec([], tf.float32)
    )
    for value in dataset.map(lambda x: x * 2.0):
        print("GENERATOR", float(value))


def mirrored():
    enable("mirrored")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def replica_step(x):
        return tf.reduce_sum(tf.math.log(x) * 0.5)  # REPLICA_LOG_LINE

    @tf.function
    def step(x):
        per_replica = strategy.run(replica_step, args=(x,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    print("MIRRORED", float(step(DATA)))


def mirrored_closure():
    enable("mirrored_closure")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    @tf.function
    def step(x):
        def replica_step(x):
            return tf.reduce_sum(tf.math.log(x) * 0.5)  # CLOSURE_LOG_LINE

        per_replica = strategy.run(replica_step, args=(x,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    print("MIRRORED", float(step(DATA)))


for part in sys.argv[2:]:
    if part.startswith("xla_"):
        xla(part[4:])
    else:
        globals()[part]()
    instrument.disable_dump_debug_info()
