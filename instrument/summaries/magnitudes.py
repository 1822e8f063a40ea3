"""FULL_HEALTH's magnitude of a tensor by stock ops (`max_abs`, the largest |x| of its
elements): where it is cheap, the small tensors' taken together.

The format's ``max_abs`` (docs/format.md section 5, "Magnitudes"), which no kernel of
the FULL_HEALTH rows gives: beside ``DebugNumericSummaryV2``'s counts (a small tensor, or
any on a GPU) and inside XLA-compiled functions. A large tensor summarised by the stock
route on a CPU has none (`instrument.summaries.raw_rows`).
"""

from __future__ import annotations

from typing import Any


def largest_magnitude(tensor: Any) -> Any:
    """A float64 scalar whose absolute value is the largest |x| of ``tensor``'s elements
    (exact: every float dtype converts to float64 exactly). A scalar is its own: the
    host takes the absolute value (`instrument.summaries.format_rows`), which spares a
    reduction's ops. Not finite when an element is not, or when the tensor is empty
    (the maximum of no elements is -inf): the row then keeps no magnitude."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import math_ops

    if tensor.shape.rank == 0:
        return math_ops.cast(tensor, dtypes.float64)
    return math_ops.cast(math_ops.reduce_max(math_ops.abs(tensor)), dtypes.float64)
