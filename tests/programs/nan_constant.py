"""A NaN constant inside a tf.function (TensorFlow's dumper test of it), once per mode.

Usage: python nan_constant.py LOGDIR MODE [MODE ...]; each mode writes LOGDIR/MODE/.
"""

import os
import sys

import numpy as np
import tensorflow as tf

import instrument

LOGDIR, MODES = sys.argv[1], sys.argv[2:]

for mode in MODES:
    instrument.enable_dump_debug_info(
        os.path.join(LOGDIR, mode), tensor_debug_mode=mode, circular_buffer_size=-1
    )

    @tf.function
    def add_nan(t):
        c = tf.constant(np.nan)  # NAN_LINE
        return t + c

    add_nan(tf.constant(1.0))
    instrument.disable_dump_debug_info()
