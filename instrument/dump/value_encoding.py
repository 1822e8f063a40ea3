"""FULL_TENSOR values as stored (docs/format.md section 6): records and their compression.

A value is byte-shuffled (all first bytes of the elements, then all second bytes, ...)
and written as one zlib stream in which each byte plane is its own deflate block(s):
Huffman-coded when a sample of the plane predicts a saving, stored otherwise. In float
activations and gradients the sign-and-exponent plane compresses well, the mantissa
planes of dense tensors do not at all, and every plane of a tensor with many zeros
(ReLU outputs, their gradients) does: coding only the planes that pay keeps the ratio of
coding them all while skipping most of the work (Huffman coding runs at about 80 MB/s,
a stored block at memory speed). This matters because the drain that compresses graph
traces must keep up with the training that produces them.

The stream is assembled here from raw deflate pieces (RFC 1950/1951) so that stored
and Huffman-coded planes can alternate; any zlib decompressor reads it.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import ValueMap

MAX_REPR_ELEMENTS = 10_000

# Values smaller than this are stored raw: compression would save a few bytes at most.
MIN_COMPRESSED_BYTES = 256
# A compressed value is kept only if it saves at least this fraction of the raw bytes;
# otherwise the reader's decompression would buy (almost) nothing.
MIN_SAVING = 1 / 32
# A byte plane is Huffman-coded only when its sample's entropy predicts at least this
# saving. The sample is up to `PLANE_SAMPLE_BYTES` bytes taken at an even stride.
PLANE_MIN_SAVING = 1 / 32
PLANE_SAMPLE_BYTES = 4096

# zlib header: deflate, 32 KiB window, no dictionary, "fastest" level; (0x78 * 256 +
# 0x01) % 31 == 0 as RFC 1950 requires.
_ZLIB_HEADER = b"\x78\x01"
# The last block: an empty stored block with BFINAL set (byte-aligned).
_FINAL_BLOCK = b"\x01\x00\x00\xff\xff"
_MAX_STORED_BLOCK = 0xFFFF


def tensor_value_record(
    array: np.ndarray, *, compress: bool = False, copy: bool = True
) -> dict[str, Any]:
    """A FULL_TENSOR value as stored: numpy dtype string, shape and little-endian bytes.

    bfloat16 (which numpy cannot name portably) is stored as float32; strings and other
    non-numeric values as ``repr``, a list of at most `MAX_REPR_ELEMENTS` strings.
    With ``compress``, the result of `encode_value`; otherwise ``data`` is raw: a copy
    of the elements (``bytes``), or with ``copy=False`` a view of ``array``'s memory
    where that is possible (for packing it without a copy: the writer's msgpack packs
    any bytes-like object).
    """
    arr = np.asarray(array)
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    if arr.dtype.kind not in "biufc":
        flat = arr.reshape(-1)[:MAX_REPR_ELEMENTS]
        return {
            ValueMap.DTYPE: None,
            ValueMap.SHAPE: list(arr.shape),
            ValueMap.DATA: None,
            ValueMap.REPR: [
                x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
                for x in flat.tolist()
            ],
        }
    # (Not np.ascontiguousarray: it makes a scalar one-dimensional.)
    arr = np.require(arr, dtype=arr.dtype.newbyteorder("<"), requirements="C")
    data = arr.tobytes() if copy or compress else arr.reshape(-1).data.cast("B")
    record = {ValueMap.DTYPE: arr.dtype.str, ValueMap.SHAPE: list(arr.shape), ValueMap.DATA: data}
    return encode_value(record) if compress else record


def encode_value(record: Any) -> Any:
    """A value record with its ``data`` compressed (docs/format.md section 6), or itself.

    ``shuffle-zlib`` for multi-byte dtypes, ``zlib`` for one-byte ones (module
    docstring). Records that are not raw numeric values, small ones, ones larger than a
    reader inflates (`MAX_COMPRESSED_VALUE_BYTES`), ones that would not shrink by
    `MIN_SAVING` (and None) come back unchanged. Releases the GIL while
    Huffman coding.
    """
    if not isinstance(record, dict):
        return record
    data = record.get(ValueMap.DATA)
    if (
        record.get(ValueMap.CODEC) is not None
        or not isinstance(data, (bytes, memoryview))
        or not MIN_COMPRESSED_BYTES <= len(data) <= fmt.MAX_COMPRESSED_VALUE_BYTES
    ):
        return record
    itemsize = np.dtype(record[ValueMap.DTYPE]).itemsize
    if itemsize > 1 and len(data) % itemsize == 0:
        codec = fmt.CODEC_SHUFFLE_ZLIB
        planes = np.frombuffer(data, dtype=np.uint8).reshape(-1, itemsize).T.copy()
        content = planes.data.cast("B")
        blocks = [_deflate_plane(plane) for plane in planes]
    else:
        codec = fmt.CODEC_ZLIB
        content = memoryview(data)
        blocks = [_deflate_plane(np.frombuffer(data, dtype=np.uint8))]
    if sum(len(b) for b in blocks) > len(data) - len(data) * MIN_SAVING:
        return record
    packed = b"".join(
        [_ZLIB_HEADER, *blocks, _FINAL_BLOCK, struct.pack(">I", zlib.adler32(content))]
    )
    return {**record, ValueMap.CODEC: codec, ValueMap.DATA: packed}


def _deflate_plane(plane: np.ndarray) -> bytes:
    """Non-final deflate blocks holding ``plane`` (uint8), ending on a byte boundary."""
    if _worth_coding(plane):
        compressor = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS, 9, zlib.Z_HUFFMAN_ONLY)
        # A sync flush ends the blocks with an empty stored block, byte-aligned.
        coded = compressor.compress(plane.data) + compressor.flush(zlib.Z_SYNC_FLUSH)
        if len(coded) < plane.size:
            return coded
    return _stored_blocks(plane.data.cast("B"))


def _worth_coding(plane: np.ndarray) -> bool:
    """Whether Huffman coding is predicted to save `PLANE_MIN_SAVING` of ``plane``.

    The prediction is the byte entropy of an evenly strided sample: a Huffman code
    needs at least that many bits per byte (and rarely much more).
    """
    sample = plane[:: max(1, plane.size // PLANE_SAMPLE_BYTES)][:PLANE_SAMPLE_BYTES]
    counts = np.bincount(sample, minlength=256)
    # Entropy in bits per byte: log2(n) - sum(c * log2(c)) / n.
    bits_per_byte = np.log2(sample.size) - _C_LOG2_C[counts].sum() / sample.size
    return bool(bits_per_byte <= 8 * (1 - PLANE_MIN_SAVING))


# c * log2(c) for every possible count of one byte value in a sample (0 for c = 0).
_C_LOG2_C = np.concatenate(
    [[0.0], np.arange(1, PLANE_SAMPLE_BYTES + 1) * np.log2(np.arange(1, PLANE_SAMPLE_BYTES + 1))]
)


def _stored_blocks(data: memoryview) -> bytes:
    """``data`` as non-final stored deflate blocks (each at most 65,535 bytes)."""
    parts: list[bytes | memoryview] = []
    for start in range(0, len(data), _MAX_STORED_BLOCK):
        chunk = data[start : start + _MAX_STORED_BLOCK]
        # Header byte: BFINAL 0, BTYPE 00 (stored), padded to the byte boundary.
        parts.append(struct.pack("<BHH", 0, len(chunk), len(chunk) ^ 0xFFFF))
        parts.append(chunk)
    return b"".join(parts)


class SpareCoreCompression:
    """Compresses values only while the process leaves a CPU core free.

    Compressing runs at tens of MB/s, and FULL_TENSOR produces values as fast as the
    model computes them: on a machine whose cores the training keeps busy (a CPU-only
    box), compressing would slow the training more than TensorFlow's own dumper does,
    so values are stored raw there. On a GPU box, where the training process uses a
    core or two of many, they are compressed. The process's CPU use, the compressing
    included, is measured every `interval_s` from the first time it is asked (the load
    before recording started says nothing of the load with it); until the first
    measurement, values are stored raw.

    The compressing counts: measured without it, a training slowed down by the
    compressing (its graph waiting for the drain) looked like a spare core, and kept
    the compression on. On the benchmark (2 cores, one TensorFlow thread) that loop
    made FULL_TENSOR cost 1.5-2.3 times the CPU of storing raw.

    Thread-safe.

    Args:
        interval_s: How often the process's CPU use is measured.
        cores: Cores available to the process (default: its CPU affinity).
        cpu_time: The process's CPU time in seconds, all threads (`time.process_time`).
    """

    def __init__(
        self,
        interval_s: float = 0.5,
        cores: int | None = None,
        cpu_time: Callable[[], float] = time.process_time,
    ) -> None:
        self._interval_s = interval_s
        self._cores = cores or _available_cores()
        self._cpu_time = cpu_time
        self._lock = threading.Lock()
        # When, and at what process CPU time, the current measurement started.
        self._wall: float | None = None
        self._cpu = 0.0
        self._spare = False

    def encode_all(self, records: list[Any]) -> list[Any]:
        """``records`` compressed (`encode_value`) if a core is spare, else unchanged."""
        if not self.core_is_spare():
            return records
        return [encode_value(r) for r in records]

    def core_is_spare(self) -> bool:
        """Whether, at the last measurement, a whole core was left free."""
        now = time.monotonic()
        with self._lock:
            if self._wall is None:
                self._wall, self._cpu = now, self._cpu_time()
            elif now - self._wall >= self._interval_s:
                cpu = self._cpu_time()
                used = (cpu - self._cpu) / max(now - self._wall, 1e-9)
                self._spare = self._cores - used >= 1.0
                self._wall, self._cpu = now, cpu
            return self._spare


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# The one policy of the process: its CPU measurement covers every compressing thread.
COMPRESSION = SpareCoreCompression()
