"""`TraceIndex`: the columnar index of graph execution traces.

No Python object per trace: numpy columns that grow by doubling hold each trace's
trace point, summary row and alert flag, and a per-chunk table of locators; full
records are decoded on demand from their locators.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reader import format as fmt
from reader import values
from reader.contract import TracesChunk
from reader.errors import MalformedRecordError
from reader.index.columns import Column, SpannedIndex
from reader.limits import MAX_ID, is_id, is_int
from reader.summary_rows import alert_counts, alert_flags, stored_rows

# Chunks buffered before one vectorised commit into the columns: amortises numpy's
# per-call overhead over many small chunks while bounding the buffered bytes.
COMMIT_CHUNKS = 4096
COMMIT_TRACES = 1 << 16

_CHUNK = TracesChunk
# A trace point's dtype and bytes in a chunk's `tp`, and an entry of its `xr` runs.
_TP_DTYPE = np.dtype(_CHUNK.column(_CHUNK.TRACE_POINTS))
_TP_BYTES = _TP_DTYPE.itemsize
_STEP_RUN_DTYPE = np.dtype(_CHUNK.column(_CHUNK.STEP_RUNS))


class TraceIndex(SpannedIndex[dict[str, Any]]):
    """Graph execution traces: per-trace columns plus a per-chunk locator table.

    Traces on disk sit in consecutive rows of the per-trace columns (`spans` maps a
    trace index to its row); a trace's chunk is found by binary search in the chunks'
    first indices. `first`, `end` and the columns cover the chunks committed
    (`commit`), not those only taken.
    """

    def __init__(self, mode: str) -> None:
        super().__init__(mode)
        self.tp = Column(np.int32)
        self.summaries = Column(np.float64, self.width) if self.width else None
        self.alert = Column(np.bool_)
        # The rows that alert, ascending, and their (nan, neg_inf, pos_inf) counts:
        # kept as the rows are committed (while they are in cache), so the alerts,
        # the harm classification and the steps never scan the whole index for them.
        self.alert_row = Column(np.int64)
        self.alert_count = Column(np.int64, 3)
        self.chunk_first = Column(np.int64)
        self.chunk_step = Column(np.int64)
        self.chunk_offset = Column(np.int64)
        self.chunk_length = Column(np.int64)
        self.chunk_segment = Column(np.int32)
        self.chunk_base = Column(np.int64)  # the first index of the chunk's record
        # Chunks taken but not yet in the columns: (first, step, offset, length,
        # segment, tp bytes, summary bytes or rows), and one past their last index.
        self._pending: list[tuple] = []
        self._pending_end = 0
        # `alert_rows` and `alert_points` until the columns change: the alerts, the
        # harm classification and the steps each ask for them (~25 ms each at 1M).
        self._alerts: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    def __len__(self) -> int:
        return self.tp.size

    def reserve_for_bytes(self, new_bytes: int) -> None:
        """Pre-size the columns for a segment tail of ``new_bytes``, avoiding copies.

        Each trace takes at least 4 + 8*stored_width bytes on disk (its trace point
        and its stored row; FULL_HEALTH's magnitude, when stored, only adds), so this
        bounds the count;
        untouched reserved pages cost no memory. FULL_TENSOR rows are mostly values,
        where the bound would be far too loose, so those grow by doubling instead.
        """
        if self.mode == fmt.FULL_TENSOR:
            return
        bound = self.tp.size + new_bytes // (4 + 8 * self.stored_width)
        self.tp.reserve(bound)
        self.alert.reserve(bound)
        if self.summaries is not None:
            self.summaries.reserve(bound)

    def add_chunk(self, record: dict[str, Any], segment: int, start: int, end: int) -> int:
        """Take one ``traces`` record; returns how many traces were new.

        Chunks are validated here but reach the columns in batches (`commit`, when
        `commit_due`): the per-chunk cost stays a few microseconds however small the
        chunks are.

        Raises:
            MalformedRecordError: A field has the wrong type or size.
        """
        first, n = record.get(_CHUNK.INDEX), record.get(_CHUNK.COUNT)
        tp_bytes = record.get(_CHUNK.TRACE_POINTS)
        if not (
            is_id(first)
            and is_int(n)
            and n >= 0
            and first + n <= MAX_ID
            and isinstance(tp_bytes, bytes)
            and len(tp_bytes) == _TP_BYTES * n
        ):
            raise MalformedRecordError("a traces chunk with bad i, n or tp")
        step = _chunk_steps(record, n)
        rows = self._summary_rows(record, n)
        self.add_rows(first, step, start, end - start, segment, tp_bytes, rows)
        return n

    def add_rows(
        self,
        first: int,
        step: int | np.ndarray,
        offset: int,
        length: int,
        segment: int,
        tp_bytes: bytes,
        rows: Any,
    ) -> None:
        """Take one chunk already validated: ``len(tp_bytes) // 4`` traces from
        ``first`` on, located at ``offset``/``length`` of ``segment``; ``rows`` are
        their summaries (little-endian float64 bytes; FULL_TENSOR: an array of rows).
        ``step`` is the step of every trace, or (k, 2) int64 runs of (step, count).

        Raises:
            MalformedRecordError: ``first`` repeats an index already taken.
        """
        expected = self._pending_end if self._pending else self.end
        # Never-repeating indices: a jump forward means records not on disk (a pinned
        # window, or segments deleted before they were read); an overlap is damage.
        if first < expected and (self._pending or len(self)):
            raise MalformedRecordError(f"traces chunk {first} repeats indices before {expected}")
        self._pending.append((first, step, offset, length, segment, tp_bytes, rows))
        self._pending_end = first + len(tp_bytes) // _TP_BYTES

    @property
    def commit_due(self) -> bool:
        """Enough chunks are taken for one `commit` to be worth its numpy calls."""
        return bool(self._pending) and (
            len(self._pending) >= COMMIT_CHUNKS
            or self._pending_end - self._pending[0][0] >= COMMIT_TRACES
        )

    def commit(self) -> None:
        """Move the chunks taken since the last commit into the columns.

        The only step that changes what queries see (`add_chunk` touches nothing
        they read): the reader calls it under its query lock.
        """
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self._alerts = None
        self.tp.extend(np.frombuffer(b"".join(p[5] for p in pending), dtype=_TP_DTYPE))
        # Not `_pending_end - first`: the chunks may jump over indices not on disk.
        n = sum(len(p[5]) for p in pending) // _TP_BYTES
        if self.summaries is not None:
            # Stored bytes (magnitudes unknown: a TensorFlow dump's rows) or rows already
            # built (`_summary_rows`); the bytes of a whole commit decode at once.
            if all(isinstance(p[6], bytes) for p in pending):
                rows = stored_rows(self.mode, b"".join(p[6] for p in pending), None)
            else:
                rows = np.concatenate(
                    [
                        stored_rows(self.mode, p[6], None) if isinstance(p[6], bytes) else p[6]
                        for p in pending
                    ]
                )
            flags = alert_flags(self.mode, rows)
            hits = np.flatnonzero(flags)
            self.alert_row.extend(self.alert.size + hits)
            self.alert_count.extend(alert_counts(self.mode, rows[hits]))
            self.summaries.extend(rows)
            self.alert.extend(flags)
        else:
            self.alert.extend(np.zeros(n, dtype=bool))
        for p in pending:
            self.spans.append(p[0], len(p[5]) // _TP_BYTES)
        parts = []  # one locator row per step of each chunk
        for first, step, offset, length, segment, _, _ in pending:
            if isinstance(step, np.ndarray):
                counts = step[:, 1]
                starts = first + np.cumsum(counts) - counts
                parts.append(
                    np.stack(
                        [
                            starts,
                            step[:, 0],
                            np.full_like(starts, offset),
                            np.full_like(starts, length),
                            np.full_like(starts, segment),
                            np.full_like(starts, first),
                        ],
                        axis=1,
                    )
                )
            else:
                parts.append(
                    np.array([[first, step, offset, length, segment, first]], dtype=np.int64)
                )
        table = np.concatenate(parts)
        self.chunk_first.extend(table[:, 0])
        self.chunk_step.extend(table[:, 1])
        self.chunk_offset.extend(table[:, 2])
        self.chunk_length.extend(table[:, 3])
        self.chunk_segment.extend(table[:, 4].astype(np.int32))
        self.chunk_base.extend(table[:, 5])

    def _summary_rows(self, record: dict[str, Any], n: int) -> Any:
        """The chunk's summaries: its stored bytes where they are the index's rows as
        they are (joined at `commit`), else rows (FULL_TENSOR's computed, FULL_HEALTH's
        with the chunk's magnitudes)."""
        if self.mode == fmt.FULL_TENSOR:
            vals = record.get(_CHUNK.VALUES)
            if not isinstance(vals, list) or len(vals) != n:
                raise MalformedRecordError("a FULL_TENSOR traces chunk without n values")
            return values.summary_rows(vals, self.value_damage)
        if self.width == 0:
            return b""
        data, sc = record.get(_CHUNK.SUMMARIES), record.get(_CHUNK.SUMMARY_WIDTH)
        width = self.stored_width
        if sc != width or not isinstance(data, bytes) or len(data) != 8 * n * width:
            raise MalformedRecordError(
                f"a traces chunk whose summaries are not {n} rows of {width} columns"
            )
        if self.width == width:
            return data
        return stored_rows(self.mode, data, record)

    def chunk_of(self, index: int) -> int:
        """Row in the chunk table of the chunk holding trace ``index``."""
        return int(np.searchsorted(self.chunk_first.view, index, side="right")) - 1

    def steps(self, begin: int, end: int) -> np.ndarray:
        """The step (execution index) of traces ``begin..end-1``."""
        return self.steps_at(np.arange(begin, end))

    def steps_at(self, indices: np.ndarray) -> np.ndarray:
        """The step (execution index) of each trace in ``indices`` (traces indexed)."""
        chunks = np.searchsorted(self.chunk_first.view, indices, side="right") - 1
        return self.chunk_step.view[chunks]

    def alert_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every trace that held NaN or infinity, ascending: (trace index, step,
        (n, 3) counts of nan, neg_inf, pos_inf, -1 where the mode has none)."""
        return self._alert_table()[0]

    def alert_points(self) -> np.ndarray:
        """The trace point of every trace that held NaN or infinity, as `alert_rows`
        lists them."""
        return self._alert_table()[1]

    def _alert_table(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        if self._alerts is None:
            rows = self.alert_row.view
            index = self.spans.indices_of(rows)
            counts = self.alert_count.view.copy()
            chunks = np.searchsorted(self.chunk_first.view, index, side="right") - 1
            step = (
                self.chunk_step.view[chunks].astype(np.int64)
                if rows.size
                else np.empty(0, dtype=np.int64)
            )
            for array in (index, step, counts):
                array.flags.writeable = False  # shared by every caller
            points = self.tp.view[rows].astype(np.int64)
            points.flags.writeable = False
            self._alerts = ((index, step, counts), points)
        return self._alerts

    def drop_segment(self, segment: int) -> int:
        """Forget the traces of one segment (it left the disk); returns how many."""
        self.commit()
        c0, c1 = (int(c) for c in np.searchsorted(self.chunk_segment.view, [segment, segment + 1]))
        if c0 == c1:
            return 0
        r0 = self.spans.row_of(int(self.chunk_first.view[c0]))
        r1 = (
            self.spans.row_of(int(self.chunk_first.view[c1]))
            if c1 < self.chunk_first.size
            else len(self)
        )
        assert r0 is not None and r1 is not None  # a chunk's first trace is on disk
        self._alerts = None
        a0, a1 = (int(a) for a in np.searchsorted(self.alert_row.view, [r0, r1]))
        self.alert_row.delete(a0, a1)
        self.alert_count.delete(a0, a1)
        self.alert_row.view[a0:] -= r1 - r0
        for column in (self.tp, self.alert, self.summaries):
            if column is not None:
                column.delete(r0, r1)
        for column in (
            self.chunk_first,
            self.chunk_step,
            self.chunk_offset,
            self.chunk_length,
            self.chunk_segment,
            self.chunk_base,
        ):
            column.delete(c0, c1)
        self.spans.delete_rows(r0, r1)
        return r1 - r0


def _chunk_steps(record: dict[str, Any], n: int) -> int | np.ndarray:
    """A ``traces`` record's step: ``x`` (one step), or its ``xr`` runs (format 2.0) as
    (k, 2) int64 (step, count).

    Raises:
        MalformedRecordError: Neither is well formed.
    """
    step, runs = record.get(_CHUNK.STEP), record.get(_CHUNK.STEP_RUNS)
    if is_id(step):
        return int(step)
    if isinstance(runs, bytes) and runs and len(runs) % (2 * _STEP_RUN_DTYPE.itemsize) == 0:
        table = np.frombuffer(runs, dtype=_STEP_RUN_DTYPE).reshape(-1, 2).astype(np.int64)
        # Counts of at most n each cannot overflow their sum.
        counts = table[:, 1]
        if 0 < int(counts.min()) and int(counts.max()) <= n and int(counts.sum()) == n:
            return table
    raise MalformedRecordError("a traces chunk with bad x or xr")
