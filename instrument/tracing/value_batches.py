"""FULL_TENSOR values on their way from a graph to the host: one packed batch per enqueue.

A batch of traced tensors travels through the trace queue as one queue element of
flat components (`COMPONENT_NAMES`): how many tensors, the tensors' raw bytes
concatenated into one ``uint8`` vector (``tf.bitcast``, which copies nothing, then a
single concat), their shapes, dtypes and byte sizes, and their trace points. Tensors of
the dtypes ``tf.bitcast`` does not take (strings, 8-bit floats, quantized types) travel
as a serialized ``TensorProto`` instead. A dequeue of several elements pads each
component to the longest; the count cuts them back (`PackedBatch`).

On the host a drained batch stays its components (`PackedBatch`, `PackedValues`) until
its chunk is packed for writing: only then are the bytes cut into value records, with
numpy views (per tensor no protobuf parsing and no copy). Under a circular buffer most
chunks are dropped before a flush, and their values are never cut at all.

Values are little-endian in the dump; the bytes are the host's, so a big-endian host
swaps them (numpy does, in `tensor_value_record`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from instrument.dump import flight_recorder
from instrument.dump.flight_recorder import all_finite, values_alert
from instrument.dump.value_encoding import tensor_value_record
from instrument.tf_internals.graph_edits import defer_variable_writes
from reader.contract import ValueMap
from reader.values import NUMPY_DTYPES

# TF DataType enum -> numpy dtype of the raw bytes, for every dtype `pack` bitcasts:
# those numpy has, and bfloat16 as its 16 bits (widened on the host). bool travels as
# uint8 (the same bytes).
_NUMPY_DTYPES = {**NUMPY_DTYPES, 14: np.dtype(np.uint16)}
_BFLOAT16 = 14
_BOOL = 10
_FLOAT = 1
# The dtype code of a bool tensor that travels as float32 words (0.0 or 1.0) in a batch
# of words (`_concat_bytes`); not a TF DataType. Its values are made bool again on the
# host (`PackedBatch.records`).
_BOOL_WORDS = 200
_HOST_DTYPES = {**_NUMPY_DTYPES, _BOOL_WORDS: np.dtype(np.uint32)}
# The dtype codes whose elements are whole 32-bit words (`as_words` when packing,
# `PackedBatch._words_hold_nonfinite` when scanning): every dtype of 4 or 8 bytes and
# bools as words; bfloat16 and float16 not.
_WORDS = np.zeros(256, dtype=bool)
_WORDS[[e for e, d in _HOST_DTYPES.items() if d.itemsize % 4 == 0]] = True
# Per dtype code, how a run of its values is checked (`PackedBatch.holds_nonfinite`):
# as float32 (float32, complex64), float64 (float64, complex128), float16, bfloat16's
# bits; 0: not at all (integers, bools). Consecutive values of one way make one run.
_CHECKED_AS = np.zeros(256, dtype=np.int32)
for _enum, _dtype in _HOST_DTYPES.items():
    if _dtype.kind in "fc":  # a complex value is checked as its parts
        _CHECKED_AS[_enum] = {2: 19, 4: 1, 8: 2}[_dtype.itemsize // (1 + (_dtype.kind == "c"))]
_CHECKED_AS[_BFLOAT16] = _BFLOAT16
_CHECK_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),
    2: np.dtype(np.float64),
    19: np.dtype(np.float16),
}
_LITTLE_ENDIAN = sys.byteorder == "little"

# The queue element: the number of tensors, trace points, dtypes (TF enum), ranks,
# dims (all shapes, one after the other), byte sizes, raw bytes, serialized protos (""
# for bitcast tensors).
COMPONENT_NAMES = ("count", "tps", "dtypes", "ranks", "dims", "sizes", "data", "protos")


def component_dtypes() -> list[Any]:
    """The TF dtypes of the components, in `COMPONENT_NAMES` order."""
    from tensorflow.python.framework import dtypes

    return [
        dtypes.int32,
        dtypes.int32,
        dtypes.int32,
        dtypes.int32,
        dtypes.int64,
        dtypes.int64,
        dtypes.uint8,
        dtypes.string,
    ]


def component_shapes() -> list[list[int | None]]:
    """The components' shapes in a padding queue: the count a scalar, the rest vectors."""
    return [[]] + [[None]] * (len(COMPONENT_NAMES) - 1)


def static_bytes(tensors: list[Any]) -> int | None:
    """The bytes of a batch's element known while the graph is built, or None (a shape
    not fully defined, or a dtype that travels as a serialized proto)."""
    total = 0
    for tensor in tensors:
        enum = tensor.dtype.as_datatype_enum
        if enum not in _NUMPY_DTYPES or not tensor.shape.is_fully_defined():
            return None
        # A bool may travel as a word (`_BOOL_WORDS`).
        itemsize = 4 if enum == _BOOL else _NUMPY_DTYPES[enum].itemsize
        total += tensor.shape.num_elements() * itemsize
        total += 8 * (tensor.shape.rank + 3)  # its dims, rank, dtype, size, trace point
    return total


