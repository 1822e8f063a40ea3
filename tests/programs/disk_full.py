"""A FULL_HEALTH custom training loop whose dump outgrows its disk.

Usage: python disk_full.py LOGDIR STEPS [FAKE_DISK_BYTES]. With FAKE_DISK_BYTES the
dump's writes (``os.writev``, which only the writer calls) fail with ENOSPC once that
many bytes are written, for platforms where the test cannot mount a tiny tmpfs.
Prints its own progress on stdout; the dump's single warning goes to stderr.
"""

import errno
import os
import sys

import tensorflow as tf

import instrument

logdir, steps = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    budget = [int(sys.argv[3])]
    real_writev = os.writev

    def writev(fd, buffers):
        size = sum(len(b) for b in buffers)
        if size > budget[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        budget[0] -= size
        return real_writev(fd, buffers)

    os.writev = writev

run = instrument.enable_dump_debug_info(
    logdir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
)
print("RUN", run, flush=True)
tf.random.set_seed(0)
w1 = tf.Variable(tf.random.normal([16, 32], stddev=0.1))
w2 = tf.Variable(tf.random.normal([32, 4], stddev=0.1))
optimizer = tf.keras.optimizers.SGD(0.05)
x = tf.random.normal([64, 16])
y = tf.one_hot(tf.argmax(tf.matmul(x, tf.random.normal([16, 4])), axis=1), 4)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(tf.matmul(x, w1))
        logits = tf.matmul(hidden, w2)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(y, logits))
    grads = tape.gradient(loss, [w1, w2])
    optimizer.apply_gradients(zip(grads, [w1, w2]))
    return loss


for step in range(steps):
    loss = train_step(x, y)
    if step % 500 == 0:
        print(f"step {step} loss {float(loss):.4f}", flush=True)
print(f"DONE {steps} steps, loss {float(loss):.4f}", flush=True)
