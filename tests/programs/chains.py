"""One small program per kind of origin of the chain upstream of a root cause, and per
fix that fits (reader.analysis.diagnosis.chain_rules, fixes), each dumped in
FULL_HEALTH as its own run, all in one process.

``python chains.py LOGDIR [CASE[:MODE] ...]`` writes ``LOGDIR/<case>`` for each case
(all by default, and `OTHER_MODES`), ``LOGDIR/<case>-<MODE>`` for another mode than
FULL_HEALTH. Each case marks its origin's line ``# ORIGIN <case>`` and its root cause's
``# BUG <case>``; what the tests expect of each is in tests/reader/test_chain_tf.py.
"""

import sys

import keras
import numpy as np
import tensorflow as tf

import instrument

# Two logical CPUs for `one_replica`'s MirroredStrategy (set before TensorFlow starts its
# runtime; the other cases run on the first).
_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)


def sigmoid_saturation():
    @tf.function
    def loss(logits):
        p = tf.sigmoid(logits)  # ORIGIN sigmoid_saturation
        q = 1.0 - p
        return -tf.reduce_mean(tf.math.log(q))  # BUG sigmoid_saturation

    loss(tf.constant([0.5, 40.0, -2.0, 50.0]))


def cast_rounding():
    @tf.function
    def gap(p):
        low = tf.cast(p, tf.bfloat16)  # ORIGIN cast_rounding
        margin = 1.0 - low
        return tf.math.log(margin)  # BUG cast_rounding

    gap(tf.constant([0.5, 0.999, 0.25]))


def exp_underflow():
    @tf.function
    def likelihood(x):
        p = tf.exp(-x)  # ORIGIN exp_underflow
        return tf.math.log(p * 1.0)  # BUG exp_underflow

    likelihood(tf.constant([1.0, 200.0, 3.0]))


def dead_relu():
    @tf.function
    def normalise(x, w):
        h = tf.nn.relu(tf.matmul(x, w) - 10.0)  # ORIGIN dead_relu
        return h / tf.reduce_sum(h)  # BUG dead_relu

    normalise(tf.ones([2, 3]), tf.ones([3, 4]))


def integer_division():
    rows = tf.data.Dataset.from_tensor_slices({"hits": [3, 4, 5], "count": [1, 0, 2]})

    def ratio(row):
        return row["hits"] / row["count"]  # BUG integer_division

    for value in rows.map(ratio):
        tf.reduce_sum(value * 2.0)


def one_replica():
    """Two replicas, a batch of four rows split two and two: only replica 1's rows
    sum to 0, so only replica 1's copy of the log goes non-finite."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rows = np.array([[1.0, 2.0], [0.5, 0.5], [3.0, 1.0], [2.0, -2.0]], dtype="float32")
    batches = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices(rows).batch(4)
    )

    def replica_loss(share):
        total = tf.reduce_sum(share * 1.0, axis=1)  # ORIGIN one_replica
        return tf.reduce_mean(tf.math.log(total))  # BUG one_replica

    @tf.function
    def step(share):
        losses = strategy.run(replica_loss, args=(share,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    for share in batches:
        step(share)


def _replica_cross_entropy(y_true, y_pred):
    picked = y_true * tf.math.log(y_pred)  # BUG one_replica_fit
    return -tf.reduce_mean(tf.reduce_sum(picked, axis=1))


def one_replica_fit():
    """A Keras fit under MirroredStrategy whose third batch's second half (replica 1's
    share) is scaled up: replica 1's softmax saturates, replica 0's does not."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 8)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=48)]
    x[40:48] *= 1e4
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((8,)),
                keras.layers.Dense(16, activation="relu"),
                keras.layers.Dense(3, activation="softmax"),
            ]
        )
        model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=_replica_cross_entropy)
    model.fit(x, y, batch_size=16, shuffle=False, verbose=0)  # ORIGIN one_replica_fit


class Doubling(keras.optimizers.schedules.LearningRateSchedule):
    """A schedule meant to decay that multiplies: 0.01 doubled every step."""

    def __call__(self, step):
        return 0.01 * tf.pow(2.0, tf.cast(step, tf.float32))  # ORIGIN rising_learning_rate


class WarmUp(keras.optimizers.schedules.LearningRateSchedule):
    """A warm-up from 0.05 to 0.8 over the first four steps, then flat: too high for
    the data, but no longer rising when the training diverges."""

    def __call__(self, step):
        return tf.minimum(0.05 * tf.pow(2.0, tf.cast(step, tf.float32)), 0.8)


def _regression(schedule, steps):
    """A linear regression of eight features under SGD with ``schedule``: its data,
    batches of eight, ``steps`` of them."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = (3.0 * rng.normal(size=(8 * steps, 8))).astype("float32")
    y = x @ rng.normal(size=(8, 1)).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(schedule), loss="mse")
    return model, x, y


def rising_learning_rate():
    model, x, y = _regression(Doubling(), 24)
    model.fit(x, y, batch_size=8, shuffle=False, verbose=0)  # BUG rising_learning_rate


def rising_learning_rate_loop():
    """A custom loop that raises the optimizer's learning rate (its variable) every
    step instead of lowering it."""
    model, x, y = _regression(0.01, 24)
    optimizer = model.optimizer

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))  # BUG rising_learning_rate_loop
        pairs = zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        optimizer.apply_gradients(pairs)  # ORIGIN rising_learning_rate_loop
        return loss

    for step in range(24):
        optimizer.learning_rate.assign(0.01 * 2.0**step)
        train_step(x[step * 8 : (step + 1) * 8], y[step * 8 : (step + 1) * 8])


def warmup_diverging():
    model, x, y = _regression(WarmUp(), 40)
    model.fit(x, y, batch_size=8, shuffle=False, verbose=0)  # BUG warmup_diverging


class Spread(keras.layers.Layer):
    def call(self, x):
        return tf.math.log1p(x)  # BUG log1p_layer


def log1p_layer():
    layer = Spread()

    @tf.function
    def forward(x):
        return layer(x - 1.0)

    forward(tf.constant([0.5, -0.5, 2.0]))


def norm_gradient():
    v = tf.Variable(tf.zeros([3]))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            length = tf.norm(v)
        return tape.gradient(length, v)  # BUG norm_gradient

    step()


CASES = {
    f.__name__: f
    for f in (
        sigmoid_saturation,
        cast_rounding,
        exp_underflow,
        dead_relu,
        integer_division,
        one_replica,
        one_replica_fit,
        rising_learning_rate,
        rising_learning_rate_loop,
        warmup_diverging,
        log1p_layer,
        norm_gradient,
    )
}

# Cases run again in a mode without counts: the chain says which mode would show it.
OTHER_MODES = ("sigmoid_saturation:CURT_HEALTH",)

if __name__ == "__main__":
    np.seterr(all="ignore")
    logdir = sys.argv[1]
    for spec in sys.argv[2:] or (*CASES, *OTHER_MODES):
        name, _, mode = spec.partition(":")
        instrument.enable_dump_debug_info(
            f"{logdir}/{name}" + (f"-{mode}" if mode else ""),
            tensor_debug_mode=mode or "FULL_HEALTH",
            circular_buffer_size=-1,
        )
        CASES[name]()
        instrument.disable_dump_debug_info()