def pack(tensors: list[Any], trace_points: list[int]) -> list[Any]:
    """Build, in the current graph, the components of one batch of traced tensors.

    Shapes known while the graph is built become constants: at run time a tensor of
    static shape costs at most a bitcast and a reshape (neither copies) and its share
    of the one concat (`_concat_bytes`).
    """
    from tensorflow.python.framework import constant_op, dtypes
    from tensorflow.python.ops import array_ops, gen_parsing_ops

    words = as_words(
        [t.dtype.as_datatype_enum for t in tensors if t.dtype.as_datatype_enum in _NUMPY_DTYPES]
    )
    ranks, dims, sizes, data, protos, codes = [], [], [], [], [], []
    for tensor in tensors:
        enum = tensor.dtype.as_datatype_enum
        if words and enum == _BOOL:
            enum = _BOOL_WORDS
        codes.append(enum)
        static = tensor.shape
        if static.rank is not None:
            ranks.append(static.rank)
        else:
            ranks.append(array_ops.rank(tensor))
        if static.is_fully_defined():
            dims.append(constant_op.constant(static.as_list(), dtype=dtypes.int64))
        else:
            dims.append(array_ops.shape(tensor, out_type=dtypes.int64))
        if enum in _HOST_DTYPES:
            data.append(tensor)
            protos.append("")
            if static.is_fully_defined():
                sizes.append(static.num_elements() * _HOST_DTYPES[enum].itemsize)
            else:
                sizes.append(
                    array_ops.size(tensor, out_type=dtypes.int64) * _HOST_DTYPES[enum].itemsize
                )
        else:
            protos.append(gen_parsing_ops.serialize_tensor(tensor, name="tfdbg_tui_value"))
            sizes.append(0)
    values = _concat_bytes(data, words)
    return [
        constant_op.constant(len(tensors), dtype=dtypes.int32, name="tfdbg_tui_count"),
        constant_op.constant(trace_points, dtype=dtypes.int32, name="tfdbg_tui_tps"),
        constant_op.constant(codes, dtype=dtypes.int32),
        _stack(ranks, dtypes.int32),
        array_ops.concat(dims, 0) if len(dims) > 1 else dims[0],
        _stack(sizes, dtypes.int64),
        values,
        _stack(protos, dtypes.string),
    ]


def as_words(enums: list[int]) -> bool:
    """Whether a batch of tensors of these dtypes is packed as float32 words
    (`_concat_bytes`): each of whole words (`_WORDS`), or bool (then `_BOOL_WORDS`)."""
    return all(e == _BOOL or _WORDS[e] for e in enums)


def _concat_bytes(tensors: list[Any], words: bool) -> Any:
    """The bytes of ``tensors``, one after the other, as one ``uint8`` vector.

    A concat takes vectors of one dtype. With ``words`` (every dtype is 4 bytes or a
    multiple, float32, int32, int64, float64, complex, or bool: `as_words`, which
    `pack` asks once for its codes and this route), each tensor is seen as float32
    words: a float32 vector as it is, a float32 tensor by a reshape,
    a bool by a cast to float32 (one word an element, `_BOOL_WORDS`), others by a
    bitcast (and a reshape if that adds a dimension); the concat's result is seen as
    bytes once. Otherwise each tensor is seen as bytes (a bitcast to ``uint8`` adds a
    dimension, which a reshape flattens): two ops a tensor. An LSTM's loop bodies
    trace mostly float32 and int32 tensors of rank 0 to 2, and its loop conditions'
    bools.
    """
    from tensorflow.python.framework import constant_op, dtypes
    from tensorflow.python.ops import array_ops, math_ops

    if not tensors:
        return constant_op.constant([], dtype=dtypes.uint8)
    enums = [t.dtype.as_datatype_enum for t in tensors]
    if words:
        pieces = []
        for tensor, enum in zip(tensors, enums):
            if enum == _FLOAT:
                word = tensor
            elif enum == _BOOL:
                word = math_ops.cast(tensor, dtypes.float32)
            else:
                word = array_ops.bitcast(tensor, dtypes.float32)
            pieces.append(word if word.shape.rank == 1 else array_ops.reshape(word, [-1]))
        joined = array_ops.concat(pieces, 0, name="tfdbg_tui_values")
        values = array_ops.reshape(array_ops.bitcast(joined, dtypes.uint8), [-1])
    else:
        joined = values = array_ops.concat(
            [
                array_ops.reshape(
                    array_ops.bitcast(
                        math_ops.cast(t, dtypes.uint8) if e == _BOOL else t, dtypes.uint8
                    ),
                    [-1],
                )
                for t, e in zip(tensors, enums)
            ],
            0,
            name="tfdbg_tui_values",
        )
    if joined.op.type == "ConcatV2":
        # The concat copies the values out: variables read into it are updated after
        # it, in place, rather than copied (graph_edits.defer_variable_writes).
        defer_variable_writes(joined.op, tensors)
    return values


