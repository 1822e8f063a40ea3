"""A regression that trains in float32 and breaks in float16, for `tfdbg-tui diff`.

A linear model on unnormalised features (values around 60) is trained with a custom
loop in ``tf.function``; its loss adds a small penalty on the energy of the model's
hidden activations, ``reduce_sum(square(h))``. In float32 all is finite. With
``--dtype float16`` each square still fits (192² = 36,864 < 65,504, float16's
largest value) but their sum does not: it is +inf, and the loss and the weights
follow. The first NaN of the float16 run is far downstream; `tfdbg-tui diff` on the
two runs names the Sum on its line (docs/tutorial.md, "float32 works, float16 does
not").

Run it::

    python -m instrument.examples.float16_overflow --dump_dir /tmp/f32
    python -m instrument.examples.float16_overflow --dump_dir /tmp/f16 --dtype float16
    tfdbg-tui diff /tmp/f32 /tmp/f16
"""

from __future__ import annotations

import argparse
import sys

FEATURES = 16
BATCH = 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a small regression in float32 or float16; optionally dump it "
        "for tfdbg-tui."
    )
    parser.add_argument(
        "--dtype",
        choices=("float32", "float16"),
        default="float32",
        help="the dtype the model computes in",
    )
    parser.add_argument("--max_steps", type=int, default=5, help="training steps")
    parser.add_argument(
        "--dump_dir", default=None, help="write a tfdbg-tui dump of the run into this logdir"
    )
    parser.add_argument(
        "--dump_tensor_debug_mode", default="FULL_HEALTH", help="tensor debug mode of the dump"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import tensorflow as tf

    if args.dump_dir:
        import instrument

        instrument.enable_dump_debug_info(
            args.dump_dir, tensor_debug_mode=args.dump_tensor_debug_mode, circular_buffer_size=-1
        )
    dtype = tf.as_dtype(args.dtype)
    weights = tf.Variable(tf.fill([FEATURES, FEATURES], 0.2), name="weights")
    readout = tf.Variable(tf.fill([FEATURES, 1], 0.01), name="readout")

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            h = tf.matmul(tf.cast(x, dtype), tf.cast(weights, dtype))
            energy = tf.reduce_sum(tf.square(h), axis=1)
            prediction = tf.matmul(h, tf.cast(readout, dtype))
            error = tf.cast(prediction, tf.float32) - y
            loss = tf.reduce_mean(tf.square(error)) + 1e-6 * tf.reduce_mean(
                tf.cast(energy, tf.float32)
            )
        for variable, gradient in zip((weights, readout), tape.gradient(loss, [weights, readout])):
            variable.assign_sub(1e-7 * gradient)
        return loss

    x = tf.fill([BATCH, FEATURES], 60.0)
    y = tf.fill([BATCH, 1], 30.0)
    for step in range(args.max_steps):
        print(f"Loss at step {step}: {float(train_step(x, y)):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
