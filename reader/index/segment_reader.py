"""Incremental reading of one segment file (`os.pread` + `Unpacker.feed`): the records
appended since the last read.

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
from reader import storage
from reader.byte_sources import ByteSource, DamagedPart, LocalFile, Part, PartsSource
from reader.contract import KIND_KEY, HeaderRecord
from reader.errors import FormatVersionError
from reader.storage import Store

# Bytes read per `pread`. Large enough that syscalls cost nothing next to decoding,
# small enough that indexing a 100 MB segment never holds it all in memory at once.
READ_BLOCK_BYTES = 8 << 20

# Everything msgpack can raise on bad input: its own errors, ValueError (invalid UTF-8,
# bad format bytes), TypeError (an unhashable map key), RecursionError-like StackError.
DECODE_ERRORS = (ValueError, TypeError, msgpack.UnpackException)


def _new_unpacker() -> msgpack.Unpacker:
    # max_buffer_size=0 lifts the 100 MiB default: a FULL_TENSOR record may be larger.
    return msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)


def list_segments(
    run_path: str, store: Store | None = None, fresh_within: float = 0.0
) -> dict[str, dict[int, list[Part]]] | None:
    """The files of each segment present, per stream, segments ascending (whole files
    or part objects, `reader.storage.list_segments`); None when the run is gone."""
    return storage.list_segments(run_path, store, fresh_within)


class GrowingFile:
    """A file read by position as a writer appends to it: opened lazily, read-only, kept
    open until `close()`, so records can still be fetched after the file is deleted.
    Its bytes come from a `reader.storage.ByteSource`: a local file, or the part
    objects of a segment in a bucket.

    Args:
        path: The file's path (for a segment in parts, the segment's name in its run).
        parts: The segment's files as listed (`list_segments`); None: the local file
            at ``path``.
        store: Where the parts are; None: the store of ``path``.

    Attributes:
        path: The file's path.
        offset: End of the last complete record read: where the next read starts.
        damage: A one-line notice once the file proved unreadable; reading stops there.
        vanished: True when the file was gone when it was to be opened (or, in a
            bucket, when a part not read yet was deleted).
        read_error: Why the last read stopped early (a network error reading a
            bucket), or None; the next read tries again.
    """

    def __init__(
        self, path: str, parts: list[Part] | None = None, store: Store | None = None
    ) -> None:
        self.path = path
        self.offset = 0
        self.damage: str | None = None
        self.vanished = False
        self.read_error: str | None = None
        self._parts = parts
        self._store = store
        self._source: ByteSource | None = None

    @property
    def name(self) -> str:
        """The file name, for notices."""
        return os.path.basename(self.path)

    def set_parts(self, parts: list[Part]) -> None:
        """Take a newer listing of the file's parts (a segment in a bucket grows by
        parts)."""
        self._parts = parts
        if isinstance(self._source, PartsSource):
            self._source.set_parts(parts)

    def _open(self) -> ByteSource | None:
        if self._source is None and not self.vanished and self.damage is None:
            try:
                if self._parts is None:
                    self._source = LocalFile(self.path)
                else:
                    store = self._store or storage.store_for(self.path)
                    self._source = store.open_parts(self._parts)
            except FileNotFoundError:
                self.vanished = True
            except OSError as error:
                self.damage = f"{self.name}: cannot open ({error.strerror or error})"
        return self._source

    def _pread(self, source: ByteSource, length: int, offset: int) -> bytes | None:
        """``source.pread``; None when it failed (`vanished`, `damage` or `read_error`
        say why)."""
        try:
            data = source.pread(length, offset)
        except FileNotFoundError:
            self.vanished = True
            return None
        except DamagedPart as error:
            self.damage = f"{self.name}: {error} at byte {offset}"
            return None
        except OSError as error:
            self.read_error = f"{self.name}: cannot read ({error.strerror or error})"
            return None
        self.read_error = None
        return data

    def close(self) -> None:
        """Close the file; records can no longer be fetched by offset."""
        if self._source is not None:
            self._source.close()
            self._source = None

    def size(self) -> int:
        """The file's current size in bytes (0 when it cannot be opened)."""
        source = self._open()
        return source.size() if source is not None else 0

    def reservable(self) -> int:
        """The bytes past `offset` the indexes may pre-size their columns for
        (`reader.byte_sources.ByteSource.reservable`)."""
        source = self._open()
        return source.reservable(self.offset) if source is not None else 0


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

    def __init__(
        self,
        path: str,
        stream: str,
        segment: int,
        parts: list[Part] | None = None,
        store: Store | None = None,
    ) -> None:
        super().__init__(path, parts, store)
        self.stream = stream
        self.segment = segment
        self.header: dict[str, Any] | None = None

    def _open_undamaged(self) -> tuple[ByteSource, int] | None:
        """``(source, size)`` of a file still worth reading; None once damaged or gone."""
        if self.damage is not None:
            return None
        source = self._open()
        if source is None:
            return None
        return source, source.size()

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
        source, size = opened
        unpacker = _new_unpacker()
        base = self.offset  # file offset of the unpacker's position 0
        pos = self.offset  # next file byte to read
        while pos < size:
            data = self._pread(source, min(READ_BLOCK_BYTES, size - pos), pos)
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
                if not isinstance(record, dict) or not isinstance(record.get(KIND_KEY), str):
                    self._damaged(start, size, "a record that is not a map with a kind")
                    return
                if self.header is None:
                    if not self._check_header(record, start, size):
                        return
                    continue
                yield start, self.offset, record

    def read_new_frames(
        self, pad: int = 0
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
        source, size = opened
        if self.header is None and not self._read_header(source, size):
            return
        pos = self.offset  # next file byte to read
        leftover = b""
        while pos < size:
            # One buffer per block: the unread tail of the last one, the new bytes, and
            # `pad` zero bytes (room for the caller's fixed-size reads past a record).
            want = min(READ_BLOCK_BYTES, size - pos)
            data = bytearray(len(leftover) + want + pad)
            data[: len(leftover)] = leftover
            try:
                got = source.readinto(memoryview(data)[len(leftover) : len(leftover) + want], pos)
            except DamagedPart as failure:
                self.damage = f"{self.name}: {failure} at byte {pos}"
                break
            except OSError as failure:
                self.vanished = isinstance(failure, FileNotFoundError)
                self.read_error = f"{self.name}: cannot read ({failure.strerror or failure})"
                break
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

    def _read_header(self, source: ByteSource, size: int) -> bool:
        """Read and check the header record; False while it is incomplete or bad."""
        unpacker = _new_unpacker()
        head = self._pread(source, min(size, 1 << 16), 0)
        if head is None:
            return False
        unpacker.feed(head)
        try:
            record = unpacker.unpack()
        except msgpack.OutOfData:
            if size <= 1 << 16:
                return False  # not written whole yet
            rest = self._pread(source, size - (1 << 16), 1 << 16)
            if rest is None:
                return False
            unpacker.feed(rest)
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
        if not isinstance(record, dict) or not isinstance(record.get(KIND_KEY), str):
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
        version = self.header.get(HeaderRecord.VERSION) if self.header is not None else None
        if (
            isinstance(version, list)
            and len(version) >= 2
            and all(isinstance(v, int) for v in version[:2])
        ):
            return version[0], version[1]
        return None

    def mark_damaged(self, start: int, what: str) -> None:
        """Record that the record at file byte ``start`` is unusable: reading stops there."""
        source = self._open()
        size = source.size() if source is not None else start
        self._damaged(start, size, what)

    def _check_header(self, record: dict[str, Any], start: int, size: int) -> bool:
        if (
            record.get(KIND_KEY) != fmt.KIND_HEADER
            or record.get(HeaderRecord.FORMAT) != fmt.FORMAT_NAME
        ):
            self._damaged(start, size, "not a tfdbg-tui dump file (no header)")
            return False
        version = record.get(HeaderRecord.VERSION)
        if (
            not isinstance(version, list)
            or len(version) < 2
            or not all(isinstance(v, int) for v in version[:2])
        ):
            self._damaged(start, size, "header without a valid format version")
            return False
        if version[0] > fmt.FORMAT_VERSION[0]:
            raise FormatVersionError(
                f"{self.name}: dump format version {version[0]}.{version[1]} is newer than "
                f"this reader's {fmt.FORMAT_VERSION[0]}.{fmt.FORMAT_VERSION[1]}; "
                "upgrade tfdbg-tui to read it"
            )
        self.header = record
        return True

    def _damaged(self, start: int, size: int, what: str) -> None:
        self.damage = (
            f"{self.name}: {what} at byte {start}; "
            f"the {size - start} bytes from there on are ignored"
        )

    def fetch(self, offset: int, length: int) -> dict[str, Any] | None:
        """Decode the one record at ``offset``; None when it cannot be read now."""
        source = self._open()
        if source is None:
            return None
        data = self._pread(source, length, offset)
        if data is None or len(data) != length:
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
