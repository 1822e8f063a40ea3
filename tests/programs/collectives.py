"""Collectives of every kind a MirroredStrategy runs, on two logical CPUs, once per mode.

Usage: python collectives.py LOGDIR MODE [MODE ...]. Each mode writes one run into
LOGDIR/MODE/ and runs, in fresh tf.functions:
- a custom training loop over a distributed dataset whose model has an Embedding and
  trains with Adam: the Embedding's sparse gradient is gathered across the replicas
  (`CollectiveGatherV2` inside a `cond` of each replica's update), the Dense layer's
  gradients all-reduced;
- a replica function that all-reduces and all-gathers, then takes the log of a value
  that is 0 on replica 0 only (LOG_LINE): the first non-finite value of the run.
Each part prints a line when it finishes: a hang shows as a missing line.
"""

import os
import sys

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import instrument  # noqa: E402

LOGDIR, MODES = sys.argv[1], sys.argv[2:]
SUM = tf.distribute.ReduceOp.SUM

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Embedding(20, 4),
            tf.keras.layers.GlobalAveragePooling1D(),
            tf.keras.layers.Dense(1),
        ]
    )
    model.build((None, 3))
    optimizer = tf.keras.optimizers.Adam(1e-2)
    optimizer.build(model.trainable_variables)
rng = np.random.default_rng(0)
data = tf.data.Dataset.from_tensor_slices(
    (rng.integers(0, 20, size=(16, 3)).astype("int32"), rng.random((16, 1)).astype("float32"))
).batch(8)


def embedding_loop():
    @tf.function
    def train_step(batch):
        def step_fn(inputs):
            ids, target = inputs
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(ids) - target))
                loss = loss / strategy.num_replicas_in_sync
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.reduce(SUM, strategy.run(step_fn, args=(batch,)), axis=None)

    for batch in strategy.experimental_distribute_dataset(data):
        loss = float(train_step(batch))
    print("EMBEDDING_LOOP", np.isfinite(loss), flush=True)


def reduce_and_gather():
    def replica_fn(x):
        context = tf.distribute.get_replica_context()
        x = x * 1.0  # the replica's own copy: the collectives take no host tensor
        total = context.all_reduce(SUM, x)
        gathered = context.all_gather(x, axis=0)
        replica = tf.cast(context.replica_id_in_sync_group, tf.float32)
        return tf.math.log(total * replica) + tf.reduce_sum(gathered)  # LOG_LINE

    @tf.function
    def step(x):
        per_replica = strategy.run(replica_fn, args=(x,))
        return tf.add_n(strategy.experimental_local_results(per_replica))

    print("REDUCE_AND_GATHER", step(tf.constant([1.0, 2.0])).numpy().tolist(), flush=True)


for mode in MODES:
    instrument.enable_dump_debug_info(
        os.path.join(LOGDIR, mode), tensor_debug_mode=mode, circular_buffer_size=-1
    )
    embedding_loop()
    reduce_and_gather()
    instrument.disable_dump_debug_info()
