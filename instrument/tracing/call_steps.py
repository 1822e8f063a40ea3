"""`CallSteps`: drained graph traces written as chunks, each under the step (eager call)
it ran in, by call ordinal.

Traces leave a graph carrying their call's ordinal (`instrument.tracing.trace_queue`);
the dump's trace chunks carry the index of the execution that call is (their step,
docs/format.md). This maps the one to the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from instrument.dump.writer import DumpWriter


class CallSteps:
    """The execution index of each eager function call, by call ordinal, and the
    writing of drained traces by it.

    `add_call` is called under the trace queue's lock, so that a concurrent drain sees
    a call's ordinal together with its index.
    """

    def __init__(self, writer: DumpWriter) -> None:
        self._writer = writer
        self._call_executions: list[int] = []

    def add_call(self, index: int) -> int:
        """Execution ``index`` is the next eager function call; returns its ordinal."""
        self._call_executions.append(index)
        return len(self._call_executions) - 1

    def write_traces(
        self,
        trace_points: np.ndarray,
        rows: np.ndarray | None,
        values: Sequence[Any] | None,
        ordinals: np.ndarray | None,
        alert: bool | None,
    ) -> None:
        """Write a drained batch as one chunk per call it ran in (``ordinals`` None: all
        under the next execution)."""
        writer = self._writer
        if writer.stopped is not None:
            return  # recording stopped on a write error: drained, and discarded
        if ordinals is None:
            writer.add_traces(trace_points, summaries=rows, values=values, alert=alert)
            return
        # Runs of equal call ordinals: [start, end) index ranges.
        cuts = np.flatnonzero(np.diff(ordinals)) + 1
        bounds = np.concatenate(([0], cuts, [len(ordinals)]))
        for start, end in zip(bounds[:-1], bounds[1:]):
            ordinal = int(ordinals[start])
            # A call still running (or not yet made, for traces computed outside
            # calls) gets the next execution index.
            step = (
                self._call_executions[ordinal]
                if ordinal < len(self._call_executions)
                else writer.num_executions
            )
            writer.add_traces(
                trace_points[start:end],
                step=step,
                summaries=None if rows is None else rows[start:end],
                values=None if values is None else values[start:end],
                alert=alert,
            )
