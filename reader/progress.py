"""A multi-worker job's run as its writer last saw it, from its progress file (format
2.7, docs/format.md "The progress file"), checked as read (`RunProgress`): its first
non-finite value (`ProgressAlert`: where, which op, received or made), how far it has
run (its functions' calls) and its `run` record; read without indexing the run.

The file is input from outside like any record: every value is checked here (an id
within `reader.limits.MAX_ID`, strings of bounded length, a known kind); a progress
whose essential values are malformed is no progress at all (`parse_progress` returns
None), and a reader reads that run in full instead. Imports neither numpy nor msgpack
at module level: listing a logdir (`reader.run.run_dir`) reads progress files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from reader import format as fmt
from reader import storage
from reader.contract import KIND_KEY, ProgressAlertMap, ProgressRecord, RunRecord
from reader.limits import MAX_OP_OUTPUTS, is_id, is_int

# The most bytes a progress file is read for: its `run` record (the program's command
# line) and a few dozen numbers. A larger file is not a writer's, and is ignored.
MAX_PROGRESS_BYTES = 1 << 20
# Functions a progress may name (a program calls a handful of tf.functions); more is
# damage.
MAX_FUNCTIONS = 1 << 10
# Characters kept of an op type, op name, device or path: longer ones are damage.
MAX_NAME_CHARS = 4096
ALERT_KINDS = ("graph", "eager")


@dataclass(frozen=True, slots=True)
class ProgressAlert:
    """The run's first record holding NaN or infinity, as the writer saw it.

    Attributes:
        position: The execution index of the step it ran in (a graph trace's call,
            an eager execution itself): the reader's `Alert.step`.
        kind: "graph" (a graph trace) or "eager" (an eager execution's output).
        index: Its trace index (graph) or execution index (eager).
        slot: The output slot.
        op_type: The op's type (an eager call's function name).
        op_name: The graph op's name; None for an eager execution.
        received: The op is one of `reader.format.RECEIVING_OPS`: the value came from
            another worker or replica.
        device: The op's device (a graph op placed at run time: its call's).
        time: The wall time of execution ``position``; None when not recorded yet.
        calls: Per function, the ordinal of its latest call at or before
            ``position``; None when the writer did not know them.
        frame: (file, line, function) of the innermost user frame of the op's
            creation stack (graph) or the execution's call stack (eager); None: none.
    """

    position: int
    kind: str
    index: int
    slot: int
    op_type: str
    op_name: str | None
    received: bool
    device: str | None
    time: float | None
    calls: dict[str, int] | None
    frame: tuple[str, int, str] | None


@dataclass(frozen=True)
class RunProgress:
    """A job's run as its writer last saw it (`parse_progress`).

    Attributes:
        run: The run's `run` record, as its metadata stream holds it.
        calls: Per function (`reader.format.step_function_name`), the calls the
            writer has recorded, in the order each was first called.
        executions: Executions recorded.
        traces: Graph traces recorded.
        watched_alerts: Whether the writer looked at every record for NaN or infinity
            (in the health modes); when not, ``alert`` says nothing.
        alert: The first record holding NaN or infinity; None: none (so far).
        ended: The run closed cleanly.
        stopped: Recording stopped on a write error.
        time: When the file was written (Unix time), or None.
    """

    run: dict[str, Any]
    calls: dict[str, int]
    executions: int
    traces: int
    watched_alerts: bool
    alert: ProgressAlert | None
    ended: bool
    stopped: bool
    time: float | None

    @property
    def step_function(self) -> str | None:
        """The function called most often (ties: the one called first), as
        `reader.analysis.hunt.steps` chooses it; None without calls."""
        best = max(self.calls.values(), default=0)
        return next((name for name, count in self.calls.items() if count == best), None)

    @property
    def last_step(self) -> int | None:
        """The last step whose call the writer recorded; None without steps."""
        function = self.step_function
        return self.calls[function] - 1 if function is not None else None

    def step_of(self, alert: ProgressAlert) -> int | None:
        """The step ``alert`` ran in (None: before the first step, or no steps)."""
        function = self.step_function
        if function is None or alert.calls is None:
            return None
        return alert.calls.get(function)


def parse_progress(record: Any, run_id: str) -> RunProgress | None:
    """The progress of run ``run_id`` from its decoded record; None when the record is
    not one, belongs to another run, or holds a malformed essential value."""
    if not isinstance(record, dict) or record.get(KIND_KEY) != fmt.KIND_PROGRESS:
        return None
    run = record.get(ProgressRecord.RUN)
    if not isinstance(run, dict) or run.get(RunRecord.RUN) != run_id:
        return None
    calls = _calls(record.get(ProgressRecord.CALLS))
    executions, traces = record.get(ProgressRecord.EXECUTIONS), record.get(ProgressRecord.TRACES)
    if calls is None or not is_id(executions) or not is_id(traces):
        return None
    watched = ProgressRecord.ALERT in record
    alert = None
    if record.get(ProgressRecord.ALERT) is not None:
        alert = _alert(record[ProgressRecord.ALERT])
        if alert is None:
            return None  # a first alert that says nothing sound: read the run in full
    return RunProgress(
        run=run,
        calls=calls,
        executions=executions,
        traces=traces,
        watched_alerts=watched,
        alert=alert,
        ended=record.get(ProgressRecord.ENDED) is True,
        stopped=record.get(ProgressRecord.STOPPED) is True,
        time=_time(record.get(ProgressRecord.TIME)),
    )


def decode_progress(data: bytes | None, run_id: str) -> RunProgress | None:
    """`parse_progress` of a progress file's bytes (None: no file, or not one record)."""
    if not data or len(data) > MAX_PROGRESS_BYTES:
        return None
    import msgpack

    try:
        record = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None  # cut short, extra bytes, or not msgpack
    return parse_progress(record, run_id)


