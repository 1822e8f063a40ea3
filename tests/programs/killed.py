"""Runs a training loop forever; prints READY once traces have reached the disk.

Usage: python killed.py LOGDIR MODE CIRCULAR_BUFFER_SIZE. The test kills it with SIGKILL.
"""

import glob
import os
import sys
import time

import msgpack
import tensorflow as tf

import instrument


def _has_traces_chunk(path):
    """Whether the file holds a complete ``traces`` record."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    with open(path, "rb") as f:
        unpacker.feed(f.read())
    try:
        return any(isinstance(r, dict) and r.get("k") == "traces" for r in unpacker)
    except (msgpack.OutOfData, ValueError):
        return False


run = instrument.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=int(sys.argv[3])
)
weight = tf.Variable(tf.ones([8, 8]))


@tf.function
def step(x):
    weight.assign(weight * 0.999)
    return tf.reduce_sum(tf.matmul(x, weight))


x = tf.ones([4, 8])
rotating = int(sys.argv[3]) > 0
deadline = time.monotonic() + 120
announced = False
while True:
    step(x)
    if not announced:
        traces = glob.glob(os.path.join(run, "graph_traces.*"))
        executions = glob.glob(os.path.join(run, "executions.*"))
        if rotating:
            # Ready once both rotating streams have rotated at least once on disk.
            ready = len(traces) > 1 and len(executions) > 1
        else:
            # Ready once a whole traces chunk is on disk (a big one may be half written).
            ready = _has_traces_chunk(traces[0])
        if ready:
            print("READY", flush=True)
            announced = True
        elif time.monotonic() > deadline:
            print("NOT READY: no traces reached the disk", flush=True)
            sys.exit(1)
