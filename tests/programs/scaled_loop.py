"""A custom training loop under Keras' loss scaler (``scale_loss``, then ``apply``), for
the programs that train a mixed-precision model by hand (harm.py, trends.py)."""

import tensorflow as tf


def train_scaled(model, optimizer, x, y, steps: int, batch: int = 8) -> None:
    """``steps`` steps of mean squared error on consecutive batches of ``x``, ``y``."""

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
            scaled = optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss

    for i in range(steps):
        train_step(x[i * batch : (i + 1) * batch], y[i * batch : (i + 1) * batch])
