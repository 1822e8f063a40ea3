"""MultiWorkerMirroredStrategy, two worker processes on this machine, one logdir.

Usage: python multi_worker.py LOGDIR INDEX PORT0 PORT1 (run once per worker index).
LOGDIR may be a bucket's URL (s3://...). STEP_DELAY_S in the environment: seconds
between steps (0), so that a reader can follow the job live; BAD_WORKER_DELAY_S:
seconds worker 1 waits before it enables the dump (0), so that worker 0's run is in
the logdir first.
Worker 1 gets inputs that drive the sigmoid to exactly 0 at step BAD_STEP: its log is
-inf there, and the all-reduce hands the -inf to worker 0 as well.
"""

import json
import os
import sys
import time

LOGDIR, INDEX, PORTS = sys.argv[1], int(sys.argv[2]), sys.argv[3:5]
os.environ["TF_CONFIG"] = json.dumps(
    {
        "cluster": {"worker": [f"127.0.0.1:{port}" for port in PORTS]},
        "task": {"type": "worker", "index": INDEX},
    }
)

import tensorflow as tf  # noqa: E402 (after TF_CONFIG)

import instrument  # noqa: E402

STEPS, BAD_STEP, BAD_WORKER = 4, 2, 1

strategy = tf.distribute.MultiWorkerMirroredStrategy()
if INDEX == BAD_WORKER:
    time.sleep(float(os.environ.get("BAD_WORKER_DELAY_S", "0")))
instrument.enable_dump_debug_info(LOGDIR, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1)
with strategy.scope():
    weights = tf.Variable(tf.ones([4, 1]) * 0.1)


def replica_step(x):
    probs = tf.nn.sigmoid(tf.matmul(x, weights))
    return tf.reduce_mean(tf.math.log(probs))  # LOG_LINE


@tf.function
def step(x):
    per_replica = strategy.run(replica_step, args=(x,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


for number in range(STEPS):
    time.sleep(float(os.environ.get("STEP_DELAY_S", "0")))
    scale = -1000.0 if (INDEX == BAD_WORKER and number == BAD_STEP) else 1.0
    print("STEP", number, float(step(tf.ones([2, 4]) * scale)), flush=True)
