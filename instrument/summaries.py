"""Per-mode tensor summaries: which tensors a mode covers and how their rows are made.

Summaries come from TensorFlow's ``DebugNumericSummaryV2`` op, computed on the
tensor's own device with ``output_dtype=float64``. Its first column is the op's
``tensor_id`` attribute: in graphs we set it to the trace point id, so one float64
vector carries both the trace point and the summary through the trace queue. On the
host the columns docs/format.md section 5 leaves out are dropped (the tensor id, and
FULL_HEALTH's device type).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from reader import format as fmt

TENSOR_DEBUG_MODE_ENUM = fmt.TF_TENSOR_DEBUG_MODE_ENUM

# Modes whose summaries DebugNumericSummaryV2 computes.
SUMMARY_MODES = fmt.HEALTH_MODES + (fmt.SHAPE,)

_KEPT_COLUMNS = fmt.TF_SUMMARY_KEPT_COLUMNS
# Width of DebugNumericSummaryV2's output vector, per mode.
RAW_WIDTH = {mode: cols.stop for mode, cols in _KEPT_COLUMNS.items()}


def keep_columns(mode: str, raw: np.ndarray) -> np.ndarray:
    """Drop the columns the format leaves out from raw summary rows (n, RAW_WIDTH)."""
    return raw[:, _KEPT_COLUMNS[mode]]


def trace_points_of(raw: np.ndarray) -> np.ndarray:
    """The trace point ids stored in the tensor-id column of raw summary rows."""
    return raw[:, 0].astype(np.int32)


class TensorFilter:
    """Decides which tensors a run traces: the mode's dtypes and the user's filters.

    Args:
        mode: The tensor debug mode.
        op_regex: Only ops whose type matches (``re.match``) are traced.
        tensor_dtypes: Only tensors of these dtypes (a list of ``tf.DType`` or names)
            are traced, or those for which this callable, given a ``tf.DType``, is true.
    """

    def __init__(self, mode: str, op_regex: Any = None,
                 tensor_dtypes: Sequence[Any] | Callable[[Any], bool] | None = None) -> None:
        import re

        from tensorflow.python.framework import dtypes

        self.mode = mode
        self._op_regex = re.compile(op_regex) if isinstance(op_regex, str) else op_regex
        if tensor_dtypes is None or callable(tensor_dtypes):
            self._dtype_predicate = tensor_dtypes
            self._dtype_set = None
        else:
            self._dtype_predicate = None
            self._dtype_set = frozenset(dtypes.as_dtype(d).base_dtype for d in tensor_dtypes)
        self._op_cache: dict[str, bool] = {}
        self._dtype_cache: dict[Any, bool] = {}

    def op_matches(self, op_type: str) -> bool:
        """Whether the op type passes ``op_regex``."""
        if self._op_regex is None:
            return True
        match = self._op_cache.get(op_type)
        if match is None:
            match = self._op_regex.match(op_type) is not None
            self._op_cache[op_type] = match
        return match

    def dtype_traced(self, dtype: Any) -> bool:
        """Whether tensors of this ``tf.DType`` are traced in this mode and by the filters."""
        traced = self._dtype_cache.get(dtype)
        if traced is None:
            traced = self._mode_covers(dtype) and self._user_allows(dtype)
            self._dtype_cache[dtype] = traced
        return traced

    def _mode_covers(self, dtype: Any) -> bool:
        base = dtype.base_dtype
        if self.mode in fmt.HEALTH_MODES:
            return base.is_floating
        if self.mode == fmt.SHAPE:
            return base.is_floating or base.is_integer or base.is_bool
        # NO_TENSOR and FULL_TENSOR: every tensor with a value (not resource handles,
        # not variants such as datasets and tensor lists).
        return base.is_numpy_compatible and base.name not in ("resource", "variant")

    def _user_allows(self, dtype: Any) -> bool:
        if self._dtype_set is not None:
            return dtype.base_dtype in self._dtype_set
        if self._dtype_predicate is not None:
            return bool(self._dtype_predicate(dtype))
        return True


def eager_summary(mode: str, tensor: Any) -> list[float]:
    """The summary row of one eager tensor (the caller must suppress op callbacks)."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import gen_debug_ops

    raw = gen_debug_ops.debug_numeric_summary_v2(
        tensor, output_dtype=dtypes.float64,
        tensor_debug_mode=TENSOR_DEBUG_MODE_ENUM[mode]).numpy()
    return raw[_KEPT_COLUMNS[mode]].tolist()
