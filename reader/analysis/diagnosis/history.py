"""The culprit's history: one graph tensor's health across every trace of it.

Did the tensor break suddenly or drift, and when? A `TensorHistory` holds every trace
of one ``op:slot`` on disk, in order, with the step each ran in and whether it held
NaN or infinity. Only the index's columns are read (no record is decoded), so a
history over a million traces costs a few array operations.

A step is what the alerts call a step (`reader.analysis.hunt.steps`): one call of the run's step
function, so "first non-finite at step 250" here and in the Alerts pane agree. A run
without steps places each trace by the execution it ran in instead (`unit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.analysis.hunt.steps import NO_STEP

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun


@dataclass(frozen=True, eq=False)
class TensorHistory:
    """Every trace of one graph tensor on disk, ascending, and its health.

    Attributes:
        op_id: The op.
        slot: Its output slot.
        traces: int64 trace indices.
        steps: int64 step of each trace (`reader.analysis.hunt.steps.NO_STEP`: before the first
            step); the execution index instead when ``unit`` is "execution".
        nonfinite: bool, per trace: it held NaN or infinity.
        unit: What ``steps`` counts: "step" or "execution".
    """

    op_id: int
    slot: int
    traces: np.ndarray
    steps: np.ndarray
    nonfinite: np.ndarray
    unit: str = "step"

    @property
    def count(self) -> int:
        return int(self.traces.size)

    @property
    def first_nonfinite(self) -> int | None:
        """Position (in `traces`) of the first non-finite trace; None if none."""
        found = np.flatnonzero(self.nonfinite)
        return int(found[0]) if found.size else None

    def describe(self) -> str:
        """The history in a phrase: "finite for steps 0-249, first non-finite at step
        250 (#1503), and in all 49 traces after" (#: the trace index)."""
        if not self.count:
            return "no trace on disk"
        first = self.first_nonfinite
        if first is None:
            return (
                f"finite in all {_traces(self.count)} ({self._span(self.steps[0], self.steps[-1])})"
            )
        where = f"{self._span(self.steps[first], self.steps[first])} (#{self.traces[first]})"
        if first == 0:
            text = f"non-finite from its first trace, at {where}"
        else:
            text = (
                f"finite for {self._span(self.steps[0], self.steps[first - 1])}, "
                f"first non-finite at {where}"
            )
        since = self.count - first - 1
        if since:
            bad = int(self.nonfinite[first + 1 :].sum())
            if bad == since:
                text += f", and in {'all' if since > 1 else 'the'} {_traces(since)} after"
            else:
                text += f", and in {bad:,} of the {_traces(since)} after"
        return text

    def _span(self, first: int, last: int) -> str:
        """ "step 4", "steps 0-249", "execution 12"; traces before the first step
        (a function called once to set up) are "the setup before step 0"."""
        if self.unit == "step" and first == NO_STEP:
            setup = "the setup before step 0"
            return setup if last == NO_STEP else f"{setup} and {self._span(0, last)}"
        plural = "s" if first != last else ""
        span = f"{first}" if first == last else f"{first}-{last}"
        return f"{self.unit}{plural} {span}"

    def nonfinite_share(self, axis: np.ndarray, cells: int) -> np.ndarray:
        """The steps of ``axis`` (ascending, unique: `step_axis`) cut into ``cells``
        equal runs: per cell, the share of this tensor's traces in those steps that
        were non-finite (0..1), NaN where it has none. Traces in steps not on the
        axis are left out."""
        cells = max(1, min(cells, axis.size))
        position = np.searchsorted(axis, self.steps)
        inside = position < axis.size
        inside[inside] = axis[position[inside]] == self.steps[inside]
        cell = position[inside] * cells // max(1, axis.size)
        totals = np.bincount(cell, minlength=cells).astype(np.float64)
        bad = np.bincount(cell, weights=self.nonfinite[inside], minlength=cells)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(totals > 0, bad / totals, np.nan)


def step_axis(histories: list[TensorHistory]) -> np.ndarray:
    """The steps in which any of the histories has a trace, ascending: a shared axis,
    so that where each tensor broke lines up (steps where none ran take no room)."""
    steps = [h.steps for h in histories if h.count]
    return np.unique(np.concatenate(steps)) if steps else np.empty(0, dtype=np.int64)


def tensor_history(reader: AnalysedRun, op_id: int, slot: int) -> TensorHistory | None:
    """The history of graph tensor ``(op_id, slot)`` from the traces on disk now; None
    when the run's mode records no health (NO_TENSOR, SHAPE)."""
    if reader.metadata.tensor_debug_mode not in fmt.HEALTH_MODES + (fmt.FULL_TENSOR,):
        return None
    traces = reader.traces_of(op_id, slot)
    alerts = reader.trace_alert_indices()
    nonfinite = np.isin(traces, alerts, assume_unique=True)
    positions = reader.trace_steps_at(traces) if traces.size else np.empty(0, dtype=np.int64)
    run_steps = reader.steps()
    if not run_steps.has_steps:
        return TensorHistory(op_id, slot, traces, positions, nonfinite, unit="execution")
    return TensorHistory(op_id, slot, traces, run_steps.of_executions(positions), nonfinite)


def _traces(n: int) -> str:
    return f"{n:,} trace" + ("" if n == 1 else "s")
