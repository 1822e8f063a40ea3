"""The bytes of a segment, wherever they are (`ByteSource`): a local file read with
`os.pread`, or a segment's part objects read as one byte sequence (`PartsSource`); a
compressed part inflated, never past what its name says (`inflate_part`).

A local file is read with `os.pread` on a descriptor kept open (`LocalFile`); a
segment written as part objects (docs/format.md section 9) is read as one byte
sequence over its parts (`PartsSource`), each range fetched by the store that holds
them (`reader.storage`, `reader.object_store`). The segment reader above reads a
`ByteSource` and does not know which.
"""

from __future__ import annotations

import functools
import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from reader import format as fmt
from reader.limits import ZSTD_MAX_RATIO, ZSTD_SLACK

# Bytes of the parts after a read that a bucket's store starts fetching with it,
# concurrently, without waiting for them: indexing reads a segment from its start to
# its end, and the parts arrive while the ones before are decoded.
READ_AHEAD_BYTES = 32 << 20
# A read of a segment in parts that reaches the end of a part once it has this many
# bytes ends there (a short read): the part's bytes are returned as they came, not
# copied into one buffer with the next part's.
PIECE_BYTES = 1 << 20
# The indexes pre-size their columns for the bytes a segment has left to read (pages
# are touched only when used). For a segment in parts that is at most
# `RESERVE_BYTES`, a compressed part counting at most `RESERVE_RATIO` times its own
# size (identical rows compress some 6,000x, real ones 12-18x): no name or listing makes
# the reader reserve more; past it the columns grow as they fill.
RESERVE_RATIO = 128
RESERVE_BYTES = 256 << 20
# Compressed parts on a local disk (a bucket copied down) kept inflated for the reads
# after the first (`read_local_ranges`): a part holds at most
# `format.MAX_COMPRESSED_PART_BYTES` (a writer's, at most 16 MiB).
LOCAL_INFLATED_PARTS = 2


class ByteSource(Protocol):
    """A segment's bytes, read by position while a writer may still add to them.
    Like `os.pread`, a read may return fewer bytes than asked for before the end."""

    def size(self) -> int: ...

    def reservable(self, offset: int) -> int:
        """The bytes from ``offset`` on that the indexes may pre-size for."""
        ...

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
    """One file of a segment: the whole segment (``number`` None) or a part object.

    Attributes:
        size: The segment bytes it holds.
        stored: A compressed part's own size (since 3.0: a Zstandard frame of
            ``size`` bytes, fetched and inflated whole); None when its bytes are the
            segment's.
    """

    path: str
    size: int
    number: int | None = None
    stored: int | None = None

    @property
    def fetched(self) -> int:
        """The bytes to fetch for the whole part."""
        return self.size if self.stored is None else self.stored


class DamagedPart(OSError):
    """A compressed part that does not inflate to the bytes its name says: damage (its
    segment is read up to it), not a read to try again."""


def check_part(part: Part, stored: int | None = None) -> None:
    """Check that a compressed part's name and its size (``stored``, else as listed)
    fit each other, before it is fetched or inflated: a name claiming more than
    `MAX_COMPRESSED_PART_BYTES`, or more than Zstandard's largest ratio allows, or an
    object larger than its bytes compress to at worst, is damage.

    Raises:
        DamagedPart: They do not.
    """
    if part.stored is None:
        return
    stored = part.stored if stored is None else stored
    name = os.path.basename(part.path)
    if (
        part.size > fmt.MAX_COMPRESSED_PART_BYTES
        or part.size > ZSTD_MAX_RATIO * stored + ZSTD_SLACK
    ):
        raise DamagedPart(
            f"{name}: claims {part.size} bytes, more than its {stored} bytes may inflate to"
        )
    if stored > part.size + part.size // 256 + 1024:  # (ZSTD_compressBound, and more)
        raise DamagedPart(
            f"{name}: holds {stored} bytes, more than its {part.size} bytes compress to"
        )


