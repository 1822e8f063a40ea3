"""A custom loop trained twice from the same seed, unwatched and then watched: prints,
per optimizer, whether every weight and optimizer variable ends bitwise equal.

Usage: python watched_unchanged.py LOGDIR. The watch holds the optimizer's writes until
their changes are checked (instrument/watch/held_update.py); the training's numbers must
not change by a bit: AdamW (Keras writes its weight decay through tf.Variable directly)
and SGD with momentum (an assign of the slot, then an add it reads back).
"""

import sys

import numpy as np
import tensorflow as tf

import instrument

LOGDIR = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y = rng.integers(0, 3, size=64)


def trained(make_optimizer, watched):
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((8,)),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(3),
        ]
    )
    optimizer = make_optimizer()
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if watched:
        instrument.watch(LOGDIR)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(6):
        step(x, y)
    if watched:
        instrument.unwatch()
    return [v.numpy() for v in model.weights + list(optimizer.variables)]


OPTIMIZERS = {
    "adamw": lambda: tf.keras.optimizers.AdamW(1e-2, weight_decay=0.01),
    "sgd_momentum": lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9),
}
for name, make in OPTIMIZERS.items():
    plain, watched = trained(make, False), trained(make, True)
    equal = len(plain) == len(watched) and all(np.array_equal(a, b) for a, b in zip(plain, watched))
    print("EQUAL", name, equal, len(plain), flush=True)
