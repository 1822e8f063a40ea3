"""The scenarios of TensorFlow's own dumper tests, run under one dumper.

Usage: python conformance.py DUMPER ROOT [SCENARIO[:MODE] ...]

DUMPER is ``tf`` (``tf.debugging.experimental.enable_dump_debug_info``) or ``ours``
(`instrument.enable_dump_debug_info`). Each scenario runs once per mode, between an
enable and a disable, into ROOT/SCENARIO-MODE, with functions defined afresh so that
each is traced under that dumper. The same program runs under both dumpers; the test
(tests/instrument/test_conformance.py) reads both dumps and compares them. The last
line printed is a JSON object of what the program itself saw (losses, results, errors).
"""

import faulthandler
import json
import os
import sys
import threading
from typing import Any

import numpy as np
import tensorflow as tf

# Two logical CPUs, for the scenarios of TensorFlow's distributed-callbacks tests
# (MirroredStrategy on two devices); the other scenarios run on the first.
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()],
)

import instrument  # noqa: E402

# A hung run prints every thread's stack and exits, well before the test's timeout
# (the whole plan takes under a minute on two cores).
HANG_S = 180
faulthandler.dump_traceback_later(HANG_S, exit=True)

DUMPER, ROOT, PLAN = sys.argv[1], sys.argv[2], sys.argv[3:]
SEEN: dict = {}
# The run of the scenario being played: (path, mode, options), for scenarios that
# enable the dumper themselves (inside a strategy's scope).
CURRENT: list = []


def enable(path, mode, **options):
    options.setdefault("circular_buffer_size", -1)
    if DUMPER == "tf":
        tf.debugging.experimental.enable_dump_debug_info(path, tensor_debug_mode=mode, **options)
    else:
        instrument.enable_dump_debug_info(path, tensor_debug_mode=mode, **options)


def disable():
    if DUMPER == "tf":
        tf.debugging.experimental.disable_dump_debug_info()
    else:
        instrument.disable_dump_debug_info()


# -- the scenarios --------------------------------------------------------------------


def eager_collatz():
    """Eager ops only: the Collatz sequence from 10."""
    x = tf.constant(10.0)
    zero, one, two, three = (tf.constant(v) for v in (0.0, 1.0, 2.0, 3.0))
    while x > one:
        if tf.math.equal(x % two, zero):
            x = x / two
        else:
            x = x * three + one


def bad_values():
    """(x + y) / (x - y) in float16: [0.2, -inf, nan, nan, inf, inf, inf, -5]."""

    @tf.function
    def func(x, y):
        return (x + y) / (x - y)  # BAD_LINE

    x = np.array([-3, -1, 0, 0, 1, 1, 1, 2], dtype=np.float16)
    y = np.array([2, -1, 0, 0, 1, 1, 1, 3], dtype=np.float16)
    func(x, y)


def training_nan():
    """Two dense layers and an SGD step in a tf.function, run twice: finite, then with
    an infinity in the input where the first weights' row is zero (inf * 0: NaN in the
    first MatMul's row, then in everything after it)."""
    rng = np.random.default_rng(0)
    first = rng.normal(size=(6, 5)).astype(np.float32)
    first[2] = 0.0
    variables = [
        tf.Variable(first),
        tf.Variable(np.zeros(5, np.float32)),
        tf.Variable(rng.normal(size=(5, 3)).astype(np.float32)),
        tf.Variable(np.zeros(3, np.float32)),
    ]

    @tf.function
    def step(x, y):
        w1, b1, w2, b2 = variables
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(hidden, w2) + b2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(0.1 * g)
        return loss

    x = rng.normal(size=(4, 6)).astype(np.float32)
    x[:, 2] = 0.0  # the zero row of the weights gets no gradient
    y = np.array([0, 1, 2, 1])
    step(x, y)
    x[1, 2] = np.inf
    step(x, y)


def booleans():
    @tf.function
    def func(x, y):
        return tf.math.logical_not(tf.math.logical_and(x, y))

    func(np.array([[False, False], [True, True]]), np.array([[False, True], [False, True]]))


def nested():
    """A function called from a function, without control flow."""

    @tf.function
    def log_sum(x, y):
        return tf.math.log(x + y)  # NESTED_LOG_LINE

    @tf.function
    def sin1p_log_sum(x, y):
        return tf.math.sin(1.0 + log_sum(x, y))

    SEEN["nested"] = float(sin1p_log_sum(tf.constant(2.0), tf.constant(3.0)))


def two_compilations():
    """One Python function, two dtypes: two graphs, called alternately."""

    @tf.function
    def ceil_times_two(x):
        return tf.math.ceil(x) * 2.0

    for x in (np.float32(3.5), np.float64(4.5), np.float32(3.5), np.float64(4.5)):
        ceil_times_two(x)


def duplicate_names():
    """Two objects' methods of the same name: two graphs."""

    class Model:
        @tf.function
        def ceil_times_two(self, x):
            return tf.math.ceil(x) * 2.0

    first, second = Model(), Model()
    x = np.float32(3.5)
    for model in (first, second, first, second):
        model.ceil_times_two(x)


