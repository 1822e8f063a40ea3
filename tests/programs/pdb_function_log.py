"""A program that enables its own dump with ``on_alert="pdb"`` (FULL_HEALTH), then
takes a log of zero inside a tf.function. Usage: pdb_function_log.py LOGDIR."""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(sys.argv[1], tensor_debug_mode="FULL_HEALTH", on_alert="pdb")


@tf.function
def log_of(x):
    return tf.math.log(tf.nn.relu(x))  # LOG_LINE


print(log_of(tf.constant([-1.0, 2.0])).numpy().tolist(), flush=True)
