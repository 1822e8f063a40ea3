"""Programs whose first non-finite value is not (or not alone) the bug: healthy runs
with infinities made on purpose, and harm that the first alert hides. Each case is
dumped as its own run in one process.

``python harm.py LOGDIR [CASE ...]`` writes ``LOGDIR/<case>`` for each case (all by
default); ``python harm.py LOGDIR --tensorflow CASE:MODE ...`` runs cases under
TensorFlow's own dumper into ``LOGDIR/<case>-<MODE>``. A harmful case marks the line of
its culprit with ``# HARM <case>``.
"""

import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf
from scaled_loop import train_scaled

import instrument

# The mixed-precision fits: an initial loss scale of 2**24 overflows float16
# gradients for about a dozen steps before the scaler has halved it far enough.
MIXED_INITIAL_SCALE = 2.0**24
MIXED_STEPS = 24
COLLAPSE_STEPS = 26
DIVERGE_STEPS = 60


def _mixed_fit(data_scale: float, make_layer, steps: int) -> None:
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu"),
                make_layer(),
                keras.layers.Dense(1),
            ]
        )
        optimizer = keras.optimizers.LossScaleOptimizer(
            keras.optimizers.SGD(0.01), initial_scale=MIXED_INITIAL_SCALE
        )
        model.compile(optimizer=optimizer, loss="mse")
        x = np.random.default_rng(0).normal(size=(steps * 8, 4)).astype("float32")
        y = (x.sum(axis=1, keepdims=True) * data_scale).astype("float32")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def mixed_precision():
    """Healthy: the loss scaler's first steps overflow and are skipped, as designed."""
    _mixed_fit(1.0, lambda: keras.layers.Dense(8, activation="relu"), MIXED_STEPS)


def mixed_loop_built():
    """Healthy: a custom loop under the same scaler, built before its first step (as
    a restored or re-used optimizer is): its branches are named ``cond_true_N``, not
    after the scaler."""
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu"),
                keras.layers.Dense(8),
                keras.layers.Dense(1, dtype="float32"),
            ]
        )
        optimizer = keras.optimizers.LossScaleOptimizer(
            keras.optimizers.SGD(0.01), initial_scale=MIXED_INITIAL_SCALE
        )
        optimizer.build(model.trainable_variables)
        x = np.random.default_rng(0).normal(size=(MIXED_STEPS * 8, 4)).astype("float32")
        y = x.sum(axis=1, keepdims=True)

        train_scaled(model, optimizer, x, y, MIXED_STEPS)
    finally:
        keras.mixed_precision.set_global_policy("float32")


class _SqrtLayer(keras.layers.Layer):
    """sqrt of a ReLU: the gradient is infinite wherever an input is 0, every step."""

    def call(self, x):
        return tf.sqrt(tf.nn.relu(x - 100.0))


def loss_scale_collapse():
    """Every step's gradient is non-finite whatever the scale: the scaler skips them all."""
    _mixed_fit(1.0, _SqrtLayer, COLLAPSE_STEPS)


def masked_attention():
    """Healthy: a causal mask written as -inf, then softmax, trained a few steps."""
    rng = np.random.default_rng(0)
    query = tf.Variable(rng.normal(size=(4, 8)).astype("float32"))
    x = tf.constant(rng.normal(size=(2, 5, 4)).astype("float32"))
    mask = tf.constant(np.tril(np.ones((5, 5), dtype=bool)))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            h = tf.matmul(x, query)
            scores = tf.matmul(h, h, transpose_b=True)
            scores = tf.where(mask, scores, -np.inf)
            weights = tf.nn.softmax(scores, axis=-1)
            loss = tf.reduce_mean(tf.matmul(weights, h) ** 2)
        query.assign_sub(0.01 * tape.gradient(loss, query))
        return loss

    for _ in range(3):
        step(x)


