"""The norms the watch tier checks and records, built in the step's graph: a tensor's
L2 norm that a NaN or an infinity anywhere makes non-finite, read once (`checked_norms`),
without overflow where the values are finite, and the replicas' root mean square."""

from __future__ import annotations

from typing import Any


def value_of(variable: Any) -> Any:
    """A variable's value as a tensor (Keras' variables and TensorFlow's)."""
    import tensorflow as tf

    return tf.convert_to_tensor(variable)


def checked_norms(tensors: list[Any]) -> tuple[Any, Any]:
    """In the graph: each tensor's L2 norm (float32), and the index of the first tensor
    that holds a NaN or an infinity (-1 when none does).

    The common step pays one ``L2Loss`` per tensor (a fused square-and-sum that reads
    the tensor once and makes no temporary) and one ``is_finite`` of their total. Only
    when that total is not finite (a NaN, an infinity, or finite values whose squares
    overflow float32, from a norm of about 2.6e19) is each tensor checked and its norm
    taken again scaled by its largest magnitude, so that a finite gradient of norm
    1e20 reads 1e20 in the row, not infinity, and is not a hit. Every op counts: the
    watched step's cost on a small model is mostly the executor's per-op overhead
    (docs/performance.md, the watch tier)."""
    import tensorflow as tf

    values = [t if t.dtype == tf.float32 else tf.cast(t, tf.float32) for t in tensors]
    halves = tf.stack([tf.nn.l2_loss(t) for t in values])  # each sum(t**2) / 2

    def each() -> Any:
        finite = tf.stack([tf.reduce_all(tf.math.is_finite(t)) for t in values])
        norms = tf.stack([scaled_norm(t) for t in values])
        first_bad = tf.argmin(tf.cast(finite, tf.int32), output_type=tf.int64)
        return (
            tf.where(finite, norms, norms_of_halves(halves)),
            tf.where(tf.reduce_all(finite), tf.constant(-1, tf.int64), first_bad),
        )

    def all_fine() -> Any:
        return norms_of_halves(halves), tf.constant(-1, tf.int64)

    return tf.cond(tf.math.is_finite(tf.reduce_sum(halves)), all_fine, each)


def norms_of_halves(halves: Any) -> Any:
    """L2 norms from ``L2Loss``'s halves of the sums of squares (as large as they are
    finite: ``sqrt(2 * h)`` would overflow first)."""
    import tensorflow as tf

    return tf.sqrt(halves) * tf.constant(2.0**0.5, tf.float32)


def scaled_norm(tensor: Any) -> Any:
    """A finite float32 tensor's L2 norm without overflow: its largest magnitude times
    the norm of the tensor divided by it (zero for an empty or all-zero tensor)."""
    import tensorflow as tf

    largest = tf.maximum(tf.reduce_max(tf.abs(tensor)), 0.0)  # empty: -inf, so 0
    scale = tf.where(largest > 0, largest, tf.ones_like(largest))
    return largest * tf.sqrt(tf.reduce_sum(tf.square(tensor / scale)))


def root_mean_square(norms: Any) -> Any:
    """Per column of ``norms`` (one row per replica): the root mean square over the
    rows, scaled by the column's largest value so finite norms do not overflow."""
    import tensorflow as tf

    largest = tf.reduce_max(norms, axis=0)
    usable = tf.logical_and(tf.math.is_finite(largest), largest > 0)
    scale = tf.where(usable, largest, tf.ones_like(largest))
    scaled = scale * tf.sqrt(tf.reduce_mean(tf.square(norms / scale), axis=0))
    plain = tf.sqrt(tf.reduce_mean(tf.square(norms), axis=0))
    return tf.where(usable, scaled, plain)
