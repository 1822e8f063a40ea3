"""Incremental reading of one TFRecord file: the framing of TensorFlow's dump files and
its CRCs.

A record is ``uint64 length | uint32 masked CRC32C of the length bytes | data |
uint32 masked CRC32C of the data``, little-endian. What is checked, and why
(docs/tf_dumps.md, "Checksums"): the length's CRC of every record, vectorised over a
block, so a torn or shifted header is damage and never a record boundary guessed
from garbage; the data's CRC only when one record is read on demand (`fetch`):
CRC32C in pure Python costs about a second per 10 MB, so checking every byte while
indexing would cost more than everything else together. A record cut short at the
end of the file is a tail not written yet (a live writer, or a killed one): reading
stops before it and resumes there on the next call.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reader.index.segment_reader import GrowingFile

# Bytes read per `pread`: as for our own segments (reader.index.segment_reader).
READ_BLOCK_BYTES = 8 << 20
HEADER_BYTES = 12  # length, its CRC
FOOTER_BYTES = 4  # the data's CRC
# Records larger than this are not CRC-checked even on demand (a FULL_TENSOR value of
# many megabytes would take seconds in pure Python).
FETCH_CRC_MAX_BYTES = 1 << 20

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(crc: int) -> int:
    """TFRecord's masking of a CRC (rotate right by 15 bits, add a constant)."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """Masked CRC-32C of each row of an ``(n, k)`` uint8 array, vectorised."""
    crc = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for column in range(rows.shape[1]):
        crc = _TABLE_NP[(crc ^ rows[:, column]) & 0xFF] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


def length_ok(header: bytes | bytearray | memoryview) -> bool:
    """True when a 12-byte record header's length matches its CRC."""
    return masked_crc(crc32c(header[:8])) == _CRC.unpack_from(header, 8)[0]


class RecordFile(GrowingFile):
    """Reads the records of one TFRecord file as it grows (`GrowingFile`'s attributes)."""

    def read_new(self) -> Iterator[tuple[bytes, int, np.ndarray, np.ndarray]]:
        """Yield ``(data, base, starts, lengths)``: blocks of the complete records
        past `offset`, read from file byte ``base``. Record ``r``'s data is
        ``data[starts[r]:starts[r] + lengths[r]]``; its header starts at file byte
        ``base + starts[r] - 12`` (what `fetch` takes). `offset` moves past each block
        as it is yielded; a header that fails its CRC ends reading, with `damage` set.
        """
        source = self._open()
        if source is None or self.damage is not None:
            return
        size = source.size()
        while size - self.offset >= HEADER_BYTES:
            base = self.offset
            header = self._pread(source, HEADER_BYTES, base)
            if header is None:
                return
            if not length_ok(header):
                self._damaged(base, size)
                return
            # A record larger than a block is read whole.
            (length,) = _LENGTH.unpack_from(header)
            want = min(max(READ_BLOCK_BYTES, length + HEADER_BYTES + FOOTER_BYTES), size - base)
            data = self._pread(source, want, base)
            if data is None:
                return
            starts, lengths, stop = _frame(data)
            bad = _first_bad_length(data, starts)
            if bad is not None:
                stop = int(starts[bad]) - HEADER_BYTES
                starts, lengths = starts[:bad], lengths[:bad]
            elif stop + HEADER_BYTES <= len(data) and not length_ok(
                data[stop : stop + HEADER_BYTES]
            ):
                bad = stop
            if not starts.size:
                if bad is not None:
                    self._damaged(base + stop, size)
                return  # the first record is cut short: not written yet
            self.offset = base + stop
            yield data, base, starts, lengths
            if bad is not None:
                self._damaged(base + stop, size)
                return

    def _damaged(self, start: int, size: int) -> None:
        self.damage = (
            f"{self.name}: a record length that fails its CRC at byte {start}; "
            f"the {size - start} bytes from there on are ignored"
        )

    def fetch_span(self, offset: int, length: int) -> list[bytes] | None:
        """The data of the consecutive records in ``length`` bytes from ``offset`` (a
        chunk of traces), each checked as `fetch` checks one; None when any fails."""
        source = self._open()
        if source is None:
            return None
        raw = self._pread(source, length, offset)
        if raw is None:
            return None
        starts, lengths, stop = _frame(raw)
        if len(raw) != length or stop != length or not starts.size:
            return None
        found = []
        for start, size in zip(starts.tolist(), lengths.tolist()):
            head = start - HEADER_BYTES
            if not length_ok(raw[head:start]):
                return None
            data = raw[start : start + size]
            if (
                size <= FETCH_CRC_MAX_BYTES
                and masked_crc(crc32c(data)) != _CRC.unpack_from(raw, start + size)[0]
            ):
                return None
            found.append(data)
        return found


