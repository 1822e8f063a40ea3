"""FULL_TENSOR values: decoding stored values and summarising them like FULL_HEALTH."""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import ValueMap
from reader.errors import DamagedDumpError
from reader.limits import inflation_problem

# TF DataType enum -> numpy dtype, for the `fmt.DTYPE_NAMES` numpy has (not bfloat16,
# which is stored as float32 and reads back as float32, nor strings or quantized types).
NUMPY_DTYPES = {
    enum: np.dtype(name)
    for enum, name in fmt.DTYPE_NAMES.items()
    if name in np.sctypeDict and name != "string"
}
# Its inverse (a dict lookup by dtype is much cheaper than by `dtype.name`).
_TF_DTYPE_OF_DTYPE = {dtype: enum for enum, dtype in NUMPY_DTYPES.items()}
_TF_STRING = 7
_WIDTH = len(fmt.ROW_COLUMNS[fmt.FULL_HEALTH])


def decode_value(value: Any) -> np.ndarray | None:
    """A stored value (docs/format.md section 6) as a numpy array.

    Numeric values come back with their dtype and shape, read-only (sharing the
    record's bytes when stored raw). Non-numeric ones come back as a 1-D object array
    of at most 10,000 element strings. None when the value is absent or malformed.

    Raises:
        DamagedDumpError: The value names a codec (its ``data`` is compressed) and
            cannot be decoded with it: corrupt or truncated compressed data, a size
            other than the shape's or beyond `limits.MAX_INFLATED_VALUE_BYTES`, or a
            codec this reader does not know.
    """
    if not isinstance(value, dict):
        return None
    shape = value.get(ValueMap.SHAPE)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        return None
    dtype, data = value.get(ValueMap.DTYPE), value.get(ValueMap.DATA)
    if dtype is None:
        elements = value.get(ValueMap.REPR)
        if not isinstance(elements, list):
            return None
        return np.array([str(e) for e in elements], dtype=object)
    codec = value.get(ValueMap.CODEC)
    if codec is not None and codec not in fmt.VALUE_CODECS:
        raise DamagedDumpError(
            f"a tensor value stored with codec {codec!r}, which this "
            f"reader does not know (it knows {', '.join(fmt.VALUE_CODECS)})"
        )
    if not isinstance(dtype, str) or not isinstance(data, bytes):
        if codec is not None:
            raise DamagedDumpError(f"a {codec}-compressed tensor value without dtype or data")
        return None
    try:
        np_dtype = np.dtype(dtype)
        count = math.prod(shape)
    except (TypeError, ValueError):
        if codec is not None:
            raise DamagedDumpError(
                f"a {codec}-compressed tensor value of unknown dtype {dtype!r}"
            ) from None
        return None
    size = count * np_dtype.itemsize
    if codec is not None:
        problem = inflation_problem(size, len(data))
        if problem is not None:
            raise DamagedDumpError(f"a {codec}-compressed tensor value {problem}")
        data = _decompress(codec, data, size, np_dtype.itemsize)
    if size != len(data):
        return None
    try:
        return np.frombuffer(data, dtype=np_dtype).reshape(shape)
    except (TypeError, ValueError):
        return None


def _decompress(codec: str, data: bytes, size: int, itemsize: int) -> bytes:
    """The raw elements of a compressed value, exactly ``size`` bytes."""
    decompressor = zlib.decompressobj()
    try:
        # At most one byte more than expected: enough to tell a value that is too long,
        # never a decompression bomb.
        raw = decompressor.decompress(data, size + 1)
    except zlib.error as error:
        raise DamagedDumpError(f"a {codec}-compressed tensor value is corrupt ({error})") from None
    if not decompressor.eof or decompressor.unused_data or len(raw) != size:
        raise DamagedDumpError(
            f"a {codec}-compressed tensor value does not hold the {size} bytes its dtype and "
            "shape call for" + ("" if decompressor.eof else " (its data is cut short)")
        )
    if codec == fmt.CODEC_SHUFFLE_ZLIB and itemsize > 1:
        # Byte j of element i was stored at j * count + i.
        raw = np.frombuffer(raw, dtype=np.uint8).reshape(itemsize, -1).T.tobytes()
    return raw


def summary_row(value: Any, problems: list[str] | None = None) -> np.ndarray:
    """One FULL_HEALTH-layout row for a stored value; zero counts (and no magnitude)
    when undecodable.

    Columns: dtype, rank, size, neg_inf, pos_inf, nan, neg, zero, pos, max_abs (NaN
    unless every element is finite, `fmt.MAGNITUDE_COLUMN`). Never raises:
    the index computes these rows while reading, and a damaged value must not stop it
    (asking for the value itself raises); why it is damaged is added to ``problems``.
    """
    row = np.zeros(_WIDTH)
    row[9] = np.nan
    try:
        array = decode_value(value)
    except DamagedDumpError as error:
        if problems is not None:
            problems.append(str(error))
        return row
    if array is None:
        return row
    shape = value.get(ValueMap.SHAPE)
    row[1] = len(shape)
    row[2] = size = math.prod(shape)
    if array.dtype == object:
        row[0] = _TF_STRING
        return row
    row[0] = _TF_DTYPE_OF_DTYPE.get(array.dtype.newbyteorder("="), 0)
    if array.dtype.kind == "c":
        array = np.abs(array)
    finite = array
    all_finite = True
    if array.dtype.kind == "f":
        finite_mask = np.isfinite(array)
        if np.count_nonzero(finite_mask) < size:  # rare: count what is not finite
            row[3] = np.count_nonzero(array == -np.inf)
            row[4] = np.count_nonzero(array == np.inf)
            row[5] = size - np.count_nonzero(finite_mask) - row[3] - row[4]
            finite = array[finite_mask]
            all_finite = False
    row[6] = np.count_nonzero(finite < 0)
    row[7] = np.count_nonzero(finite == 0)
    row[8] = finite.size - row[6] - row[7]
    if all_finite and size and array.dtype.kind in "fiub":
        row[9] = max(abs(float(array.max())), abs(float(array.min())))
    return row


def summary_rows(stored: list[Any], problems: list[str] | None = None) -> np.ndarray:
    """FULL_HEALTH-layout rows, shape (len(stored), 10), for a list of stored values
    (`summary_row`)."""
    if not stored:
        return np.empty((0, _WIDTH))
    return np.stack([summary_row(v, problems) for v in stored])
