"""The bytes of a segment, wherever they are: `ByteSource` and its two kinds.

A local file is read with `os.pread` on a descriptor kept open (`LocalFile`); a
segment written as part objects (docs/format.md section 9) is read as one byte
sequence over its parts (`PartsSource`), each range fetched by the store that holds
them (`reader.storage`, `reader.object_store`). The segment reader above reads a
`ByteSource` and does not know which.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# Bytes of the parts after a read that a bucket's store starts fetching with it,
# concurrently, without waiting for them: indexing reads a segment from its start to
# its end, and the parts arrive while the ones before are decoded.
READ_AHEAD_BYTES = 32 << 20


class ByteSource(Protocol):
    """A segment's bytes, read by position while a writer may still add to them."""

    def size(self) -> int: ...

    def pread(self, length: int, offset: int) -> bytes: ...

    def readinto(self, buffer: memoryview, offset: int) -> int: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Entry:
    """One name in a directory (or under a prefix of a bucket)."""

    name: str
    path: str
    is_dir: bool
    size: int


@dataclass(frozen=True, slots=True)
class Part:
    """One file of a segment: the whole segment (``number`` None) or a part object."""

    path: str
    size: int
    number: int | None = None


class LocalFile:
    """A local file, read with `os.pread` on a descriptor kept open: a segment that a
    circular buffer deletes can still be read until `close()`.

    Raises:
        OSError: From `os.open` (FileNotFoundError when the file is gone).
    """

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def pread(self, length: int, offset: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def readinto(self, buffer: memoryview, offset: int) -> int:
        return os.preadv(self._fd, [buffer], offset)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class PartsSource:
    """A segment written as part objects, read as one byte sequence: the consecutive
    parts from part 0 (a part not listed yet ends it for now).

    Args:
        read_ranges: Reads ``[(part, start, end), ...]``, returns their bytes in order
            (the store's, which may fetch them at once and cache them).
    """

    def __init__(self, parts: list[Part], read_ranges: ReadRanges) -> None:
        self._read_ranges = read_ranges
        self._parts: list[Part] = []
        self._starts: list[int] = []
        self._size = 0
        self.set_parts(parts)

    def set_parts(self, parts: list[Part]) -> None:
        """Take a newer listing of the segment's parts (parts never change once
        written: only new ones are added)."""
        ordered = sorted(parts, key=lambda p: p.number or 0)
        consecutive = []
        for expected, part in enumerate(ordered):
            if (part.number or 0) != expected:  # a whole file is its only part
                break
            consecutive.append(part)
        if len(consecutive) < len(self._parts):
            return  # a listing that missed some: keep what was known
        self._parts = consecutive
        self._starts = []
        total = 0
        for part in consecutive:
            self._starts.append(total)
            total += part.size
        self._size = total

    def size(self) -> int:
        return self._size

    def pread(self, length: int, offset: int) -> bytes:
        end = min(offset + length, self._size)
        if end <= offset:
            return b""
        ranges = []
        index = bisect_right(self._starts, offset) - 1
        while index < len(self._parts) and self._starts[index] < end:
            start = self._starts[index]
            part = self._parts[index]
            ranges.append((part, max(offset - start, 0), min(end - start, part.size)))
            index += 1
        ahead, budget = [], READ_AHEAD_BYTES
        while index < len(self._parts) and budget > 0:
            ahead.append(self._parts[index])
            budget -= self._parts[index].size
            index += 1
        pieces = self._read_ranges(ranges, ahead)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def readinto(self, buffer: memoryview, offset: int) -> int:
        data = self.pread(len(buffer), offset)
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._parts, self._starts, self._size = [], [], 0


class ReadRanges(Protocol):
    """Reads ``[(part, start, end), ...]`` and returns their bytes in order; ``ahead``
    are the parts that follow, which a store may fetch at the same time and cache
    (reading goes on there)."""

    def __call__(self, ranges: list[tuple[Part, int, int]],
                 ahead: Sequence[Part]) -> list[bytes]: ...


def read_local_ranges(ranges: list[tuple[Part, int, int]],
                       ahead: Sequence[Part]) -> list[bytes]:
    del ahead  # the page cache reads ahead
    found = []
    for part, start, end in ranges:
        with open(part.path, "rb") as f:
            f.seek(start)
            found.append(f.read(end - start))
    return found


