"""Programs under the watch tier. Usage: python watched.py LOGDIR PROGRAM [ON_HIT].

Each PROGRAM trains a small model whose step goes non-finite at a known step
(BAD_STEP), or never (the healthy ones); it prints what the watch did, one line each:
WATCHED <run path>, CAUGHT <NonFiniteError's first lines> or FINISHED, and the
weights' finiteness after the run.
"""

import json
import sys

import numpy as np
import tensorflow as tf

import instrument

LOGDIR, PROGRAM = sys.argv[1], sys.argv[2]
ON_HIT = sys.argv[3] if len(sys.argv) > 3 else "stop"
BAD_STEP = 5
BATCH = 16
# A divergence takes its time: its learning rate makes every step's error some 8 times
# the last one's, until the loss overflows (near step 20).
STEPS = 60 if PROGRAM == "fit_divergence" else 12

rng = np.random.default_rng(0)
x = rng.normal(size=(BATCH * STEPS, 8)).astype("float32")
labels = rng.integers(0, 3, size=BATCH * STEPS)
y = np.eye(3, dtype="float32")[labels]


def cross_entropy(y_true, y_pred):
    return -tf.reduce_mean(tf.reduce_sum(y_true * tf.math.log(y_pred), axis=1))  # LOG_LINE


def mlp():
    # fit_wide_saturated: two hidden layers of 2,048 (16 MiB a kernel), a step of
    # hundreds of MiB of tensors (tests/benchmarks/bench_replay.py).
    hidden = [2048, 2048] if "wide" in PROGRAM else [16]
    return tf.keras.Sequential(
        [
            tf.keras.Input((8,)),
            *(tf.keras.layers.Dense(n, activation="relu") for n in hidden),
            tf.keras.layers.Dense(3, activation="softmax"),
        ]
    )


