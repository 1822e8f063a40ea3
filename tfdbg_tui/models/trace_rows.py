"""The rows of the Graph Execution list: which trace each row shows (all traces, or
alerts only, with gap rows where a circular buffer kept none), and the traces and ops
behind them, fetched from the reader a page at a time. No widget here: the list owns
one `TraceRows` and paints from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from textual.cache import LRUCache

from reader.model import Op, Trace
from tfdbg_tui.models.kept_rows import GappedRows, KeptRows

if TYPE_CHECKING:
    from reader import Run

# Traces are fetched in pages: one reader call per page keeps rendering a screenful to
# a handful of calls, and 256 pages (64k traces) cover far more than any scrolling
# back and forth.
TRACE_PAGE_SIZE = 256
TRACE_PAGE_CACHE = 256
OP_CACHE_SIZE = 8192


class TraceRows:
    """Maps list rows to trace indices, all traces or alerts only, and fetches them.

    Rows follow the traces on disk; where a circular buffer left some out (between
    the first alert's pinned window and the latest traces) a gap row stands instead
    (`tfdbg_tui.models.kept_rows`), in both views.

    Args:
        reader: The run whose traces the rows show.
    """

    def __init__(self, reader: Run) -> None:
        self._reader = reader
        self.num_traces = 0
        self.alerts_only = False
        self._alert_indices = np.zeros(0, dtype=np.int64)
        self._kept = KeptRows([])
        self._alert_rows = GappedRows()
        self._pages: LRUCache[int, list[Trace | None]] = LRUCache(TRACE_PAGE_CACHE)
        self._ops: LRUCache[int, Op] = LRUCache(OP_CACHE_SIZE)

    def refresh(self, alert_indices: np.ndarray | None = None) -> None:
        """Re-read the counts (after `reader.update()`); forget pages that may grow."""
        self.num_traces = self._reader.num_traces
        self._kept = KeptRows(self._reader.kept_traces())
        if alert_indices is not None:
            self._alert_indices = alert_indices
        elif self.alerts_only:
            self._alert_indices = self._reader.trace_alert_indices()
        self._place_alert_gaps()
        self._pages.clear()

    def set_alert_indices(self, alert_indices: np.ndarray) -> None:
        self._alert_indices = alert_indices
        self._place_alert_gaps()

    def _place_alert_gaps(self) -> None:
        """In the alerts-only view, a gap row stands before the first alert after it."""
        self._alert_rows = GappedRows(
            int(self._alert_indices.shape[0]),
            [int(np.searchsorted(self._alert_indices, begin)) for begin, _ in self._kept.runs[1:]],
        )

    @property
    def _rows(self) -> GappedRows:
        return self._alert_rows if self.alerts_only else self._kept

    @property
    def alert_indices(self) -> np.ndarray:
        """Trace indices of the alerts, ascending (as of the last refresh)."""
        return self._alert_indices

    def alert_trace(self, which: str, current: int | None) -> int | None:
        """The "first" alert trace, or the "next" / "previous" one from `current`."""
        indices = self._alert_indices
        if not indices.shape[0]:
            return None
        if which == "first" or current is None:
            return int(indices[0])
        if which == "next":
            position = int(np.searchsorted(indices, current, side="right"))
            return int(indices[min(position, indices.shape[0] - 1)])
        position = int(np.searchsorted(indices, current, side="left")) - 1
        return int(indices[max(position, 0)])

    @property
    def row_count(self) -> int:
        return self._rows.count

    def trace_index(self, row: int) -> int | None:
        """The trace shown at `row`; None for a gap row."""
        if self.alerts_only:
            data_row = self._alert_rows.data_row(row)
            return None if data_row is None else int(self._alert_indices[data_row])
        return self._kept.index_at(row)

    def gap_at(self, row: int) -> tuple[int, int] | None:
        """The ``(begin, end)`` traces not kept where `row` is a gap row, else None."""
        gap = self._rows.gap_at(row)
        return None if gap is None else self._kept.missing(gap)

    def position(self, row: int) -> int:
        """Where `row` is in trace order, for moving on from it: its trace, or the
        first trace a gap row stands for."""
        index = self.trace_index(row)
        if index is not None:
            return index
        gap = self.gap_at(row)
        return gap[0] if gap is not None else 0

    def row_of(self, trace_index: int) -> int | None:
        """The row showing `trace_index` (a trace not kept: its gap's row), or (alerts
        only) the row of the next alert."""
        if self.alerts_only:
            if not self._alert_indices.shape[0]:
                return None
            data_row = int(np.searchsorted(self._alert_indices, trace_index))
            return self._alert_rows.row_of_data(min(data_row, self._alert_indices.shape[0] - 1))
        return self._kept.row_of(trace_index)

    def trace(self, trace_index: int) -> Trace | None:
        page = trace_index // TRACE_PAGE_SIZE
        traces = self._pages.get(page)
        if traces is None:
            begin = page * TRACE_PAGE_SIZE
            traces = [None] * TRACE_PAGE_SIZE
            # Placed by index: a page may straddle a gap, whose traces are not read.
            for trace in self._reader.traces(begin, min(begin + TRACE_PAGE_SIZE, self.num_traces)):
                traces[trace.index - begin] = trace
            self._pages[page] = traces
        return traces[trace_index - page * TRACE_PAGE_SIZE]

    def op(self, op_id: int | None) -> Op | None:
        if op_id is None:
            return None
        op = self._ops.get(op_id)
        if op is None:
            op = self._reader.op(op_id)
            self._ops[op_id] = op
        return op
