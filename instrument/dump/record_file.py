"""One segment file of the dump: buffered msgpack records, written in whole records
through its sink.

A failed write (no space, a quota, an I/O error) is undone: the file is cut back to
the end of the last complete flush, so a segment never ends in a record cut short by
a write error (a kill may still cut one: docs/format.md section 7). The error is
raised to the writer, which stops recording (`instrument.dump.recording_stop`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgpack

from instrument.dump.segment_sinks import WRITE_BYTES, LocalSegment, SegmentParts
from reader.contract import ValueMap
from reader.storage import Store

logger = logging.getLogger("instrument.writer")


class RecordFile:
    """One append-only segment file of msgpack records, buffered in memory."""

    def __init__(self, path: str, header: dict[str, Any], store: Store | None = None) -> None:
        self.path = path
        self.sink: LocalSegment | SegmentParts = (
            SegmentParts(store, path) if store is not None and store.remote else LocalSegment(path)
        )
        self._open = True
        # Bytes of complete flushes: where a failed flush is cut back to.
        self._size = 0
        self._packer = msgpack.Packer(use_bin_type=True)
        # Packed records not yet written; written with one writev, never joined (a
        # FULL_TENSOR chunk is megabytes, and every copy of it costs the training).
        self._buf: list[bytes] = []
        self._buf_bytes = 0
        # Records whose encoding waits for the flush, in order after `_buf`.
        self._deferred: list[tuple[dict[str, Any], Callable[[dict[str, Any]], None]]] = []
        self._deferred_bytes = 0
        self.append(header)

    def append(
        self,
        record: dict[str, Any],
        *,
        encode: Callable[[dict[str, Any]], None] | None = None,
        size_hint: int = 0,
    ) -> None:
        """Buffer a record; ``encode`` (which changes the record in place) runs at flush.

        ``size_hint`` estimates the deferred record's bytes, for `pending_bytes`.
        """
        if encode is None and not self._deferred:
            self._add(self._packer.pack(record))
        else:
            self._deferred.append((record, encode or _keep))
            self._deferred_bytes += size_hint

    def _add(self, packed: bytes) -> None:
        self._buf.append(packed)
        self._buf_bytes += len(packed)

    @property
    def pending_bytes(self) -> int:
        return self._buf_bytes + self._deferred_bytes

    @property
    def held(self) -> bool:
        """Whether a bucket's sink keeps written records for a later part."""
        return isinstance(self.sink, SegmentParts) and self.sink.holding

    @property
    def untouched(self) -> bool:
        """Nothing written yet, and nothing buffered but the header."""
        return self._size == 0 and len(self._buf) == 1 and not self._deferred

    def flush(self, *, sync: bool = False, hold: bool = False) -> None:
        """Write every buffered record; with ``hold``, a bucket's sink may keep them for
        a later part (`SegmentParts.write`).

        Raises:
            OSError: The write failed; the buffered records are dropped and the file
                is cut back to its last complete flush (when the system lets it).
        """
        if self._deferred:
            for record, encode in self._deferred:
                try:
                    encode(record)
                except Exception:  # a record stored unencoded beats none
                    logger.exception("tfdbg-tui: encoding a record failed; stored as is")
                for piece in pack_pieces(self._packer, record):
                    self._add(piece)
            self._deferred.clear()
            self._deferred_bytes = 0
        views = [memoryview(b) for b in self._buf]
        total = self._buf_bytes
        self._buf, self._buf_bytes = [], 0
        try:
            self.sink.write(views, sync, hold)
        except OSError:
            self.cut_back()
            raise
        self._size += total

    def write_now(self, record: dict[str, Any]) -> None:
        """Write one record at once, after what was flushed (nothing buffered is kept).

        Raises:
            OSError: As `flush`.
        """
        self.discard()
        self._add(self._packer.pack(record))
        self.flush(sync=True)

    def cut_back(self) -> bool:
        """Cut the file back to its last complete flush; False when that failed too."""
        return self.sink.cut_back(self._size)

    def discard(self) -> None:
        """Drop every buffered record."""
        self._buf, self._buf_bytes = [], 0
        self._deferred.clear()
        self._deferred_bytes = 0

    def close(self, *, flush: bool = True) -> None:
        """Close the file, writing what is buffered first unless ``flush`` is False.

        Raises:
            OSError: The last flush failed (the file is closed all the same).
        """
        if not self._open:
            return
        try:
            if flush:
                self.flush()
        finally:
            self.discard()
            self._open = False
            self.sink.close()