def read_progresses(
    run_paths: Sequence[str], store: storage.Store | None = None
) -> list[RunProgress | None]:
    """The progress of each run in ``run_paths`` (one store), read fresh: a bucket's
    files fetched concurrently. None for a run without a readable one."""
    if not run_paths:
        return []
    store = store or storage.store_for(run_paths[0])
    found = store.read_small(
        [store.join(path, fmt.PROGRESS_FILENAME) for path in run_paths], MAX_PROGRESS_BYTES
    )
    return [decode_progress(data, store.basename(path)) for path, data in zip(run_paths, found)]


def _calls(value: Any) -> dict[str, int] | None:
    """[[function, number], ...] as a dict in that order; None when malformed."""
    if not isinstance(value, list) or len(value) > MAX_FUNCTIONS:
        return None
    calls: dict[str, int] = {}
    for pair in value:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not _name(pair[0])
            or not is_id(pair[1])
            or pair[0] in calls
        ):
            return None
        calls[pair[0]] = pair[1]
    return calls


def _alert(value: Any) -> ProgressAlert | None:
    if not isinstance(value, dict):
        return None
    position, kind = value.get(ProgressAlertMap.STEP), value.get(ProgressAlertMap.ALERT_KIND)
    index, slot = value.get(ProgressAlertMap.INDEX), value.get(ProgressAlertMap.SLOT)
    op_type = value.get(ProgressAlertMap.OP_TYPE)
    calls = value.get(ProgressAlertMap.CALLS)
    parsed_calls = None if calls is None else _calls(calls)
    if (
        not is_id(position)
        or kind not in ALERT_KINDS
        or not is_id(index)
        or not (is_int(slot) and 0 <= slot <= MAX_OP_OUTPUTS)
        or not _name(op_type)
        or (calls is not None and parsed_calls is None)
    ):
        return None
    file, line = value.get(ProgressAlertMap.FILE), value.get(ProgressAlertMap.LINE)
    function = value.get(ProgressAlertMap.FUNCTION)
    frame = None
    if _name(file) and is_id(line) and _name(function):
        frame = (file, line, function)
    return ProgressAlert(
        position=position,
        kind=kind,
        index=index,
        slot=slot,
        op_type=op_type,
        op_name=_optional_name(value.get(ProgressAlertMap.OP_NAME)),
        received=value.get(ProgressAlertMap.RECEIVED) is True,
        device=_optional_name(value.get(ProgressAlertMap.DEVICE)),
        time=_time(value.get(ProgressAlertMap.TIME)),
        calls=parsed_calls,
        frame=frame,
    )


def _name(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS


def _optional_name(value: Any) -> str | None:
    return value if _name(value) else None


def _time(value: Any) -> float | None:
    """A finite Unix time (an int counts), else None."""
    if is_int(value) and abs(value) < 1 << 53:
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None
