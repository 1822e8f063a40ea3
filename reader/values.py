"""FULL_TENSOR values: decoding stored values and summarising them like FULL_HEALTH."""

from __future__ import annotations

from typing import Any

import numpy as np

from reader import format as fmt

# numpy dtype name -> TF DataType enum, the inverse of `fmt.DTYPE_NAMES` where numpy
# has the type (bfloat16 is stored as float32 and reads back as float32).
_TF_DTYPE_OF_NUMPY = {name: enum for enum, name in fmt.DTYPE_NAMES.items()}
_TF_STRING = 7
_WIDTH = len(fmt.SUMMARY_COLUMNS[fmt.FULL_HEALTH])


def decode_value(value: Any) -> np.ndarray | None:
    """A stored value (docs/format.md section 6) as a numpy array.

    Numeric values come back with their dtype and shape (read-only, sharing the
    record's bytes). Non-numeric ones come back as a 1-D object array of at most
    10,000 element strings. None when the value is absent or malformed.
    """
    if not isinstance(value, dict):
        return None
    shape = value.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        return None
    dtype, data = value.get("dtype"), value.get("data")
    if dtype is None:
        elements = value.get("repr")
        if not isinstance(elements, list):
            return None
        return np.array([str(e) for e in elements], dtype=object)
    if not isinstance(dtype, str) or not isinstance(data, bytes):
        return None
    try:
        np_dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if count * np_dtype.itemsize != len(data):
            return None
        return np.frombuffer(data, dtype=np_dtype).reshape(shape)
    except (TypeError, ValueError):
        return None


def summary_row(value: Any) -> np.ndarray:
    """One FULL_HEALTH-layout row for a stored value; all zeros when undecodable.

    Columns: dtype, rank, size, neg_inf, pos_inf, nan, neg, zero, pos.
    """
    row = np.zeros(_WIDTH)
    array = decode_value(value)
    if array is None:
        return row
    shape = value.get("shape")
    row[1] = len(shape)
    row[2] = float(np.prod(shape, dtype=np.int64))
    if array.dtype == object:
        row[0] = _TF_STRING
        row[3:] = 0
        return row
    row[0] = _TF_DTYPE_OF_NUMPY.get(array.dtype.name, 0)
    if array.dtype.kind == "c":
        array = np.abs(array)
    if array.dtype.kind == "f":
        nan = np.isnan(array)
        inf = np.isinf(array)
        row[3] = np.count_nonzero(inf & (array < 0))
        row[4] = np.count_nonzero(inf) - row[3]
        row[5] = np.count_nonzero(nan)
        finite = array[~(nan | inf)]
    else:
        row[3:6] = 0
        finite = array
    row[6] = np.count_nonzero(finite < 0)
    row[7] = np.count_nonzero(finite == 0)
    row[8] = finite.size - row[6] - row[7]
    return row


def summary_rows(stored: list[Any]) -> np.ndarray:
    """FULL_HEALTH-layout rows, shape (len(stored), 9), for a list of stored values."""
    if not stored:
        return np.empty((0, _WIDTH))
    return np.stack([summary_row(v) for v in stored])
