"""Growable numpy columns, and `Spans`, the map from absolute indices to their rows.

Executions and traces are numbered from 0 for the whole run, but only some are on
disk: under a circular buffer the oldest leave, and the first alert's window stays
while what followed it leaves (docs/format.md section 7). An index keeps the records
on disk in consecutive rows of its columns; `Spans` maps each index to its row. It
holds one entry per run of consecutive indices (one, or two around a pinned window),
so the map costs nothing per record.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import numpy as np

from reader.summary_rows import stored_width, summary_width


class Column:
    """A growable 1-D or 2-D numpy column; rows are appended at the end."""

    def __init__(self, dtype: Any, width: int | None = None, capacity: int = 1024) -> None:
        self._shape_tail = () if width is None else (width,)
        self._data = np.empty((capacity,) + self._shape_tail, dtype=dtype)
        self.size = 0

    def reserve(self, capacity: int) -> None:
        """Make room for ``capacity`` rows in total (pages are touched only when used)."""
        if capacity > self._data.shape[0]:
            grown = np.empty((capacity,) + self._shape_tail, dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    def extend(self, rows: np.ndarray) -> None:
        """Append rows (a scalar row appends one)."""
        rows = np.asarray(rows)
        n = 1 if rows.ndim == len(self._shape_tail) else rows.shape[0]
        end = self.size + n
        if end > self._data.shape[0]:
            self.reserve(max(end, 2 * self._data.shape[0]))
        self._data[self.size : end] = rows
        self.size = end

    def append(self, value: Any) -> None:
        """Append one row."""
        if self.size == self._data.shape[0]:
            self.reserve(2 * self._data.shape[0])
        self._data[self.size] = value
        self.size += 1

    @property
    def buffer(self) -> np.ndarray:
        """The whole buffer, filled or not: for fast scalar reads below `size`."""
        return self._data

    @property
    def view(self) -> np.ndarray:
        """The filled rows (a view: do not keep it across appends)."""
        return self._data[: self.size]

    def drop_front(self, count: int) -> None:
        """Forget the first ``count`` rows."""
        self.delete(0, count)

    def delete(self, begin: int, end: int) -> None:
        """Forget rows ``begin..end-1``; later rows move up."""
        end = min(end, self.size)
        if begin >= end:
            return
        kept = np.concatenate([self._data[:begin], self._data[end : self.size]])
        self._data = np.empty(
            (max(kept.shape[0], 1024),) + self._shape_tail, dtype=self._data.dtype
        )
        self._data[: kept.shape[0]] = kept
        self.size = kept.shape[0]


class Spans:
    """Runs of consecutive absolute indices, stored in consecutive rows.

    Run ``k`` holds indices ``firsts[k] ..`` at rows ``rows[k] ..`` up to the next
    run's first row (or `size`). Indices only grow: a run starts where the indices
    jump forward (records that are not on disk).
    """

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.rows: list[int] = []
        self.size = 0
        self._empty_at = 0  # `first` and `end` while no row is held

    @classmethod
    def from_runs(cls, runs: list[tuple[int, int]]) -> Spans:
        """Spans holding the ``(begin, end)`` index ranges ``runs`` (ascending)."""
        spans = cls()
        for begin, end in runs:
            spans.append(begin, end - begin)
        return spans

    @property
    def first(self) -> int:
        """The lowest index held (while empty: where the next is expected)."""
        return self.firsts[0] if self.size else self._empty_at

    @property
    def end(self) -> int:
        """One past the highest index held."""
        return self.firsts[-1] + self.size - self.rows[-1] if self.size else self._empty_at

    def append(self, index: int, count: int) -> None:
        """Rows for indices ``index .. index+count-1`` were added at the end.

        Raises:
            ValueError: ``index`` is below `end` (an index repeats).
        """
        if self.size and index < self.end:
            raise ValueError(f"index {index} repeats an index before {self.end}")
        if count <= 0:
            return
        if not self.size or index > self.end:
            self.firsts.append(index)
            self.rows.append(self.size)
        self.size += count

    def runs(self) -> list[tuple[int, int]]:
        """The ``(begin, end)`` index ranges held, ascending."""
        bounds = self.rows[1:] + [self.size]
        return [(f, f + b - r) for f, r, b in zip(self.firsts, self.rows, bounds)]

    def row_of(self, index: int) -> int | None:
        """The row of ``index``, or None when it is not held."""
        for k in range(len(self.firsts) - 1, -1, -1):
            if index >= self.firsts[k]:
                row = self.rows[k] + index - self.firsts[k]
                limit = self.rows[k + 1] if k + 1 < len(self.rows) else self.size
                return row if row < limit else None
        return None

    def rows_of(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, held) of an int64 array of indices; rows of unheld ones are 0."""
        indices = np.asarray(indices, dtype=np.int64)
        if not self.size:
            return np.zeros(indices.shape, np.int64), np.zeros(indices.shape, bool)
        firsts, rows = np.asarray(self.firsts), np.asarray(self.rows)
        k = np.searchsorted(firsts, indices, side="right") - 1
        kc = np.maximum(k, 0)
        row = rows[kc] + indices - firsts[kc]
        limit = np.append(rows[1:], self.size)[kc]
        held = (k >= 0) & (row < limit)
        return np.where(held, row, 0), held

    def indices_of(self, rows: np.ndarray) -> np.ndarray:
        """The index held at each row (int64 array of rows below `size`)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self.size:
            return rows.copy()
        k = np.searchsorted(np.asarray(self.rows), rows, side="right") - 1
        return np.asarray(self.firsts)[k] + rows - np.asarray(self.rows)[k]

    def rows_below(self, index: int) -> int:
        """How many held indices are below ``index`` (the row where it is or would be)."""
        return sum(min(max(index - begin, 0), end - begin) for begin, end in self.runs())

    def index_of(self, row: int) -> int:
        """The index held at ``row`` (below `size`)."""
        k = next(k for k in range(len(self.rows) - 1, -1, -1) if self.rows[k] <= row)
        return self.firsts[k] + row - self.rows[k]

    def delete_rows(self, begin: int, end: int) -> None:
        """Forget rows ``begin..end-1``; later rows move up."""
        end = min(end, self.size)
        if begin >= end:
            return
        ranges = []
        for (first, stop), row in zip(self.runs(), self.rows):
            # This run's rows [row, row + stop - first) minus [begin, end).
            for lo, hi in (
                (row, min(row + stop - first, begin)),
                (max(row, end), row + stop - first),
            ):
                if lo < hi:
                    ranges.append((first + lo - row, hi - lo))
        if not ranges:
            self._empty_at = self.end
        self.firsts, self.rows, self.size = [], [], 0
        for first, count in ranges:
            self.append(first, count)

    def clear_to(self, index: int) -> None:
        """Forget every row; the next index is expected at ``index``."""
        self.firsts, self.rows, self.size = [], [], 0
        self._empty_at = index


# The chunk an index takes from the loader: an ``execs`` chunk's columns, a ``traces``
# record.
Chunk = TypeVar("Chunk")


class SpannedIndex(Generic[Chunk]):
    """The base of a run's columnar indexes (`reader.index.execution_index.ExecutionIndex`,
    `reader.index.trace_index.TraceIndex`): the mode, its summary width, and the `Spans`
    from absolute indices to rows; and the methods the loaders call on either."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.width = summary_width(mode)
        # The width of a row as the dump stores it: FULL_HEALTH's magnitudes are kept
        # beside the rows (`reader.summary_rows.with_magnitudes`).
        self.stored_width = stored_width(mode)
        self.spans = Spans()
        # Why FULL_TENSOR values taken since the loader last looked could not be
        # decoded (their summaries are all zeros): the loader turns them into a notice.
        self.value_damage: list[str] = []

    def clear(self, mode: str) -> None:
        """Start over, empty, in ``mode`` (a TensorFlow dump names its mode only in its
        first execution or trace)."""
        self.__init__(mode)  # type: ignore[misc]

    @property
    def first(self) -> int:
        """The first index in the columns."""
        return self.spans.first

    @property
    def end(self) -> int:
        """One past the last index in the columns."""
        return self.spans.end

    # What the loaders call on either index.

    def add_chunk(self, chunk: Chunk, segment: int, start: int, end: int) -> int:
        """Index one chunk read from ``segment`` at bytes [start, end); returns how many
        executions or traces were new.

        Raises:
            MalformedRecordError: The chunk does not fit the format or the index.
        """
        raise NotImplementedError

    def reserve_for_bytes(self, new_bytes: int) -> None:
        """Pre-size the columns for a segment tail of ``new_bytes``, avoiding copies."""
        raise NotImplementedError

    def drop_segment(self, segment: int) -> int:
        """Forget the rows of one segment (it left the disk); returns how many."""
        raise NotImplementedError
