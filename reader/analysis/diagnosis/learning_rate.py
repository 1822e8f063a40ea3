"""The optimizer's learning rate as a dump records it: which op computes it, and its
value at each step.

A learning rate is no tensor of its own in a dump; it is an op's output like any other.
Two shapes of it are known:

- a schedule (a Keras ``LearningRateSchedule``, or any callable learning rate): Keras 3
  calls it in ``BaseOptimizer._get_current_learning_rate`` (tf_keras:
  ``OptimizerV2._decayed_lr``) inside the step's graph, so the ops the schedule made
  carry that frame on their creation stack; its value is the last traced float op made
  there (the schedule's return value).
- a variable (a float learning rate, which Keras keeps in a variable named
  ``learning_rate``, also what a custom loop assigns): the reads of that variable
  (`Op.variable`, format 2.4).

The value of a scalar is its largest magnitude: FULL_HEALTH's `Summary.max_abs`,
FULL_STATS' max (CURT_HEALTH and CONCISE_HEALTH record none: no learning rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reader.analysis.hunt.graph_ops import every_op
from reader.errors import DumpError
from reader.model import Op, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# The optimizer functions that call a learning-rate schedule (Keras 3, tf_keras).
SCHEDULE_CALLERS = frozenset({"_get_current_learning_rate", "_decayed_lr"})
# The name Keras gives the variable that holds a float learning rate.
VARIABLE_NAME = "learning_rate"
FLOAT_DTYPES = frozenset({"bfloat16", "float16", "float32", "float64"})
# Traces of the learning rate read, at most (the latest ones).
MAX_VALUES = 4096


@dataclass(frozen=True, slots=True)
class LearningRateValue:
    """The learning rate at one step: the step (or execution, in a run without steps),
    the trace that recorded it, and its value."""

    step: int
    trace: int
    value: float


@dataclass(frozen=True, slots=True)
class LearningRate:
    """The op whose output is the learning rate, where it came from (``"schedule"`` or
    ``"variable"``), and its values in trace order (`MAX_VALUES` at most)."""

    op: Op
    source: str
    values: tuple[LearningRateValue, ...]
    unit: str  # "step", or "execution" in a run without steps

    @property
    def source_text(self) -> str:
        """Where the value came from, in the user's terms."""
        if self.source == "schedule":
            return "the optimizer's schedule"
        return f"the optimizer's variable `{self.op.variable}`"


def learning_rate(reader: AnalysedRun, before: int | None = None) -> LearningRate | None:
    """The run's learning rate and its values in the traces before ``before`` (all
    when None); None when no op of the dump computes one, or the mode records no values.
    A schedule is preferred over a variable (a schedule's optimizer keeps none)."""
    found = _learning_rate_op(reader)
    if found is None:
        return None
    op, source = found
    traces = reader.traces_of(op.id, 0)
    if before is not None:
        traces = traces[traces < before]
    steps = reader.steps()
    values = []
    for index in traces[-MAX_VALUES:].tolist():
        trace = reader.trace(index)
        value = _value(trace.summary)
        if value is None:
            continue
        step = steps.of_execution(trace.step) if steps.has_steps else None
        values.append(LearningRateValue(trace.step if step is None else step, index, value))
    if not values:
        return None
    return LearningRate(op, source, tuple(values), "step" if steps.has_steps else "execution")


def _value(summary: Summary | None) -> float | None:
    if summary is None:
        return None
    return summary.max if summary.max is not None else summary.max_abs


def _learning_rate_op(reader: AnalysedRun) -> tuple[Op, str] | None:
    schedule: Op | None = None
    variable: Op | None = None
    callers: dict[int, bool] = {}  # stack id -> whether a schedule caller is on it
    for op in every_op(reader):
        if (
            not op.trace_points
            or op.trace_points[0] is None
            or not op.output_dtypes
            or op.output_dtypes[0] not in FLOAT_DTYPES
        ):
            continue
        if op.variable is not None and op.variable.rsplit("/", 1)[-1] == VARIABLE_NAME:
            variable = variable or op
        if op.stack_id is None:
            continue
        if op.stack_id not in callers:
            try:
                frames = reader.stack(op.stack_id)
            except DumpError:
                frames = []
            callers[op.stack_id] = any(f.function in SCHEDULE_CALLERS for f in frames)
        if callers[op.stack_id] and (schedule is None or op.id > schedule.id):
            schedule = op
    if schedule is not None:
        return schedule, "schedule"
    return (variable, "variable") if variable is not None else None
