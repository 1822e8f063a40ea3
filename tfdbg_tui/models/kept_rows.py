"""Rows of a list over what a dump keeps: records in order, and a row for each gap.

Under a circular buffer the executions and graph traces on disk come in runs: the
first alert's pinned window, then the latest records (`reader.analysis.hunt.steps`). A list that
numbered them as one stretch would pretend the run is continuous; these rows put a
gap row where records are missing, and the row says what is not kept.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from reader.index.columns import Spans


class GappedRows:
    """Data rows in order, with gap rows inserted among them.

    Args:
        data_count: How many data rows.
        gap_positions: Per gap, ascending: how many data rows come before it.
    """

    def __init__(self, data_count: int = 0, gap_positions: Sequence[int] = ()) -> None:
        self.data_count = data_count
        self._positions = list(gap_positions)
        self._gap_rows = [p + k for k, p in enumerate(self._positions)]

    @property
    def count(self) -> int:
        """Rows in all: data rows and gap rows."""
        return self.data_count + len(self._gap_rows)

    @property
    def num_gaps(self) -> int:
        return len(self._gap_rows)

    def gap_at(self, row: int) -> int | None:
        """The number of the gap shown at ``row``, or None for a data row."""
        k = bisect_left(self._gap_rows, row)
        return k if k < len(self._gap_rows) and self._gap_rows[k] == row else None

    def data_row(self, row: int) -> int | None:
        """The data row shown at ``row``, or None for a gap row (or past the list)."""
        if not 0 <= row < self.count:
            return None
        k = bisect_left(self._gap_rows, row)
        if k < len(self._gap_rows) and self._gap_rows[k] == row:
            return None
        return row - k

    def row_of_data(self, data_row: int) -> int:
        """The row showing data row ``data_row``."""
        return data_row + bisect_right(self._positions, data_row)

    def row_of_gap(self, gap: int) -> int:
        """The row showing gap number ``gap``."""
        return self._gap_rows[gap]

    def segments(self, begin: int, end: int) -> list[tuple[int, int] | int]:
        """Rows ``begin..end-1`` in order: ``(first, end)`` data-row ranges, and gap
        numbers (ints) where gap rows are."""
        parts: list[tuple[int, int] | int] = []
        row = begin
        for k in range(bisect_left(self._gap_rows, begin), len(self._gap_rows)):
            gap_row = self._gap_rows[k]
            if gap_row >= end:
                break
            if row < gap_row:
                parts.append((row - k, gap_row - k))
            parts.append(k)
            row = gap_row + 1
        if row < end:
            k = bisect_left(self._gap_rows, row)
            parts.append((row - k, end - k))
        return parts


class KeptRows(GappedRows):
    """One row per record index on disk, and a gap row between runs of indices.

    Gap ``k`` lies between runs ``k`` and ``k + 1``: its records ``runs[k][1] ..
    runs[k + 1][0] - 1`` are not kept.

    Args:
        runs: The ``(begin, end)`` index ranges on disk, ascending
            (`reader.DumpReader.kept_traces` or `kept_executions`).
    """

    def __init__(self, runs: list[tuple[int, int]]) -> None:
        self.runs = list(runs)
        self._spans = Spans.from_runs(self.runs)
        super().__init__(
            self._spans.size, [self._spans.rows_below(begin) for begin, _ in self.runs[1:]]
        )

    def missing(self, gap: int) -> tuple[int, int]:
        """The ``(begin, end)`` indices gap ``gap`` does not keep."""
        return self.runs[gap][1], self.runs[gap + 1][0]

    def index_at(self, row: int) -> int | None:
        """The record index shown at ``row``, or None for a gap row (or past the list)."""
        data_row = self.data_row(row)
        return None if data_row is None else self._spans.index_of(data_row)

    def row_of(self, index: int) -> int | None:
        """The row of record ``index``; for an index not kept, the row of the gap that
        holds it; None outside every run and gap."""
        data_row = self._spans.row_of(index)
        if data_row is not None:
            return self.row_of_data(data_row)
        for gap in range(self.num_gaps):
            begin, end = self.missing(gap)
            if begin <= index < end:
                return self.row_of_gap(gap)
        return None

    def index_ranges(self, begin: int, end: int) -> list[tuple[int, int] | int]:
        """Rows ``begin..end-1`` as `segments`, with data-row ranges turned into the
        ``(first, end)`` record indices they show (their indices are kept and
        ascending, so a reader range over them returns exactly those records)."""
        return [
            part
            if isinstance(part, int)
            else (self._spans.index_of(part[0]), self._spans.index_of(part[1] - 1) + 1)
            for part in self.segments(begin, end)
        ]
