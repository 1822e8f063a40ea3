"""A small digit classifier with a numerical bug, to be found with tfdbg-tui: the
example program `tfdbg-tui demo` runs.

A two-layer perceptron written with TensorFlow's low-level API (hand-made dense
layers, a hand-written cross-entropy, a custom training loop in ``tf.function``) learns
scikit-learn's 8x8 handwritten digits, which ship inside the package: no download.

The bug: the cross-entropy takes ``tf.math.log`` of the softmax probabilities. With
raw pixel values (0..16) and the initial weights, some logits are so far apart that a
probability underflows to exactly 0, its log is -inf, the loss and gradients become
NaN after the first step, and accuracy drops to chance (about 0.1) for good.
``--fix`` clips the probabilities away from 0 before the log, and the model trains.
With small initial weights (``--init_stddev 0.01``) it trains without the fix too,
until ``--bad_batch_step S`` feeds one corrupt batch at step S: the same log(0), late
in a long run (docs/tutorial.md, "A NaN after hours").

Run it::

    python -m instrument.examples.debug_mnist --dump_dir /tmp/logdir
    tfdbg-tui /tmp/logdir
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

NUM_CLASSES = 10
NUM_PIXELS = 64  # 8x8 images
TEST_SIZE = 360
# `--bad_batch_step`: how much too bright the corrupt batch's pixels are.
BAD_BATCH_SCALE = 1000.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a digit classifier that runs into log(0); optionally dump it "
        "for tfdbg-tui."
    )
    parser.add_argument("--max_steps", type=int, default=10, help="training steps")
    parser.add_argument("--train_batch_size", type=int, default=100)
    parser.add_argument("--hidden_size", type=int, default=100, help="units of the hidden layer")
    parser.add_argument("--learning_rate", type=float, default=0.05)
    parser.add_argument(
        "--init_stddev", type=float, default=0.1, help="stddev of the initial weights"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--fix",
        action="store_true",
        help="clip the probabilities before the log: the model then trains",
    )
    parser.add_argument(
        "--bad_batch_step",
        type=int,
        default=-1,
        help="at this step, train on one corrupt batch (pixels 1000 times "
        "too bright), as a data glitch would (default: never)",
    )
    parser.add_argument(
        "--dump_dir", default="", help="write a tfdbg-tui dump into this logdir (off when empty)"
    )
    parser.add_argument(
        "--dump_tensor_debug_mode",
        default="FULL_HEALTH",
        help="NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH, SHAPE, "
        "FULL_TENSOR, or FULL_STATS: FULL_HEALTH's counts plus min, "
        "max, mean and std of the finite elements",
    )
    parser.add_argument(
        "--dump_circular_buffer_size",
        type=int,
        default=-1,
        help="keep only the latest N executions and traces (N <= 0: all), "
        "and the first NaN's window",
    )
    parser.add_argument(
        "--dump_stop_on_alert",
        action="store_true",
        help="stop at the first NaN or infinity (instrument.NonFiniteError)",
    )
    return parser.parse_args(argv)


def load_digits(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test splits: raw pixel values (float32) and one-hot labels."""
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    images = digits.data.astype(np.float32)  # deliberately not scaled: values 0..16
    labels = np.eye(NUM_CLASSES, dtype=np.float32)[digits.target]
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:TEST_SIZE], order[TEST_SIZE:]
    return images[train], labels[train], images[test], labels[test]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    train_x, train_y, test_x, test_y = load_digits(args.seed)

    import tensorflow as tf

    if args.dump_dir:
        import instrument

        instrument.enable_dump_debug_info(
            args.dump_dir,
            tensor_debug_mode=args.dump_tensor_debug_mode,
            circular_buffer_size=args.dump_circular_buffer_size,
            stop_on_alert=args.dump_stop_on_alert,
        )

    tf.random.set_seed(args.seed)

    class DenseLayer(tf.Module):
        """y = activation(x @ w + b), with weights drawn from a normal distribution."""

        def __init__(self, fan_in: int, fan_out: int, activation=None, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(
                tf.random.normal([fan_in, fan_out], stddev=args.init_stddev), name="weights"
            )
            self.b = tf.Variable(tf.zeros([fan_out]), name="biases")
            self.activation = activation

        def __call__(self, x):
            y = tf.matmul(x, self.w) + self.b
            return self.activation(y) if self.activation is not None else y

    hidden = DenseLayer(NUM_PIXELS, args.hidden_size, tf.nn.relu, name="hidden")
    logits_layer = DenseLayer(args.hidden_size, NUM_CLASSES, name="logits")
    variables = hidden.trainable_variables + logits_layer.trainable_variables

    def model(x):
        return logits_layer(hidden(x))

    def cross_entropy(probs, labels):
        if args.fix:
            probs = tf.clip_by_value(probs, 1e-8, 1.0)
        # The bug: probs can be exactly 0, and log(0) is -inf.
        log_probs = tf.math.log(probs)
        return -tf.reduce_mean(tf.reduce_sum(labels * log_probs, axis=1))

    @tf.function
    def train_step(x, labels):
        with tf.GradientTape() as tape:
            probs = tf.nn.softmax(model(x))
            loss = cross_entropy(probs, labels)
        gradients = tape.gradient(loss, variables)
        for variable, gradient in zip(variables, gradients):
            variable.assign_sub(args.learning_rate * gradient)

        return loss

    @tf.function
    def accuracy(x, labels):
        correct = tf.equal(tf.argmax(model(x), axis=1), tf.argmax(labels, axis=1))
        return tf.reduce_mean(tf.cast(correct, tf.float32))

    test_x_t, test_y_t = tf.constant(test_x), tf.constant(test_y)
    batches = len(train_x) // args.train_batch_size
    for step in range(args.max_steps):
        start = (step % batches) * args.train_batch_size
        end = start + args.train_batch_size
        batch = train_x[start:end] * (BAD_BATCH_SCALE if step == args.bad_batch_step else 1)
        train_step(tf.constant(batch), tf.constant(train_y[start:end]))
        print(f"Accuracy at step {step}: {float(accuracy(test_x_t, test_y_t)):.4f}", flush=True)

    if args.dump_dir:
        instrument.disable_dump_debug_info()
    return 0


if __name__ == "__main__":
    sys.exit(main())
