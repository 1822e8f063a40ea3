"""Where a segment's bytes go: a local file (`writev`, cut back after a failed write) or
a bucket's closed part objects (compressed when it pays; the executions' and traces'
gathered over several flushes, up to 2 s).

`RecordFile` buffers and packs records; at each flush it hands the packed bytes to
its sink. A local segment is one file written with ``os.writev`` (and cut back after a
failed write); a segment on an object store, which cannot append and shows an object
only once it is closed, is written as closed **part** objects (docs/format.md,
"Object stores"): one per flush, or, for the executions and graph traces, one per
1 MiB as put or 1.5 s; a failed put leaves no object, so there is nothing to cut
back. A part worth it is put compressed (one Zstandard frame): a reader fetches a
tenth of the bytes of summary rows or less, and compressing them costs less than
sending them.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import zstandard

from reader import format as fmt
from reader.storage import Store

logger = logging.getLogger("instrument.writer")

# Buffers per writev call: IOV_MAX on Linux and macOS.
_IOV_MAX = 1024
# Bytes per writev call, at most. Big writes cost the kernel far more per byte: the
# page cache takes folios as large as the write (ext4's large folios, Linux 6.x), and
# on a VM high-order pages are the ones the host reclaims, each slow to touch again.
# Writing 400 MB into a new file on the benchmark VM (Linux 6.18, ext4) cost, in ms of
# CPU a MB: 2.4 in 2 MB writes, 1.4 in 1 MB, 0.6 in 512 KB, 0.31 in 256 KB, 0.33 in
# 128 KB, 0.35 in 64 KB, 0.84 in 4 KB (the calls' own cost).
WRITE_BYTES = 256 << 10
# Parts at least this large are put compressed when that pays: below it a request
# costs the same whatever its size.
COMPRESS_MIN_BYTES = 4 << 10
# A part is put compressed when a compressed sample of its first bytes shrinks to at
# most this fraction: FULL_TENSOR values are deflated already where it pays, and
# compressing them again would cost the writer time for nothing.
COMPRESS_SAMPLE_BYTES = 64 << 10
COMPRESS_MAX_RATIO = 0.8
# Zstandard's level 1: a million rows of random counts compress 6.6x at it in 130 ms
# and decompress in 50 ms, where zlib's fastest level made 4.7x in 490 ms and 210 ms
# (docs/performance.md, "Zstandard parts"); level 3 compresses less fast for less.
COMPRESS_LEVEL = 1
# With `hold` (the periodic flush of the executions and graph traces, outside a
# circular buffer) a part is put once it is this large as put (compressed), or holds
# `PART_BYTES` of the segment, or its first bytes waited `HOLD_S` (plus a flush
# interval): each object costs a request to put and one to read however small it is,
# and a flush of a few executions made one of some 160 bytes, one of a million traces'
# 1 MiB flushes twenty objects. A kill loses up to 2 s of those streams then
# (docs/format.md, "Object stores"). What waits is compressed already: the writer
# holds at most `HOLD_BYTES` a segment (and the compressor's window), whatever it
# holds of the segment.
HOLD_BYTES = 1 << 20
PART_BYTES = 16 << 20
HOLD_S = 1.5


class LocalSegment:
    """A segment file, appended to with ``os.writev``; created by its first write (a
    circular buffer's segment dropped before its first flush is never created)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1
        self._closed = False

    def write(self, views: list[memoryview], sync: bool, hold: bool = False) -> None:
        """Raises OSError. (``hold`` is for a bucket: a file is written at once.)"""
        del hold
        if self._fd < 0 and not self._closed:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        _write_all(self._fd, views)
        if sync:
            os.fsync(self._fd)

    def cut_back(self, size: int) -> bool:
        """Cut the file back to ``size`` bytes; False when that failed too."""
        if self._fd < 0:
            return True  # not created: nothing was written
        try:
            os.ftruncate(self._fd, size)
        except OSError as error:
            logger.debug("tfdbg-tui: cannot cut %s back after a failed write: %s", self.path, error)
            return False
        return True

    def close(self) -> None:
        self._closed = True
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            os.close(fd)
        except OSError as error:  # the data of a failed flush is already dropped
            logger.debug("tfdbg-tui: closing %s failed: %s", self.path, error)


class SegmentParts:
    """A segment in a bucket: closed part objects, numbered on. Each write is put as
    the next part, or, with ``hold``, kept (compressed, when that pays) for a part put
    later (`HOLD_BYTES`, `PART_BYTES`, `HOLD_S`).

    Attributes:
        names: The path of each part written, in order.
        before_put: Called before each part is put (the executions' segment puts the
            graph traces' first: `RunFiles`); raises OSError.
    """

    def __init__(self, store: Store, path: str) -> None:
        self.path = path
        self._store = store
        self.names: list[str] = []
        self.before_put: Callable[[], None] | None = None
        # The next part, while held: its bytes as they will be put, how many segment
        # bytes they hold, its compressor (None: put as they are, or not judged yet:
        # `_judge`, once it holds `COMPRESS_MIN_BYTES`), and when it began.
        self._chunks: list[bytes] = []
        self._stored = 0
        self._raw = 0
        self._compressor: Any = None
        self._since = 0.0

    @property
    def holding(self) -> bool:
        """Whether bytes written wait for a later part (`write`'s ``hold``)."""
        return self._raw > 0

    def part_path(self, number: int, raw_size: int | None = None) -> str:
        """The object of part ``number``: ``<segment file name>`` with its number (and,
        compressed, the bytes it holds)."""
        parsed = fmt.parse_segment_filename(self._store.basename(self.path))
        if parsed is None:
            raise ValueError(f"not a segment: {self.path}")
        return self._store.join(
            self._store.dirname(self.path),
            fmt.part_filename(parsed[0], parsed[1], number, raw_size),
        )

    def write(self, views: list[memoryview], sync: bool, hold: bool = False) -> None:
        """Add the bytes to the next part and put it (an object is durable once put:
        ``sync`` only says not to hold); with ``hold``, put it only once it is due.
        Raises OSError naming the part (what it held is lost)."""
        size = sum(len(view) for view in views)
        if size and self._raw and self._raw + size > PART_BYTES:
            self._put()
        if size:
            data = b"".join(views)
            if not self._raw:
                self._since = time.monotonic()
            if self._compressor is not None:
                data = self._compressor.compress(data)
            self._chunks.append(data)
            self._stored += len(data)
            self._raw += size
            if self._raw - size < COMPRESS_MIN_BYTES <= self._raw:  # enough to tell now
                self._judge()
        if self._raw and not (
            hold
            and not sync
            and self._stored < HOLD_BYTES
            and self._raw < PART_BYTES
            and time.monotonic() - self._since < HOLD_S
        ):
            self._put()

    def _judge(self) -> None:
        """Whether the part is to be compressed, once it has enough bytes to tell: its
        bytes so far are then compressed, and the rest as they come (one frame, with
        its checksum)."""
        data = b"".join(self._chunks)
        if worth_compressing(data):
            self._compressor = zstandard.ZstdCompressor(
                level=COMPRESS_LEVEL, write_checksum=True
            ).compressobj()
            self._chunks = [self._compressor.compress(data)]
            self._stored = len(self._chunks[0])

    def _put(self) -> None:
        if self.before_put is not None:
            self.before_put()
        if self._compressor is not None:
            self._chunks.append(self._compressor.flush())
        raw_size = None if self._compressor is None else self._raw
        data = b"".join(self._chunks)
        self._drop()
        path = self.part_path(len(self.names), raw_size)
        try:
            self._store.put(path, data)
        except OSError as error:
            raise OSError(error.errno or errno.EIO, error.strerror or str(error), path) from None
        self.names.append(path)

    def _drop(self) -> None:
        self._chunks, self._stored, self._raw, self._compressor = [], 0, 0, None

    def cut_back(self, size: int) -> bool:
        """Nothing to undo: a part that failed to be put does not exist."""
        del size
        return True

    def close(self) -> None:
        """Drop what is held (a close that writes flushes first)."""
        self._drop()


def worth_compressing(data: bytes) -> bool:
    """Whether a part that begins with ``data`` is to be put compressed (`COMPRESS_*`):
    its first bytes compress well, and a part of at most `PART_BYTES` more stays within
    what a reader inflates."""
    if not COMPRESS_MIN_BYTES <= len(data) <= fmt.MAX_COMPRESSED_PART_BYTES - PART_BYTES:
        return False
    sample = data[:COMPRESS_SAMPLE_BYTES]
    compressed = zstandard.ZstdCompressor(level=COMPRESS_LEVEL).compress(sample)
    return len(compressed) <= COMPRESS_MAX_RATIO * len(sample)


def _write_all(fd: int, views: list[memoryview]) -> None:
    views = [piece for view in views for piece in _slices(view)]
    start = 0
    while start < len(views):
        end, size = start, 0
        while end < len(views) and end - start < _IOV_MAX and size < WRITE_BYTES:
            size += len(views[end])
            end += 1
        written = os.writev(fd, views[start:end])
        while written and written >= len(views[start]):
            written -= len(views[start])
            start += 1
        if written:
            views[start] = views[start][written:]


def _slices(view: memoryview) -> list[memoryview]:
    if len(view) <= WRITE_BYTES:
        return [view]
    return [view[i : i + WRITE_BYTES] for i in range(0, len(view), WRITE_BYTES)]