def additive_mask():
    """Harmful: a causal mask added as (1 - mask) * -inf: where the mask is 1 the
    product is 0 * -inf = NaN, and every score of the row goes NaN."""
    rng = np.random.default_rng(0)
    x = tf.Variable(rng.normal(size=(2, 5, 4)).astype("float32"))
    mask = tf.linalg.band_part(tf.ones((5, 5)), -1, 0)

    @tf.function
    def step():
        scores = tf.matmul(x, x, transpose_b=True)
        scores = scores + (1.0 - mask) * -np.inf  # HARM additive_mask
        return tf.reduce_sum(tf.matmul(tf.nn.softmax(scores, axis=-1), x))

    for _ in range(2):
        step()


def masked_logsumexp():
    """Harmful: a fully masked row gives max = -inf and -inf - (-inf) = NaN."""

    @tf.function
    def masked_lse(scores, mask):
        masked = tf.where(mask, scores, -np.inf)
        top = tf.reduce_max(masked, axis=-1, keepdims=True)
        shifted = masked - top  # HARM masked_logsumexp
        return tf.squeeze(top, -1) + tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=-1))

    scores = tf.constant([[1.0, 2.0, 3.0], [0.5, 0.1, 0.2]])
    mask = tf.constant([[True, True, False], [False, False, False]])
    masked_lse(scores, mask)


def sqrt_where():
    """Healthy: tf.where hides the square roots of negatives, and TensorFlow's SqrtGrad
    makes a zero of the zero gradient the select gives them: the weights stay finite."""
    weights = tf.Variable([[0.5]])
    x = tf.constant(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(-1, 1))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            z = x @ weights
            safe = tf.where(z > 0, tf.sqrt(z), tf.zeros_like(z))
            loss = tf.reduce_mean((safe - x * x) ** 2)
        weights.assign_sub(0.1 * tape.gradient(loss, weights))
        return loss

    for _ in range(3):
        step()


def where_trap():
    """Harmful: tf.where hides log(0) in the forward pass, not in the gradient."""
    weights = tf.Variable([1.0, 0.0, 2.0])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            safe = tf.where(weights > 0, tf.math.log(weights), 0.0)
            loss = tf.reduce_sum(safe)
        grad = tape.gradient(loss, weights)  # HARM where_trap
        weights.assign_sub(0.1 * grad)
        return loss

    step()


def diverging():
    """Harmful: a learning rate far too high; the weights grow until the loss overflows."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(16, 4)).astype("float32"))
    y = tf.constant(rng.normal(size=(16, 1)).astype("float32"))
    w = tf.Variable(tf.zeros((4, 1)))

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            error = tf.matmul(x, w) - y
            loss = tf.reduce_mean(tf.square(error))
        w.assign_sub(3.0 * tape.gradient(loss, w))
        return loss

    for _ in range(DIVERGE_STEPS):
        train_step(x, y)


def keras_diverging(steps_per_execution: int = 1):
    """Harmful: a Keras fit whose learning rate is far too high: the output layer's
    values grow ten- to a million-fold a batch and the loss overflows at the fourth
    batch (only three finite values before it)."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 64)).astype("float32")
    y = (x @ rng.normal(size=(64, 1))).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.5),
        loss="mse",
        steps_per_execution=steps_per_execution,
    )
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)


def acos_domain():
    """Harmful: a cosine that rounds just above 1."""

    @tf.function
    def angle(cosine):
        cosine = cosine * 1.0
        return tf.acos(cosine)  # HARM acos_domain

    angle(tf.constant([0.5, 1.0000001]))


