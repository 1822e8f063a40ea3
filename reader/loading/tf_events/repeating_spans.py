"""Interning byte strings of records that repeat, mostly without a Python object each:
those that repeat step after step interned by numpy (each record checked against the
one a step before), the rest through a dictionary.

A program's eager ops repeat step after step, so record r usually holds the same op
type and code location as record r - P, P records (one step) earlier, at the same
place in a record of the same length. For records whose distance in bytes to their
partner is D, one numpy comparison of the block with itself shifted by D bytes
checks every such pair at once (`np.logical_and.reduceat` over each span); a record
equal to its partner takes its partner's code. The others (the first step of a
block, a step that differs) are interned through a dictionary of their bytes. The
result is exact: two spans share a code only when their bytes are equal.
"""

from __future__ import annotations

import itertools

import numpy as np

# Periods looked for (records per step), and how many records of a block show it.
_MAX_PERIOD = 256
_PROBE = 4096
# The share of probed records that must match their partner for a period to be taken.
_PERIOD_SHARE = 0.75
# A byte distance is compared by numpy (one pass over the block) only for at least
# this many records; fewer go through the dictionary.
_MIN_SHIFTED = 64


class RepeatingSpans:
    """The records of one block and the shifts that pair them with the previous step.

    Args:
        data: The block's bytes.
        starts, lengths: Each record's bytes in ``data``.
    """

    def __init__(self, data: bytes, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.data = data
        self.raw = np.frombuffer(data, dtype=np.uint8)
        self.period = _period(lengths)
        n = starts.size
        self.records = np.arange(self.period, n) if self.period else np.empty(0, np.int64)
        partners = self.records - self.period
        alike = lengths[self.records] == lengths[partners]
        self.records, partners = self.records[alike], partners[alike]
        shifts = starts[self.records] - starts[partners]
        distinct, counts = np.unique(shifts, return_counts=True)
        self._shifts = distinct[counts >= _MIN_SHIFTED].tolist()
        self._shift_of = np.zeros(n, dtype=np.int64)
        self._shift_of[self.records] = shifts
        # Per shift: the bytes its partners span (one past their last byte, which a
        # record's footer keeps inside the block), compared once for every interning.
        self._ranges: dict[int, tuple[int, int]] = {}
        for shift in self._shifts:
            paired = partners[shifts == shift]
            self._ranges[shift] = (
                int(starts[paired[0]]),
                int(starts[paired[-1]] + lengths[paired[-1]]) + 1,
            )
        self._equal: dict[int, np.ndarray] = {}

    def intern(self, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
        """Each record's code among the distinct strings ``data[start[r]:stop[r]]``,
        and those strings (empty spans share the code of ``b""``)."""
        n = start.size
        parent = np.arange(n)
        length = stop - start
        empty = length == 0
        records = self.records
        partners = records - self.period
        same = (length[records] == length[partners]) & (length[records] > 0)
        records, partners = records[same], partners[same]
        if records.size:
            alike = self._alike(start, length, records, partners)
            parent[records[alike]] = partners[alike]
        roots = np.flatnonzero((parent == np.arange(n)) & ~empty)
        codes = np.empty(n, dtype=np.int64)
        codes[roots], distinct = intern_bytes(self.data, start[roots], stop[roots])
        if empty.any():
            codes[empty] = len(distinct)
            distinct.append(b"")
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
        return codes[parent], distinct

    def _alike(
        self, start: np.ndarray, length: np.ndarray, records: np.ndarray, partners: np.ndarray
    ) -> np.ndarray:
        """Per record: its span's bytes equal its partner's (spans of equal length)."""
        alike = np.zeros(records.size, dtype=bool)
        shift_of = self._shift_of[records]
        for shift in self._shifts:
            pick = np.flatnonzero((shift_of == shift) & (start[records] - start[partners] == shift))
            if not pick.size:
                continue
            equal = self._shifted(shift)
            first = self._ranges[shift][0]
            bounds = np.empty(2 * pick.size, dtype=np.int64)
            bounds[0::2] = start[partners[pick]] - first
            bounds[1::2] = start[partners[pick]] + length[partners[pick]] - first
            alike[pick] = np.logical_and.reduceat(equal, bounds)[0::2]
        return alike

    def _shifted(self, shift: int) -> np.ndarray:
        """Per byte x of the range of ``shift``'s partners (from its first byte):
        ``raw[x + shift] == raw[x]``."""
        equal = self._equal.get(shift)
        if equal is None:
            first, end = self._ranges[shift]
            equal = self._equal[shift] = (
                self.raw[first + shift : end + shift] == self.raw[first:end]
            )
        return equal


def intern_bytes(
    data: bytes, start: np.ndarray, stop: np.ndarray
) -> tuple[np.ndarray, list[bytes]]:
    """Codes of the strings ``data[start:stop]`` and the distinct strings."""
    keys = map(data.__getitem__, map(slice, start.tolist(), stop.tolist()))
    first: dict[bytes, int] = {}
    seen = np.fromiter(
        map(first.setdefault, keys, itertools.count()), dtype=np.int64, count=start.size
    )
    number = np.zeros(start.size, dtype=np.int64)
    number[list(first.values())] = np.arange(len(first))
    return number[seen], list(first)


def _period(lengths: np.ndarray) -> int:
    """Records per step: the shortest P for which most records of the block's start
    have the length of the record P before; 0 when none does."""
    probe = lengths[:_PROBE]
    for period in range(1, min(_MAX_PERIOD, probe.size // 2) + 1):
        if np.count_nonzero(probe[period:] == probe[:-period]) >= _PERIOD_SHARE * (
            probe.size - period
        ):
            return period
    return 0