def unique_sum():
    @tf.function
    def func(xs):
        unique_xs, indices = tf.unique(xs)
        return tf.reduce_sum(unique_xs), indices

    func(tf.constant([2.0, 6.0, 8.0, 1.0, 2.0]))


def while_doubling():
    """A while loop in a function: Less runs 5 times, Mul 4."""

    @tf.function
    def iterative_doubling(x, times):
        i = tf.constant(0, dtype=tf.int32)
        while i < times:
            x = x * 2.0
            i += 1
        return x

    SEEN["while_doubling"] = float(
        iterative_doubling(tf.constant(0.5), tf.constant(4, dtype=tf.int32))
    )


def threads():
    """One call on this thread, then three at once on other threads, of the same
    function (their traces interleave in an order that differs from run to run)."""
    x = tf.Variable(10.0)
    y = tf.Variable(3.0)

    @tf.function
    def increase_x():
        return x.assign_add(y * 2.0)

    increase_x()
    workers = [threading.Thread(target=increase_x) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    SEEN["threads"] = float(x.read_value())


def _recurrent_model():
    model = tf.keras.Sequential(
        [
            tf.keras.Input((3, 4)),
            tf.keras.layers.LSTM(10, kernel_initializer="zeros", recurrent_initializer="zeros"),
            tf.keras.layers.Dense(1, kernel_initializer="zeros"),
        ]
    )
    model.compile(loss="mse", optimizer="sgd")
    return model


def keras_recurrent():
    """An LSTM model's predict, then fit; and one with Keras' default initializers
    (the orthogonal one runs eager ops by a bytes name)."""
    tf.keras.layers.LSTM(2)(np.ones([1, 2, 3], dtype=np.float32))
    model = _recurrent_model()
    SEEN.setdefault("keras_recurrent", {})["predict"] = model.predict(
        np.ones([5, 3, 4]), verbose=0
    ).tolist()
    history = model.fit(np.ones([5, 3, 4]), np.ones([5, 1]), epochs=3, verbose=0)
    SEEN["keras_recurrent"]["loss"] = history.history["loss"]


def mobilenet():
    """MobileNetV2 (alpha 0.1, 32x32), cut after layer 22, one epoch of fit."""
    base = tf.keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.1, weights=None)
    y = tf.keras.layers.Flatten()(base.layers[22].output)
    model = tf.keras.Model(inputs=base.inputs, outputs=tf.keras.layers.Dense(1)(y))
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(np.zeros([2, 32, 32, 3]), np.zeros([2, 1]), epochs=1, verbose=0)
    SEEN["mobilenet"] = history.history["loss"]


def circular():
    """40 eager Muls, then (by name) a Log of 0 and 10 more Muls."""
    x = tf.constant([1.0, 2.0])
    for _ in range(40):
        x = x * 1.0
    bad = tf.math.log(x - x)
    for _ in range(10):
        bad = bad * 1.0


def call_inputs():
    """Calls of functions with two inputs and one, one calling another: each call is
    recorded with the inputs the program passed and its own captures (a variable)."""
    scale = tf.Variable(2.0)

    @tf.function
    def inner(x):
        return tf.sin(x) * scale

    @tf.function
    def outer(x, y):
        return inner(x) + tf.matmul(x, y)

    @tf.function
    def single(x):
        return tf.cos(x)

    outer(tf.ones([2, 2]), tf.ones([2, 2]))
    single(tf.ones([2]))


def _mirrored():
    """One MirroredStrategy for the process: several in one process reuse collective
    instance keys, and their all-reduces of different shapes then collide."""
    if not _STRATEGY:
        _STRATEGY.append(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    return _STRATEGY[0]


_STRATEGY: list = []


def _mirrored_keras_fit(strategy, enable_in_scope=False):
    """TensorFlow's testKerasModelFitOnOneOrTwoDevices: Dense(10, relu), Dense(1), mse,
    SGD, one epoch of 20 ones."""
    with strategy.scope():
        if enable_in_scope:
            enable(*CURRENT[:2], **CURRENT[2])
        model = tf.keras.Sequential(
            [
                tf.keras.Input((5,)),
                tf.keras.layers.Dense(10, activation="relu"),
                tf.keras.layers.Dense(1),
            ]
        )
        model.compile(loss="mse", optimizer="sgd")
        history = model.fit(np.ones([20, 5]), np.ones([20, 1]), epochs=1, verbose=0)
    SEEN.setdefault("mirrored_fit", []).append(history.history["loss"])


def mirrored_fit():
    _mirrored_keras_fit(_mirrored())


def mirrored_fit_in_scope():
    """The same, with the dumper enabled inside the strategy's scope."""
    _mirrored_keras_fit(_mirrored(), enable_in_scope=True)


def _mirrored_step(strategy):
    """TensorFlow's testDumpingMiniModel: a dense layer of ones and one SGD step per
    replica, the gradients summed over both."""
    with strategy.scope():
        weights = [tf.Variable(tf.ones([10, 1])), tf.Variable([1.0])]
        optimizer = tf.keras.optimizers.SGD(0.25)

    def train_step():
        with tf.GradientTape() as tape:
            y = tf.nn.bias_add(tf.matmul(tf.ones([1, 10]), weights[0]), weights[1])
            loss = tf.reduce_sum(y)
        optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))

    return weights, train_step


