"""Steps the user recognises, alerts per step, and what of the run is not on disk (the
gaps a circular buffer leaves).

A **step** is one call of the run's **step function**: the outermost instrumented
function (a custom loop's ``train_step``; Keras' ``train_function``). Eager calls of
tf.functions are the outermost calls there are; the step function is the one called
most often (ties: the one called first), found from the calls' runtime names
(`reader.format.step_function_name`). Step S is its call with ordinal S (the
writer's `c`, counted from 0 for the whole run, so it survives a circular buffer);
everything recorded after that call began and before the next one belongs to step S:
the call's graph traces (their ``x``), and the eager ops and other calls that follow it
(a ``__backward_`` call, an optimizer's eager ops). Records before the first step are
in no step (None). A run without tf.function calls has no steps: places are named
by execution index instead.

Under a circular buffer, executions and traces on disk come in runs: the first
alert's pinned window, then the latest records (docs/format.md section 7). The
stretches between runs are the run's **gaps**; `Steps.gaps` names them in steps.

Decided here once; `report` and the TUI only format it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.contract import ExecRecord
from reader.errors import DumpError

if TYPE_CHECKING:
    from reader.model import Alert
    from reader.run.run_protocol import Run

NO_STEP = -1  # in step arrays: before the first step, or not known


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of the run between two runs of records kept on disk.

    The two streams rotate separately; the k-th gap of each is the same pinned
    window's end (its executions' and its traces').

    Attributes:
        executions: ``(begin, end)`` execution indices not kept, or None.
        traces: ``(begin, end)`` graph trace indices not kept, or None.
        steps: ``(first, last)`` step numbers of which no execution was kept, or None
            (no steps, or every step partly kept).
        after_execution: Where the gap falls in the run's history: records that ran
            at or before this execution index (a trace: in the call with this index)
            come before it, later ones after it.
    """

    executions: tuple[int, int] | None
    traces: tuple[int, int] | None
    steps: tuple[int, int] | None
    after_execution: int

    def describe(self) -> str:
        """One line: "steps 251-431 not kept" (or in executions or traces)."""
        if self.steps is not None:
            first, last = self.steps
            what = "step" if first == last else "steps"
            span = f"{first}" if first == last else f"{first}-{last}"
            if self.executions is None:
                return f"graph traces of {what} {span} not kept"
            return f"{what} {span} not kept"
        if self.executions is not None:
            b, e = self.executions
            return f"executions {b}-{e - 1} not kept"
        b, e = self.traces or (0, 0)
        return f"graph traces {b}-{e - 1} not kept"


@dataclass(frozen=True, slots=True)
class _Run:
    """One run of executions on disk and its steps."""

    begin: int
    end: int
    starts: np.ndarray  # execution indices of the step function's calls, ascending
    numbers: np.ndarray  # their step numbers
    before: int  # step of the run's executions before its first call (NO_STEP: none)


