"""Incremental reading of one segment file: the records appended since the last read.

msgpack's `Unpacker` cannot follow a growing file (built on a file object it stops
for good at its first EOF) and, after a truncated record, its `tell()` counts the
partial bytes. So this module reads with `os.pread`, feeds the bytes to an
`Unpacker`, and moves its consumed offset only past records that unpacked whole. A
truncated tail is left unconsumed and read again, completed, by the next call.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from typing import Any

import msgpack
import numpy as np

from reader import format as fmt
from reader.errors import FormatVersionError

# Bytes read per `pread`. Large enough that syscalls cost nothing next to decoding,
# small enough that indexing a 100 MB segment never holds it all in memory at once.
READ_BLOCK_BYTES = 8 << 20

# Everything msgpack can raise on bad input: its own errors, ValueError (invalid UTF-8,
# bad format bytes), TypeError (an unhashable map key), RecursionError-like StackError.
DECODE_ERRORS = (ValueError, TypeError, msgpack.UnpackException)


def _new_unpacker() -> msgpack.Unpacker:
    # max_buffer_size=0 lifts the 100 MiB default: a FULL_TENSOR record may be larger.
    return msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)


def list_segments(run_path: str) -> dict[str, list[int]] | None:
    """Segment numbers present per stream, ascending; None when the run dir is gone."""
    found: dict[str, list[int]] = {stream: [] for stream in fmt.STREAMS}
    try:
        with os.scandir(run_path) as entries:
            for entry in entries:
                parsed = fmt.parse_segment_filename(entry.name)
                if parsed is not None:
                    found[parsed[0]].append(parsed[1])
    except OSError:
        return None
    for numbers in found.values():
        numbers.sort()
    return found


class GrowingFile:
    """A file read by position as a writer appends to it: opened lazily, read-only, kept
    open until `close()`, so records can still be fetched after the file is deleted.

    Attributes:
        path: The file's path.
        offset: End of the last complete record read: where the next read starts.
        damage: A one-line notice once the file proved unreadable; reading stops there.
        vanished: True when the file was gone when it was to be opened.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.damage: str | None = None
        self.vanished = False
        self._fd: int | None = None

    @property
    def name(self) -> str:
        """The file name, for notices."""
        return os.path.basename(self.path)

    def _open(self) -> int | None:
        if self._fd is None and not self.vanished and self.damage is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                self.vanished = True
            except OSError as error:
                self.damage = f"{self.name}: cannot open ({error.strerror})"
        return self._fd

    def close(self) -> None:
        """Close the file; records can no longer be fetched by offset."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def size(self) -> int:
        """The file's current size in bytes (0 when it cannot be opened)."""
        fd = self._open()
        return os.fstat(fd).st_size if fd is not None else 0


