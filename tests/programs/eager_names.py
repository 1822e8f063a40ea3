"""A variable created and restored eagerly, once per mode: what the writer names.

Usage: python eager_names.py LOGDIR MODE [MODE ...]; each mode writes LOGDIR/MODE/.
The checkpoint (key ``weights/.ATTRIBUTES/VARIABLE_VALUE``) is written before any
dump starts.
"""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import instrument

LOGDIR, MODES = sys.argv[1], sys.argv[2:]

saved = tf.Variable(np.array([1.0, 2.0], np.float32))
PATH = tf.train.Checkpoint(weights=saved).write(os.path.join(tempfile.mkdtemp(), "ckpt"))

for mode in MODES:
    instrument.enable_dump_debug_info(
        os.path.join(LOGDIR, mode), tensor_debug_mode=mode, circular_buffer_size=-1
    )
    weights = tf.Variable(np.zeros(2, np.float32), name="layer/weights")
    tf.train.Checkpoint(weights=weights).read(PATH)
    (weights * 2.0).numpy()
    instrument.disable_dump_debug_info()
