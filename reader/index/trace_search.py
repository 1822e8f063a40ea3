"""Searching the graph traces for an op by name or type (the Graph Execution `/` key),
and what a search pattern means.

The meaning of a search pattern is decided here once: a regular expression, searched
(not anchored) in op names and types; text that is not a valid regular expression is
searched for as itself, and `compile_search` says so for the caller to show.
"""

from __future__ import annotations

import re

import numpy as np

from reader.index.definitions import Definitions
from reader.index.trace_index import TraceIndex


def compile_search(pattern: str) -> tuple[re.Pattern[str], str | None]:
    """The regex a search for ``pattern`` uses, and a note when it is taken literally.

    Returns:
        (regex, None) for a valid regular expression; else (the regex matching
        ``pattern`` as text, a one-line note saying why).
    """
    try:
        return re.compile(pattern), None
    except re.error as error:
        return (
            re.compile(re.escape(pattern)),
            f"not a regular expression ({error}): searching for the text itself",
        )


class TraceSearch:
    """Finds traces whose op matches a regex, over the run's definitions and trace
    index (read, never changed; the reader holds its lock around every call)."""

    def __init__(self, defs: Definitions, traces: TraceIndex) -> None:
        self._defs = defs
        self._traces = traces
        self._cache: tuple[tuple[str, int], np.ndarray] | None = None

    def find(self, regex: re.Pattern[str], start: int, forward: bool) -> int | None:
        """The first trace from ``start`` (inclusive) on, or back, whose op matches."""
        tps = self._matching_trace_points(regex)
        t = self._traces
        if not tps.size or not len(t):
            return None
        # The first row at or after `start`, or the last at or before it.
        row = (
            min(t.spans.rows_below(start), len(t) - 1)
            if forward
            else t.spans.rows_below(start + 1) - 1
        )
        if row < 0:
            return None
        column = t.tp.view
        hits = (
            np.flatnonzero(np.isin(column[row:], tps))
            if forward
            else np.flatnonzero(np.isin(column[: row + 1], tps))
        )
        if not hits.size:
            return None
        return t.spans.index_of(int((hits[0] + row) if forward else hits[-1]))

    def _matching_trace_points(self, regex: re.Pattern[str]) -> np.ndarray:
        """Trace points whose op name or type matches; cached until new ops arrive."""
        key = (regex.pattern, self._defs.num_ops)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        matching = [
            op_id
            for op_id in self._defs.traced_op_ids()
            if regex.search(self._defs.op(op_id).name) or regex.search(self._defs.op(op_id).op_type)
        ]
        tps = self._defs.trace_points_of(matching)
        self._cache = (key, tps)
        return tps