class Steps:
    """The run's steps, per-step alert counts and gaps, from one state of a dump.

    Build with `DumpReader.steps()` (cached until the dump changes).

    Args:
        dump: The run's record queries.
        first_alert: The run's first alert in true execution order, or None.
    """

    def __init__(self, dump: Run, first_alert: Alert | None) -> None:
        self.execution_runs = dump.kept_executions()
        self.trace_runs = dump.kept_traces()
        coded = [dump.execution_op_codes(b, e) for b, e in self.execution_runs]
        table = coded[-1][1] if coded else []  # the last call's table holds every code
        codes = [run_codes for run_codes, _ in coded]
        self.function = _step_function(
            np.concatenate(codes) if codes else np.empty(0, np.int32), table
        )
        is_step_code = np.array(
            [fmt.step_function_name(t) == self.function for t in table]
            if self.function is not None
            else [],
            dtype=bool,
        )
        self._runs: list[_Run] = []
        previous_last = NO_STEP
        for (begin, end), run_codes in zip(self.execution_runs, codes):
            is_start = (
                is_step_code[run_codes]
                if is_step_code.size
                else np.zeros(run_codes.size, dtype=bool)
            )
            run = self._steps_of_run(dump, begin, end, is_start, previous_last)
            self._runs.append(run)
            previous_last = int(run.numbers[-1]) if run.numbers.size else run.before
        eager, graph = dump.alert_positions()
        alert_steps = self.of_executions(np.concatenate([eager, graph]))
        known = alert_steps[alert_steps != NO_STEP]
        numbers, counts = np.unique(known, return_counts=True)
        self.alert_steps: np.ndarray = numbers.astype(np.int64)
        self.alert_counts: np.ndarray = counts.astype(np.int64)
        first = first_alert  # the run's first alert in true execution order
        self.first_alert_step = None if first is None else self.of_execution(first.step)
        self.first_alert_position = None if first is None else first.step
        self.gaps = self._gaps(dump)

    def _steps_of_run(
        self, dump: Run, begin: int, end: int, is_start: np.ndarray, previous_last: int
    ) -> _Run:
        """The steps of executions ``begin..end-1``; ``is_start``: per execution, a call
        of the step function."""
        if self.function is None:
            empty = np.empty(0, dtype=np.int64)
            return _Run(begin, end, empty, empty, NO_STEP)
        starts = np.flatnonzero(is_start).astype(np.int64) + begin
        if not starts.size:
            # The whole run lies inside one step (a long step, or a short run).
            return _Run(
                begin,
                end,
                starts,
                starts.copy(),
                previous_last if previous_last != NO_STEP else NO_STEP,
            )
        first_number = _call_ordinal(dump, int(starts[0]))
        if first_number is None:
            # A dump written before format 1.1: count from the first call on disk.
            first_number = previous_last + 1
        numbers = first_number + np.arange(starts.size, dtype=np.int64)
        before = first_number - 1 if first_number > 0 else NO_STEP
        return _Run(begin, end, starts, numbers, before)

    @property
    def has_steps(self) -> bool:
        """Whether the run has a step function (else places are execution indices)."""
        return self.function is not None

    def of_execution(self, index: int) -> int | None:
        """The step of execution ``index`` (or of a trace whose ``x`` it is); None when
        there are no steps, it came before the first step, or it is not on disk."""
        step = int(self.of_executions(np.array([index], dtype=np.int64))[0])
        return None if step == NO_STEP else step

    def of_executions(self, indices: np.ndarray) -> np.ndarray:
        """int64 step per execution index (`NO_STEP` where `of_execution` is None)."""
        indices = np.asarray(indices, dtype=np.int64)
        steps = np.full(indices.shape, NO_STEP, dtype=np.int64)
        for run in self._runs:
            inside = (indices >= run.begin) & (indices < run.end)
            if not inside.any():
                continue
            if not run.starts.size:
                steps[inside] = run.before
                continue
            k = np.searchsorted(run.starts, indices[inside], side="right") - 1
            steps[inside] = np.where(k >= 0, run.numbers[np.maximum(k, 0)], run.before)
        return steps

    def kept_steps(self) -> list[tuple[int, int]]:
        """``(first, last)`` step numbers of each run of executions on disk (partly
        kept steps included); empty without steps."""
        kept = []
        for run in self._runs:
            first, last = self.of_execution(run.begin), self.of_execution(run.end - 1)
            if last is not None:
                kept.append((first if first is not None else 0, last))
        return kept

    def _gaps(self, dump: Run) -> list[Gap]:
        execution_gaps = _between(self.execution_runs)
        trace_gaps = _between(self.trace_runs)
        gaps = []
        for k in range(max(len(execution_gaps), len(trace_gaps))):
            executions = execution_gaps[k] if k < len(execution_gaps) else None
            traces = trace_gaps[k] if k < len(trace_gaps) else None
            around: tuple[int, ...]
            if executions is not None:
                around = (executions[0] - 1, executions[1])
            else:
                # The executions of those steps are kept; their traces are not.
                assert traces is not None
                around = tuple(
                    int(x)
                    for x in np.concatenate(
                        [
                            dump.trace_steps(traces[0] - 1, traces[0]),
                            dump.trace_steps(traces[1], traces[1] + 1),
                        ]
                    )
                )
            before, after = (self.of_execution(i) for i in around)
            steps = None
            if before is not None and after is not None and after - 1 >= before + 1:
                steps = (before + 1, after - 1)
            gaps.append(
                Gap(executions=executions, traces=traces, steps=steps, after_execution=around[0])
            )
        return gaps

    def gap_positions(self, executions: np.ndarray) -> list[int]:
        """Where each gap falls among records that ran at ``executions`` (ascending
        execution indices, as `Gap.after_execution`): how many come before it."""
        executions = np.asarray(executions, dtype=np.int64)
        return [
            int(np.searchsorted(executions, gap.after_execution, side="right")) for gap in self.gaps
        ]

    def place(self, execution_index: int) -> str:
        """How to name where execution ``execution_index`` is: "step 250", or
        "execution 267" in a run without steps."""
        step = self.of_execution(execution_index)
        return f"step {step}" if step is not None else f"execution {execution_index}"


def gap_between(steps: Steps | None, stream: str, begin: int, end: int) -> Gap:
    """The gap in which records ``begin..end-1`` of ``stream`` (executions or graph
    traces) are not kept. Without ``steps``, or when they predate that gap (a live
    run's list can be newer than its last analysis), a gap named by indices only."""
    for gap in steps.gaps if steps is not None else ():
        if (gap.executions if stream == fmt.STREAM_EXECUTIONS else gap.traces) == (begin, end):
            return gap
    if stream == fmt.STREAM_EXECUTIONS:
        return Gap(executions=(begin, end), traces=None, steps=None, after_execution=begin - 1)
    return Gap(executions=None, traces=(begin, end), steps=None, after_execution=-1)


def _between(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ``(begin, end)`` ranges between consecutive runs."""
    return [(a[1], b[0]) for a, b in zip(runs, runs[1:])]


def _step_function(codes: np.ndarray, table: list[str]) -> str | None:
    """The function called most often (ties: the one called first), or None.

    Args:
        codes: Op-type code per execution, in execution order.
        table: The op type of each code.
    """
    found, first, count = np.unique(codes, return_index=True, return_counts=True)
    calls: dict[str, int] = {}
    for k in np.argsort(first, kind="stable").tolist():  # in order of first call
        name = fmt.step_function_name(table[int(found[k])])
        if name is not None:
            calls[name] = calls.get(name, 0) + int(count[k])
    if not calls:
        return None
    best = max(calls.values())
    return next(name for name in calls if calls[name] == best)


def _call_ordinal(dump: Run, index: int) -> int | None:
    """The writer's ordinal `c` of function call ``index``; None before format 1.1."""
    try:
        value = dump.execution_record(index).get(ExecRecord.CALL)
    except DumpError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
