"""Summary rows computed by numpy on the host, for eager outputs and graph constants,
counting exactly as TensorFlow's kernels do.

For values already at hand, where the kernels would cost an op (an eager dispatch, or a
graph op every step): the outputs of eager ops on a CPU (`instrument.summaries.eager_summary`)
and the values of graph constants, whose rows are known when the graph is built
(`instrument.summaries.summary_ops.tensor_summary`).
"""

from __future__ import annotations

import math

import numpy as np

from reader import format as fmt

# Modes whose rows count no signs: a scalar's row needs no dtype's smallest normal.
_NO_SIGN_MODES = (fmt.CURT_HEALTH, fmt.CONCISE_HEALTH)


def host_row(mode: str, dtype: float, value: np.ndarray) -> list[float]:
    """A health mode's row of a value on the host, exactly as the device routes count.

    As TensorFlow's CPU kernels do (denormals are zero), float32 and float64
    subnormals count, and sum, as zero; float16 and bfloat16 are widened to float32
    first (exact), where float16's subnormals are normal numbers and count by sign.
    """
    if value.ndim == 0 and mode in _NO_SIGN_MODES:
        # One number (a loss, say): plain Python answers for a few numpy calls.
        number = float(value)  # exact for every float dtype
        if mode == fmt.CURT_HEALTH:
            return [0.0 if math.isfinite(number) else 1.0]
        return [1.0, float(number == -math.inf), float(number == math.inf), float(number != number)]
    x = value.reshape(-1)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float32)
    size = x.size
    finite = np.isfinite(x)
    all_finite = bool(finite.all())
    if mode == fmt.CURT_HEALTH:
        return [0.0 if all_finite else 1.0]
    if all_finite:
        nan = pos_inf = neg_inf = 0
    else:
        nan = int(np.count_nonzero(np.isnan(x)))
        pos_inf = int(np.count_nonzero(x == np.inf))
        neg_inf = size - nan - pos_inf - int(np.count_nonzero(finite))
        x = x[finite]
    if mode == fmt.CONCISE_HEALTH:
        return [float(size), float(neg_inf), float(pos_inf), float(nan)]
    tiny = np.finfo(x.dtype).tiny
    neg = int(np.count_nonzero(x <= -tiny))
    pos = int(np.count_nonzero(x >= tiny))
    row = [
        dtype,
        float(value.ndim),
        float(size),
        float(neg_inf),
        float(pos_inf),
        float(nan),
        float(neg),
        float(x.size - neg - pos),
        float(pos),
    ]
    if mode == fmt.FULL_HEALTH:
        # Its magnitude (`fmt.MAGNITUDE_COLUMN`), subnormals as zero like the counts.
        largest = float(np.abs(x).max()) if all_finite and x.size else math.nan
        return row + [0.0 if largest < tiny else largest]
    if not x.size:
        return row + [float("nan")] * len(fmt.STAT_COLUMNS)
    x64 = x.astype(np.float64)
    if x.size - neg - pos != np.count_nonzero(x == 0):  # subnormals: they are zero
        x64[np.abs(x64) < tiny] = 0.0
    mean = float(x64.sum()) / x.size
    std = float(np.sqrt(np.square(x64 - mean).sum() / x.size))
    return row + [float(x64.min()), float(x64.max()), mean, std]
