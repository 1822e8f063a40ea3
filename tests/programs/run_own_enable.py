"""A program that enables its own dump (`tfdbg-tui run` must not record it twice).

run_own_enable.py LOGDIR
"""

import sys

import tensorflow as tf

import instrument

instrument.enable_dump_debug_info(sys.argv[1], tensor_debug_mode="CONCISE_HEALTH")
print(float(tf.reduce_sum(tf.math.log(tf.constant([0.0, 1.0])))), flush=True)
