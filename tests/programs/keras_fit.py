"""Keras 3 model.fit with a custom layer, by default and with jit_compile=True.

Usage: python keras_fit.py LOGDIR MODE JIT (JIT: "default" or "jit").
"""

import sys

import keras
import numpy as np

import instrument

logdir, mode, jit = sys.argv[1:4]
instrument.enable_dump_debug_info(logdir, tensor_debug_mode=mode, circular_buffer_size=-1)


class Scale(keras.layers.Layer):
    """A custom layer: multiplies by a trainable per-feature scale."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, inputs):
        return inputs * self.scale  # CUSTOM_LAYER_LINE


model = keras.Sequential([keras.Input((4,)), Scale(), keras.layers.Dense(2)])
kwargs = {"jit_compile": True} if jit == "jit" else {}
model.compile(optimizer="sgd", loss="mse", **kwargs)
x = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
y = np.zeros((16, 2), "float32")
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
print("JIT", model.jit_compile)
instrument.disable_dump_debug_info()
