"""Where a segment's bytes go: a local file, appended to, or a bucket's part objects.

`RecordFile` buffers and packs records; at each flush it hands the packed bytes to
its sink. A local segment is one file written with ``os.writev`` (and cut back after a
failed write); a segment on an object store, which cannot append and shows an object
only once it is closed, is written as one closed **part** object per flush
(docs/format.md, "Object stores"): a failed put leaves no object, so there is nothing
to cut back.
"""

from __future__ import annotations

import errno
import logging
import os

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



class LocalSegment:
    """A segment file, appended to with ``os.writev``; created by its first write (a
    circular buffer's segment dropped before its first flush is never created)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1
        self._closed = False

    def write(self, views: list[memoryview], sync: bool) -> None:
        """Raises OSError."""
        if self._fd < 0 and not self._closed:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                               0o644)
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
            logger.debug("tfdbg-tui: cannot cut %s back after a failed write: %s",
                         self.path, error)
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
    """A segment in a bucket: each write is one closed part object, numbered on.

    Attributes:
        parts: How many parts were written.
    """

    def __init__(self, store: Store, path: str) -> None:
        self.path = path
        self._store = store
        self.parts = 0

    def part_path(self, number: int) -> str:
        """The object of part ``number``: ``<segment file name>`` with its number."""
        parsed = fmt.parse_segment_filename(self._store.basename(self.path))
        if parsed is None:
            raise ValueError(f"not a segment: {self.path}")
        return self._store.join(self._store.dirname(self.path),
                                fmt.part_filename(parsed[0], parsed[1], number))

    def write(self, views: list[memoryview], sync: bool) -> None:
        """Put the bytes as the next part (an object is durable once put: ``sync``
        changes nothing). Raises OSError naming the part."""
        del sync
        if not any(len(view) for view in views):
            return
        path = self.part_path(self.parts)
        try:
            self._store.put(path, b"".join(views))
        except OSError as error:
            raise OSError(error.errno or errno.EIO, error.strerror or str(error), path) \
                from None
        self.parts += 1

    def cut_back(self, size: int) -> bool:
        """Nothing to undo: a part that failed to be put does not exist."""
        del size
        return True

    def close(self) -> None:
        """Nothing to close."""


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
    return [view[i:i + WRITE_BYTES] for i in range(0, len(view), WRITE_BYTES)]