def mirrored_loop():
    """A custom loop's step under MirroredStrategy, run eagerly (a thread per replica)."""
    strategy = _mirrored()
    weights, train_step = _mirrored_step(strategy)
    strategy.run(train_step)
    SEEN.setdefault("mirrored_loop", []).append([float(w.numpy().ravel()[0]) for w in weights])


def mirrored_loop_function():
    """The same step in a tf.function, twice."""
    strategy = _mirrored()
    weights, train_step = _mirrored_step(strategy)
    step = tf.function(lambda: strategy.run(train_step))
    step()
    step()
    SEEN.setdefault("mirrored_loop_function", []).append(
        [float(w.numpy().ravel()[0]) for w in weights]
    )


def mirrored_loop_average():
    """TensorFlow's tutorial custom loop under MirroredStrategy: a Dense layer, the
    per-example loss averaged over the global batch (``tf.nn.compute_average_loss``),
    SGD in ``strategy.run``, the replicas' losses summed. Its second step reads an
    infinity: every replica's loss and gradients go NaN."""
    strategy = _mirrored()
    with strategy.scope():
        model = tf.keras.Sequential(
            [tf.keras.Input((4,)), tf.keras.layers.Dense(3, kernel_initializer="ones")]
        )
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none"
        )
        optimizer = tf.keras.optimizers.SGD(0.1)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            per_example = loss_object(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=8)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def distributed_step(x, y):
        per_replica = strategy.run(train_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    x = np.ones((4, 4), np.float32)
    y = np.array([0, 1, 2, 0])
    first = float(distributed_step(x, y))
    x[1, 2] = np.inf
    second = float(distributed_step(x, y))
    SEEN.setdefault("mirrored_loop_average", []).append([first, bool(np.isnan(second))])


SCENARIOS = {
    f.__name__: f
    for f in (
        eager_collatz,
        bad_values,
        training_nan,
        booleans,
        nested,
        two_compilations,
        duplicate_names,
        unique_sum,
        while_doubling,
        threads,
        keras_recurrent,
        mobilenet,
        circular,
        call_inputs,
        mirrored_fit,
        mirrored_fit_in_scope,
        mirrored_loop,
        mirrored_loop_function,
        mirrored_loop_average,
    )
}
# Scenarios that enable the dumper themselves.
ENABLING = {"mirrored_fit_in_scope"}

# Filters: name -> (tensor_dtypes, op_regex), as in TF's filter tests.
FILTERS = {
    "float": ([tf.float32], None),
    "float_only_sum": (["float32"], "Sum"),
    "float_no_sum": ((tf.float32,), "(?!Sum)"),
    "int": ([tf.int32], None),
    "int_via_lambda": (lambda dtype: dtype.is_integer, None),
    "exclude_sum": (None, "(?!Sum)"),
    "regex_addv2": (None, "AddV2"),
    "regex_log": (None, "Log"),
    "regex_addv2_log": (None, "(AddV2|Log)"),
}


def main():
    tf.keras.utils.set_random_seed(1)
    for item in PLAN:
        scenario, mode = item.split(":")
        options = {}
        name = scenario
        if scenario in FILTERS:  # a filter, on unique_sum or nested
            dtypes, regex = FILTERS[scenario]
            options = {"tensor_dtypes": dtypes, "op_regex": regex}
            name, scenario = scenario, "nested" if scenario.startswith("regex") else "unique_sum"
        if scenario == "circular":
            options["circular_buffer_size"] = 5
        path = os.path.join(ROOT, f"{name}-{mode}")
        CURRENT[:] = [path, mode, options]
        if scenario not in ENABLING:
            enable(path, mode, **options)
        try:
            SCENARIOS[scenario]()
        finally:
            disable()
    # Argument checks, outside any run.
    errors: dict[str, Any] = {}
    arguments: dict[str, dict[str, Any]] = {
        "mode": {"tensor_debug_mode": "NONSENSICAL"},
        "dtypes_dict": {"tensor_dtypes": {}},
        "dtypes_str": {"tensor_dtypes": "float32"},
    }
    for label, kwargs in arguments.items():
        try:
            if DUMPER == "tf":
                tf.debugging.experimental.enable_dump_debug_info(
                    os.path.join(ROOT, "bad"), **kwargs
                )
            else:
                instrument.enable_dump_debug_info(os.path.join(ROOT, "bad"), **kwargs)
            errors[label] = None
            disable()
        except Exception as error:  # what each dumper raises is what is compared
            errors[label] = [type(error).__name__, str(error)]
    SEEN["errors"] = errors
    print(json.dumps(SEEN))


main()
