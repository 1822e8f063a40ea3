"""Keras fits whose trends announce (or do not announce) trouble, in FULL_STATS, for the
watch rules and the Trends view. Each case is dumped as its own run in one process.

``python trends.py LOGDIR [CASE ...]`` writes ``LOGDIR/<case>`` for each case (all by
default), and ``LOGDIR/facts.json``: what each case did that the tests check the dump
against (the step from which the learning rate was raised, the rates).

- ``lr_raised``: SGD at a sane learning rate, raised a thousandfold from step
  `RAISE_STEP` on: the gradients grow for a few steps, then the loss goes NaN.
- ``dead_relu``: a ReLU layer whose bias is so negative that no unit ever fires: its
  gradients are exact zeros every step.
- ``float16_headroom``: under ``mixed_float16``, activations near 40,000, within 2x of
  float16's largest finite value (65,504).
- ``healthy``: a small float32 fit that trains as it should.
- ``adam``: a healthy fit under Adam, whose moments (m and v, the optimizer's slots)
  are read by every step; `facts.json` holds each slot's norm before each batch.
- ``variables_loop``: a custom loop over two ``tf.Variable`` s (no Keras layer) under
  Keras' Adam; `facts.json` holds the variables' and the slots' norms before each step.
- ``mixed_fit``, ``mixed_loop``: mixed_float16 under Keras' dynamic loss scale (a first
  scale too large, halved until it fits, doubled every `GROWTH_STEPS` finite steps), by
  ``fit`` and by a custom loop; ``mixed_adam``: the fit with Adam under the scaler.
- ``dead_relu_health``, ``mixed_fit_health``, ``lr_raised_health``: those fits in
  FULL_HEALTH; ``big_layer_health``: a FULL_HEALTH fit with a layer whose kernel is too
  large for a magnitude.
"""

import json
import sys

import keras
import numpy as np
from scaled_loop import train_scaled

import instrument

STEPS = 16
RAISE_STEP = 6
RAISED_RATE = 20.0


def _data(steps: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * 8, 4)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) * scale).astype("float32")
    return x, y


class _RaiseRate(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if batch == RAISE_STEP:
            self.model.optimizer.learning_rate.assign(RAISED_RATE)


def lr_raised() -> dict:
    """Sane for `RAISE_STEP` steps, then a learning rate far too high."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dense(8),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    x, y = _data(STEPS)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[_RaiseRate()])
    return {"raise_step": RAISE_STEP, "rate": 0.01, "raised_rate": RAISED_RATE}


def dead_relu() -> dict:
    """The first layer's units never fire: its gradients are exact zeros."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(
                8,
                activation="relu",
                name="dead",
                bias_initializer=keras.initializers.Constant(-100.0),
            ),
            keras.layers.Dense(1, name="out"),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    x, y = _data(8)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    return {}


def float16_headroom() -> dict:
    """mixed_float16, a layer whose outputs reach about 40,000 of float16's 65,504."""
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(
                    8,
                    name="big",
                    use_bias=False,
                    kernel_initializer=keras.initializers.Constant(5000.0),
                ),
                keras.layers.Dense(1, name="out", dtype="float32"),
            ]
        )
        model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
        x = np.full((8 * 8, 4), 2.0, dtype="float32")
        y = np.zeros((8 * 8, 1), dtype="float32")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return {"kernel": 5000.0, "input": 2.0, "inputs": 4}


def _small_fit(
    optimizer: keras.optimizers.Optimizer, steps: int, callbacks: list | None = None
) -> None:
    """A float32 Dense-ReLU-Dense regression fit for ``steps`` batches of 8."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=optimizer, loss="mse")
    x, y = _data(steps)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=callbacks)


def healthy() -> dict:
    """A float32 fit at a sane learning rate."""
    _small_fit(keras.optimizers.SGD(0.01), STEPS)
    return {}


class _SlotNorms(keras.callbacks.Callback):
    """Each optimizer slot's L2 norm before each batch: the value the step reads."""

    def __init__(self):
        super().__init__()
        self.norms: dict[str, list[float]] = {}

    def on_train_batch_begin(self, batch, logs=None):
        optimizer = self.model.optimizer
        for variable in optimizer.variables:
            if variable.path.endswith(("_momentum", "_velocity")):
                value = keras.ops.convert_to_numpy(variable.value)
                self.norms.setdefault(variable.path, []).append(
                    float(np.sqrt(np.sum(np.square(value, dtype=np.float64))))
                )


def adam() -> dict:
    """Adam on a small regression: its m and v grow from zero over the steps."""
    slots = _SlotNorms()
    _small_fit(keras.optimizers.Adam(0.01), ADAM_STEPS, [slots])
    return {"slot_norms": slots.norms, "steps": ADAM_STEPS}


ADAM_STEPS = 6


