"""A custom training loop whose cross-entropy takes log(0) for the first time late.

Usage: python late_nan.py LOGDIR [--steps N] [--nan-step S] [--mode MODE]
       [--buffer N] [--stop-on-alert] [--keras] [--eager] [--forever]

At step S (0-based) the batch is scaled so that the softmax underflows to an exact 0
and ``tf.math.log`` returns -inf; the loss, the gradients and then the weights turn
NaN, so every later step is full of alerts. Prints one line per step run
("step 12"), then "DONE", or, when `NonFiniteError` stops it, "STOPPED" and a JSON
object of the error's message and attributes (and then exits without closing the run).
``--forever`` keeps training after the last step and prints READY once the tail
has rotated past the first alert's pinned window and the dump on disk shows both
(for the SIGKILL test).
"""

import argparse
import json
import os
import sys
from typing import Any

import tensorflow as tf

import instrument
import reader
from reader import format as fmt

parser = argparse.ArgumentParser()
parser.add_argument("logdir")
parser.add_argument("--steps", type=int, default=450)
parser.add_argument("--nan-step", type=int, default=250)
parser.add_argument("--mode", default="FULL_HEALTH")
parser.add_argument("--buffer", type=int, default=1000)
parser.add_argument("--stop-on-alert", action="store_true")
parser.add_argument("--keras", action="store_true")
parser.add_argument("--eager", action="store_true")
parser.add_argument("--forever", action="store_true")
args = parser.parse_args()

kwargs: dict[str, Any] = {"stop_on_alert": True} if args.stop_on_alert else {}
run = instrument.enable_dump_debug_info(
    args.logdir, tensor_debug_mode=args.mode, circular_buffer_size=args.buffer, **kwargs
)
tf.random.set_seed(1)
features = tf.random.normal([16, 8])
labels = tf.one_hot(tf.range(16) % 4, 4)
poisoned = features * 1e4  # the softmax of these logits underflows to 0


def cross_entropy(logits, y):
    probs = tf.nn.softmax(logits)
    return -tf.reduce_mean(tf.reduce_sum(y * tf.math.log(probs), axis=1))  # LOG_LINE


def batch_of(step):
    return poisoned if step == args.nan_step else features


def finish(status):
    print(status, flush=True)
    sys.exit(0)


def stopped(error):
    """Print the error and die at once, without closing the dump: what it holds was
    on disk before the error was raised."""
    attributes = ("run_path", "op_type", "tensor_name", "graph_name", "step", "file", "line")
    print(
        "STOPPED "
        + json.dumps(
            {
                "message": str(error),
                "is_floating_point_error": isinstance(error, FloatingPointError),
                **{a: getattr(error, a) for a in attributes},
            }
        ),
        flush=True,
    )
    os._exit(0)


if args.keras:

    class HandWrittenLoss(tf.keras.losses.Loss):
        def call(self, y_true, y_pred):
            return cross_entropy(y_pred, y_true)

    model = tf.keras.Sequential(
        [tf.keras.Input([8]), tf.keras.layers.Dense(16, "relu"), tf.keras.layers.Dense(4)]
    )
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=HandWrittenLoss())

    class Progress(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            print(f"step {batch}", flush=True)

    xs = tf.concat([batch_of(s) for s in range(args.steps)], axis=0)
    ys = tf.concat([labels] * args.steps, axis=0)
    try:
        model.fit(xs, ys, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=[Progress()])
    except instrument.NonFiniteError as error:
        stopped(error)
    finish("DONE")

w1 = tf.Variable(tf.random.normal([8, 16], stddev=0.3))
w2 = tf.Variable(tf.random.normal([16, 4], stddev=0.3))
variables = [w1, w2]


def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = cross_entropy(logits, y)
    grads = tape.gradient(loss, variables)
    for v, g in zip(variables, grads):
        v.assign_sub(0.1 * g)
    return loss


def has_gap(run_dir):
    """Whether the numbers of the run's graph_traces segments on disk skip one."""
    numbers = sorted(
        parsed[1]
        for parsed in map(fmt.parse_segment_filename, os.listdir(run_dir))
        if parsed is not None and parsed[0] == fmt.STREAM_GRAPH_TRACES
    )
    return len(numbers) >= 2 and numbers[-1] - numbers[0] + 1 > len(numbers)


def shows_pinned_window(run_dir):
    """Whether the run on disk holds the first alert's step and one gap after it."""
    with reader.open_run(run_dir) as dump:
        return dump.steps().first_alert_step == args.nan_step and len(dump.steps().gaps) == 1


step_function = train_step if args.eager else tf.function(train_step)
try:
    step = 0
    announced = False
    while step < args.steps or args.forever:
        step_function(batch_of(step), labels)
        if step < args.steps:
            print(f"step {step}", flush=True)
        step += 1
        if args.forever and not announced and step > args.nan_step:
            # Ready once the tail has rotated past the pinned window: a segment
            # between the pinned ones and the tail has been deleted (the numbers of
            # the segments on disk are no longer contiguous), and the dump on disk
            # holds the alert. A gap alone is not enough: for a moment at each flush
            # the disk holds the segments the last flush left and their successors
            # (those in between rotated out unwritten), and under load the alert's
            # records may not have been drained yet.
            if has_gap(run) and shows_pinned_window(run):
                print("READY", flush=True)
                announced = True
except instrument.NonFiniteError as error:
    stopped(error)
finish("DONE")