def inflate_part(part: Part, data: bytes) -> bytes:
    """The segment bytes of a whole ``part`` fetched as ``data``: ``data`` itself, or
    for a compressed part its inflated bytes, never more than its name says.

    Raises:
        DamagedPart: ``data`` is not one checksummed Zstandard frame of exactly
            ``part.size`` bytes, or its size and the name's claim do not fit
            (`check_part`).
    """
    if part.stored is None:
        return data
    check_part(part, len(data))
    import zstandard  # (only where a compressed part is read: 4 ms to import)

    name = os.path.basename(part.path)
    try:
        # A frame that says its size is decompressed into that many bytes, whatever
        # the limit: it must say the name's; one that does not is never let past it.
        frame = zstandard.get_frame_parameters(data)
        if not frame.has_checksum or frame.content_size not in (
            zstandard.CONTENTSIZE_UNKNOWN,
            part.size,
        ):
            raise DamagedPart(f"{name}: its frame does not say what a part's must")
        raw = zstandard.ZstdDecompressor().decompress(
            data, max_output_size=part.size, allow_extra_data=False
        )
    except zstandard.ZstdError as error:
        raise DamagedPart(f"{name}: not a Zstandard frame of its bytes ({error})") from None
    if len(raw) != part.size:
        raise DamagedPart(f"{name}: inflates to other than the {part.size} bytes it claims")
    return raw


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

    def reservable(self, offset: int) -> int:
        return max(self.size() - offset, 0)

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

    def reservable(self, offset: int) -> int:
        """As `size` from ``offset``, at most `RESERVE_BYTES`, a compressed part
        counted at most `RESERVE_RATIO` times its own size."""
        index = max(bisect_right(self._starts, offset) - 1, 0)
        total = 0
        for start, part in zip(self._starts[index:], self._parts[index:]):
            held = part.size if part.stored is None else min(part.size, RESERVE_RATIO * part.stored)
            total += max(held - max(offset - start, 0), 0)
            if total >= RESERVE_BYTES:
                return RESERVE_BYTES
        return total

    def pread(self, length: int, offset: int) -> bytes:
        """Up to ``length`` bytes from ``offset``: fewer when a part of at least
        `PIECE_BYTES` is read to its end first."""
        end = min(offset + length, self._size)
        if end <= offset:
            return b""
        ranges = []
        covered = 0
        index = bisect_right(self._starts, offset) - 1
        while index < len(self._parts) and self._starts[index] < end:
            start = self._starts[index]
            part = self._parts[index]
            ranges.append((part, max(offset - start, 0), min(end - start, part.size)))
            covered += ranges[-1][2] - ranges[-1][1]
            index += 1
            if covered >= PIECE_BYTES:
                break  # a short read, at the end of a part
        ahead, budget = [], READ_AHEAD_BYTES
        while index < len(self._parts) and budget > 0:
            ahead.append(self._parts[index])
            budget -= self._parts[index].size
            index += 1
        pieces = self._read_ranges(ranges, ahead)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def readinto(self, buffer: memoryview, offset: int) -> int:
        data = self.pread(len(buffer), offset)
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._parts, self._starts, self._size = [], [], 0


class ReadRanges(Protocol):
    """Reads ``[(part, start, end), ...]`` and returns their bytes in order; ``ahead``
    are the parts that follow, which a store may fetch at the same time and cache
    (reading goes on there)."""

    def __call__(
        self, ranges: list[tuple[Part, int, int]], ahead: Sequence[Part]
    ) -> list[bytes]: ...


def read_local_ranges(ranges: list[tuple[Part, int, int]], ahead: Sequence[Part]) -> list[bytes]:
    """Raises OSError (`DamagedPart` for a compressed part that does not inflate, when
    it is the first: else the ranges before it are returned alone)."""
    del ahead  # the page cache reads ahead
    found: list[bytes] = []
    for part, start, end in ranges:
        if part.stored is None:
            with open(part.path, "rb") as f:
                f.seek(start)
                found.append(f.read(end - start))
            continue
        try:
            found.append(_inflated_local_part(part)[start:end])
        except DamagedPart:
            if not found:
                raise
            return found
    return found


@functools.lru_cache(maxsize=LOCAL_INFLATED_PARTS)
def _inflated_local_part(part: Part) -> bytes:
    """The segment bytes of a compressed part copied to a local disk (parts never
    change): the reads of one part (a segment read in blocks, a record fetched
    again) inflate it once. Raises OSError (`DamagedPart`: not cached)."""
    check_part(part)
    with open(part.path, "rb") as f:
        return inflate_part(part, f.read(part.stored))