# Binary values at least this large are written from their own memory (`pack_pieces`).
LARGE_BINARY_BYTES = 1 << 16


def pack_pieces(packer: msgpack.Packer, record: Any) -> list[Any]:
    """``packer.pack(record)`` as a list of pieces whose concatenation is those very
    bytes, where each large binary value (FULL_TENSOR data) is a view of its own memory.

    msgpack copies every value into its buffer: for megabytes of values a step, that
    copy (and the fresh pages it touches) costs more than writing them.
    """
    if not _has_large_binary(record):
        return [packer.pack(record)]
    pieces: list[Any] = []
    _pack_into(packer, record, pieces)
    # Runs of small pieces joined: one buffer each between the large values.
    joined: list[Any] = []
    run: list[bytes] = []
    for piece in pieces:
        if isinstance(piece, memoryview):
            joined += [b"".join(run), piece] if run else [piece]
            run = []
        else:
            run.append(piece)
    if run:
        joined.append(b"".join(run))
    return joined


def _has_large_binary(value: Any) -> bool:
    """Whether ``value`` holds a binary of at least `LARGE_BINARY_BYTES`.

    A value record (``dtype``, ``shape``, ``data``: instrument/dump/value_encoding.py) is
    judged by its ``data`` alone: a chunk holds thousands of them (a loop's values), and
    walking each one's fields cost more than packing the chunk. Only speed depends on
    the answer: `pack_pieces` returns msgpack's bytes either way.
    """
    if isinstance(value, dict):
        data = value.get(ValueMap.DATA)
        if ValueMap.SHAPE in value and isinstance(data, (bytes, bytearray, memoryview)):
            return _nbytes(data) >= LARGE_BINARY_BYTES
        return any(_has_large_binary(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            if _has_large_binary(item):
                return True
        return False
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _nbytes(value) >= LARGE_BINARY_BYTES
    return False


def _nbytes(binary: bytes | bytearray | memoryview) -> int:
    return binary.nbytes if isinstance(binary, memoryview) else len(binary)


def _pack_into(packer: msgpack.Packer, value: Any, pieces: list[Any]) -> None:
    if isinstance(value, dict):
        pieces.append(_header(len(value), 0x80, 0xDE, 0xDF))
        for key, item in value.items():
            pieces.append(packer.pack(key))
            _pack_into(packer, item, pieces)
    elif isinstance(value, (list, tuple)):
        pieces.append(_header(len(value), 0x90, 0xDC, 0xDD))
        for item in value:
            _pack_into(packer, item, pieces)
    elif (
        isinstance(value, (bytes, bytearray, memoryview))
        and memoryview(value).nbytes >= LARGE_BINARY_BYTES
    ):
        view = memoryview(value).cast("B")
        pieces.append(b"\xc6" + view.nbytes.to_bytes(4, "big"))  # bin 32
        pieces.append(view)
    else:
        pieces.append(packer.pack(value))


def _header(n: int, fix: int, code16: int, code32: int) -> bytes:
    """A msgpack map or array header for ``n`` items, in its shortest form."""
    if n < 16:
        return bytes([fix | n])
    if n < 1 << 16:
        return bytes([code16]) + n.to_bytes(2, "big")
    return bytes([code32]) + n.to_bytes(4, "big")


__all__ = ["LARGE_BINARY_BYTES", "WRITE_BYTES", "RecordFile", "pack_pieces"]


def _keep(record: dict[str, Any]) -> None:
    del record