def _stack(items: list[Any], dtype: Any) -> Any:
    """A vector of Python values and scalar tensors: one constant when all are values."""
    from tensorflow.python.framework import constant_op, tensor_util
    from tensorflow.python.ops import array_ops_stack, math_ops

    if not any(tensor_util.is_tf_type(item) for item in items):
        return constant_op.constant(items, dtype=dtype)
    return array_ops_stack.stack(
        [math_ops.cast(item, dtype) if tensor_util.is_tf_type(item) else item for item in items]
    )


class PackedBatch:
    """One drained batch's values, kept as its components (numpy arrays, read in place)
    until they are written.

    Args:
        components: The element's components in `COMPONENT_NAMES` order; from a dequeue
            of several elements, padded: cut back here to the batch's count.
    """

    __slots__ = ("trace_points", "_enums", "_ranks", "_dims", "_sizes", "_data", "_protos")

    def __init__(self, components: list[np.ndarray]) -> None:
        count, tps, enums, ranks, dims, sizes, data, protos = components
        n = int(count)
        self.trace_points = tps[:n].astype(np.int32)
        self._enums, self._ranks, self._sizes = enums[:n], ranks[:n], sizes[:n]
        self._dims = dims[: int(self._ranks.sum())]
        self._data = data[: int(self._sizes.sum())]
        self._protos = protos[:n]

    def __len__(self) -> int:
        return len(self.trace_points)

    @property
    def nbytes(self) -> int:
        """The values' raw bytes."""
        return int(self._data.size)

    def records(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """The raw value records of values ``start`` to ``end``, whose data are views
        of the batch's memory (`tensor_value_record` with ``copy=False``)."""
        end = len(self) if end is None else end
        if start >= end:
            return []
        ranks, sizes = self._ranks.tolist(), self._sizes.tolist()
        dim_at, byte_at = sum(ranks[:start]), sum(sizes[:start])
        all_dims = self._dims.tolist()
        raw_bytes = self._data.data.cast("B") if self._data.size else memoryview(b"")
        values: list[dict[str, Any]] = []
        for enum, rank, size, proto in zip(
            self._enums[start:end].tolist(),
            ranks[start:end],
            sizes[start:end],
            self._protos[start:end].tolist(),
        ):
            shape = all_dims[dim_at : dim_at + rank]
            dim_at += rank
            if proto:
                values.append(_from_proto(proto))
                continue
            raw = raw_bytes[byte_at : byte_at + size]
            byte_at += size
            if enum == _BOOL_WORDS:
                values.append(
                    tensor_value_record(np.frombuffer(raw, dtype=np.uint32).reshape(shape) != 0)
                )
            elif enum == _BFLOAT16 or not _LITTLE_ENDIAN:
                array = np.frombuffer(raw, dtype=_NUMPY_DTYPES[enum]).reshape(shape)
                if enum == _BFLOAT16:
                    array = _bfloat16_as_float32(array)
                values.append(tensor_value_record(array, copy=False))
            else:
                # The stored record as `tensor_value_record` makes it, without the arrays.
                values.append(
                    {
                        ValueMap.DTYPE: _NUMPY_DTYPES[enum].str,
                        ValueMap.SHAPE: shape,
                        ValueMap.DATA: raw,
                    }
                )
        return values

    def holds_nonfinite(self) -> bool:
        """Whether a value holds NaN or infinity, as `flight_recorder.values_alert`
        finds of its records, but read off the batch's bytes: one check (a min and a
        max) per run of consecutive values of one dtype, found with numpy, where a
        check per value cost the drain more than the values' copy on a loop's hundreds
        of small tensors a step. Runs are of one way of checking (`_CHECKED_AS`): float32
        and complex64 values are one run, integers and bools are skipped. A batch of
        32-bit words is read as float32 words instead (`_words_hold_nonfinite`)."""
        found = self._words_hold_nonfinite()
        if found is not None:
            return found
        protos = self._protos.astype(bool)
        if protos.any():
            if values_alert([_from_proto(p) for p in self._protos[protos].tolist()]):
                return True
        # Bitcast values lie one after the other in the bytes (a proto's size is 0).
        ends = np.cumsum(self._sizes)
        bitcast = (self._sizes > 0) & ~protos
        enums, ends = self._enums[bitcast], ends[bitcast]
        if not len(enums) or int(enums.max()) >= len(_CHECKED_AS):
            return False
        ways = _CHECKED_AS[enums]
        last = np.flatnonzero(ways[1:] != ways[:-1])  # each run's last value
        run_ends = np.append(ends[last], ends[-1]).tolist()
        run_ways = np.append(ways[last], ways[-1]).tolist()
        raw = self._data.data.cast("B")
        begin = int(ends[0] - self._sizes[bitcast][0])
        for way, end in zip(run_ways, run_ends):
            if way == _BFLOAT16:
                # Not finite exactly when the exponent's bits are all set.
                bits = np.frombuffer(raw[begin:end], dtype=np.uint16)
                if np.any((bits & 0x7F80) == 0x7F80):
                    return True
            elif way:
                if not all_finite(np.frombuffer(raw[begin:end], dtype=_CHECK_DTYPES[way])):
                    return True
            begin = end
        return False

    def _words_hold_nonfinite(self) -> bool | None:
        """Whether a batch of dtypes of 4 or 8 bytes (and bools as words) holds NaN or
        infinity; None for any other batch.

        Its bytes are read as float32 words, a chunk at a time
        (`flight_recorder.FINITE_CHUNK`): where all are finite, no value holds NaN or
        infinity (a float64 is not finite exactly when its high word, as a
        float32, is not: their exponents' bits are all set; a complex value is its
        parts). Otherwise the values of the words that are not decide: a float32 or
        complex64 value holds one, a float64 or complex128 value is read as itself (a
        finite one's low word may read as NaN), an integer holds none (-1 reads as NaN).
        A few numpy calls a chunk instead of some a run of a dtype: an LSTM's loop
        batches alternate float32 and int32.
        """
        enums, data = self._enums, self._data
        if (
            not len(enums)
            or data.size % 4
            or int(enums.max()) >= len(_WORDS)
            or not _WORDS[enums].all()
        ):
            return None
        words = data.view(np.float32)
        step = flight_recorder.FINITE_CHUNK
        ends = starts = None
        for at in range(0, words.size, step):
            chunk = words[at : at + step]
            if all_finite(chunk):
                continue
            if ends is None or starts is None:
                ends = np.cumsum(self._sizes) // 4
                starts = ends - self._sizes // 4
            owners = np.unique(
                np.searchsorted(ends, at + np.flatnonzero(~np.isfinite(chunk)), side="right")
            )
            ways = _CHECKED_AS[enums[owners]]
            if (ways == 1).any() or any(
                not all_finite(words[starts[i] : ends[i]].view(np.float64))
                for i in owners[ways == 2].tolist()
            ):
                return True
        return False


class PackedValues:
    """The values of drained batches in trace order: a sequence of value records made
    only when it is iterated (the writer packs a chunk), or cut by `__getitem__`.

    Args:
        parts: (batch, first value, end) ranges of `PackedBatch`es.
    """

    def __init__(self, parts: list[tuple[PackedBatch, int, int]]) -> None:
        self._parts = parts
        self._len = sum(end - start for _, start, end in parts)

    @classmethod
    def of(cls, batches: list[PackedBatch]) -> PackedValues:
        """All the values of ``batches``, in order."""
        return cls([(batch, 0, len(batch)) for batch in batches])

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch, start, end in self._parts:
            yield from batch.records(start, end)

    def __getitem__(self, index: slice) -> PackedValues:
        """Values ``index.start`` to ``index.stop`` (a step of 1 only)."""
        start, stop, step = index.indices(self._len)
        if step != 1:
            raise ValueError("PackedValues takes contiguous slices only")
        parts, at = [], 0
        for batch, first, end in self._parts:
            lo, hi = max(first, first + start - at), min(end, first + stop - at)
            if lo < hi:
                parts.append((batch, lo, hi))
            at += end - first
        return PackedValues(parts)

    @property
    def nbytes(self) -> int:
        """About the values' raw bytes (whole batches': for a writer's flush threshold)."""
        return sum(
            batch.nbytes * (end - start) // max(len(batch), 1) for batch, start, end in self._parts
        )

    def holds_nonfinite(self) -> bool:
        """Whether a value of the batches holds NaN or infinity
        (`PackedBatch.holds_nonfinite`; the whole of each batch is read, also where
        only part of it is in this sequence)."""
        return any(batch.holds_nonfinite() for batch, _, _ in self._parts)


def _bfloat16_as_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values (their 16 bits, host order) widened exactly to float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _from_proto(serialized: bytes) -> Any:
    from tensorflow.core.framework import tensor_pb2
    from tensorflow.python.framework import tensor_util

    proto = tensor_pb2.TensorProto.FromString(serialized)
    return tensor_value_record(tensor_util.MakeNdarray(proto))
