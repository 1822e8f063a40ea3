"""TensorProto contents as numpy arrays and as this reader's stored values, without
TensorFlow; and TensorFlow's summary vectors as rows of `reader.format.SUMMARY_COLUMNS`.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import ValueMap
from reader.limits import MAX_INFLATED_VALUE_BYTES
from reader.values import NUMPY_DTYPES

_FLOAT64, _BFLOAT16, _FLOAT16, _STRING, _BOOL = 2, 14, 19, 7, 10
# A string tensor's value keeps at most this many elements (as our format does).
MAX_STRING_ELEMENTS = 10_000
# The typed field that holds a tensor's elements when `tensor_content` is empty, per
# numpy kind and item size (TensorFlow's tensor.proto).
_INT32_FIELDS = {np.dtype(t) for t in ("int32", "int16", "int8", "uint8", "uint16")}


def shape_of(proto: Any) -> list[int] | None:
    """The dimensions of a TensorProto; None for an unknown rank or dimension."""
    shape = proto.tensor_shape
    if shape.unknown_rank:
        return None
    dims = [int(d.size) for d in shape.dim]
    return None if any(d < 0 for d in dims) else dims


def to_array(proto: Any) -> np.ndarray | None:
    """A TensorProto's elements as an array (bfloat16 as float32, strings as a 1-D
    object array of at most `MAX_STRING_ELEMENTS`); None when it holds no value this
    reader can read (an unknown dtype, a size that does not match the shape)."""
    shape = shape_of(proto)
    if shape is None:
        return None
    count = math.prod(shape)
    dtype_enum = int(proto.dtype)
    if dtype_enum == _STRING:
        return np.array(
            [s.decode("utf-8", "replace") for s in list(proto.string_val)[:MAX_STRING_ELEMENTS]],
            dtype=object,
        )
    if dtype_enum == _BFLOAT16:
        bits = (
            np.frombuffer(proto.tensor_content, dtype="<u2")
            if proto.tensor_content
            else np.array(proto.half_val, dtype=np.uint16)
        )
        flat = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    else:
        dtype = NUMPY_DTYPES.get(dtype_enum)
        if dtype is None:
            return None
        if proto.tensor_content:
            flat = np.frombuffer(proto.tensor_content, dtype=dtype.newbyteorder("<"))
        else:
            flat = _typed_values(proto, dtype_enum, dtype)
    if flat.size == count:
        return flat.reshape(shape)
    if count * flat.dtype.itemsize > MAX_INFLATED_VALUE_BYTES:
        return None  # more than a few stored elements may stand for
    if count and flat.size and flat.size < count:
        # TensorFlow stores a tensor whose trailing elements repeat its last value
        # with those elements left out.
        return np.concatenate(
            [flat, np.full(count - flat.size, flat[-1], dtype=flat.dtype)]
        ).reshape(shape)
    return np.zeros(shape, dtype=flat.dtype) if count and not flat.size else None


def _typed_values(proto: Any, dtype_enum: int, dtype: np.dtype) -> np.ndarray:
    if dtype_enum == _FLOAT16:
        return np.array(proto.half_val, dtype=np.uint16).view(np.float16)
    if dtype_enum == _BOOL:
        return np.array(proto.bool_val, dtype=bool)
    if dtype in _INT32_FIELDS:
        return np.array(proto.int_val).astype(dtype)
    if dtype.kind == "c":
        parts = proto.scomplex_val if dtype.itemsize == 8 else proto.dcomplex_val
        pairs = np.array(parts, dtype=np.float32 if dtype.itemsize == 8 else np.float64)
        return pairs[0::2] + 1j * pairs[1::2]
    source = {
        "float32": proto.float_val,
        "float64": proto.double_val,
        "int64": proto.int64_val,
        "uint32": proto.uint32_val,
        "uint64": proto.uint64_val,
    }.get(dtype.name, ())
    return np.array(source, dtype=dtype)


def stored_value(proto: Any) -> dict[str, Any] | None:
    """A TensorProto as a stored value of our format (docs/format.md section 6), so
    FULL_TENSOR values of both formats decode and summarise alike."""
    array = to_array(proto)
    if array is None:
        return None
    if array.dtype == object:
        return {
            ValueMap.DTYPE: None,
            ValueMap.DATA: None,
            ValueMap.SHAPE: list(array.shape),
            ValueMap.REPR: array.tolist(),
        }
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return {
        ValueMap.DTYPE: little.dtype.str,
        ValueMap.SHAPE: list(array.shape),
        ValueMap.DATA: np.ascontiguousarray(little).tobytes(),
    }


# DebugNumericSummaryV2's float64 vector as TensorFlow stores it (`tensor_content`),
# per width: read with `struct`, cheaper than numpy for one short row.
_VECTORS = {
    kept.stop: struct.Struct(f"<{kept.stop}d") for kept in fmt.TF_SUMMARY_KEPT_COLUMNS.values()
}


def summary_row(mode: str, proto: Any) -> list[float] | None:
    """Our summary row (`SUMMARY_COLUMNS[mode]`) from DebugNumericSummaryV2's vector in
    a TensorProto; None for an empty proto (an output the mode does not summarise) or
    one of the wrong width."""
    kept = fmt.TF_SUMMARY_KEPT_COLUMNS.get(mode)
    if kept is None:
        return None
    content = proto.tensor_content
    vector = _VECTORS[kept.stop]
    if len(content) == vector.size and proto.dtype == _FLOAT64:
        return list(vector.unpack(content)[kept])
    if not (content or proto.double_val or proto.float_val):
        return None
    array = to_array(proto)
    if array is None or array.ndim != 1 or array.size != kept.stop:
        return None
    return array[kept].astype(np.float64).tolist()
