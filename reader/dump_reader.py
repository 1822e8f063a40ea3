"""`DumpReader`: one run of a dump, indexed, queried, and followed as it grows."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from typing import Any

import numpy as np

from reader import format as fmt
from reader import liveness, values
from reader.errors import UnknownIdError
from reader.model import (
    Alert, AlertSummary, Execution, Frame, Graph, Op, RootCause, RunMetadata, SourceFile,
    Summary, Trace, UpdateReport,
)
from reader.notices import Notice
from reader.run_loader import RunLoader
from reader.steps import Steps

class DumpReader:
    """Reads one run directory: indexes everything present, then follows its growth.

    All methods are thread-safe (one lock); `update()` holds the lock while it reads.
    Indices are absolute: under a circular buffer the oldest ones leave the disk and
    `first_execution` / `first_trace` move forward.

    Args:
        run_path: A run directory (``LOGDIR/<run id>``).

    Raises:
        NoRunsError: ``run_path`` holds no metadata segment.
        FormatVersionError: A file was written by a newer major format version.
        DamagedDumpError: Not even the run's metadata record is readable.
    """

    def __init__(self, run_path: str | os.PathLike[str]) -> None:
        self.path = os.path.abspath(os.fspath(run_path))
        self.run_id = os.path.basename(self.path)
        self._lock = threading.RLock()
        self._loader = RunLoader(self.path)
        self.mode = self._loader.mode
        # The loader fills these in place; queries read them under the lock.
        self._defs = self._loader.defs
        self._execs = self._loader.execs
        self._traces = self._loader.traces
        self._alerts_cache: tuple[tuple, AlertSummary] | None = None
        self._steps_cache: tuple[tuple, Steps] | None = None
        self._find_cache: tuple[tuple, np.ndarray] | None = None
        self.update()

    def update(self) -> UpdateReport:
        """Read what was appended since the last call (the constructor's is the first).

        Returns:
            What is new: counts of executions, traces, alerts, graphs and ops, new
            damage notices, and what left the disk under a circular buffer.

        Raises:
            FormatVersionError: A new file was written by a newer major version.
        """
        with self._lock:
            return self._loader.update()

    def _fetch(self, stream: str, segment: int, offset: int, length: int) -> dict[str, Any]:
        return self._loader.fetch(stream, segment, offset, length)

    # -- run ---------------------------------------------------------------------------

    @property
    def metadata(self) -> RunMetadata:
        """The run's description, with the devices read so far."""
        with self._lock:
            run = self._loader.run or {}
            version = run.get("format_version")
            argv = run.get("argv")
            dtypes = run.get("tensor_dtypes")
            end_time = self._loader.end.get("time") if self._loader.end else None
            devices = self._defs.devices
            return RunMetadata(
                run_id=str(run.get("run") or self.run_id),
                format_version=(tuple(version[:2]) if isinstance(version, list)
                                and len(version) >= 2 else fmt.FORMAT_VERSION),
                tensor_debug_mode=self.mode,
                circular_buffer_size=_int_or(run.get("circular_buffer_size"), 0),
                host=_str_or_none(run.get("host")),
                pid=run.get("pid") if isinstance(run.get("pid"), int) else None,
                start_time=_float_or_none(run.get("start_time")),
                tf_version=_str_or_none(run.get("tf_version")),
                python_version=_str_or_none(run.get("python_version")),
                argv=tuple(str(a) for a in argv) if isinstance(argv, list) else (),
                eager_mode=bool(run.get("eager_mode", True)),
                finished=self._loader.end is not None,
                devices=tuple(devices.get(i, "?") for i in range(max(devices, default=-1) + 1)),
                op_regex=_str_or_none(run.get("op_regex")),
                tensor_dtypes=(tuple(str(d) for d in dtypes) if isinstance(dtypes, list)
                               else None),
                end_time=_float_or_none(end_time),
                thread=_str_or_none(run.get("thread")),
            )

    @property
    def damage(self) -> tuple[str, ...]:
        """One-line notices of everything the reader had to skip, oldest first."""
        with self._lock:
            return tuple(self._loader.damage)

    def notices(self) -> tuple[Notice, ...]:
        """The writer's notices (`reader.notices.Notice`), in the order written."""
        with self._lock:
            return tuple(self._loader.notices)

    @property
    def finished(self) -> bool:
        """True once the run's `end` record is read: the process exited cleanly."""
        return self._loader.end is not None

    def process_gone(self) -> bool | None:
        """Whether the process writing this run is gone (`liveness.process_gone`)."""
        metadata = self.metadata
        return liveness.process_gone(metadata.host, metadata.pid, metadata.start_time)

    def writer_state(self) -> str:
        """`reader.liveness` state of the run: finished, running, killed or unknown.

        When the writing process is gone, reads what it appended first (`update`), so
        a clean exit is never taken for a kill. A caller that follows the run looks
        with `process_gone` before its own `update` instead.
        """
        if self.finished:
            return liveness.FINISHED
        gone = self.process_gone()
        if gone:
            self.update()
        return liveness.state_of(self.finished, gone)

    def device(self, device_id: int) -> str | None:
        """A device's name, or None when not defined (yet)."""
        return self._defs.device_name(device_id)

    # -- executions --------------------------------------------------------------------

    @property
    def num_executions(self) -> int:
        """One past the last execution index read (count since the program started)."""
        return self._execs.end

    @property
    def first_execution(self) -> int:
        """The first execution index still on disk; > 0 under a circular buffer."""
        return self._execs.first

    def _exec_row(self, index: int) -> int:
        row = self._execs.spans.row_of(index)
        if row is None:
            raise UnknownIdError(f"execution {index} is not on disk (have "
                                 f"{_describe_runs(self._execs.spans.runs())})")
        return row

    def kept_executions(self) -> list[tuple[int, int]]:
        """The ``(begin, end)`` execution index ranges on disk, ascending: one, or more
        when records between them left the disk (a circular buffer's pinned window)."""
        with self._lock:
            return self._execs.spans.runs()

    def kept_traces(self) -> list[tuple[int, int]]:
        """The ``(begin, end)`` trace index ranges on disk, ascending."""
        with self._lock:
            return self._traces.spans.runs()

    def execution_record(self, index: int) -> dict[str, Any]:
        """The raw decoded ``exec`` record (for tools; prefer `execution`)."""
        with self._lock:
            row = self._exec_row(index)
            e = self._execs
            return self._fetch(fmt.STREAM_EXECUTIONS, int(e.segment.view[row]),
                               int(e.offset.view[row]), int(e.length.view[row]))

    def execution(self, index: int) -> Execution:
        """The full execution record ``index`` (decoded on demand, cached).

        Raises:
            UnknownIdError: ``index`` is not on disk.
            DamagedDumpError: Its bytes can no longer be read.
        """
        with self._lock:
            record = self.execution_record(index)
            return self._build_execution(index, record)

    def _build_execution(self, index: int, record: dict[str, Any]) -> Execution:
        summaries: tuple[Summary | None, ...] | None = None
        if self.mode == fmt.FULL_TENSOR and isinstance(record.get("v"), list):
            summaries = tuple(_value_summary(v) for v in record["v"])
        elif isinstance(record.get("s"), list):
            summaries = tuple(_row_summary(self.mode, s) for s in record["s"])
        return Execution(
            index=index, op_type=record["op"], graph_id=_int_or(record.get("graph"), None),
            input_ids=_ints(record.get("in")), output_ids=_ints(record.get("out")),
            devices=tuple(self._defs.device_name(d) for d in _list(record.get("dev"))),
            output_dtypes=tuple(fmt.DTYPE_NAMES.get(d, f"dtype{d}")
                                for d in _ints(record.get("dtypes"))),
            stack_id=_int_or(record.get("stack"), None),
            time=_float_or_none(record.get("t")), summaries=summaries,
            thread=_str_or_none(record.get("th")))

    def executions(self, begin: int, end: int) -> list[Execution]:
        """Executions ``begin..end-1``, clipped to what is on disk."""
        with self._lock:
            return [self.execution(i) for b, e in _clip_runs(self._execs.spans.runs(), begin, end)
                    for i in range(b, e)]

    def _exec_slice(self, begin: int, end: int) -> slice:
        """Rows of the executions on disk among ``begin..end-1`` (a range's rows are
        consecutive: indices not on disk have none)."""
        spans = self._execs.spans
        b = spans.rows_below(begin)
        return slice(b, max(spans.rows_below(end), b))

    def execution_op_types(self, begin: int, end: int) -> list[str]:
        """Op type (or function name) of executions ``begin..end-1``, without decoding."""
        with self._lock:
            codes = self._execs.op_code.view[self._exec_slice(begin, end)]
            types = self._execs.op_types
            return [types[c] for c in codes.tolist()]

    def execution_alert_flags(self, begin: int, end: int) -> np.ndarray:
        """Bool per execution ``begin..end-1``: an output held NaN or infinity."""
        with self._lock:
            return self._execs.is_alert.view[self._exec_slice(begin, end)].copy()

    def execution_function_flags(self, begin: int, end: int) -> np.ndarray:
        """Bool per execution ``begin..end-1``: a tf.function call (not an eager op)."""
        with self._lock:
            return self._execs.is_function.view[self._exec_slice(begin, end)].copy()

    def producer_of(self, tensor_id: int, *, before: int | None = None) -> tuple[int, int] | None:
        """The eager execution that output tensor ``tensor_id``, from the index.

        Args:
            tensor_id: An eager tensor id (an `Execution`'s ``input_ids`` or ``output_ids``).
            before: Only executions below this index count (a consumer's own index).

        Returns:
            (execution index, output slot) of the latest such execution on disk, or
            None: the tensor was made outside any op callback, or its producer left
            the disk under a circular buffer.
        """
        with self._lock:
            return self._execs.producer_of(tensor_id, before)

    def execution_value(self, index: int, slot: int) -> np.ndarray | None:
        """FULL_TENSOR: the value of output ``slot`` of execution ``index``, else None."""
        with self._lock:
            stored = self.execution_record(index).get("v")
            if not isinstance(stored, list) or not 0 <= slot < len(stored):
                return None
            return values.decode_value(stored[slot])

    # -- graph traces -----------------------------------------------------------------

    @property
    def num_traces(self) -> int:
        """One past the last graph trace index read."""
        return self._traces.end

    @property
    def first_trace(self) -> int:
        """The first trace index still on disk; > 0 under a circular buffer."""
        return self._traces.first

    def _trace_row(self, index: int) -> int:
        row = self._traces.spans.row_of(index)
        if row is None:
            raise UnknownIdError(f"trace {index} is not on disk (have "
                                 f"{_describe_runs(self._traces.spans.runs())})")
        return row

    def trace(self, index: int) -> Trace:
        """Graph trace ``index``, from the index columns alone (no decoding).

        Raises:
            UnknownIdError: ``index`` is not on disk.
        """
        with self._lock:
            t = self._traces
            row = self._trace_row(index)
            # Scalar reads from the columns' buffers: rows below `size` are filled.
            tp = int(t.tp.buffer[row])
            op_id, slot = self._defs.trace_point(tp)
            chunk = int(t.chunk_first.view.searchsorted(index, side="right")) - 1
            summary = None
            if t.summaries is not None:
                summary = _row_summary(self.mode, t.summaries.buffer[row])
            return Trace(index=index, trace_point=tp, op_id=op_id, slot=slot,
                         step=int(t.chunk_step.buffer[chunk]), summary=summary)

    def traces(self, begin: int, end: int) -> list[Trace]:
        """Traces ``begin..end-1``, clipped to what is on disk (for painting rows)."""
        with self._lock:
            return [self.trace(i) for b, e in _clip_runs(self._traces.spans.runs(), begin, end)
                    for i in range(b, e)]

    def trace_value(self, index: int) -> np.ndarray | None:
        """FULL_TENSOR: the value of trace ``index``; None in other modes.

        Raises:
            DamagedDumpError: The stored value cannot be decoded.
        """
        with self._lock:
            t = self._traces
            self._trace_row(index)
            chunk = t.chunk_of(index)
            record = self._fetch(fmt.STREAM_GRAPH_TRACES, int(t.chunk_segment.view[chunk]),
                                 int(t.chunk_offset.view[chunk]), int(t.chunk_length.view[chunk]))
            stored = record.get("v")
            position = index - int(t.chunk_first.view[chunk])
            if not isinstance(stored, list) or position >= len(stored):
                return None
            return values.decode_value(stored[position])

    def trace_alert_indices(self) -> np.ndarray:
        """Ascending int64 indices of the traces that held NaN or infinity."""
        with self._lock:
            return self._traces.spans.indices_of(np.flatnonzero(self._traces.alert.view))

    def trace_steps(self, begin: int, end: int) -> np.ndarray:
        """int64 step (top-level execution index) of traces ``begin..end-1``."""
        with self._lock:
            indices = [np.arange(b, e, dtype=np.int64)
                       for b, e in _clip_runs(self._traces.spans.runs(), begin, end)]
            if not indices:
                return np.empty(0, dtype=np.int64)
            return self._traces.chunk_step.view[self._traces.chunk_first.view.searchsorted(
                np.concatenate(indices), side="right") - 1]

    def trace_steps_at(self, indices: np.ndarray) -> np.ndarray:
        """int64 step (top-level execution index) of each trace in ``indices``, which
        must be on disk (as `traces_of` gives them)."""
        with self._lock:
            return self._traces.steps_at(np.asarray(indices, dtype=np.int64)).astype(np.int64)

    def trace_point(self, tp: int) -> tuple[int | None, int]:
        """(op id, slot) of trace point ``tp``; (None, -1) while its op is not read."""
        with self._lock:
            return self._defs.trace_point(tp)

    def traces_of(self, op_id: int, slot: int) -> np.ndarray:
        """Ascending int64 indices of the traces of tensor ``(op_id, slot)``."""
        with self._lock:
            tps = self._defs.op(op_id).trace_points
            if not 0 <= slot < len(tps) or tps[slot] is None:
                return np.empty(0, dtype=np.int64)
            return self._traces.spans.indices_of(
                np.flatnonzero(self._traces.tp.view == tps[slot]))

    def nearest_trace_of(self, op_id: int, slot: int, near_index: int) -> int | None:
        """The trace of ``(op_id, slot)`` at or before ``near_index``, else the first after.

        Returns:
            A trace index, or None when that tensor has no trace on disk.
        """
        with self._lock:
            found = self.traces_of(op_id, slot)
            if found.size == 0:
                return None
            position = int(np.searchsorted(found, near_index, side="right"))
            return int(found[position - 1] if position > 0 else found[0])

    def find_trace(self, pattern: str, start: int, forward: bool = True) -> int | None:
        """The next trace (from ``start`` inclusive) whose op name or type matches.

        Args:
            pattern: A regular expression, searched (not anchored) in op names and types.
            start: The trace index to start from.
            forward: Search towards higher indices; False searches backwards.

        Returns:
            The trace index, or None. An invalid regex is matched as a literal string.
        """
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        with self._lock:
            tps = self._matching_trace_points(regex)
            t = self._traces
            if not tps.size or not len(t):
                return None
            # The first row at or after `start`, or the last at or before it.
            row = (min(t.spans.rows_below(start), len(t) - 1) if forward
                   else t.spans.rows_below(start + 1) - 1)
            if row < 0:
                return None
            column = t.tp.view
            hits = (np.flatnonzero(np.isin(column[row:], tps)) if forward
                    else np.flatnonzero(np.isin(column[: row + 1], tps)))
            if not hits.size:
                return None
            return t.spans.index_of(int((hits[0] + row) if forward else hits[-1]))

    def _matching_trace_points(self, regex: re.Pattern) -> np.ndarray:
        """Trace points whose op name or type matches; cached until new ops arrive."""
        key = (regex.pattern, self._defs.num_ops)
        if self._find_cache is not None and self._find_cache[0] == key:
            return self._find_cache[1]
        tp_op = self._defs.tp_op.view
        matching = [op_id for op_id in np.unique(tp_op).tolist() if op_id >= 0
                    and (regex.search(self._defs.op(op_id).name)
                         or regex.search(self._defs.op(op_id).op_type))]
        tps = np.flatnonzero(np.isin(tp_op, matching))
        self._find_cache = (key, tps)
        return tps

    # -- definitions ------------------------------------------------------------------

    def graphs(self) -> list[Graph]:
        """Every graph read, by id."""
        with self._lock:
            return [self._defs.graph(g) for g in self._defs.graph_ids()]

    def graph(self, graph_id: int) -> Graph:
        """A graph by id; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.graph(graph_id)

    def graph_ops(self, graph_id: int) -> list[Op]:
        """The ops of one graph, in creation order."""
        with self._lock:
            return [op for op in (self._defs.op(i) for i in self._defs.op_ids())
                    if op.graph_id == graph_id]

    def op(self, op_id: int) -> Op:
        """An op by id; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.op(op_id)

    def op_by_name(self, graph_id: int, name: str) -> Op | None:
        """An op by graph and name, or None."""
        with self._lock:
            op_id = self._defs.op_id_by_name(graph_id, name)
            return None if op_id is None else self._defs.op(op_id)

    def consumers(self, op_id: int) -> list[tuple[Op, int]]:
        """(consumer op, input index) for each op reading any output of ``op_id``."""
        with self._lock:
            return self._defs.consumers(op_id)

    def stack(self, stack_id: int) -> list[Frame]:
        """A stack's frames, outermost first; frames not read yet are placeholders."""
        with self._lock:
            return self._defs.stack(stack_id)

    def source_file(self, file_id: int) -> SourceFile:
        """A source file and its snapshot; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.source_file(file_id)

    def source_line(self, frame: Frame) -> str | None:
        """The text of a frame's line from the snapshot, or None when not recorded."""
        with self._lock:
            return self._defs.line_text(frame)

    def innermost_user_frame(self, stack_id: int | None) -> Frame | None:
        """The innermost frame of user code in a stack, or None."""
        if stack_id is None:
            return None
        with self._lock:
            try:
                frames = self._defs.stack(stack_id)
            except UnknownIdError:
                return None
            return next((f for f in reversed(frames) if f.is_user), None)

    # -- analyses ---------------------------------------------------------------------

    def alerts(self, limit_per_type: int = 1000) -> AlertSummary:
        """Every NaN/inf alert, counted per type, listed in true execution order.

        Args:
            limit_per_type: How many alerts of each type to list; totals stay exact.
        """
        from reader.alerts import AlertBuilder, collect_alerts

        with self._lock:
            key = self._state_key() + (limit_per_type,)
            if self._alerts_cache is None or self._alerts_cache[0] != key:
                self._alerts_cache = (key, collect_alerts(
                    self._execs, self._traces, AlertBuilder(self), limit_per_type))
            return self._alerts_cache[1]

    def _state_key(self) -> tuple:
        """Changes whenever records arrive or leave (for caches of analyses)."""
        return (self._execs.first, self._execs.end, len(self._execs), self._traces.first,
                self._traces.end, len(self._traces), self._defs.num_ops,
                len(self._defs.devices))

    def alert_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each alerting tensor ran, as int64 execution indices: (the eager
        executions' own indices, the graph traces' ``x``), one entry per tensor."""
        with self._lock:
            return self._execs.alert_rows()[0], self._traces.alert_rows()[1]

    def steps(self) -> Steps:
        """The run's steps, alerts per step and gaps (`reader.steps`); cached."""
        with self._lock:
            key = self._state_key()
            if self._steps_cache is None or self._steps_cache[0] != key:
                self._steps_cache = (key, Steps(self))
            return self._steps_cache[1]

    def root_cause(self, alert: Alert | None = None) -> RootCause | None:
        """The op that made the first non-finite tensor (or ``alert``'s); None without alerts."""
        from reader.root_cause import find_root_cause

        with self._lock:
            return find_root_cause(self, alert)

    def close(self) -> None:
        """Close every open file."""
        with self._lock:
            self._loader.close()

    def __enter__(self) -> DumpReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clip_runs(runs: list[tuple[int, int]], begin: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``begin..end-1`` inside the index runs on disk."""
    return [(max(b, begin), min(e, end)) for b, e in runs if max(b, begin) < min(e, end)]


def _describe_runs(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{b}..{e - 1}" for b, e in runs) or "none"


def _row_summary(mode: str, row: Any) -> Summary | None:
    """A summary from a stored row; FULL_TENSOR rows are computed in FULL_HEALTH layout."""
    if row is None or mode == fmt.NO_TENSOR:
        return None
    try:
        if mode == fmt.FULL_TENSOR:
            return dataclasses.replace(Summary.from_row(fmt.FULL_HEALTH, row), mode=mode)
        return Summary.from_row(mode, row)
    except (TypeError, ValueError, KeyError, OverflowError):
        return None  # a row of the wrong length or non-numbers: no summary to show


def _value_summary(stored: Any) -> Summary | None:
    if not isinstance(stored, dict):
        return None
    row = values.summary_row(stored)
    summary = Summary.from_row(fmt.FULL_HEALTH, row)
    shape = stored.get("shape")
    return Summary(mode=fmt.FULL_TENSOR, dtype=summary.dtype, rank=summary.rank,
                   size=summary.size, neg_inf=summary.neg_inf, pos_inf=summary.pos_inf,
                   nan=summary.nan, neg=summary.neg, zero=summary.zero, pos=summary.pos,
                   shape=tuple(shape) if isinstance(shape, list) else None)


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(v for v in _list(value) if isinstance(v, int) and not isinstance(v, bool))


def _int_or(value: Any, default: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