class SegmentReader(GrowingFile):
    """Reads the records of one segment file as it grows.

    The file stays open once opened, so records of a segment that a circular buffer
    deleted can still be fetched by offset until `close()`.

    Attributes:
        path: The file's path.
        stream: The stream name (``graph_traces``, ...).
        segment: The segment number.
        offset: End of the last complete record read: where the next read starts.
        header: The segment's header record, once read.
        damage: A one-line notice once the file proved undecodable; reading stops there.
        vanished: True when the file was gone when it was to be opened.
    """

    def __init__(self, path: str, stream: str, segment: int) -> None:
        super().__init__(path)
        self.stream = stream
        self.segment = segment
        self.header: dict[str, Any] | None = None

    def _open_undamaged(self) -> tuple[int, int] | None:
        """``(fd, size)`` of a file still worth reading; None once damaged or gone."""
        if self.damage is not None:
            return None
        fd = self._open()
        if fd is None:
            return None
        return fd, os.fstat(fd).st_size

    def read_new(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """Yield ``(start, end, record)`` for each complete record past `offset`.

        `offset` advances past each record as it is yielded, so a consumer that stops
        early resumes at the right place. The header is checked and kept, not yielded.

        Raises:
            FormatVersionError: The header names a newer major format version.
        """
        opened = self._open_undamaged()
        if opened is None:
            return
        fd, size = opened
        unpacker = _new_unpacker()
        base = self.offset  # file offset of the unpacker's position 0
        pos = self.offset  # next file byte to read
        while pos < size:
            data = os.pread(fd, min(READ_BLOCK_BYTES, size - pos), pos)
            if not data:
                break
            pos += len(data)
            unpacker.feed(data)
            while True:
                start = self.offset
                try:
                    record = unpacker.unpack()
                except msgpack.OutOfData:
                    break  # an incomplete record: read on, or wait for the writer
                except DECODE_ERRORS as error:
                    self._damaged(start, size, f"undecodable record ({short_error(error)})")
                    return
                self.offset = base + unpacker.tell()
                if not isinstance(record, dict) or not isinstance(record.get("k"), str):
                    self._damaged(start, size, "a record that is not a map with a kind")
                    return
                if self.header is None:
                    if not self._check_header(record, start, size):
                        return
                    continue
                yield start, self.offset, record

    def read_new_frames(self, pad: int = 0
                        ) -> Iterator[tuple[bytearray, int, np.ndarray, np.ndarray]]:
        """Yield ``(data, base, starts, ends)``: blocks of complete records past `offset`,
        framed but not decoded.

        Record ``r`` is ``data[starts[r]:ends[r]]`` and starts at file byte
        ``base + starts[r]``; ``data`` holds at least ``pad`` bytes past the last
        record. Framing uses msgpack's ``skip()``, which checks the structure but
        decodes nothing: the caller decodes what it needs, and reports a
        record it cannot use with `mark_damaged`. `offset` moves past each block as it
        is yielded. The header is read and checked first, as by `read_new`.

        Raises:
            FormatVersionError: The header names a newer major format version.
        """
        opened = self._open_undamaged()
        if opened is None:
            return
        fd, size = opened
        if self.header is None and not self._read_header(fd, size):
            return
        pos = self.offset  # next file byte to read
        leftover = b""
        while pos < size:
            # One buffer per block: the unread tail of the last one, the new bytes, and
            # `pad` zero bytes (room for the caller's fixed-size reads past a record).
            want = min(READ_BLOCK_BYTES, size - pos)
            data = bytearray(len(leftover) + want + pad)
            data[:len(leftover)] = leftover
            got = os.preadv(fd, [memoryview(data)[len(leftover):len(leftover) + want]], pos)
            if got <= 0:
                break
            pos += got
            valid = len(leftover) + got
            if got < want:
                data[valid:] = bytes(pad)
            base = self.offset
            unpacker = _new_unpacker()
            unpacker.feed(memoryview(data)[:valid])
            skip, tell = unpacker.skip, unpacker.tell
            ends = array("q")
            append = ends.append
            error = None
            try:
                while True:
                    skip()
                    append(tell())
            except msgpack.OutOfData:
                pass  # an incomplete record: read on, or wait for the writer
            except DECODE_ERRORS as caught:
                error = caught
            del unpacker, skip, tell  # its copy of the block
            consumed = ends[-1] if ends else 0
            if error is not None or (pos >= size and consumed < valid):
                # Decoding (as `read_new` does) can fail where framing did not (invalid
                # UTF-8, or a bad length that makes a record look cut short): the
                # record's notice comes from decoding it.
                error = _decode_error(memoryview(data)[consumed:valid]) or error
            if ends:
                end_array = np.frombuffer(ends, dtype=np.int64)
                start_array = np.empty_like(end_array)
                start_array[0] = 0
                start_array[1:] = end_array[:-1]
                self.offset = base + consumed
                yield data, base, start_array, end_array
                if self.damage is not None:
                    return  # the caller found a record it cannot use
            if error is not None:
                self._damaged(base + consumed, size, f"undecodable record ({short_error(error)})")
                return
            leftover = bytes(memoryview(data)[consumed:valid])
            del data

    def _read_header(self, fd: int, size: int) -> bool:
        """Read and check the header record; False while it is incomplete or bad."""
        unpacker = _new_unpacker()
        unpacker.feed(os.pread(fd, min(size, 1 << 16), 0))
        try:
            record = unpacker.unpack()
        except msgpack.OutOfData:
            if size <= 1 << 16:
                return False  # not written whole yet
            unpacker.feed(os.pread(fd, size - (1 << 16), 1 << 16))
            try:
                record = unpacker.unpack()
            except msgpack.OutOfData:
                return False
            except DECODE_ERRORS as error:
                self._damaged(0, size, f"undecodable record ({short_error(error)})")
                return False
        except DECODE_ERRORS as error:
            self._damaged(0, size, f"undecodable record ({short_error(error)})")
            return False
        if not isinstance(record, dict) or not isinstance(record.get("k"), str):
            self._damaged(0, size, "a record that is not a map with a kind")
            return False
        if not self._check_header(record, 0, size):
            return False
        self.offset = unpacker.tell()
        return True

    def header_version(self) -> tuple[int, int] | None:
        """The format version in the segment's header, read now if need be; None while
        the header is incomplete, unreadable or without a version.

        Raises:
            FormatVersionError: The header names a newer major format version.
        """
        if self.header is None:
            opened = self._open_undamaged()
            if opened is None or not self._read_header(*opened):
                return None
        version = self.header.get("version") if self.header is not None else None
        if isinstance(version, list) and len(version) >= 2 \
                and all(isinstance(v, int) for v in version[:2]):
            return version[0], version[1]
        return None

    def mark_damaged(self, start: int, what: str) -> None:
        """Record that the record at file byte ``start`` is unusable: reading stops there."""
        fd = self._open()
        size = os.fstat(fd).st_size if fd is not None else start
        self._damaged(start, size, what)

    def _check_header(self, record: dict[str, Any], start: int, size: int) -> bool:
        if record.get("k") != fmt.KIND_HEADER or record.get("format") != fmt.FORMAT_NAME:
            self._damaged(start, size, "not a tfdbg-tui dump file (no header)")
            return False
        version = record.get("version")
        if (not isinstance(version, list) or len(version) < 2
                or not all(isinstance(v, int) for v in version[:2])):
            self._damaged(start, size, "header without a valid format version")
            return False
        if version[0] > fmt.FORMAT_VERSION[0]:
            raise FormatVersionError(
                f"{self.name}: dump format version {version[0]}.{version[1]} is newer than "
                f"this reader's {fmt.FORMAT_VERSION[0]}.{fmt.FORMAT_VERSION[1]}; "
                "upgrade tfdbg-tui to read it")
        self.header = record
        return True

    def _damaged(self, start: int, size: int, what: str) -> None:
        self.damage = (f"{self.name}: {what} at byte {start}; "
                       f"the {size - start} bytes from there on are ignored")

    def fetch(self, offset: int, length: int) -> dict[str, Any] | None:
        """Decode the one record at ``offset``; None when it cannot be read now."""
        fd = self._open()
        if fd is None:
            return None
        data = os.pread(fd, length, offset)
        if len(data) != length:
            return None
        try:
            record = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except DECODE_ERRORS:
            return None
        return record if isinstance(record, dict) else None


def _decode_error(data: memoryview) -> BaseException | None:
    """The error that unpacking the record at the start of ``data`` raises, if any."""
    unpacker = _new_unpacker()
    unpacker.feed(data)
    try:
        unpacker.unpack()
    except msgpack.OutOfData:
        return None
    except DECODE_ERRORS as error:
        return error
    return None


def short_error(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:80]