if PROGRAM.startswith("mirrored"):
    # Two logical CPUs, a replica each; the bad batch's second half (replica 1's) only.
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    x[BAD_STEP * BATCH + BATCH // 2 : (BAD_STEP + 1) * BATCH] *= 1e4
elif PROGRAM.endswith("_saturated"):
    # The batch of BAD_STEP is scaled so that the softmax saturates to exact zeros.
    x[BAD_STEP * BATCH : (BAD_STEP + 1) * BATCH] *= 1e4
elif PROGRAM in ("fit_data_nan", "loop_state_data_nan"):
    x[BAD_STEP * BATCH + 3, 2] = np.nan
elif PROGRAM.startswith("adam_eps0"):
    x[:, 0] = 0.0  # the first layer's first kernel row never gets a gradient: 0/0
if PROGRAM == "fit_divergence":
    x *= 3.0
    y = x @ rng.normal(size=(8, 1)).astype("float32")
if PROGRAM in ("mixed_skips", "mirrored_mixed"):
    # Its float16 gradients near the scale's limit: the weights' draw decides whether a
    # step after the first skips overflows too, so the draw is fixed.
    tf.keras.utils.set_random_seed(0)
if "mixed" in PROGRAM:
    tf.keras.mixed_precision.set_global_policy("mixed_float16")


class OverriddenStep(tf.keras.Sequential):
    """A model whose train_step is its own."""

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            loss = cross_entropy(yb, self(xb, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


class InfiniteAtOneStep(tf.keras.optimizers.schedules.LearningRateSchedule):
    """lr_spike's schedule: a learning rate that is infinite at the step before BAD_STEP
    (a bug in its formula). That step's gradients are finite; its update's changes are
    infinite (and NaN where a gradient is 0), and are held back. Under gradient
    accumulation (accumulated_lr_spike) the update runs in a cond of Keras' own, every
    second step, and is written as it comes: the infinite learning rate is at BAD_STEP
    there (an update step), and the loss of the step after it reads its infinities."""

    def __call__(self, step):
        bad = BAD_STEP if PROGRAM == "accumulated_lr_spike" else BAD_STEP - 1
        return tf.where(tf.equal(step, bad), float("inf"), 0.01)  # INF_LR_LINE


def where_sqrt_loss(y_true, y_pred):
    z = y_pred - 0.5
    safe = tf.where(z > 0, tf.sqrt(z), 0.0)  # NaN forward, discarded; finite gradients
    return tf.reduce_mean(tf.square(safe - y_true))


# adam_eps0_unheld: the update written as it comes (its NaN found after it is written).
HOLD = not PROGRAM.endswith("_unheld")
print("WATCHED", instrument.watch(LOGDIR, on_hit=ON_HIT, hold_update=HOLD), flush=True)
strategy = (
    tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    if PROGRAM.startswith("mirrored")
    else tf.distribute.get_strategy()
)
if PROGRAM.startswith("override"):
    model = OverriddenStep(
        [
            tf.keras.Input((8,)),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(3, activation="softmax"),
        ]
    )
elif PROGRAM == "fit_divergence":
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
else:
    with strategy.scope():
        model = mlp()


def caught(error):
    print("CAUGHT", str(error).replace("\n", " | "), flush=True)
    print("STEP", error.step, error.op_type, error.line, flush=True)


def state_of(normalization, generator):
    """What loop_state_data_nan's step writes besides its optimizer: as a JSON line."""
    return json.dumps(
        {
            "moving_mean": normalization.moving_mean.numpy().tolist(),
            "generator": generator.state.numpy().tolist(),
        }
    )


try:
    if PROGRAM.startswith("loop"):
        generator = None
        if PROGRAM == "loop_state_data_nan":
            # A custom loop whose step writes state of its own: BatchNormalization's
            # moving statistics and a tf.random.Generator's state (noise on the inputs).
            # The NaN in BAD_STEP's batch would make the moving mean NaN; the watch puts
            # back what the step before left.
            tf.keras.utils.set_random_seed(0)
            normalization = tf.keras.layers.BatchNormalization()
            model = tf.keras.Sequential(
                [
                    tf.keras.Input((8,)),
                    tf.keras.layers.Dense(16),
                    normalization,
                    tf.keras.layers.Dense(3, activation="softmax"),
                ]
            )
            generator = tf.random.Generator.from_seed(1)
        optimizer = tf.keras.optimizers.Adam(1e-2)

        @tf.function(jit_compile="xla" in PROGRAM)
        def train_step(xb, yb):
            if generator is not None:
                xb = xb + 0.01 * generator.normal(tf.shape(xb))
            if PROGRAM == "loop_legacy_random":
                # Noise from a legacy stateful op (its state is the kernel's own).
                xb = xb + 0.01 * tf.random.normal(tf.shape(xb))
            with tf.GradientTape() as tape:
                loss = cross_entropy(yb, model(xb, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        for step in range(STEPS):
            train_step(x[step * BATCH : (step + 1) * BATCH], y[step * BATCH : (step + 1) * BATCH])
            if generator is not None and step == BAD_STEP - 1:
                print("STATE_BEFORE_BAD", state_of(normalization, generator), flush=True)
    else:
        loss = {"where_sqrt": where_sqrt_loss, "fit_divergence": "mse"}.get(PROGRAM, cross_entropy)
        epsilon = 0.0 if PROGRAM.startswith("adam_eps0") else 1e-7
        with strategy.scope():
            if PROGRAM == "fit_divergence":
                optimizer = tf.keras.optimizers.SGD(0.5)
            elif PROGRAM == "lr_spike":
                optimizer = tf.keras.optimizers.SGD(InfiniteAtOneStep())
            elif PROGRAM == "accumulated_lr_spike":
                optimizer = tf.keras.optimizers.SGD(
                    InfiniteAtOneStep(), gradient_accumulation_steps=2
                )
            elif PROGRAM == "fit_accumulated":
                # Keras' gradient accumulation: the update runs in a cond of its own,
                # every second step, inside the watched apply.
                optimizer = tf.keras.optimizers.Adam(1e-2, gradient_accumulation_steps=2)
            else:
                optimizer = tf.keras.optimizers.Adam(1e-2, epsilon=epsilon)
            if PROGRAM in ("mixed_skips", "mirrored_mixed"):
                # A scale too large for float16's gradients: the first steps overflow,
                # are skipped and halve it, until it fits.
                optimizer = tf.keras.mixed_precision.LossScaleOptimizer(
                    optimizer, initial_scale=2.0**22
                )
            model.compile(
                optimizer=optimizer,
                loss=loss,
                jit_compile="xla" in PROGRAM,
                # Four steps a call: the watched step in Keras' loop over them.
                steps_per_execution=4 if "spe" in PROGRAM else 1,
            )
        model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    print("FINISHED", flush=True)
except instrument.NonFiniteError as error:
    caught(error)
try:
    instrument.unwatch()  # a hit the host had not read yet is raised here
except instrument.NonFiniteError as error:
    caught(error)
weights_finite = all(np.isfinite(w).all() for w in model.get_weights())
print("WEIGHTS_FINITE", weights_finite, flush=True)
if PROGRAM == "loop_state_data_nan":
    print("STATE_AFTER", state_of(normalization, generator), flush=True)
