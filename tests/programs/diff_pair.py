"""One small training step in several versions, for `tfdbg-tui diff`.

Usage: python diff_pair.py LOGDIR MODE VARIANT [VARIANT ...]; each variant writes one
run into LOGDIR/VARIANT:
- base: float32; every tensor finite.
- float16: the same computed in float16 (two Casts more): the squares' sum overflows
  float16's 65504, so Sum is +inf where base's is finite.
- scaled: one line changed (SCALE 1.0 -> 1.01): every value after the Mul differs a
  little, all finite.
- negated: the input is -60 instead of 60: all finite, the signs differ.
- xla: base compiled with XLA (jit_compile=True): the same values.
- xla_float16: float16 compiled with XLA.
"""

import os
import sys

import tensorflow as tf

import instrument

LOGDIR, MODE, VARIANTS = sys.argv[1], sys.argv[2], sys.argv[3:]
STEPS = 3


def train(variant):
    half = variant in ("float16", "xla_float16")
    scale = 1.01 if variant == "scaled" else 1.0

    @tf.function(jit_compile=variant.startswith("xla"))
    def step(x, w):
        if half:
            x, w = tf.cast(x, tf.float16), tf.cast(w, tf.float16)
        h = tf.matmul(x, w) * scale  # MUL_LINE
        energy = tf.reduce_sum(tf.square(h), axis=1)  # SUM_LINE
        return tf.reduce_mean(tf.math.log1p(tf.cast(energy, tf.float32)))

    x = tf.fill([4, 16], -60.0 if variant == "negated" else 60.0)
    w = tf.fill([16, 16], 0.2)  # h = 192: its square fits float16, the sum does not
    for _ in range(STEPS):
        step(x, w)


for variant in VARIANTS:
    instrument.enable_dump_debug_info(
        os.path.join(LOGDIR, variant), tensor_debug_mode=MODE, circular_buffer_size=-1
    )
    train(variant)
    instrument.disable_dump_debug_info()
