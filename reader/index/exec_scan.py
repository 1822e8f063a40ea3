"""Vectorised indexing of `exec` records (dumps before format 2.0), from their raw
msgpack bytes, by template.

Decoding a million execution records into dicts costs seconds, while the index needs
only a few fields of each (``i``, ``op``, ``graph``, ``out`` and the non-finite counts
of ``s``). This module reads those fields for a whole block of records at once with
numpy, without building a Python object per record.

It works from a **template**: the key sequence of one record of the block (the writer
packs every record with the same keys in the same order). All records of the block
are checked against it in lockstep, one key at a time: the key's bytes must be where
the template puts them, and each value must have a type this module reads (ints,
nil, floats, arrays of those; the ``op`` string; ``s`` rows of float64). A record that
matches the template and ends exactly at its framed end is indexed from the columns
this returns; any other record (another key order, an unexpected type, a string
elsewhere, damage) is left to the caller, which decodes it whole and treats it as
before. So the result never differs from decoding every record: only the speed does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgpack
import numpy as np

from reader import format as fmt
from reader.contract import KIND_KEY, ExecRecord
from reader.limits import MAX_ID
from reader.summary_rows import count_columns, stored_width

# Zero bytes appended to a block so that fixed-size gathers (a key, an int, a summary
# row of at most 15 floats) past a record's end stay inside it.
PAD = 256
# The op-type hash's multipliers (a test sets them to 0 to force collisions).
HASH_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9)
# Templates tried per block before the remaining records are left to the caller.
MAX_TEMPLATES = 4

# Total size (type byte + payload) of each msgpack scalar by its first byte; 0: not a
# scalar this module skips (strings, bin, ext, arrays and maps are not scalars).
_SCALAR_SIZE = np.zeros(256, np.int64)
_SCALAR_SIZE[0x00:0x80] = 1  # positive fixint
_SCALAR_SIZE[0xE0:0x100] = 1  # negative fixint
for _byte, _size in {
    0xC0: 1,
    0xC2: 1,
    0xC3: 1,
    0xCA: 5,
    0xCB: 9,
    0xCC: 2,
    0xCD: 3,
    0xCE: 5,
    0xCF: 9,
    0xD0: 2,
    0xD1: 3,
    0xD2: 5,
    0xD3: 9,
}.items():
    _SCALAR_SIZE[_byte] = _size
# Size of a non-negative int as the reader accepts it for ids (fixint, uint8..uint64);
# 0 otherwise. Signed encodings and values >= 2**63 go to the caller.
_UINT_SIZE = np.zeros(256, np.int64)
_UINT_SIZE[0x00:0x80] = 1
for _byte, _size in {0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9}.items():
    _UINT_SIZE[_byte] = _size
_UINT_SHIFT = np.zeros(256, np.uint64)  # big-endian 8-byte window >> shift = the value
for _byte, _shift in {0xCC: 56, 0xCD: 48, 0xCE: 32, 0xCF: 0}.items():
    _UINT_SHIFT[_byte] = _shift
_KIND_EXEC = b"\xa4" + fmt.KIND_EXECUTION.encode()  # the fixstr "exec"
# Keys without which a record is malformed (the caller raises for it).
_REQUIRED = {KIND_KEY, ExecRecord.INDEX, ExecRecord.OP_TYPE, ExecRecord.OUTPUTS}


@dataclass
class ExecScan:
    """Fields of the block's records that matched a template (``ok``); others are -1/0.

    Attributes:
        ok: Per record, True when it was indexed here.
        index: ``i``.
        op_code: The interned code of ``op`` (the caller's table).
        has_graph: ``graph`` was present and not nil.
        out_start: n + 1 positions in ``out_ids``: record r's outputs are
            ``out_ids[out_start[r]:out_start[r + 1]]`` (empty for records not ok).
        out_ids: Every output tensor id, in record then slot order.
        alert_record, alert_slot, alert_counts: One row per alerting output of an ok
            record, in record then slot order; counts are (nan, neg_inf, pos_inf), -1
            when the mode has none.
    """

    ok: np.ndarray
    index: np.ndarray
    op_code: np.ndarray
    has_graph: np.ndarray
    out_start: np.ndarray
    out_ids: np.ndarray
    alert_record: np.ndarray
    alert_slot: np.ndarray
    alert_counts: np.ndarray


class _Block:
    """A block's bytes, padded, with unaligned 8-byte views at every byte offset.

    ``le64[p]`` is bytes ``p..p+7`` as a little-endian uint64 (for comparing keys),
    ``be64[p]`` / ``bef8[p]`` the same bytes as msgpack's big-endian uint64 / float64:
    one fancy index per record reads a whole int or float.
    """

    def __init__(self, data: bytes | bytearray, end: int) -> None:
        # Bytes past `end` (the last record's) are never part of a record that is read
        # whole: they only keep gathers in bounds.
        padded = data if len(data) >= end + PAD else bytes(data) + bytes(PAD)
        self.buf = np.frombuffer(padded, dtype=np.uint8)
        words = len(padded) - 7
        self.le64 = np.ndarray((words,), dtype="<u8", buffer=padded, strides=(1,))
        self.be64 = np.ndarray((words,), dtype=">u8", buffer=padded, strides=(1,))
        self.bef8 = np.ndarray((words,), dtype=">f8", buffer=padded, strides=(1,))


class _Pass:
    """One template applied to a subset of the block's records, in lockstep."""

    def __init__(self, block: _Block, rows: np.ndarray, pos: np.ndarray) -> None:
        self.block = block
        buf = self.buf = block.buf
        self.rows = rows  # record numbers within the block
        self.pos = pos  # per row, the next byte to read
        self.good = np.ones(rows.size, dtype=bool)
        self.limit = buf.size - PAD  # >= every record's end

    def clip(self) -> None:
        # Garbage lengths must not send later gathers out of the buffer.
        np.minimum(self.pos, self.limit, out=self.pos)

    def expect(self, prefix: bytes) -> None:
        """The bytes at each row's position must be ``prefix``; move past them."""
        for at in range(0, len(prefix), 8):
            part = prefix[at : at + 8]
            word = self.block.le64[self.pos + at] if at else self.block.le64[self.pos]
            if len(part) < 8:
                word &= np.uint64((1 << (8 * len(part))) - 1)
            self.good &= word == np.uint64(int.from_bytes(part, "little"))
        self.pos += len(prefix)
        self.clip()

    def uint(self, at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(value, size) of the non-negative int at ``at`` (default: every row's
        position); size 0 where there is none."""
        pos = self.pos if at is None else at
        first = self.buf[pos]
        size = _UINT_SIZE[first]
        wide = self.block.be64[pos + 1] >> _UINT_SHIFT[first]
        value = np.where(first < 0x80, first.astype(np.uint64), wide)
        size[value >= np.uint64(1 << 63)] = 0
        return value.astype(np.int64), size

    def array_header(self, at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(count, header size) of the array at ``at``; header size 0 where none."""
        pos = self.pos if at is None else at
        first = self.buf[pos].astype(np.int64)
        count = np.where((first & 0xF0) == 0x90, first & 0x0F, 0)
        header = np.where((first & 0xF0) == 0x90, 1, 0)
        is16 = first == 0xDC
        if is16.any():
            count[is16] = (self.buf[pos[is16] + 1].astype(np.int64) << 8) | self.buf[pos[is16] + 2]
            header[is16] = 3
        return count, header

    def fail(self, bad: np.ndarray) -> None:
        self.good &= ~bad


def _skip_value(p: _Pass) -> None:
    """Move past one scalar, or one array of scalars; anything else fails the row."""
    size = _SCALAR_SIZE[p.buf[p.pos]]
    count, header = p.array_header()
    p.fail((size == 0) & (header == 0))
    count[~p.good] = 0
    p.pos += size + header
    p.clip()
    _skip_scalars(p, count)


def _skip_scalars(p: _Pass, count: np.ndarray) -> None:
    for k in range(int(count.max(initial=0))):
        active = np.flatnonzero(count > k)
        size = _SCALAR_SIZE[p.buf[p.pos[active]]]
        p.good[active[size == 0]] = False
        p.pos[active] += size
        p.clip()


def _kind(p: _Pass) -> None:
    p.expect(_KIND_EXEC)


def scan_exec_frames(
    data: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    mode: str,
    intern: Callable[[bytes], int | None],
) -> ExecScan:
    """Index the records framed at ``data[starts[r]:ends[r]]`` that fit a template.

    Args:
        data: A block of whole records.
        starts, ends: int64 offsets of each record in ``data``.
        mode: The run's tensor debug mode (which summary columns count non-finites).
        intern: Maps an op type's UTF-8 bytes to its code; None when not valid UTF-8.
    """
    n = starts.size
    block = _Block(data, int(ends[-1]) if n else 0)
    width = stored_width(mode) if mode not in (fmt.NO_TENSOR, fmt.FULL_TENSOR) else 0
    count_cols = None if mode == fmt.CURT_HEALTH else count_columns(mode)
    ok = np.zeros(n, dtype=bool)
    index = np.full(n, -1, dtype=np.int64)
    op_start = np.zeros(n, dtype=np.int64)
    op_len = np.zeros(n, dtype=np.int64)
    has_graph = np.zeros(n, dtype=bool)
    out_count = np.zeros(n, dtype=np.int64)
    outs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (record, slot, id)
    alerts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (record, slot, counts)

    pending = np.arange(n)
    for _ in range(MAX_TEMPLATES):
        if not pending.size:
            break
        template = _template(data, int(starts[pending[0]]), int(ends[pending[0]]))
        if template is None or not _REQUIRED <= set(template):
            pending = pending[1:]  # decoded whole by the caller, which reports it
            continue
        # Fields a failed earlier pass may have written for these records.
        index[pending] = -1
        has_graph[pending] = False
        out_count[pending] = 0
        p = _Pass(block, pending, starts[pending].copy())
        p.expect(bytes([0x80 | len(template)]))
        pass_outs: list = []
        pass_alerts: list = []
        for key in template:
            p.expect(bytes([0xA0 | len(key)]) + key.encode())
            if key == KIND_KEY:
                _kind(p)
            elif key == ExecRecord.INDEX:
                value, size = p.uint()
                p.fail((size == 0) | (value > MAX_ID))
                index[pending] = value
                p.pos += size
            elif key == ExecRecord.OP_TYPE:
                first = p.buf[p.pos].astype(np.int64)
                length = np.where((first & 0xE0) == 0xA0, first & 0x1F, 0)
                header = np.where((first & 0xE0) == 0xA0, 1, 0)
                is8 = first == 0xD9
                length[is8] = p.buf[p.pos[is8] + 1]
                header[is8] = 2
                p.fail(header == 0)
                op_start[pending] = p.pos + header
                op_len[pending] = length
                p.pos += header + length
            elif key == ExecRecord.GRAPH:
                is_nil = p.buf[p.pos] == 0xC0
                _, size = p.uint()
                p.fail(~is_nil & (size == 0))
                has_graph[pending] = ~is_nil
                p.pos += np.where(is_nil, 1, size)
            elif key == ExecRecord.OUTPUTS:
                count, header = p.array_header()
                p.fail(header == 0)
                count[~p.good] = 0
                out_count[pending] = count
                p.pos += header
                p.clip()
                for k in range(int(count.max(initial=0))):
                    active = np.flatnonzero(count > k)
                    value, size = p.uint(p.pos[active])
                    p.good[active[size == 0]] = False
                    pass_outs.append((active, np.full(active.size, k), value))
                    p.pos[active] += size
                    p.clip()
            elif key == ExecRecord.SUMMARIES and width:
                _summaries(p, width, mode, count_cols, pass_alerts)
            else:
                _skip_value(p)
            p.clip()
        p.good &= p.pos == ends[pending]
        matched = pending[p.good]
        ok[matched] = True
        for active, slot, value in pass_outs:
            keep = p.good[active]
            outs.append((pending[active[keep]], slot[keep], value[keep]))
        for active, slot, counts in pass_alerts:
            keep = p.good[active]
            alerts.append((pending[active[keep]], slot[keep], counts[keep]))
        remaining = pending[~p.good]
        if not p.good[0]:
            remaining = remaining[1:]  # its own template does not fit it: the caller's
        pending = remaining

    op_code = _op_codes(block, ok, op_start, op_len, intern)  # may clear `ok`
    out_count[~ok] = 0
    out_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(out_count, out=out_start[1:])
    out_ids = np.empty(int(out_start[-1]), dtype=np.int64)
    for record, slot, value in outs:
        keep = ok[record]  # op codes may have failed some records since
        out_ids[out_start[record[keep]] + slot[keep]] = value[keep]
    if alerts:
        record = np.concatenate([a[0] for a in alerts])
        slot = np.concatenate([a[1] for a in alerts])
        counts = np.concatenate([a[2] for a in alerts]).reshape(-1, 3)
        keep = ok[record]
        record, slot, counts = record[keep], slot[keep], counts[keep]
        order = np.lexsort((slot, record))
        alert_record, alert_slot, alert_counts = record[order], slot[order], counts[order]
    else:
        alert_record = np.empty(0, np.int64)
        alert_slot = np.empty(0, np.int64)
        alert_counts = np.empty((0, 3), np.int64)
    return ExecScan(
        ok=ok,
        index=index,
        op_code=op_code,
        has_graph=has_graph,
        out_start=out_start,
        out_ids=out_ids,
        alert_record=alert_record,
        alert_slot=alert_slot,
        alert_counts=alert_counts,
    )


def _summaries(
    p: _Pass, width: int, mode: str, count_cols: tuple[int, int, int] | None, found: list
) -> None:
    """``s``: nil, or an array of (nil | ``width`` float64) rows; collects alert rows."""
    is_nil = p.buf[p.pos] == 0xC0
    count, header = p.array_header()
    p.fail(~is_nil & (header == 0))
    count[~p.good | is_nil] = 0
    p.pos += np.where(is_nil, 1, header)
    p.clip()
    row_header = np.uint8(0x90 | width) if width <= 15 else None
    float_at = 1 + 9 * np.arange(width)
    for k in range(int(count.max(initial=0))):
        active = np.flatnonzero(count > k)
        pos = p.pos[active]
        first = p.buf[pos]
        nil = first == 0xC0
        row = first == row_header if row_header is not None else np.zeros(active.size, bool)
        markers = p.buf[pos[:, None] + float_at]
        row &= (markers == 0xCB).all(axis=1)
        p.good[active[~(nil | row)]] = False
        p.pos[active] += np.where(row, 1 + 9 * width, 1)
        p.clip()
        rows = np.flatnonzero(row)
        if not rows.size:
            continue
        if mode == fmt.CURT_HEALTH:
            value = p.block.bef8[pos[rows] + 2]
            flag = value != 0
            counts = np.full((rows.size, 3), -1, dtype=np.int64)
        elif count_cols is not None:
            values = np.stack([p.block.bef8[pos[rows] + 2 + 9 * c] for c in count_cols], 1)
            flag = (values != 0).any(axis=1)
            counts = values[flag].astype(np.int64)
        else:
            continue
        if flag.any():
            hit = active[rows[flag]]
            if mode == fmt.CURT_HEALTH:
                counts = counts[flag]
            found.append((hit, np.full(hit.size, k), counts))


def _template(data: bytes | bytearray, start: int, end: int) -> list[str] | None:
    """The key sequence of one record: a map of 1..15 short ASCII string keys."""
    try:
        record = msgpack.unpackb(data[start:end], raw=False, strict_map_key=False)
    except Exception:  # any decoding failure: the caller's record
        return None
    if (
        not isinstance(record, dict)
        or record.get(KIND_KEY) != fmt.KIND_EXECUTION
        or not 0 < len(record) <= 15
    ):
        return None
    keys = list(record)
    if not all(isinstance(k, str) and k.isascii() and 0 < len(k) <= 31 for k in keys):
        return None
    return keys


def _op_codes(
    block: _Block,
    ok: np.ndarray,
    op_start: np.ndarray,
    op_len: np.ndarray,
    intern: Callable[[bytes], int | None],
) -> np.ndarray:
    """Interned op-type code per ok record; records whose op is not UTF-8 lose ``ok``.

    Records are grouped by a 64-bit hash of their op bytes (read 8 at a time); each
    group's first record is interned, and every record is then checked to have exactly
    its group's bytes, so a hash collision costs time, never a wrong code.
    """
    codes = np.full(ok.size, -1, dtype=np.int64)
    rows = np.flatnonzero(ok)
    if not rows.size:
        return codes
    start, length = op_start[rows], op_len[rows]
    words = []  # per 8-byte word k, the records long enough to have it, and the word
    seed, mix = (np.uint64(m) for m in HASH_MULTIPLIERS)
    digest = length.astype(np.uint64) * seed
    for k in range(int(-(-int(length.max()) // 8))):
        active = np.flatnonzero(length > 8 * k)
        word = block.le64[start[active] + 8 * k]
        tail = length[active] - 8 * k
        short = tail < 8
        word[short] &= (np.uint64(1) << (8 * tail[short]).astype(np.uint64)) - np.uint64(1)
        words.append((active, word))
        mixed = (digest[active] ^ word) * mix
        digest[active] = mixed ^ (mixed >> np.uint64(31))
    _, first, group = np.unique(digest, return_index=True, return_inverse=True)
    group = group.ravel()
    exact = length == length[first][group]
    for active, word in words:
        # A record of its group's length has each word its group's first record has.
        rep = first[group[active]]
        rep_pos = np.minimum(np.searchsorted(active, rep), active.size - 1)
        exact[active] &= (active[rep_pos] == rep) & (word == word[rep_pos])
    looked_up = np.full(first.size, -1, dtype=np.int64)
    data = block.buf
    for g, r in enumerate(first.tolist()):
        code = intern(data[start[r] : start[r] + length[r]].tobytes())
        looked_up[g] = -1 if code is None else code
    result = looked_up[group]
    for r in np.flatnonzero(~exact).tolist():  # a hash collision: intern on its own
        code = intern(data[start[r] : start[r] + length[r]].tobytes())
        result[r] = -1 if code is None else code
    codes[rows] = result
    ok &= codes >= 0
    return codes
