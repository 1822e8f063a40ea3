"""FULL_TENSOR values on their way from a graph to the host: one packed batch per enqueue.

A batch of traced tensors travels through the trace queue as one queue element of
flat components (`COMPONENT_DTYPES`): the tensors' raw bytes concatenated into one
``uint8`` vector (``tf.bitcast``, which copies nothing, then a single concat), their
shapes, dtypes and byte sizes, and their trace points. Tensors of the dtypes
``tf.bitcast`` does not take (strings, 8-bit floats, quantized types) travel as a
serialized ``TensorProto`` instead. On the host, `unpack` cuts the bytes back into
values with numpy views: per tensor there is no protobuf parsing and no Python-level
conversion, which is what made the drain, not the graph, the bottleneck of FULL_TENSOR.

Values are little-endian in the dump; the bytes are the host's, so a big-endian host
swaps them (numpy does, in `tensor_value_record`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from instrument.dump.flight_recorder import all_finite, values_alert
from instrument.dump.value_encoding import tensor_value_record
from instrument.tf_internals.graph_edits import defer_variable_writes
from reader.values import NUMPY_DTYPES

# TF DataType enum -> numpy dtype of the raw bytes, for every dtype `pack` bitcasts:
# those numpy has, and bfloat16 as its 16 bits (widened on the host). bool travels as
# uint8 (the same bytes).
_NUMPY_DTYPES = {**NUMPY_DTYPES, 14: np.dtype(np.uint16)}
_BFLOAT16 = 14
_BOOL = 10
_LITTLE_ENDIAN = sys.byteorder == "little"

# The queue element: trace points, dtypes (TF enum), ranks, dims (all shapes, one after
# the other), byte sizes, raw bytes, serialized protos ("" for bitcast tensors).
COMPONENT_NAMES = ("tps", "dtypes", "ranks", "dims", "sizes", "data", "protos")


def component_dtypes() -> list[Any]:
    """The TF dtypes of the components, in `COMPONENT_NAMES` order."""
    from tensorflow.python.framework import dtypes

    return [dtypes.int32, dtypes.int32, dtypes.int32, dtypes.int64, dtypes.int64,
            dtypes.uint8, dtypes.string]


def pack(tensors: list[Any], trace_points: list[int]) -> list[Any]:
    """Build, in the current graph, the components of one batch of traced tensors.

    Shapes known while the graph is built become constants: at run time a tensor of
    static shape costs a bitcast and a reshape (neither copies) and its share of the
    one concat.
    """
    from tensorflow.python.framework import constant_op, dtypes
    from tensorflow.python.ops import array_ops, gen_parsing_ops, math_ops

    ranks, dims, sizes, data, protos = [], [], [], [], []
    for tensor in tensors:
        enum = tensor.dtype.as_datatype_enum
        static = tensor.shape
        if static.rank is not None:
            ranks.append(static.rank)
        else:
            ranks.append(array_ops.rank(tensor))
        if static.is_fully_defined():
            dims.append(constant_op.constant(static.as_list(), dtype=dtypes.int64))
        else:
            dims.append(array_ops.shape(tensor, out_type=dtypes.int64))
        if enum in _NUMPY_DTYPES:
            source = math_ops.cast(tensor, dtypes.uint8) if enum == _BOOL else tensor
            data.append(array_ops.reshape(array_ops.bitcast(source, dtypes.uint8), [-1]))
            protos.append("")
            if static.is_fully_defined():
                sizes.append(static.num_elements() * _NUMPY_DTYPES[enum].itemsize)
            else:
                sizes.append(array_ops.size(data[-1], out_type=dtypes.int64))
        else:
            protos.append(gen_parsing_ops.serialize_tensor(tensor, name="tfdbg_tui_value"))
            sizes.append(0)
    values = (array_ops.concat(data, 0, name="tfdbg_tui_values") if data
              else constant_op.constant([], dtype=dtypes.uint8))
    if values.op.type == "ConcatV2":
        # The concat copies the values out: variables read into it are updated after
        # it, in place, rather than copied (graph_edits.defer_variable_writes).
        defer_variable_writes(values.op, tensors)
    return [
        constant_op.constant(trace_points, dtype=dtypes.int32, name="tfdbg_tui_tps"),
        constant_op.constant([t.dtype.as_datatype_enum for t in tensors], dtype=dtypes.int32),
        _stack(ranks, dtypes.int32),
        array_ops.concat(dims, 0) if len(dims) > 1 else dims[0],
        _stack(sizes, dtypes.int64),
        values,
        _stack(protos, dtypes.string),
    ]


def _stack(items: list[Any], dtype: Any) -> Any:
    """A vector of Python values and scalar tensors: one constant when all are values."""
    from tensorflow.python.framework import constant_op, tensor_util
    from tensorflow.python.ops import array_ops_stack, math_ops

    if not any(tensor_util.is_tf_type(item) for item in items):
        return constant_op.constant(items, dtype=dtype)
    return array_ops_stack.stack(
        [math_ops.cast(item, dtype) if tensor_util.is_tf_type(item) else item
         for item in items])


def unpack(components: list[np.ndarray]) -> tuple[np.ndarray, list[Any]]:
    """The trace points and raw value records of one drained batch.

    The records' data are views of the components' memory (`tensor_value_record` with
    ``copy=False``).

    Args:
        components: The batch's components as numpy arrays, in `COMPONENT_NAMES` order.
    """
    tps, enums, ranks, dims, sizes, data, protos = components
    values = []
    all_dims = dims.tolist()
    raw_bytes = data.data.cast("B") if data.size else memoryview(b"")
    dim_at = byte_at = 0
    for enum, rank, size, proto in zip(enums.tolist(), ranks.tolist(), sizes.tolist(),
                                       protos.tolist()):
        shape = all_dims[dim_at:dim_at + rank]
        dim_at += rank
        if proto:
            values.append(_from_proto(proto))
            continue
        raw = raw_bytes[byte_at:byte_at + size]
        byte_at += size
        if enum == _BFLOAT16 or not _LITTLE_ENDIAN:
            array = np.frombuffer(raw, dtype=_NUMPY_DTYPES[enum]).reshape(shape)
            if enum == _BFLOAT16:
                array = _bfloat16_as_float32(array)
            values.append(tensor_value_record(array, copy=False))
        else:
            # The stored record as `tensor_value_record` makes it, without the arrays.
            values.append({"dtype": _NUMPY_DTYPES[enum].str, "shape": shape, "data": raw})
    return tps.astype(np.int32), values


def holds_nonfinite(components: list[np.ndarray], values: list[Any]) -> bool:
    """Whether a drained batch's values hold NaN or infinity, as
    `flight_recorder.values_alert` finds of its records (``values``, `unpack`'s), but
    read off the batch's bytes: one check (a min and a max) per run of consecutive
    values of one dtype, where a check per value cost the drain more than the
    values' copy on a loop's hundreds of small tensors a step."""
    _, enums, _, _, sizes, data, protos = components
    raw = data.data.cast("B") if data.size else memoryview(b"")
    runs: list[list[int]] = []  # [enum, first byte, end byte]
    byte_at = 0
    from_protos = []
    for enum, size, proto, value in zip(enums.tolist(), sizes.tolist(), protos.tolist(),
                                        values):
        if proto:
            from_protos.append(value)
            continue
        if runs and runs[-1][0] == enum:
            runs[-1][2] += size
        else:
            runs.append([enum, byte_at, byte_at + size])
        byte_at += size
    for enum, begin, end in runs:
        if enum == _BFLOAT16:
            # Not finite exactly when the exponent's bits are all set.
            bits = np.frombuffer(raw[begin:end], dtype=_NUMPY_DTYPES[enum])
            if np.any((bits & 0x7F80) == 0x7F80):
                return True
        elif _NUMPY_DTYPES[enum].kind in "fc":
            if not all_finite(np.frombuffer(raw[begin:end], dtype=_NUMPY_DTYPES[enum])):
                return True
    return values_alert(from_protos)


def _bfloat16_as_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values (their 16 bits, host order) widened exactly to float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _from_proto(serialized: bytes) -> Any:
    from tensorflow.core.framework import tensor_pb2
    from tensorflow.python.framework import tensor_util

    proto = tensor_pb2.TensorProto.FromString(serialized)
    return tensor_value_record(tensor_util.MakeNdarray(proto))