def _frame(data: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """Data starts and lengths of the complete records at the start of ``data``, and
    the offset of the first byte not in one.

    Framing is sequential (each length says where the next record starts), so it is
    a Python loop; but the records of a dump repeat (the same ops traced step after
    step), so the loop looks for the shortest period in the lengths it framed and
    guesses that they go on repeating, checking the guess a window at a time with
    numpy: every record whose length field holds the guessed length is exactly where
    the loop would have found it. At the first miss (ops that ran in another order)
    the loop frames one period and guesses again.
    """
    starts: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    raw = np.frombuffer(data, dtype=np.uint8)
    pos, limit, looped = 0, _PROBE, 0
    cycle: np.ndarray | None = None  # the lengths of one period, as first seen
    while True:
        pos, found_starts, found_lengths, complete = _frame_loop(data, pos, limit)
        starts.append(found_starts)
        lengths.append(found_lengths)
        looped += found_lengths.size
        if not complete:
            break
        recent = np.concatenate(lengths[-4:])[-_PROBE:]
        if cycle is None or looped >= _PROBE:
            period = _period(recent)
            cycle = recent[-period:] if period else None
            looped = 0
        if cycle is None:
            limit = _PROBE
            continue
        if not _is_rotation(recent[-cycle.size :], cycle):
            limit = cycle.size  # still out of step: one more period by the loop
            continue
        pos, guessed_starts, guessed_lengths = _frame_by_pattern(raw, pos, recent[-cycle.size :])
        starts.append(guessed_starts)
        lengths.append(guessed_lengths)
        limit, looped = cycle.size, 0
    return np.concatenate(starts), np.concatenate(lengths), pos


def _is_rotation(lengths: np.ndarray, cycle: np.ndarray) -> bool:
    """Whether ``lengths`` is ``cycle`` started at some record of it."""
    if lengths.size != cycle.size:
        return False
    doubled = np.concatenate([cycle, cycle])
    positions = np.flatnonzero(cycle == lengths[0])
    return any(np.array_equal(doubled[p : p + cycle.size], lengths) for p in positions.tolist())


# Records framed one by one while looking for a period, and the longest period.
_PROBE = 512
_MAX_PERIOD = _PROBE // 2
# Records checked by the first window of a guess; each window after a full hit is
# four times larger (a miss costs little, a long run of hits few numpy calls).
_FIRST_WINDOW = 256


def _period(lengths: np.ndarray) -> int:
    """The shortest period of all of ``lengths`` (at least two cycles); 0 when none."""
    for period in range(1, min(_MAX_PERIOD, lengths.size // 2) + 1):
        if np.array_equal(lengths[:-period], lengths[period:]):
            return period
    return 0


def _frame_loop(data: bytes, pos: int, limit: int) -> tuple[int, np.ndarray, np.ndarray, bool]:
    """Frame up to ``limit`` records from ``pos``: (the offset after them, their data
    starts, their lengths, whether all ``limit`` were complete)."""
    starts, lengths = array("q"), array("q")
    add_start, add_length = starts.append, lengths.append
    unpack = _LENGTH.unpack_from
    end = len(data)
    count = 0
    while pos + HEADER_BYTES <= end and count < limit:
        (length,) = unpack(data, pos)
        after = pos + HEADER_BYTES + length + FOOTER_BYTES
        if after > end:
            break
        add_start(pos + HEADER_BYTES)
        add_length(length)
        pos = after
        count += 1
    return (
        pos,
        np.frombuffer(starts, dtype=np.int64),
        np.frombuffer(lengths, dtype=np.int64),
        count == limit,
    )


def _frame_by_pattern(
    raw: np.ndarray, pos: int, pattern: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray]:
    """Frame the records from ``pos`` on whose lengths repeat ``pattern``: (the offset
    after them, their data starts, their lengths)."""
    found_starts: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    found_lengths: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    window = _FIRST_WINDOW
    while True:
        cycles = -(-window // pattern.size)
        guessed = np.tile(pattern, cycles)
        ends = pos + np.cumsum(guessed + HEADER_BYTES + FOOTER_BYTES)
        heads = ends - guessed - HEADER_BYTES - FOOTER_BYTES
        fits = ends <= raw.size
        guessed, heads, ends = guessed[fits], heads[fits], ends[fits]
        if not guessed.size:
            break
        stored = sliding_window_view(raw, 8)[heads].view("<u8").ravel()
        misses = np.flatnonzero(stored != guessed.astype(np.uint64))
        count = int(misses[0]) if misses.size else guessed.size
        if count:
            found_starts.append(heads[:count] + HEADER_BYTES)
            found_lengths.append(guessed[:count])
            pos = int(ends[count - 1])
        # A full window that ends the pattern's cycle continues it; else stop.
        if misses.size or count % pattern.size or not fits.all():
            break
        window *= 4
    return pos, np.concatenate(found_starts), np.concatenate(found_lengths)


def _first_bad_length(data: bytes, starts: np.ndarray) -> int | None:
    """Position among ``starts`` of the first record whose length fails its CRC."""
    if not starts.size:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    headers = sliding_window_view(raw, HEADER_BYTES)[starts - HEADER_BYTES]
    stored = headers[:, 8:].copy().view("<u4").ravel()
    bad = np.flatnonzero(masked_crc32c_rows(headers[:, :8]) != stored)
    return int(bad[0]) if bad.size else None