def variables_loop() -> dict:
    """A linear model of two named variables, trained by a `tf.function` step."""
    import tensorflow as tf

    weights = tf.Variable(tf.ones((4, 1)), name="weights")
    bias = tf.Variable(tf.zeros((1,)), name="bias")
    optimizer = keras.optimizers.Adam(0.05)
    x, y = _data(ADAM_STEPS)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ weights + bias - y))
        gradients = tape.gradient(loss, [weights, bias])
        optimizer.apply_gradients(zip(gradients, [weights, bias]))
        return loss

    def norm(value) -> float:
        return float(np.sqrt(np.sum(np.square(np.asarray(value), dtype=np.float64))))

    # Per variable: [step, its norm before that step] (the optimizer's own variables
    # exist from its first step on).
    norms: dict[str, list[list[float]]] = {}
    for i in range(ADAM_STEPS):
        for variable in [weights, bias, *optimizer.variables]:
            name = getattr(variable, "path", variable.name.split(":")[0])
            norms.setdefault(name, []).append([i, norm(variable.numpy())])
        train_step(x[i * 8 : (i + 1) * 8], y[i * 8 : (i + 1) * 8])
    return {
        "norms": norms,
        "variables": ["weights", "bias"],
        "slots": [
            v.path for v in optimizer.variables if v.path.endswith(("_momentum", "_velocity"))
        ],
    }


# The mixed-precision cases: a first scale that overflows float16's gradients, halved
# step by step until it fits, then doubled every `GROWTH_STEPS` finite steps.
MIXED_INITIAL_SCALE = 2.0**22
GROWTH_STEPS = 3
MIXED_STEPS = 20


def _mixed_model() -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dense(8),
            keras.layers.Dense(1, dtype="float32"),
        ]
    )


def _scale_optimizer() -> keras.optimizers.LossScaleOptimizer:
    return keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.01),
        initial_scale=MIXED_INITIAL_SCALE,
        dynamic_growth_steps=GROWTH_STEPS,
    )


def mixed_fit() -> dict:
    """mixed_float16 under Keras' dynamic loss scale: the optimizer's writes sit in the
    branch of the scaler's cond that runs only when the gradients are finite."""
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = _mixed_model()
        model.compile(optimizer=_scale_optimizer(), loss="mse")
        x, y = _data(MIXED_STEPS)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return {
        "initial_scale": MIXED_INITIAL_SCALE,
        "growth_steps": GROWTH_STEPS,
        "steps": MIXED_STEPS,
    }


def mixed_adam() -> dict:
    """mixed_float16 under Keras' loss scaler around Adam: Adam's moments are read and
    written inside the scaler's branch (``cond/adam/...``), on the applied steps only."""
    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = _mixed_model()
        model.compile(
            optimizer=keras.optimizers.LossScaleOptimizer(
                keras.optimizers.Adam(0.01),
                initial_scale=MIXED_INITIAL_SCALE,
                dynamic_growth_steps=GROWTH_STEPS,
            ),
            loss="mse",
        )
        x, y = _data(MIXED_STEPS)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return {"variables": 2 * 3}


def mixed_loop() -> dict:
    """The same model and scaler in a custom training loop (`scale_loss`, `apply`)."""

    keras.utils.set_random_seed(1)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = _mixed_model()
        optimizer = _scale_optimizer()
        x, y = _data(MIXED_STEPS)

        train_scaled(model, optimizer, x, y, MIXED_STEPS)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return {
        "initial_scale": MIXED_INITIAL_SCALE,
        "growth_steps": GROWTH_STEPS,
        "steps": MIXED_STEPS,
    }


# A kernel of this many elements is summarised the stock way on a CPU in FULL_HEALTH:
# its row has no magnitude (instrument.summaries.summary_ops.STOCK_ROUTE_MIN_ELEMENTS).
BIG_UNITS = 128


def big_layer() -> dict:
    """A layer whose kernel (and its gradient) is too large for a magnitude in
    FULL_HEALTH, between two small ones."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(BIG_UNITS, name="small"),
            keras.layers.Dense(BIG_UNITS, name="big"),
            keras.layers.Dense(1, name="out"),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.001), loss="mse")
    x, y = _data(4)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    return {"big_elements": BIG_UNITS * BIG_UNITS}


CASES = {
    f.__name__: f
    for f in (
        lr_raised,
        dead_relu,
        float16_headroom,
        healthy,
        adam,
        variables_loop,
        mixed_fit,
        mixed_adam,
        mixed_loop,
    )
}
# The dead ReLUs again in FULL_HEALTH: exact zeros are counted, no norm is known.
CASES["dead_relu_health"] = dead_relu
# In FULL_HEALTH: magnitudes, no norms; and a layer too big for a magnitude.
CASES["mixed_fit_health"] = mixed_fit
CASES["lr_raised_health"] = lr_raised
CASES["big_layer_health"] = big_layer
MODES = {
    "dead_relu_health": "FULL_HEALTH",
    "mixed_fit_health": "FULL_HEALTH",
    "lr_raised_health": "FULL_HEALTH",
    "big_layer_health": "FULL_HEALTH",
}


def main(logdir: str, names: list[str]) -> None:
    facts = {}
    for name in names or CASES:
        instrument.enable_dump_debug_info(
            f"{logdir}/{name}",
            tensor_debug_mode=MODES.get(name, "FULL_STATS"),
            circular_buffer_size=-1,
        )
        facts[name] = CASES[name]()
        instrument.disable_dump_debug_info()
    with open(f"{logdir}/facts.json", "w") as out:
        json.dump(facts, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
