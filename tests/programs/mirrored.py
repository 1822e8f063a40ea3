"""MirroredStrategy on two logical CPU devices. Usage: python mirrored.py LOGDIR MODE."""

import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import instrument  # noqa: E402

instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1
)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    weight = tf.Variable([[1.0], [2.0]])


def replica_step(x):
    return tf.reduce_sum(tf.matmul(x, weight) * 0.5)  # REPLICA_LINE


@tf.function
def step(x):
    per_replica = strategy.run(replica_step, args=(x,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


print("RESULT", float(step(tf.constant([[1.0, 1.0]]))))
instrument.disable_dump_debug_info()
