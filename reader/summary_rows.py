"""Summary rows as the indexes store them: their width per mode, the columns that count
non-finite values, and the alert flag and counts of a block of rows.

Below both the indexes (`reader.index.trace_index`, `reader.index.execution_index`) and
the execution scanner (`reader.index.exec_scan`), and used by the writer's flight
recorder, so all of them read a row the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reader import format as fmt
from reader.contract import TracesChunk


def row_columns(mode: str) -> tuple[str, ...]:
    """The columns of ``mode``'s summary row as the indexes store it (`ROW_COLUMNS`:
    FULL_HEALTH's magnitude included; FULL_TENSOR rows are computed in FULL_HEALTH
    layout)."""
    return fmt.ROW_COLUMNS[fmt.FULL_HEALTH if mode == fmt.FULL_TENSOR else mode]


def with_magnitudes(mode: str, rows: np.ndarray, magnitudes: np.ndarray | None) -> np.ndarray:
    """Stored rows (``SUMMARY_COLUMNS[mode]`` wide) as the indexes keep them
    (`row_columns`): FULL_HEALTH's ``magnitudes`` (docs/format.md's ``m``) appended as its
    last column, NaN where the dump has none. Other modes' rows come back as they are."""
    if mode not in fmt.MAGNITUDE_MODES:
        return rows
    out = np.empty((rows.shape[0], rows.shape[1] + 1), dtype=np.float64)
    out[:, :-1] = rows
    out[:, -1] = np.nan if magnitudes is None else magnitudes
    return out


def stored_rows(mode: str, data: bytes, chunk: dict | None) -> np.ndarray:
    """Summary rows as a dump stores them (``data``: little-endian float64,
    `stored_width` a row) as the indexes keep them (`with_magnitudes`): FULL_HEALTH's
    magnitudes taken from the ``chunk`` record that holds the rows (its ``m``), NaN
    where it has none or no chunk is given."""
    rows = np.frombuffer(data, dtype="<f8").reshape(-1, stored_width(mode))
    magnitudes = None if chunk is None else stored_magnitudes(chunk, rows.shape[0])
    return with_magnitudes(mode, rows, magnitudes)


def count_columns(mode: str) -> tuple[int, int, int] | None:
    """Positions (nan, neg_inf, pos_inf) of the non-finite counts in ``mode``'s summary
    row (`row_columns`; FULL_TENSOR rows are computed in FULL_HEALTH layout), or
    None when the mode counts none."""
    columns = row_columns(mode)
    if "nan" not in columns:
        return None
    return columns.index("nan"), columns.index("neg_inf"), columns.index("pos_inf")


def stored_magnitudes(record: dict, n: int) -> np.ndarray | None:
    """A chunk's stored magnitudes (its ``m``: ``n`` little-endian float64), or None when
    it has none or they are malformed (the rows stay readable without them)."""
    data, dtype = record.get(TracesChunk.MAGNITUDES), TracesChunk.column(TracesChunk.MAGNITUDES)
    if not isinstance(data, bytes) or len(data) != np.dtype(dtype).itemsize * n:
        return None
    return np.frombuffer(data, dtype=dtype)


def stored_width(mode: str) -> int:
    """Summary columns per tensor as a dump stores them for ``mode`` (its ``sc``)."""
    return len(fmt.SUMMARY_COLUMNS[fmt.FULL_HEALTH if mode == fmt.FULL_TENSOR else mode])


def summary_width(mode: str) -> int:
    """Summary columns per tensor as the index stores them for ``mode``."""
    return len(row_columns(mode))


def alert_flags(mode: str, rows: np.ndarray) -> np.ndarray:
    """Per summary row: True when the tensor held a NaN or an infinity."""
    if mode == fmt.CURT_HEALTH:
        return rows[:, 0] != 0
    cols = count_columns(mode)
    if cols is None or rows.shape[0] == 0:
        return np.zeros(rows.shape[0], dtype=bool)
    return (rows[:, cols[0]] != 0) | (rows[:, cols[1]] != 0) | (rows[:, cols[2]] != 0)


def first_alert_row(mode: str | None, rows: Sequence[Sequence[float] | None]) -> int | None:
    """The position of the first of a few rows (an eager execution's outputs, as
    lists; None for an output without a summary) that holds NaN or infinity; None
    when none does, or the mode counts none. Plain Python: cheaper than an array for a
    few rows, and the writer asks it of every execution it looks at."""
    columns = _ALERT_COLUMNS.get(mode or "")
    if columns is None:
        return None
    for position, row in enumerate(rows):
        if row is not None:
            for column in columns:
                if column < len(row) and row[column]:
                    return position
    return None


def first_alert_in_block(mode: str | None, rows: np.ndarray) -> int | None:
    """The position of the first of a block of rows (``(n, width)``, as a traces chunk
    holds them) that holds NaN or infinity; None when none does. One count over the
    block's alert columns (side by side in every health mode: `_ALERT_SPANS`), the rows
    looked at one by one only when it finds one: the writer asks it of every chunk."""
    span = _ALERT_SPANS.get(mode or "")
    if span is None or rows.ndim != 2:
        return None
    block = rows[:, span[0] : span[1]]
    if not np.count_nonzero(block):
        return None
    return int(np.flatnonzero(block.any(axis=1))[0])


def alert_counts(mode: str, rows: np.ndarray) -> np.ndarray:
    """(n, 3) int64 counts (nan, neg_inf, pos_inf) of summary rows; -1 when unknown
    (also where a damaged row's count is no count: NaN, infinite or negative)."""
    cols = count_columns(mode)
    if cols is None:
        return np.full((rows.shape[0], 3), -1, dtype=np.int64)
    counts = rows[:, list(cols)]
    known = (counts >= 0) & (counts < 2.0**63)
    return np.where(known, counts, -1).astype(np.int64)


# Per health mode, where a row's columns that count (or flag) non-finite values are.
_ALERT_COLUMNS: dict[str, tuple[int, ...]] = {
    mode: (0,) if mode == fmt.CURT_HEALTH else count_columns(mode) or ()
    for mode in fmt.HEALTH_MODES
}
# The same columns as one slice, ``[first, last + 1)``: they are side by side.
_ALERT_SPANS: dict[str, tuple[int, int]] = {
    mode: (min(columns), max(columns) + 1) for mode, columns in _ALERT_COLUMNS.items() if columns
}
