"""A multi-worker job's run's progress file (docs/format.md, "The progress file"): its
first record holding NaN or infinity and how far it has run, kept by the writer and
written whole at its flushes, so that the job's ranking (`reader.analysis.jobs`) reads
each worker without indexing its run.

`JobProgress` is told of what the writer records (under the writer's lock) and keeps
what the file says: the calls of each function, the recent calls' execution indices,
times and devices (for an alert whose traces reach the writer after later calls), the
ops' trace points, which files, frames and stacks are the user's (for the alert's
line), and the first alert. It looks at the summary rows the writer is handed anyway:
nothing more is read from the program, and nothing per op or per step is asked of the
device. It imports no TensorFlow.

The first alert is the one first in the run's history (a trace of call ``x`` comes
just before execution ``x``): after it, only rows of an earlier step are looked at
(traces reach the writer up to a second after their call, possibly after an eager
alert of a later step).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from reader import format as fmt
from reader.contract import KIND_KEY, ProgressAlertMap, ProgressRecord
from reader.summary_rows import first_alert_in_block, first_alert_row

# Function calls remembered for an alert whose traces reach the writer after later
# calls (its step's time, device and the calls before it). Traces come within about a
# second of their call: a program making more calls than this in that time leaves
# such an alert without its step, and the job's ranking reads that run in full.
RECENT_CALLS = 1024
# The modes whose rows the writer can look at for NaN and infinity as they come, and
# those that record none at all. FULL_TENSOR's values are not looked at (a pass over
# every value; the flight recorder does it when a buffer or stop_on_alert needs it):
# its progress says nothing of alerts, and the ranking reads such a run in full.
_ALERT_FREE_MODES = (fmt.NO_TENSOR, fmt.SHAPE)
# The progress file is written at most this often, unless its first alert changed or
# the run ends: a program whose records fill the writer's buffer many times a second
# flushes as often, and each write is a file replaced. A little less than the periodic
# flush's 0.5 s, which it never skips.
WRITE_INTERVAL_S = 0.4
# In the run's history a call's graph traces come just before the call's execution.
_KIND_ORDER = {"graph": 0, "eager": 1}


class _Call(NamedTuple):
    """A function call: its execution index, function, ordinal, time and device (a
    tuple: one is made at every call)."""

    position: int
    function: str
    ordinal: int
    time: float
    device: int | None


@dataclass(slots=True)
class _Alert:
    """The first alert's facts, and its step's once execution ``position`` is known."""

    position: int
    kind: str
    index: int
    slot: int
    op_type: str
    op_name: str | None
    device: int | None
    stack: int | None
    time: float | None = None
    calls: list[list[Any]] | None = None
    resolved: bool = False

    @property
    def order(self) -> tuple[int, int, int]:
        """Its place in the run's history: a call's traces come just before it."""
        return (self.position, _KIND_ORDER[self.kind], self.index)


class JobProgress:
    """What a job's run's progress file says, kept as the writer records.

    Args:
        run_record: The run's `run` record.
        mode: The run's tensor debug mode.
    """

    def __init__(self, run_record: dict[str, Any], mode: str | None) -> None:
        self._run = {k: v for k, v in run_record.items() if k != KIND_KEY}
        self._mode = mode
        self.watches_alerts = mode in fmt.HEALTH_MODES or mode in _ALERT_FREE_MODES
        self._looks = mode in fmt.HEALTH_MODES
        self._calls: dict[str, int] = {}  # function -> calls recorded (in first-call order)
        # Op type -> its function (`reader.format.step_function_name`): asked per execution.
        self._functions: dict[str, str | None] = {}
        self._latest: dict[str, _Call] = {}
        self._recent: deque[_Call] = deque(maxlen=RECENT_CALLS)
        self._forgotten: set[str] = set()  # functions with calls gone from `_recent`
        self._devices: dict[int, str] = {}
        self._user_files: dict[int, str] = {}
        self._user_frames: dict[int, tuple[str, int, str]] = {}
        self._stack_frames: dict[int, int] = {}  # stack id -> its innermost user frame
        # Trace point -> (op type, op name, device id, stack id, slot).
        self._trace_points: dict[int, tuple[str, str, int | None, int | None, int]] = {}
        self._alert: _Alert | None = None
        self.executions = 0
        self.traces = 0
        self.ended = False
        self.stopped = False
        self.changed = True
        self._urgent = True  # written at the next flush whatever the interval
        self._written = -math.inf  # when last written (monotonic)

    # -- definitions -------------------------------------------------------------------

    def note_device(self, ident: int, name: str) -> None:
        self._devices[ident] = name

    def note_file(self, ident: int, path: str, library: bool) -> None:
        if not library:
            self._user_files[ident] = path

    def note_frame(self, ident: int, file_id: int, line: int, function: str) -> None:
        path = self._user_files.get(file_id)
        if path is not None:
            self._user_frames[ident] = (path, int(line), function or "<lambda>")

    def note_stack(self, ident: int, frame_ids: Sequence[int]) -> None:
        for frame in reversed(frame_ids):
            if frame in self._user_frames:
                self._stack_frames[ident] = frame
                return

    def note_op(
        self,
        op_type: str,
        op_name: str,
        device: int | None,
        stack: int | None,
        trace_points: Sequence[int | None],
    ) -> None:
        for slot, point in enumerate(trace_points):
            if point is not None:
                self._trace_points[int(point)] = (op_type, op_name, device, stack, slot)

    # -- events --------------------------------------------------------------------------

    def note_execution(
        self,
        index: int,
        op_type: str,
        ordinal: int | None,
        time_s: float,
        devices: Sequence[int],
        stack: int | None,
        summaries: Sequence[Sequence[float] | None] | None,
    ) -> None:
        """Execution ``index`` was recorded (a function call counts as a call of its
        function, `reader.format.step_function_name`), its summaries looked at."""
        self.executions = index + 1
        self.changed = True
        if op_type in self._functions:
            function = self._functions[op_type]
        else:
            function = self._functions[op_type] = fmt.step_function_name(op_type)
        device = devices[0] if devices else None
        if function is not None:
            counted = self._calls.get(function, 0)
            number = counted if ordinal is None else int(ordinal)
            call = _Call(index, function, number, time_s, device)
            self._calls[function] = max(counted, call.ordinal) + 1
            self._latest[function] = call
            if len(self._recent) == self._recent.maxlen:
                self._forgotten.add(self._recent[0].function)
            self._recent.append(call)
        alert = self._alert
        if alert is not None:
            if not alert.resolved and alert.position == index:
                self._resolve(alert, time_s, device)
            return  # executions come in order: none after it comes before it
        if self._looks and summaries:
            slot = first_alert_row(self._mode, summaries)
            if slot is not None:
                found = _Alert(
                    index,
                    "eager",
                    index,
                    slot,
                    op_type,
                    None,
                    devices[slot] if slot < len(devices) else None,
                    stack,
                )
                self._resolve(found, time_s, found.device)
                self._take(found)

    def note_traces(
        self, first: int, step: int, trace_points: np.ndarray, summaries: np.ndarray | None
    ) -> None:
        """Traces ``first``.. of call ``step`` were recorded, their rows looked at."""
        self.traces = first + int(trace_points.shape[0])
        self.changed = True
        if not self._looks or summaries is None or not self._wants(step, "graph"):
            return
        k = first_alert_in_block(self._mode, summaries)
        if k is None:
            return
        op_type, op_name, device, stack, slot = self._trace_points.get(
            int(trace_points[k]), ("?", None, None, None, 0)
        )
        alert = _Alert(step, "graph", first + k, slot, op_type, op_name, device, stack)
        if step < self.executions:
            call = self._call_at(step)
            self._resolve(alert, call.time if call else None, call.device if call else None)
        self._take(alert)

    def _wants(self, position: int, kind: str) -> bool:
        """Whether a record of this kind at ``position`` could come before the first
        alert found (a call's traces come before the call: they may come later than
        its output's alert)."""
        alert = self._alert
        return alert is None or (position, _KIND_ORDER[kind]) < alert.order[:2]

    def _take(self, alert: _Alert) -> None:
        if self._alert is None or alert.order < self._alert.order:
            self._alert = alert
            self._urgent = True

    def _call_at(self, index: int) -> _Call | None:
        for call in reversed(self._recent):
            if call.position == index:
                return call
            if call.position < index:
                return None
        return None

    def _resolve(self, alert: _Alert, time_s: float | None, device: int | None) -> None:
        """The alert's step is known: execution ``alert.position``'s time, its device
        (for an op placed at run time) and the latest call of each function at or
        before it (None when a function's calls around it are forgotten)."""
        alert.time = time_s
        if alert.device is None:
            alert.device = device
        calls: list[list[Any]] | None = []
        for function, latest in self._latest.items():
            call: _Call | None = latest
            if latest.position > alert.position:
                call = next(
                    (
                        c
                        for c in reversed(self._recent)
                        if c.function == function and c.position <= alert.position
                    ),
                    None,
                )
                if call is None and function in self._forgotten:
                    calls = None
                    break
            if call is not None:
                assert calls is not None
                calls.append([function, call.ordinal])
        alert.calls = calls
        alert.resolved = True

    # -- the file ------------------------------------------------------------------------

    def due(self) -> bool:
        """Whether the file is to be written now: it changed, and its first alert is
        new, the run ended or stopped, or `WRITE_INTERVAL_S` passed since the last."""
        if not self.changed:
            return False
        urgent = self._urgent or self.ended or self.stopped
        return urgent or time.monotonic() - self._written >= WRITE_INTERVAL_S

    def record(self) -> dict[str, Any]:
        """The progress record as things stand (docs/format.md, `progress`)."""
        self.changed = self._urgent = False
        self._written = time.monotonic()
        record: dict[str, Any] = {
            KIND_KEY: ProgressRecord.KIND,
            ProgressRecord.RUN: self._run,
            ProgressRecord.CALLS: [[name, count] for name, count in self._calls.items()],
            ProgressRecord.EXECUTIONS: self.executions,
            ProgressRecord.TRACES: self.traces,
            ProgressRecord.ENDED: self.ended,
            ProgressRecord.STOPPED: self.stopped,
            ProgressRecord.TIME: time.time(),
        }
        if self.watches_alerts:
            record[ProgressRecord.ALERT] = None if self._alert is None else self._alert_map()
        return record

    def _alert_map(self) -> dict[str, Any]:
        alert = self._alert
        assert alert is not None
        stack = -1 if alert.stack is None else alert.stack
        frame = self._user_frames.get(self._stack_frames.get(stack, -1))
        return {
            ProgressAlertMap.STEP: alert.position,
            ProgressAlertMap.ALERT_KIND: alert.kind,
            ProgressAlertMap.INDEX: alert.index,
            ProgressAlertMap.SLOT: alert.slot,
            ProgressAlertMap.OP_TYPE: alert.op_type,
            ProgressAlertMap.OP_NAME: alert.op_name,
            ProgressAlertMap.RECEIVED: alert.op_type in fmt.RECEIVING_OPS,
            ProgressAlertMap.DEVICE: None
            if alert.device is None
            else self._devices.get(alert.device),
            ProgressAlertMap.TIME: alert.time,
            ProgressAlertMap.CALLS: alert.calls,
            ProgressAlertMap.FILE: None if frame is None else frame[0],
            ProgressAlertMap.LINE: None if frame is None else frame[1],
            ProgressAlertMap.FUNCTION: None if frame is None else frame[2],
        }