def adam_epsilon():
    """Harmful: Adam with epsilon=0.0 on a weight whose gradient is exactly 0."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(1, name="scorer")], name="ranker"
    )
    model.compile(optimizer=keras.optimizers.Adam(epsilon=0.0), loss="mse")
    x = np.zeros((16, 3), dtype="float32")
    x[:, 0] = 1.0
    model.fit(x, np.ones((16, 1), "float32"), batch_size=8, epochs=1, verbose=0)


def _nan_batches():
    """Twelve elements of three features, batched by four; element 7 holds a NaN in
    column 2 (the second batch, its row 3)."""
    features = np.ones((12, 3), np.float32)
    features[7, 2] = np.nan
    return tf.data.Dataset.from_tensor_slices((features, np.ones((12, 1), np.float32))).batch(4)


def dataset_batch():
    """Harmful: one element of the data holds a NaN; the input names the batch."""
    w = tf.Variable(tf.ones((3, 1)))

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    for x, y in _nan_batches():  # HARM dataset_batch
        train_step(x, y)


def py_function():
    """Harmful: a tf.py_function hands a NaN to the graph."""

    def load(i):
        return np.array([1.0, np.nan], np.float32) * float(i)

    @tf.function
    def step(i):
        values = tf.py_function(load, [i], tf.float32)  # HARM py_function
        return tf.reduce_sum(values * 2.0)

    step(tf.constant(1))


def numpy_function():
    """Harmful: a tf.numpy_function hands an infinity to the graph."""

    def scale(x):
        return (x / np.float32(0.0)).astype(np.float32)

    @tf.function
    def step(x):
        scaled = tf.numpy_function(scale, [x], tf.float32)  # HARM numpy_function
        return tf.reduce_sum(scaled * 2.0)

    step(tf.constant([1.0, 2.0]))


def variable_initial():
    """Harmful: a variable initialised with a NaN."""
    weights = tf.Variable(np.array([1.0, np.nan], np.float32))  # HARM variable_initial

    @tf.function
    def predict(x):
        return x * weights

    predict(tf.constant([2.0, 3.0]))


def variable_assigned():
    """Harmful: a NaN assigned to a variable outside the tf.function."""
    weights = tf.Variable(np.ones(2, np.float32))
    weights.assign(np.array([1.0, np.nan], np.float32))  # HARM variable_assigned

    @tf.function
    def predict(x):
        return x * weights

    predict(tf.constant([2.0, 3.0]))


def keras_data():
    """Harmful: model.fit on data with a NaN in one row (sample 13, batch 3 of 4)."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((16, 3), np.float32)
    x[13, 1] = np.nan
    model.fit(x, np.ones((16, 1), "float32"), batch_size=4, epochs=1, verbose=0, shuffle=False)


def dataset_map():
    """Harmful: a tf.data pipeline normalises the features in a map; one element of
    the data it was built from holds a NaN (element 13, batch 3 of 4)."""
    keras.utils.set_random_seed(1)
    features = np.ones((16, 3), np.float32)
    features[13, 1] = np.nan
    data = tf.data.Dataset.from_tensor_slices((features, np.ones((16, 1), np.float32)))
    data = data.map(lambda x, y: ((x - 1.0) * 0.5, y)).batch(4)  # HARM dataset_map
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(data, epochs=1, verbose=0)


# The sample of outlier_batch that is far out of range, and the batch size.
OUTLIER_SAMPLE = 40
OUTLIER_BATCH = 8


def outlier_batch():
    """Harmful: one sample far out of range (1e19) in an otherwise normal data set,
    under global-norm clipping: its batch's gradient overflows the norm's square in one
    step, which is not a divergence."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(keras.optimizers.SGD(0.01, global_clipnorm=1.0), "mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    x[OUTLIER_SAMPLE] = 1e19
    model.fit(
        x,
        rng.normal(size=(64, 1)).astype("float32"),
        batch_size=OUTLIER_BATCH,
        epochs=1,
        verbose=0,
        shuffle=False,
    )


def float16_gradient():
    """Harmful: a model computed in float16 without a loss scale (no mixed policy):
    a gradient's products pass 65,504 and overflow; no singular point is involved."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8,), dtype="float16"),
            keras.layers.Dense(16, dtype="float16", name="wide"),
            keras.layers.Dense(1, dtype="float16"),
        ]
    )
    model.compile("sgd", "mse")
    x = (np.random.default_rng(0).normal(size=(32, 8)) * 3000).astype("float16")
    model.fit(x, np.zeros((32, 1), "float16"), batch_size=8, epochs=1, verbose=0)


