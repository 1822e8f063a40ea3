"""The protocol buffer wire format of many messages at once, read by numpy field by
field in lock-step.

Decoding a message with protobuf costs a call, and a Python object per field read,
per message. Here the messages of a block (each a span of one byte array, with a
read position) are read in lock-step, field by field in the order a writer puts
them: `take` reads one expected field in every message whose next field it is, with
a few numpy calls for the whole block. A message is read whole when, after the last
field expected, every message's position is at its end; one laid out otherwise
(another order, an unknown field, a repeat) stops where it differs, and the caller
leaves it to protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARINT, FIXED64, LENGTH_DELIMITED = 0, 1, 2
# A varint holds at most 64 bits: ten bytes of seven.
_MAX_VARINT_BYTES = 10


@dataclass(frozen=True)
class Taken:
    """One field read in some messages of a block.

    Attributes:
        message: The messages that had it next (positions among the spans, ascending).
        start, stop: Its bytes after the tag and, for a length-delimited field, the
            length: the value's bytes, or the contents.
        value: A varint field's value (uint64); empty for the other wire types.
    """

    message: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    value: np.ndarray


def varints(
    raw: np.ndarray, at: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The varints starting at ``raw[at]``, each to end before ``end`` (both below
    ``raw.size``): (values as uint64, the position after each, whether each was
    whole)."""
    good = at < end
    byte = raw[at]
    value = (byte & 0x7F).astype(np.uint64)
    after = at + 1
    more = np.flatnonzero(good & (byte >= 0x80))
    shift = 7
    while more.size:
        if shift >= 7 * _MAX_VARINT_BYTES:
            good[more] = False
            break
        here = after[more]
        inside = here < end[more]
        good[more[~inside]] = False
        more, here = more[inside], here[inside]
        byte = raw[here]
        value[more] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[more] = here + 1
        more = more[byte >= 0x80]
        shift += 7
    return value, after, good


def take(raw: np.ndarray, pos: np.ndarray, end: np.ndarray, number: int, wire: int) -> Taken:
    """Read field ``number`` (below 16, written as ``wire``) in every message whose
    next field it is, and move those messages' ``pos`` past it. A message whose field
    is cut short or overruns ``end`` keeps its position (it will not end whole).
    Every ``end`` must be below ``raw.size``."""
    # Every position is inside the block (a message's end is), so reading the byte
    # at a message's end is safe; it only counts when the message goes on.
    message = np.flatnonzero((raw[pos] == (number << 3 | wire)) & (pos < end))
    at = pos[message] + 1
    limit = end[message]
    value = np.empty(0, dtype=np.uint64)
    if wire == LENGTH_DELIMITED:
        length, start, good = varints(raw, at, limit)
        stop = start + length.view(np.int64)  # a length past 2**63 comes out below start
        good &= (stop >= start) & (stop <= limit)
    elif wire == VARINT:
        value, stop, good = varints(raw, at, limit)
        start = at
    else:
        start, stop = at, at + 8
        good = stop <= limit
    if not good.all():
        message, start, stop = message[good], start[good], stop[good]
        value = value[good] if value.size else value
    pos[message] = stop
    return Taken(message, start, stop, value)


def fixed64(raw: np.ndarray, start: np.ndarray, dtype: str) -> np.ndarray:
    """The 8-byte little-endian values at ``raw[start]`` as ``dtype``."""
    if not start.size:
        return np.empty(0, dtype=dtype)
    return np.lib.stride_tricks.sliding_window_view(raw, 8)[start].view(dtype).ravel()


def gather(raw: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of the spans ``raw[start[k]:stop[k]]`` end to end, and n + 1 offsets
    of each span's first byte in them."""
    lengths = stop - start
    offsets = np.zeros(start.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if not total:
        return np.empty(0, dtype=np.uint8), offsets
    positions = np.arange(total, dtype=np.int64) + np.repeat(start - offsets[:-1], lengths)
    return raw[positions], offsets


def packed_varints(
    data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The packed varints of spans laid end to end (`gather`): (their values as uint64,
    n + 1 offsets of each span's first value, whether each span holds whole varints).
    Spans that are not whole are left out of the values and offsets."""
    spans = offsets.size - 1
    nonempty = offsets[1:] > offsets[:-1]
    whole = np.ones(spans, dtype=bool)
    whole[nonempty] = data[offsets[1:][nonempty] - 1] < 0x80
    if not data.size:
        return np.empty(0, dtype=np.uint64), np.zeros(spans + 1, dtype=np.int64), whole
    ends = np.flatnonzero(data < 0x80)
    firsts = np.concatenate([[0], ends[:-1] + 1])
    too_long = ends - firsts >= _MAX_VARINT_BYTES
    if too_long.any():
        whole[np.searchsorted(offsets, firsts[too_long], side="right") - 1] = False
    if not whole.all():
        lengths = np.diff(offsets)
        kept = np.repeat(whole, lengths)
        data, offsets = data[kept], np.concatenate([[0], np.cumsum(lengths * whole)])
        values, counts, inner = packed_varints(data, offsets)
        return values, counts, whole & inner
    within = np.arange(data.size, dtype=np.int64) - np.repeat(firsts, ends - firsts + 1)
    values = np.bitwise_or.reduceat(
        (data & 0x7F).astype(np.uint64) << (7 * within).astype(np.uint64), firsts
    )
    return values, np.searchsorted(ends, offsets, side="left").astype(np.int64), whole
