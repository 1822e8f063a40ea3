"""FULL_HEALTH's magnitudes: the largest |x| of each traced tensor, built beside its row.

A row's last raw column (`instrument.summaries.summary_ops.RAW_WIDTH`), the format's
``max_abs`` (docs/format.md section 5, "Magnitudes"). Only where it is cheap: a scalar
is its own (the host takes its absolute value), the small tensors of a batch share one
segment maximum per dtype and device, and a large tensor on a CPU has none
(`summary_ops.tensor_summary` decides which).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from instrument.summaries.summary_ops import TensorSummary


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


def with_magnitude(summary: TensorSummary) -> Any:
    """One summary's final row (no ``check``): its row, then its magnitude if it has one."""
    magnitude = summary.magnitude
    if summary.magnitude_of is not None:
        magnitude = largest_magnitude(summary.magnitude_of)
    if magnitude is None:
        return summary.row
    from tensorflow.python.ops import array_ops

    return array_ops.concat([summary.row, array_ops.reshape(magnitude, [1])], 0)


def with_magnitudes(rows: Any, summaries: list[TensorSummary]) -> Any:
    """``rows`` with the summaries' magnitudes as a last column, when they have them."""
    if not summaries or (summaries[0].magnitude is None and summaries[0].magnitude_of is None):
        return rows
    from tensorflow.python.ops import array_ops

    return array_ops.concat([rows, array_ops.expand_dims(pooled_magnitudes(summaries), 1)], 1)


def pooled_magnitudes(summaries: list[TensorSummary]) -> Any:
    """The batch's magnitudes, float64 (n,): each ``magnitude``, and those of the small
    tensors (``magnitude_of``) taken together, per device and dtype: their elements
    flattened and joined, |x|, and one segment maximum, where a maximum each cost an
    op dispatch each (Keras' Adam traces dozens of small tensors a step)."""
    from tensorflow.python.framework import constant_op, dtypes, ops
    from tensorflow.python.ops import array_ops, array_ops_stack, math_ops

    with ops.name_scope("tfdbg_tui_magnitudes"):
        if all(s.magnitude_of is None for s in summaries):
            return array_ops_stack.stack([s.magnitude for s in summaries])
        groups: dict[tuple[str, Any], list[int]] = {}
        for i, summary in enumerate(summaries):
            if summary.magnitude_of is not None:
                tensor = summary.magnitude_of
                groups.setdefault((tensor.device or "", tensor.dtype.base_dtype), []).append(i)
        pieces, order = [], []
        single = [i for i, s in enumerate(summaries) if s.magnitude_of is None]
        if single:
            pieces.append(array_ops_stack.stack([summaries[i].magnitude for i in single]))
            order += single
        for (device, _), members in groups.items():
            tensors = [summaries[i].magnitude_of for i in members]
            with ops.device(device):
                if len(tensors) == 1:
                    pieces.append(array_ops.reshape(largest_magnitude(tensors[0]), [1]))
                else:
                    sizes = [t.shape.num_elements() for t in tensors]
                    joined = array_ops.concat([array_ops.reshape(t, [-1]) for t in tensors], 0)
                    segments = constant_op.constant(
                        np.repeat(np.arange(len(tensors), dtype=np.int32), sizes))
                    largest = math_ops.unsorted_segment_max(
                        math_ops.abs(joined), segments, len(tensors))
                    pieces.append(math_ops.cast(largest, dtypes.float64))
            order += members
        joined = pieces[0] if len(pieces) == 1 else array_ops.concat(pieces, 0)
        if order == sorted(order):
            return joined
        return array_ops.gather(joined, np.argsort(np.asarray(order, dtype=np.int32)))
