"""`IndexedRun`: one run, indexed and followed as it grows: its two locks (queries and
commits; one `update()` at a time), `update()`, and every record-level query (it
meets `Run`). It reads through a `RunLoader` or, for a file set of TensorFlow's, a
`TfRunLoader`.

`reader.analysis.dump_reader.DumpReader` adds the analyses over these queries (alerts, steps,
root cause); the analysis modules take a `reader.run.run_protocol.Run` (the queries,
named), so they never import the class that imports them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from reader import format as fmt
from reader import storage, values
from reader.contract import ExecRecord, ExecsChunk, TracesChunk
from reader.errors import UnknownIdError
from reader.index import exec_chunks
from reader.index.trace_search import TraceSearch, compile_search
from reader.loading.run_loader import Loader, RunLoader
from reader.loading.tf_events.file_sets import is_tf_run
from reader.model import Execution, Frame, Graph, Op, RunMetadata, SourceFile, Trace, UpdateReport
from reader.notices import Notice
from reader.records import build_execution, row_summary, run_metadata
from reader.run import liveness
from reader.run.definition_queries import DefinitionQueries
from reader.watch_log import WatchLog

if TYPE_CHECKING:
    from reader.loading.tf_events.loader import TfRunLoader
    from reader.run.run_protocol import Run

_Run = TypeVar("_Run", bound="IndexedRun")
T = TypeVar("T")


class IndexedRun:
    """Reads one run directory: indexes everything present, then follows its growth.

    All methods are thread-safe. Queries hold one lock while they read; `update()`
    reads new bytes without it and takes it only to commit what it read, a bounded
    batch at a time (`reader.loading.run_loader`), so a query never waits for a whole read.
    Two `update()` calls do not overlap. Indices are absolute: under a circular
    buffer the oldest ones leave the disk and `first_execution` / `first_trace` move
    forward.

    Args:
        run_path: A run directory (``LOGDIR/<run id>``), or the prefix of one file set
            of TensorFlow's own dumper (``LOGDIR/tfdbg_events.<time>.<host>``).

    Raises:
        NoRunsError: ``run_path`` holds no metadata segment.
        FormatVersionError: A file was written by a newer major format version.
        DamagedDumpError: Not even the run's metadata record is readable.
    """

    def __init__(self, run_path: str | os.PathLike[str]) -> None:
        store = storage.store_for(run_path)
        self.path = store.normalize(os.fspath(run_path))
        self.run_id = store.basename(self.path)
        self._lock = threading.RLock()  # queries; the loader's commits
        self._update_lock = threading.Lock()  # one `update()` at a time
        # A file set of TensorFlow's own dumper, or a run directory of ours.
        self._loader: Loader = (
            _tf_loader(self.path, self._lock)
            if is_tf_run(self.path)
            else RunLoader(self.path, commit_lock=self._lock)
        )
        # The loader fills these in place, changing them only under `_lock`; queries
        # read them under it.
        self._defs = self._loader.defs
        self._execs = self._loader.execs
        self._traces = self._loader.traces
        self._search = TraceSearch(self._defs, self._traces)
        self._definitions = DefinitionQueries(self._defs, self._lock)
        self.update()

    @property
    def mode(self) -> str:
        """The run's tensor debug mode (`reader.format.TENSOR_DEBUG_MODES`)."""
        return self._loader.mode

    def update(self) -> UpdateReport:
        """Read what was appended since the last call (the constructor's is the first).

        Returns:
            What is new: counts of executions, traces, alerts, graphs and ops, new
            damage notices, and what left the disk under a circular buffer.

        Raises:
            FormatVersionError: A new file was written by a newer major version.
        """
        with self._update_lock:
            return self._loader.update()

    def _fetch(self, stream: str, segment: int, offset: int, length: int) -> dict[str, Any]:
        return self._loader.fetch(stream, segment, offset, length)

    # -- run ---------------------------------------------------------------------------

    @property
    def metadata(self) -> RunMetadata:
        """The run's description, with the devices read so far."""
        with self._lock:
            return run_metadata(
                self._loader.run or {}, self._loader.end, self.run_id, self.mode, self._defs.devices
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

    def watch_log(self) -> WatchLog | None:
        """What the watch tier recorded (`reader.watch_log`); None for a run that was
        not watched."""
        with self._lock:
            builder = self._loader.watch
            if not builder.sites and builder.hit is None:
                return None
            return builder.build()

    @property
    def finished(self) -> bool:
        """True once the run's `end` record is read: the process exited cleanly."""
        return self._loader.end is not None

    def process_gone(self) -> bool | None:
        """Whether the process writing this run is gone (`liveness.process_gone`)."""
        metadata = self.metadata
        return liveness.process_gone(metadata.host, metadata.pid, metadata.start_time)

    def reserve_released(self) -> bool:
        """Whether the writer gave its space reserve back (`liveness.reserve_released`)."""
        return liveness.reserve_released(self.path, self.metadata.space_reserve)

    def recording_stopped(self, released: bool = False) -> bool:
        """Whether recording stopped on a write error (`liveness.recording_stopped`);
        ``released`` is `reserve_released`, looked at before the last `update`."""
        return liveness.recording_stopped(
            self.finished, (notice.kind for notice in self.notices()), released
        )

    def writer_state(self) -> str:
        """`reader.run.liveness` state of the run: finished, stopped (on a write error),
        running, killed or unknown.

        When the writing process is gone or gave its reserve back, reads what it
        appended first (`update`), so a clean exit is never taken for a kill or a
        stop. A caller that follows the run looks with `process_gone` and
        `reserve_released` before its own `update` instead.
        """
        if self.finished:
            return liveness.FINISHED
        released = self.reserve_released()
        gone = self.process_gone()
        if gone or released:
            self.update()
        return liveness.state_of(self.finished, gone, self.recording_stopped(released))

    def device(self, device_id: int) -> str | None:
        """A device's name, or None when not defined (yet)."""
        with self._lock:
            return self._defs.device_name(device_id)

    # -- executions --------------------------------------------------------------------

    @property
    def num_executions(self) -> int:
        """One past the last execution index read (count since the program started)."""
        with self._lock:
            return self._execs.end

    @property
    def first_execution(self) -> int:
        """The first execution index still on disk; > 0 under a circular buffer."""
        with self._lock:
            return self._execs.first

    def _exec_row(self, index: int) -> int:
        row = self._execs.spans.row_of(index)
        if row is None:
            raise UnknownIdError(
                f"execution {index} is not on disk (have "
                f"{_describe_runs(self._execs.spans.runs())})"
            )
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
            record, chunk_row = self._stored_execution(index)
            return record if chunk_row < 0 else exec_chunks.execution_record(record, chunk_row)

    def _stored_execution(self, index: int) -> tuple[dict[str, Any], int]:
        """The record on disk that holds execution ``index`` (its ``exec`` record, or
        its ``execs`` chunk) and its row in the chunk (-1: an ``exec`` record)."""
        row = self._exec_row(index)
        e = self._execs
        record = self._fetch(
            fmt.STREAM_EXECUTIONS,
            int(e.segment.view[row]),
            int(e.offset.view[row]),
            int(e.length.view[row]),
        )
        return record, int(e.chunk_row.view[row])

    def execution_devices(self, index: int) -> tuple[str | None, ...]:
        """The devices of execution ``index``'s outputs, as `execution` gives them,
        without decoding the rest of its record.

        Raises:
            UnknownIdError: ``index`` is not on disk.
            DamagedDumpError: Its bytes can no longer be read.
        """
        with self._lock:
            record, chunk_row = self._stored_execution(index)
            ids = (
                record.get(ExecRecord.DEVICES)
                if chunk_row < 0
                else exec_chunks.output_devices(record, chunk_row)
            )
            return tuple(self._defs.device_name(d) for d in (ids if isinstance(ids, list) else []))

    def execution(self, index: int) -> Execution:
        """The full execution record ``index`` (decoded on demand, cached).

        Raises:
            UnknownIdError: ``index`` is not on disk.
            DamagedDumpError: Its bytes can no longer be read.
        """
        with self._lock:
            record = self.execution_record(index)
            return build_execution(self.mode, index, record, self._defs.device_name)

    def executions(self, begin: int, end: int) -> list[Execution]:
        """Executions ``begin..end-1``, clipped to what is on disk."""
        with self._lock:
            return [
                self.execution(i)
                for b, e in _clip_runs(self._execs.spans.runs(), begin, end)
                for i in range(b, e)
            ]

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

    def execution_op_codes(self, begin: int, end: int) -> tuple[np.ndarray, list[str]]:
        """Op types of executions ``begin..end-1`` as codes: (int32 code per execution,
        the op type of each code), for analyses over many executions."""
        with self._lock:
            codes = self._execs.op_code.view[self._exec_slice(begin, end)].copy()
            return codes, list(self._execs.op_types)

    def execution_outputs(self, begin: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """The outputs of executions ``begin..end-1`` on disk, for analyses over many
        executions: (int64 output count per execution, summary rows of every output in
        execution then slot order, NaN rows for outputs without a summary). Decodes
        each chunk (or, before format 2.0, each record) once."""
        with self._lock:
            e = self._execs
            rows = self._exec_slice(begin, end)
            starts = e.out_start.view[rows.start : rows.stop + 1].astype(np.int64)
            if rows.stop >= len(e):
                starts = np.append(starts[: rows.stop - rows.start], e.out_ids.size)
            counts = np.diff(starts)
            parts = []
            row = rows.start
            while row < rows.stop:
                segment, offset = int(e.segment.view[row]), int(e.offset.view[row])
                record = self._fetch(
                    fmt.STREAM_EXECUTIONS, segment, offset, int(e.length.view[row])
                )
                chunk_row = int(e.chunk_row.view[row])
                if chunk_row < 0:
                    parts.append(e.output_rows(record))
                    row += 1
                    continue
                stop = min(rows.stop, row + record[ExecsChunk.COUNT] - chunk_row)
                parts.append(
                    exec_chunks.output_rows(
                        record, chunk_row, chunk_row + stop - row, self.mode, e.width
                    )
                )
                row = stop
            summaries = np.concatenate(parts) if parts else np.empty((0, e.width))
            return counts, summaries

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
            stored = self.execution_record(index).get(ExecRecord.VALUES)
            if not isinstance(stored, list) or not 0 <= slot < len(stored):
                return None
            return values.decode_value(stored[slot])

    # -- graph traces -----------------------------------------------------------------

    @property
    def num_traces(self) -> int:
        """One past the last graph trace index read."""
        with self._lock:
            return self._traces.end

    @property
    def first_trace(self) -> int:
        """The first trace index still on disk; > 0 under a circular buffer."""
        with self._lock:
            return self._traces.first

    def _trace_row(self, index: int) -> int:
        row = self._traces.spans.row_of(index)
        if row is None:
            raise UnknownIdError(
                f"trace {index} is not on disk (have {_describe_runs(self._traces.spans.runs())})"
            )
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
                summary = row_summary(self.mode, t.summaries.buffer[row])
            return Trace(
                index=index,
                trace_point=tp,
                op_id=op_id,
                slot=slot,
                step=int(t.chunk_step.buffer[chunk]),
                summary=summary,
            )

    def trace_op(self, index: int) -> tuple[int | None, int]:
        """(op id, output slot) of graph trace ``index``, as `trace` gives them, without
        its summary and step (for the many alerts a landing lists); (None, -1) while
        its op is not read.

        Raises:
            UnknownIdError: ``index`` is not on disk.
        """
        with self._lock:
            return self._defs.trace_point(int(self._traces.tp.buffer[self._trace_row(index)]))

    def traces(self, begin: int, end: int) -> list[Trace]:
        """Traces ``begin..end-1``, clipped to what is on disk (for painting rows)."""
        with self._lock:
            return [
                self.trace(i)
                for b, e in _clip_runs(self._traces.spans.runs(), begin, end)
                for i in range(b, e)
            ]

    def trace_value(self, index: int) -> np.ndarray | None:
        """FULL_TENSOR: the value of trace ``index``; None in other modes.

        Raises:
            DamagedDumpError: The stored value cannot be decoded.
        """
        with self._lock:
            t = self._traces
            self._trace_row(index)
            chunk = t.chunk_of(index)
            record = self._fetch(
                fmt.STREAM_GRAPH_TRACES,
                int(t.chunk_segment.view[chunk]),
                int(t.chunk_offset.view[chunk]),
                int(t.chunk_length.view[chunk]),
            )
            stored = record.get(TracesChunk.VALUES)
            position = index - int(t.chunk_base.view[chunk])
            if not isinstance(stored, list) or position >= len(stored):
                return None
            return values.decode_value(stored[position])

    def trace_columns(
        self, begin: int, end: int, *, summaries: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """The traces on disk among ``begin..end-1`` as columns, for analyses over many
        traces: (indices, trace points, steps, summary rows or None), each a copy
        (``summaries=False``: no summary rows, None)."""
        with self._lock:
            t = self._traces
            rows = self._trace_rows(begin, end)
            indices = t.spans.indices_of(np.arange(rows.start, rows.stop, dtype=np.int64))
            steps = (
                t.steps_at(indices).astype(np.int64)
                if indices.size
                else np.empty(0, dtype=np.int64)
            )
            kept = t.summaries.view[rows].copy() if t.summaries is not None and summaries else None
            return indices, t.tp.view[rows].astype(np.int64), steps, kept

    def _trace_rows(self, begin: int, end: int) -> slice:
        spans = self._traces.spans
        return slice(spans.rows_below(begin), max(spans.rows_below(end), spans.rows_below(begin)))

    def map_trace_summaries(
        self, begin: int, end: int, function: Callable[[np.ndarray], T], block: int = 65_536
    ) -> list[T]:
        """``function`` of the summary rows of the traces on disk among ``begin..end-1``
        (in `trace_columns`' order), a block of rows at a time, read in place (no copy
        of the rows); [] in a mode without summaries. ``function`` must not keep the
        rows it is given."""
        with self._lock:
            if self._traces.summaries is None:
                return []
            rows = self._trace_rows(begin, end)
            view = self._traces.summaries.view
            return [
                function(view[start : min(start + block, rows.stop)])
                for start in range(rows.start, rows.stop, block)
            ]

    def trace_alert_indices(self) -> np.ndarray:
        """Ascending int64 indices of the traces that held NaN or infinity."""
        with self._lock:
            return self._traces.alert_rows()[0]

    def trace_steps(self, begin: int, end: int) -> np.ndarray:
        """int64 step (top-level execution index) of traces ``begin..end-1``."""
        with self._lock:
            indices = [
                np.arange(b, e, dtype=np.int64)
                for b, e in _clip_runs(self._traces.spans.runs(), begin, end)
            ]
            if not indices:
                return np.empty(0, dtype=np.int64)
            return self._traces.chunk_step.view[
                self._traces.chunk_first.view.searchsorted(np.concatenate(indices), side="right")
                - 1
            ]

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
            return self._traces.spans.indices_of(np.flatnonzero(self._traces.tp.view == tps[slot]))

    def nearest_trace_of(
        self, op_id: int, slot: int, near_index: int, *, after: bool = False
    ) -> int | None:
        """The trace of ``(op_id, slot)`` at or before ``near_index``, else the first after
        (``after``: at or after, else the last before: where a consumer computed).

        Returns:
            A trace index, or None when that tensor has no trace on disk.
        """
        with self._lock:
            found = self.traces_of(op_id, slot)
            if found.size == 0:
                return None
            if after:
                position = int(np.searchsorted(found, near_index, side="left"))
                return int(found[position] if position < found.size else found[-1])
            position = int(np.searchsorted(found, near_index, side="right"))
            return int(found[position - 1] if position > 0 else found[0])

    def find_trace(self, pattern: str, start: int, forward: bool = True) -> int | None:
        """The next trace (from ``start`` inclusive) whose op name or type matches.

        Args:
            pattern: A regular expression, searched (not anchored) in op names and
                types; one that is not valid is searched for as text
                (`reader.index.trace_search.compile_search`).
            start: The trace index to start from.
            forward: Search towards higher indices; False searches backwards.

        Returns:
            The trace index, or None.
        """
        regex, _ = compile_search(pattern)
        with self._lock:
            return self._search.find(regex, start, forward)

    @property
    def query_lock(self) -> threading.RLock:
        """The lock each query holds while it reads (re-entrant). An analysis that asks
        many queries holds it around them all to see one state of the run: the
        loader's commits wait meanwhile."""
        return self._lock

    def state_key(self) -> tuple:
        """Changes whenever records arrive or leave (for caches of analyses)."""
        return (
            self._execs.first,
            self._execs.end,
            len(self._execs),
            self._traces.first,
            self._traces.end,
            len(self._traces),
            self._defs.num_ops,
            len(self._defs.devices),
        )

    def execution_alert_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every alerting eager output, in execution then slot order: (execution index,
        slot, (n, 3) counts of nan, neg_inf, pos_inf, -1 where the mode has none)."""
        with self._lock:
            return self._execs.alert_rows()

    def trace_alert_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every trace that held NaN or infinity, ascending: (trace index, step, (n, 3)
        counts as `execution_alert_rows`), read-only arrays shared by every caller."""
        with self._lock:
            return self._traces.alert_rows()

    def trace_alert_points(self) -> np.ndarray:
        """The trace point of every trace of `trace_alert_rows`, in its order."""
        with self._lock:
            return self._traces.alert_points()

    def alert_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each alerting tensor ran, as int64 execution indices: (the eager
        executions' own indices, the graph traces' ``x``), one entry per tensor."""
        with self._lock:
            return self._execs.alert_rows()[0], self._traces.alert_rows()[1]

    # -- definitions (`DefinitionQueries`) ---------------------------------------------

    def graphs(self) -> list[Graph]:
        """Every graph read, by id."""
        return self._definitions.graphs()

    def graph(self, graph_id: int) -> Graph:
        """A graph by id; `UnknownIdError` while not defined."""
        return self._definitions.graph(graph_id)

    def graph_ops(self, graph_id: int) -> list[Op]:
        """The ops of one graph, in creation order."""
        return self._definitions.graph_ops(graph_id)

    def op(self, op_id: int) -> Op:
        """An op by id; `UnknownIdError` while not defined."""
        return self._definitions.op(op_id)

    def op_by_name(self, graph_id: int, name: str) -> Op | None:
        """An op by graph and name, or None."""
        return self._definitions.op_by_name(graph_id, name)

    def consumers(self, op_id: int) -> list[tuple[Op, int]]:
        """(consumer op, input index) for each op reading any output of ``op_id``."""
        return self._definitions.consumers(op_id)

    def stack(self, stack_id: int) -> list[Frame]:
        """A stack's frames, outermost first; frames not read yet are placeholders."""
        return self._definitions.stack(stack_id)

    def source_file(self, file_id: int) -> SourceFile:
        """A source file and its snapshot; `UnknownIdError` while not defined."""
        return self._definitions.source_file(file_id)

    def source_line(self, frame: Frame) -> str | None:
        """The text of a frame's line from the snapshot, or None when not recorded."""
        return self._definitions.source_line(frame)

    def innermost_user_frame(self, stack_id: int | None) -> Frame | None:
        """The innermost frame of user code in a stack, or None."""
        return self._definitions.innermost_user_frame(stack_id)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close every open file (after an `update()` under way ends)."""
        with self._update_lock, self._lock:
            self._loader.close()

    def __enter__(self: _Run) -> _Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if TYPE_CHECKING:

    def _is_a_run(run: IndexedRun) -> Run:  # mypy checks that `IndexedRun` meets `Run`
        return run


def _tf_loader(path: str, lock: threading.RLock) -> TfRunLoader:
    # Imported when needed: the protobuf runtime costs every start ~40 ms otherwise.
    from reader.loading.tf_events.loader import TfRunLoader

    return TfRunLoader(path, commit_lock=lock)


def _clip_runs(runs: list[tuple[int, int]], begin: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``begin..end-1`` inside the index runs on disk."""
    return [(max(b, begin), min(e, end)) for b, e in runs if max(b, begin) < min(e, end)]


def _describe_runs(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{b}..{e - 1}" for b, e in runs) or "none"