def _nan_checkpoint() -> str:
    """A checkpoint of a variable that holds a NaN, written before the dump starts."""
    saved = tf.Variable(np.array([1.0, np.nan], np.float32))
    return tf.train.Checkpoint(weights=saved).write(f"{tempfile.mkdtemp()}/ckpt")


def variable_restored(path: str):
    """Harmful: a variable restored from a checkpoint that holds a NaN."""
    weights = tf.Variable(np.ones(2, np.float32))
    tf.train.Checkpoint(weights=weights).read(path)  # HARM variable_restored

    @tf.function
    def predict(x):
        return x * weights

    predict(tf.constant([2.0, 3.0]))


CASES = {
    f.__name__: f
    for f in (
        mixed_precision,
        mixed_loop_built,
        loss_scale_collapse,
        masked_attention,
        additive_mask,
        masked_logsumexp,
        sqrt_where,
        where_trap,
        diverging,
        keras_diverging,
        acos_domain,
        adam_epsilon,
        dataset_batch,
        py_function,
        numpy_function,
        variable_initial,
        variable_assigned,
        variable_restored,
        keras_data,
        dataset_map,
        outlier_batch,
        float16_gradient,
    )
}
# The masked cases again in CURT_HEALTH, which says only "has NaN or inf".
CASES.update(masked_attention_curt=masked_attention, masked_logsumexp_curt=masked_logsumexp)
# The data cases again in FULL_TENSOR, whose values show the element and the column.
CASES.update(dataset_batch_tensor=dataset_batch, keras_data_tensor=keras_data)
# The Keras divergence again with two batches a call of the train function.
CASES.update(keras_diverging_spe=lambda: keras_diverging(steps_per_execution=2))
# The Keras data case again under a small circular buffer, which drops the batches before.
CASES.update(keras_data_buffered=keras_data)
# The divergence again in FULL_STATS, whose min and max show the growth as FULL_HEALTH's
# magnitudes do.
CASES.update(diverging_stats=diverging)
# Cases dumped in another mode than FULL_HEALTH (statistics, values).
MODES = {
    "diverging_stats": "FULL_STATS",
    "masked_attention_curt": "CURT_HEALTH",
    "masked_logsumexp_curt": "CURT_HEALTH",
    "dataset_batch_tensor": "FULL_TENSOR",
    "keras_data_tensor": "FULL_TENSOR",
}

# Cases under a circular buffer (the others keep everything).
BUFFERS = {"keras_data_buffered": 20}

# Cases that take an argument made before the dump starts.
SETUP = {"variable_restored": _nan_checkpoint}


def main(logdir: str, names: list[str]) -> None:
    """Each case under our dumper, or, with ``--tensorflow CASE:MODE...``, under
    TensorFlow's own (``LOGDIR/CASE-MODE``)."""
    tensorflow = names[:1] == ["--tensorflow"]
    for spec in names[1:] if tensorflow else names or CASES:
        name, _, mode = spec.partition(":")
        arguments = (SETUP[name](),) if name in SETUP else ()
        if tensorflow:
            tf.debugging.experimental.enable_dump_debug_info(
                f"{logdir}/{name}-{mode}", tensor_debug_mode=mode, circular_buffer_size=-1
            )
        else:
            instrument.enable_dump_debug_info(
                f"{logdir}/{name}",
                tensor_debug_mode=MODES.get(name, "FULL_HEALTH"),
                circular_buffer_size=BUFFERS.get(name, -1),
            )
        CASES[name](*arguments)
        if tensorflow:
            tf.debugging.experimental.disable_dump_debug_info()
        else:
            instrument.disable_dump_debug_info()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
