"""Where a dump lives: a local directory, or a bucket behind any fsspec URL.

One abstraction for every place a logdir can be, used by the writer and the reader
alike. A **local** path takes the code path it always did (`os.pread` on an open file
descriptor, `os.scandir`); only a URL (``s3://bucket/logdir``, ``gs://...``,
``memory://...``) reaches `reader.object_store`, which imports fsspec when it is first
needed, so local paths never need fsspec.

On an object store a segment is a sequence of closed **part** objects (docs/format.md,
"Object stores"); a local directory may hold those too (a bucket copied down). Either
way a segment reads as one growing byte sequence (`ByteSource`), so the segment reader
above does not know where its bytes come from.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from reader import format as fmt

# Bytes of the parts after a read that a bucket's store fetches with it, concurrently:
# indexing reads a segment from its start to its end, and one round of requests for
# many parts costs little more than one for a few.
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


class Store(Protocol):
    """What the writer and the reader ask of a place that holds logdirs."""

    remote: bool

    def normalize(self, path: str) -> str: ...

    def join(self, base: str, name: str) -> str: ...

    def basename(self, path: str) -> str: ...

    def dirname(self, path: str) -> str: ...

    def list_dir(self, path: str) -> list[Entry]: ...

    def is_dir(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def open_parts(self, parts: list[Part]) -> ByteSource: ...

    def makedirs(self, path: str) -> None: ...

    def put(self, path: str, data: bytes) -> None: ...

    def remove(self, path: str) -> None: ...


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an object store (``scheme://...``) rather than a local
    path (a ``file://`` URL is local)."""
    text = os.fspath(path)
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme != "file"


def store_for(path: str | os.PathLike[str]) -> Store:
    """The store holding ``path``.

    Raises:
        OSError: ``path`` is a URL and fsspec (or the scheme's implementation, such
            as s3fs for ``s3://``) is not installed.
    """
    text = os.fspath(path)
    if not is_url(text):
        return LOCAL
    from reader.object_store import object_store

    return object_store(text)


def local_path(path: str | os.PathLike[str]) -> str:
    """``path`` without a ``file://`` prefix."""
    text = os.fspath(path)
    return text[len("file://"):] if text.startswith("file://") else text


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


class LocalStore:
    """Local paths, through `os` as always."""

    remote = False

    def normalize(self, path: str) -> str:
        return os.path.abspath(local_path(path))

    def join(self, base: str, name: str) -> str:
        return os.path.join(base, name)

    def basename(self, path: str) -> str:
        return os.path.basename(os.path.normpath(path))

    def dirname(self, path: str) -> str:
        return os.path.dirname(os.path.normpath(path))

    def list_dir(self, path: str) -> list[Entry]:
        """Raises OSError when ``path`` cannot be listed."""
        with os.scandir(path) as entries:
            return [Entry(e.name, e.path, e.is_dir(follow_symlinks=True), 0) for e in entries]

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def open_parts(self, parts: list[Part]) -> ByteSource:
        if len(parts) == 1 and parts[0].number is None:
            return LocalFile(parts[0].path)
        return PartsSource(parts, _read_local_ranges)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=False)

    def put(self, path: str, data: bytes) -> None:
        with open(path, "xb") as f:
            f.write(data)

    def remove(self, path: str) -> None:
        os.remove(path)


def _read_local_ranges(ranges: list[tuple[Part, int, int]],
                       ahead: Sequence[Part]) -> list[bytes]:
    del ahead  # the page cache reads ahead
    found = []
    for part, start, end in ranges:
        with open(part.path, "rb") as f:
            f.seek(start)
            found.append(f.read(end - start))
    return found


LOCAL = LocalStore()


def list_segments(run_path: str, store: Store | None = None
                  ) -> dict[str, dict[int, list[Part]]] | None:
    """The files of each segment present, per stream (segments ascending): one whole
    file, or its part objects. None when the run directory cannot be listed."""
    store = store or store_for(run_path)
    found: dict[str, dict[int, list[Part]]] = {stream: {} for stream in fmt.STREAMS}
    try:
        entries = store.list_dir(run_path)
    except OSError:
        return None
    for entry in entries:
        whole = fmt.parse_segment_filename(entry.name)
        if whole is not None:
            found[whole[0]].setdefault(whole[1], []).append(Part(entry.path, entry.size))
            continue
        part = fmt.parse_part_filename(entry.name)
        if part is not None:
            found[part[0]].setdefault(part[1], []).append(
                Part(entry.path, entry.size, part[2]))
    return {stream: dict(sorted(segments.items())) for stream, segments in found.items()}


def has_metadata(names: list[str]) -> bool:
    """Whether a directory's names hold a metadata segment (a whole file or a part)."""
    for name in names:
        parsed = fmt.parse_segment_filename(name) or fmt.parse_part_filename(name)
        if parsed is not None and parsed[0] == fmt.STREAM_METADATA:
            return True
    return False
