"""Per-mode tensor summaries: which tensors a mode covers, and raw rows to the format's
columns on the host.

The rows are computed on the tensor's own device (instrument/summaries/summary_ops.py) as raw
float64 rows whose first column is the trace point; `format_rows` turns a batch of them
into the columns of docs/format.md section 5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from instrument.summaries.host_rows import host_row
from instrument.summaries.raw_rows import FORM_SIGN_SUMS, FORM_V1, RAW_WIDTH, shape_row
from reader import format as fmt

__all__ = [
    "RAW_WIDTH",
    "SUMMARY_MODES",
    "TensorFilter",
    "eager_summary",
    "format_rows",
    "trace_points_of",
]

# Modes whose traces carry a summary row.
SUMMARY_MODES = fmt.HEALTH_MODES + (fmt.SHAPE,)

# Raw columns that are already the format's, per mode whose rows take one form: those
# of DebugNumericSummaryV2 that the format keeps.
_PLAIN_COLUMNS = {
    mode: columns
    for mode, columns in fmt.TF_SUMMARY_KEPT_COLUMNS.items()
    if mode != fmt.FULL_HEALTH
}
# FORM_V1 columns (after the trace point and the form) in FULL_STATS order.
_V1_ORDER = [12, 13, 1, 3, 7, 2, 4, 5, 6, 8, 9, 10, 11]


def format_rows(mode: str, raw: np.ndarray) -> np.ndarray:
    """The rows (`fmt.ROW_COLUMNS`) of raw rows (n, RAW_WIDTH[mode]) from the device."""
    if mode in _PLAIN_COLUMNS:
        return raw[:, _PLAIN_COLUMNS[mode]]
    width = len(fmt.ROW_COLUMNS[mode])
    out = np.empty((raw.shape[0], width), dtype=np.float64)
    out[:, :9] = raw[:, 2:11]
    sign_sums = raw[:, 1] == FORM_SIGN_SUMS
    if sign_sums.any():
        s, a, size = raw[sign_sums, 8], raw[sign_sums, 9], raw[sign_sums, 4]
        out[sign_sums, 6:9] = np.stack([(a - s) / 2, size - a, (a + s) / 2], axis=1)
    if mode == fmt.FULL_HEALTH:
        # The magnitude: raw column 11, or FORM_V1's min and max (`raw_rows`), kept
        # only for a finite tensor with elements.
        with np.errstate(invalid="ignore"):
            magnitude = np.abs(raw[:, 11])
            v1 = raw[:, 1] == FORM_V1
            if v1.any():
                out[v1, :9] = raw[v1][:, [2 + c for c in _V1_ORDER[:9]]]
                magnitude[v1] = np.maximum(np.abs(raw[v1, 10]), magnitude[v1])
            keep = (
                (out[:, 3] == 0)
                & (out[:, 4] == 0)
                & (out[:, 5] == 0)
                & (out[:, 2] > 0)
                & np.isfinite(magnitude)
            )
        out[:, 9] = np.where(keep, magnitude, np.nan)
        return out
    # FULL_STATS: min, max, mean, then std from m2 (or from the variance, FORM_V1).
    out[:, 9:12] = raw[:, 11:14]
    finite = out[:, 6] + out[:, 7] + out[:, 8]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:, 12] = np.sqrt(raw[:, 14] / finite)
    v1 = raw[:, 1] == FORM_V1
    if v1.any():
        out[v1] = raw[v1][:, [2 + c for c in _V1_ORDER]]
        out[v1, 12] = np.sqrt(out[v1, 12])
        finite[v1] = out[v1, 6] + out[v1, 7] + out[v1, 8]
    out[finite == 0, 9:13] = np.nan
    return out


def trace_points_of(raw: np.ndarray) -> np.ndarray:
    """The trace point ids stored in column 0 of raw summary rows."""
    return raw[:, 0].astype(np.int32)


class TensorFilter:
    """Decides which tensors a run traces: the mode's dtypes and the user's filters.

    Args:
        mode: The tensor debug mode.
        op_regex: Only ops whose type matches (``re.match``) are traced.
        tensor_dtypes: Only tensors of these dtypes (a list of ``tf.DType`` or names)
            are traced, or those for which this callable, given a ``tf.DType``, is true.
        op_names: Only graph ops of these names are traced, and no eager op: the
            values replay of a watched step (instrument/watch/replay.py) keeps its root
            cause's op and the ops of its inputs.
    """

    def __init__(
        self,
        mode: str,
        op_regex: Any = None,
        tensor_dtypes: Sequence[Any] | Callable[[Any], bool] | None = None,
        op_names: frozenset[str] | None = None,
    ) -> None:
        import re

        from tensorflow.python.framework import dtypes

        self.mode = mode
        self.op_names = op_names
        self._op_regex = re.compile(op_regex) if isinstance(op_regex, str) else op_regex
        if tensor_dtypes is None or callable(tensor_dtypes):
            self._dtype_predicate = tensor_dtypes
            self._dtype_set = None
        else:
            self._dtype_predicate = None
            self._dtype_set = frozenset(dtypes.as_dtype(d).base_dtype for d in tensor_dtypes)
        self._op_cache: dict[str, bool] = {}
        self._dtype_cache: dict[Any, bool] = {}

    def op_matches(self, op_type: str, op_name: str | None = None) -> bool:
        """Whether the op passes ``op_regex`` (by type) and ``op_names`` (by name; an
        eager op, which has none, passes no names)."""
        if self.op_names is not None and op_name not in self.op_names:
            return False
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
    """The summary row of one eager tensor (the caller must suppress op callbacks).

    An eager tensor has its value and shape at hand: SHAPE rows come from its shape,
    and a CPU tensor's health row from its buffer by numpy (`host_row`), where the
    graph route's ops would cost an eager dispatch each (~0.1 ms here, several per
    tensor). Tensors on other devices are summarised there by the fused kernels.
    """
    dtype = float(tensor.dtype.as_datatype_enum)
    if mode == fmt.SHAPE:
        return shape_row(dtype, tensor.shape.as_list())
    if "CPU" in (tensor.device or "").upper():
        return host_row(mode, dtype, tensor.numpy())
    from instrument.summaries.summary_ops import summary_row

    raw = summary_row(mode, tensor, 0).numpy()
    return format_rows(mode, raw[np.newaxis])[0].tolist()
