"""`DumpWriter`: appends msgpack records to one run's stream files: definitions,
executions, traces, flushes.

This module knows the file layout of docs/format.md and nothing of TensorFlow, so
tests and tools can write dumps without it. Ids are allocated here; deciding what is
new (interning frames, stacks, graphs) is the caller's job.

Crash semantics: records are buffered in memory and written with ``os.writev`` at
every `flush()` (the writer flushes itself every `FLUSH_INTERVAL_S` seconds from a
daemon thread). A process killed at any moment loses at most the records appended
since the last flush; a record cut short by the kill is at the very end of its file,
where the reader treats it as not yet written. A write that fails (a full disk)
stops the recording, never the program (`instrument.dump.recording_stop`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from instrument.dump import recording_stop
from instrument.dump.columnar_chunks import DeferredValues, ExecutionChunk, TraceChunk
from instrument.dump.flight_recorder import FirstAlert, summaries_alert, values_alert
from instrument.dump.job_progress import JobProgress
from instrument.dump.recording_stop import RecordingStop
from instrument.dump.run_files import RunFiles
from instrument.dump.segment_rotation import SegmentRotation
from instrument.dump.value_encoding import COMPRESSION
from reader import format as fmt
from reader.contract import (
    KIND_KEY,
    DeviceRecord,
    EndRecord,
    ExecsChunk,
    FileRecord,
    FrameRecord,
    GraphRecord,
    NoticeRecord,
    OpRecord,
    RunRecord,
    StackRecord,
    WatchHitRecord,
    WatchSiteRecord,
    WatchStepsRecord,
)

# The logger users know (docs/instrument.md), whichever module of the writer logs.
logger = logging.getLogger("instrument.writer")

# The watch tier's record kinds (`DumpWriter.add_watch_record`).
WatchKind = type[WatchSiteRecord] | type[WatchStepsRecord] | type[WatchHitRecord]

# How often buffered records reach the file. It bounds what a SIGKILL can lose and how
# stale a live view of the dump can be (the TUI aims to show new records within ~2 s).
FLUSH_INTERVAL_S = 0.5
# A buffer this large is written at once rather than at the next interval.
FLUSH_BYTES = 1 << 20
# The order a flush writes the streams in: definitions before what refers to them, and
# the graph traces before the executions, so that a run killed between two writes
# loses calls rather than the traces of calls it kept.
FLUSH_ORDER = (
    fmt.STREAM_METADATA,
    fmt.STREAM_SOURCE_FILES,
    fmt.STREAM_STACKS,
    fmt.STREAM_GRAPHS,
    fmt.STREAM_GRAPH_TRACES,
    fmt.STREAM_EXECUTIONS,
)


def new_run_id(now: float | None = None) -> str:
    """A run id that sorts by start time and is unique across hosts and processes."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40]
    return f"{stamp}-{host or 'host'}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class DumpWriter:
    """Writes one run (one instrumented process) into ``logdir/<run_id>/``.

    Thread-safe: every method takes the writer's lock.

    Args:
        logdir: Directory holding runs; created if missing.
        run_info: The run record's fields (see docs/format.md, record ``run``);
            ``run``, ``format_version``, ``host``, ``pid`` and ``start_time`` are
            filled in when absent.
        circular_buffer_size: N > 0 keeps at least the latest N executions and N
            graph traces on disk (segments rotate, older ones are deleted), and the
            first alert's window (`FlightRecorder`); N <= 0 keeps everything.
        watch_alerts: Whether to look for the first record holding NaN or infinity
            (`first_alert`); None: only when the flight recorder needs it (N > 0).
            Looking reads every FULL_TENSOR value until the first alert: in a run
            that keeps everything and does not stop on alerts, nothing would use it.
        flush_interval_s: Period of the background flush; None disables the thread
            (the caller then flushes).

    A write that fails (no space, quota, I/O error) stops the recording for good and
    raises nothing: `stopped` says where and why, a `recording_stopped` notice says it
    in the dump when it can, and one warning is logged (`instrument.dump.recording_stop`).

    Attributes:
        first_alert: The first record seen holding NaN or infinity, or None (always
            None when alerts are not watched).
        watches_alerts: Whether the first alert is looked for (``watch_alerts``).
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        run_info: dict[str, Any],
        *,
        circular_buffer_size: int = 0,
        watch_alerts: bool | None = None,
        flush_interval_s: float | None = FLUSH_INTERVAL_S,
    ) -> None:
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._stopped: RecordingStop | None = None
        # The Python function of the latest eager call and its call ordinal.
        self._latest_call: tuple[str | None, int] | None = None
        self._chunk: ExecutionChunk | None = None  # executions not yet packed
        self._traces: TraceChunk | None = None  # traces not yet packed
        self.run_id = run_info.get(RunRecord.RUN) or new_run_id()
        self._run = RunFiles(logdir, self.run_id)
        self.path = self._run.path
        self.circular_buffer_size = int(circular_buffer_size)
        self.mode = run_info.get(RunRecord.TENSOR_DEBUG_MODE)
        self._rotation = SegmentRotation(self._run, self.circular_buffer_size)
        self.watches_alerts = (
            self.circular_buffer_size > 0 if watch_alerts is None else bool(watch_alerts)
        )
        self._files = self._run.files
        self._next_id = {
            kind: 0
            for kind in (
                fmt.KIND_DEVICE,
                fmt.KIND_FILE,
                fmt.KIND_FRAME,
                fmt.KIND_STACK,
                fmt.KIND_GRAPH,
                fmt.KIND_OP,
            )
        }
        self.num_executions = 0
        self.num_traces = 0
        self._closed = False
        record = {
            KIND_KEY: RunRecord.KIND,
            RunRecord.RUN: self.run_id,
            RunRecord.FORMAT_VERSION: list(fmt.written_version(self._run.store.remote)),
            RunRecord.HOST: socket.gethostname(),
            RunRecord.PID: os.getpid(),
            RunRecord.START_TIME: time.time(),
            RunRecord.CIRCULAR_BUFFER_SIZE: self.circular_buffer_size,
            RunRecord.SPACE_RESERVE: self._run.reserved,
        }
        record.update({k: v for k, v in run_info.items() if k != KIND_KEY})
        record[RunRecord.RUN] = self.run_id
        self._files[fmt.STREAM_METADATA].append(record)
        # A multi-worker job's run keeps its progress file (docs/format.md).
        self._progress = (
            JobProgress(record, self.mode) if record.get(RunRecord.TASK) is not None else None
        )
        # Not `flush()`: a dump that cannot be written at all fails the enable. In a
        # bucket the metadata's part proves that; the other headers wait for records.
        for stream in fmt.STREAMS:
            if stream == fmt.STREAM_METADATA or not self._run.store.remote:
                self._files[stream].flush()
        self._write_progress()
        self._flusher: threading.Thread | None = None
        if flush_interval_s is not None:
            self._flusher = threading.Thread(
                target=self._flush_periodically,
                args=(flush_interval_s,),
                name="tfdbg-tui-dump-flush",
                daemon=True,
            )
            self._flusher.start()

    # -- files -------------------------------------------------------------------------

    @property
    def stopped(self) -> RecordingStop | None:
        """Where and why recording stopped on a write error, or None while it goes on."""
        return self._stopped

    def _stop_recording(self, error: OSError, path: str) -> None:
        """A write failed: drop what is buffered, say so in the dump if there is room
        (the reserve is given back for it), warn once, and record nothing more."""
        if self._stopped is not None:
            return
        function, call = self._latest_call or (None, None)
        stop = recording_stop.make_stop(
            error,
            getattr(error, "filename", None) or path,
            self.path,
            executions=self.num_executions,
            traces=self.num_traces,
            function=function,
            call=call,
        )
        self._stopped = stop
        self._stop.set()
        for file in self._files.values():
            file.discard()
        self._rotation.discard()
        self._run.release_reserve()
        written = True
        try:
            self._files[fmt.STREAM_METADATA].write_now(stop.notice_record())
        except OSError as again:
            written = False
            logger.debug("tfdbg-tui: the recording_stopped notice was not written: %s", again)
        logger.warning(stop.warning(self.path, written))
        if self._progress is not None:
            self._progress.stopped = True
            try:
                self._run.write_progress(self._progress.record())
            except OSError as again:
                logger.debug("tfdbg-tui: the progress file was not written: %s", again)

    @property
    def first_alert(self) -> FirstAlert | None:
        """The first record written that held NaN or infinity, or None."""
        return self._rotation.first_alert

    @property
    def seeking_alert(self) -> bool:
        """Whether records are still inspected for the first alert (watched, none yet)."""
        return self.watches_alerts and self._rotation.first_alert is None

    def _count_and_rotate(self, stream: str, count: int, step: int) -> None:
        """Count events into the open segment; rotate when it is due (`SegmentRotation`)."""
        if self._rotation.count(stream, count, step):
            self._rotate(stream)

    def _rotate(self, stream: str) -> None:
        """Rotate ``stream`` (`SegmentRotation.rotate`): its open chunk stays in the
        closed segment, and the next record starts a new one."""
        self._rotation.rotate(stream)
        if stream == fmt.STREAM_EXECUTIONS:
            self._chunk = None
        else:
            self._traces = None

    def _append(
        self,
        stream: str,
        record: dict[str, Any],
        *,
        encode: Callable[[dict[str, Any]], None] | None = None,
        size_hint: int = 0,
    ) -> None:
        if self._closed:
            raise RuntimeError(f"dump writer for run {self.run_id} is closed")
        if self._stopped is not None:
            return
        file = self._files[stream]
        file.append(record, encode=encode, size_hint=size_hint)
        if file.pending_bytes >= FLUSH_BYTES and not self._rotation.bounds(stream):
            self._flush(hold=True)

    @property
    def stores_values_raw(self) -> bool:
        """Whether FULL_TENSOR values of graph traces are stored uncompressed, whatever
        `COMPRESSION` says: under a circular buffer most values are dropped before a
        flush, and what survives is written every half second; compressing (on the drain,
        as they came) cost ten times the training step on a convolutional network."""
        return self.circular_buffer_size > 0

    def _allocate(self, kind: str) -> int:
        ident = self._next_id[kind]
        self._next_id[kind] = ident + 1
        return ident

    def flush(self, *, sync: bool = False) -> None:
        """Write every buffered record, definition streams first; ``sync`` also
        waits until the files are on the storage device (``fsync``)."""
        self._flush(sync=sync)

    def _flush(self, *, sync: bool = False, hold: bool = False) -> None:
        """`flush`; with ``hold`` (the periodic flush, and one a large buffer makes),
        a bucket's executions and graph traces may wait for a later one
        (`instrument.dump.segment_sinks.HOLD_BYTES`). Definitions never wait: a part
        that refers to them is never put before them."""
        with self._lock:
            if self._closed or self._stopped is not None:
                return
            for stream in FLUSH_ORDER:
                file = self._files[stream]
                if (
                    hold
                    and file.untouched
                    and self._run.store.remote
                    and not self._rotation.bounds(stream)
                ):
                    continue  # a part of a header alone: one more object to read
                try:
                    if self._rotation.rotates(stream):
                        self._rotation.write(stream, sync=sync, hold=hold)
                    else:
                        file.flush(sync=sync)
                except OSError as error:
                    self._stop_recording(error, file.path)
                    return
            self._write_progress(now=not hold)

    def _write_progress(self, now: bool = True) -> None:
        """Write the progress file (a job's run) when it changed (``now``: an explicit
        flush) or is due (`JobProgress.due`: the periodic flush and one a full buffer
        makes), once what it says is written: a bucket's executions and traces may
        wait for a later part, and the progress waits with them."""
        progress = self._progress
        if progress is None or self._stopped is not None:
            return
        if not (progress.changed if now else progress.due()):
            return
        if any(self._files[stream].held for stream in fmt.ROTATING_STREAMS):
            return
        try:
            self._run.write_progress(progress.record())
        except OSError as error:
            self._stop_recording(error, self._run.progress_path)

    def _flush_periodically(self, interval: float) -> None:
        while not self._stop.wait(interval):
            with self._lock:
                if self._closed or self._stopped is not None:
                    return
                self._flush(hold=True)

    def close(self, *, clean: bool = True) -> None:
        """Flush and close every file; ``clean`` writes the ``end`` record first
        (never after recording stopped on a write error)."""
        with self._lock:
            if self._closed:
                return
            if clean and self._stopped is None:
                if self._progress is not None:
                    self._progress.ended = self._progress.changed = True
                self._files[fmt.STREAM_METADATA].append(
                    {
                        KIND_KEY: EndRecord.KIND,
                        EndRecord.TIME: time.time(),
                        EndRecord.NUM_EXECUTIONS: self.num_executions,
                        EndRecord.NUM_TRACES: self.num_traces,
                    }
                )
            self.flush()
            for stream in fmt.STREAMS:
                self._files[stream].close(flush=False)
            self._closed = True
            self._run.release_reserve()
        self._stop.set()

    # -- definitions -------------------------------------------------------------------

    def add_device(self, name: str) -> int:
        with self._lock:
            ident = self._allocate(fmt.KIND_DEVICE)
            self._append(
                fmt.STREAM_METADATA,
                {KIND_KEY: DeviceRecord.KIND, DeviceRecord.ID: ident, DeviceRecord.NAME: name},
            )
            if self._progress is not None:
                self._progress.note_device(ident, name)
            return ident

    def add_source_file(
        self, path: str, lines: Sequence[str] | None, *, library: bool, omitted: str | None = None
    ) -> int:
        """Define a source file; ``lines`` is its snapshot, None when ``omitted`` says why."""
        with self._lock:
            ident = self._allocate(fmt.KIND_FILE)
            self._append(
                fmt.STREAM_SOURCE_FILES,
                {
                    KIND_KEY: FileRecord.KIND,
                    FileRecord.ID: ident,
                    FileRecord.PATH: path,
                    FileRecord.HOST: socket.gethostname(),
                    FileRecord.LINES: list(lines) if lines is not None else None,
                    FileRecord.LIBRARY: bool(library),
                    FileRecord.OMITTED: omitted,
                },
            )
            if self._progress is not None:
                self._progress.note_file(ident, path, bool(library))
            return ident

    def add_frame(
        self, file_id: int, line: int, function: str, span: tuple[int, int, int] | None = None
    ) -> int:
        """Define a frame; ``span`` is its expression's (column, end line, end column)."""
        record: dict[str, Any] = {
            KIND_KEY: FrameRecord.KIND,
            FrameRecord.FILE: file_id,
            FrameRecord.LINE: int(line),
            FrameRecord.FUNCTION: function,
        }
        if span is not None:
            record[FrameRecord.COLUMN] = span[0]
            record[FrameRecord.END_LINE] = span[1]
            record[FrameRecord.END_COLUMN] = span[2]
        with self._lock:
            record[FrameRecord.ID] = ident = self._allocate(fmt.KIND_FRAME)
            self._append(fmt.STREAM_STACKS, record)
            if self._progress is not None:
                self._progress.note_frame(ident, file_id, int(line), function)
            return ident

    def add_stack(self, frame_ids: Sequence[int]) -> int:
        """Define a stack: frame ids from the outermost call to the innermost."""
        with self._lock:
            ident = self._allocate(fmt.KIND_STACK)
            self._append(
                fmt.STREAM_STACKS,
                {
                    KIND_KEY: StackRecord.KIND,
                    StackRecord.ID: ident,
                    StackRecord.FRAMES: list(frame_ids),
                },
            )
            if self._progress is not None:
                self._progress.note_stack(ident, frame_ids)
            return ident

    def add_graph(
        self, name: str | None, outer_graph_id: int | None, *, function_name: str | None = None
    ) -> int:
        """Define a graph; ``function_name`` is the name eager calls of it carry."""
        with self._lock:
            ident = self._allocate(fmt.KIND_GRAPH)
            self._append(
                fmt.STREAM_GRAPHS,
                {
                    KIND_KEY: GraphRecord.KIND,
                    GraphRecord.ID: ident,
                    GraphRecord.NAME: name,
                    GraphRecord.OUTER: outer_graph_id,
                    GraphRecord.FUNCTION: function_name,
                },
            )
            return ident

    def set_graph_function_name(self, graph_id: int, function_name: str) -> None:
        """Record (again) a graph, now with the function name its eager calls carry."""
        with self._lock:
            self._append(
                fmt.STREAM_GRAPHS,
                {
                    KIND_KEY: GraphRecord.KIND,
                    GraphRecord.ID: graph_id,
                    GraphRecord.FUNCTION: function_name,
                    GraphRecord.UPDATE: True,
                },
            )

    def add_op(
        self,
        *,
        graph_id: int,
        op_type: str,
        op_name: str,
        inputs: Sequence[str],
        num_outputs: int,
        output_dtypes: Sequence[int],
        device_id: int | None,
        stack_id: int | None,
        trace_points: Sequence[int | None],
        layer: str | None = None,
        variable: str | None = None,
        constant_nan: bool = False,
    ) -> int:
        """Define an op created in a graph.

        Args:
            inputs: Input tensor names, ``"op_name:slot"``, in the op's graph.
            output_dtypes: TF DataType enum value of each output.
            trace_points: Per output slot, the trace point id its graph execution
                traces carry, or None when that output is not traced.
            layer: The path of the Keras layer whose call built the op, if any.
            variable: The name of the variable the op reads or writes through a
                function graph's capture of its handle, if known.
            constant_nan: A ``Const`` whose value, known when its graph was built, holds
                a NaN (a mode that does not count NaN apart from infinities cannot
                tell it from a deliberate infinity).
        """
        with self._lock:
            ident = self._allocate(fmt.KIND_OP)
            record = {
                KIND_KEY: OpRecord.KIND,
                OpRecord.ID: ident,
                OpRecord.GRAPH: graph_id,
                OpRecord.TYPE: op_type,
                OpRecord.NAME: op_name,
                OpRecord.INPUTS: list(inputs),
                OpRecord.NUM_OUTPUTS: int(num_outputs),
                OpRecord.DTYPES: list(output_dtypes),
                OpRecord.DEVICE: device_id,
                OpRecord.STACK: stack_id,
                OpRecord.TRACE_POINTS: list(trace_points),
            }
            if layer is not None:
                record[OpRecord.LAYER] = layer
            if variable is not None:
                record[OpRecord.VARIABLE] = variable
            if constant_nan:
                record[OpRecord.CONSTANT_NAN] = True
            self._append(fmt.STREAM_GRAPHS, record)
            if self._progress is not None:
                self._progress.note_op(op_type, op_name, device_id, stack_id, trace_points)
            return ident

    def add_notice(
        self,
        kind: str,
        message: str,
        *,
        level: str = fmt.NOTICE_WARNING,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record a notice (docs/format.md, `notice`): something the user should know
        about this recording. ``message`` is one line; ``details`` holds plain values."""
        with self._lock:
            if self._closed:
                return
            self._append(
                fmt.STREAM_METADATA,
                {
                    KIND_KEY: NoticeRecord.KIND,
                    NoticeRecord.NOTICE_KIND: kind,
                    NoticeRecord.LEVEL: level,
                    NoticeRecord.MESSAGE: " ".join(message.split()),
                    NoticeRecord.DETAILS: dict(details or {}),
                    NoticeRecord.TIME: time.time(),
                },
            )

    def add_watch_record(self, kind: WatchKind, fields: dict[str, Any]) -> None:
        """Record one of the watch tier's records (docs/format.md, `watch_site`,
        `watch_steps`, `watch_hit`) in the metadata stream; ``fields`` are keyed by
        ``kind``'s keys, and its time is added."""
        assert kind in (WatchSiteRecord, WatchStepsRecord, WatchHitRecord)
        with self._lock:
            if self._closed:
                return
            self._append(
                fmt.STREAM_METADATA, {**fields, KIND_KEY: kind.KIND, kind.TIME: time.time()}
            )

    # -- events --------------------------------------------------------------------------

    def add_execution(
        self,
        *,
        op_type: str,
        graph_id: int | None,
        input_ids: Sequence[int],
        output_ids: Sequence[int],
        device_ids: Sequence[int],
        output_dtypes: Sequence[int],
        stack_id: int | None,
        summaries: Sequence[Sequence[float] | None] | None = None,
        values: Sequence[dict[str, Any] | None] | None = None,
        time_s: float | None = None,
        call_ordinal: int | None = None,
        thread: str | None = None,
        names: Sequence[str] | None = None,
    ) -> int:
        """Record one eager execution (an op or a function call); returns its index.

        ``values`` (FULL_TENSOR, `tensor_value_record` results) are compressed when
        the record is flushed, normally by the background flush rather than the
        caller's (training) thread, if a core is spare (`COMPRESSION`).
        ``call_ordinal`` (a function call) is how many calls of the same function
        (`reader.format.step_function_name`) came before it. ``thread`` names the
        Python thread it ran in, when not the one that enabled the dump. ``names``: what
        an op of `reader.format.NAMING_OPS` names (a variable, checkpoint keys).
        """
        with self._lock:
            if self._closed:
                raise RuntimeError(f"dump writer for run {self.run_id} is closed")
            index = self.num_executions
            if call_ordinal is not None:
                self._latest_call = (fmt.step_function_name(op_type), int(call_ordinal))
            # Only the first alert matters: later records are not inspected.
            if self.seeking_alert and (
                summaries_alert(self.mode, summaries) if values is None else values_alert(values)
            ):
                self._rotation.note_alert(fmt.STREAM_EXECUTIONS, index, index)
            time_s = time.time() if time_s is None else time_s
            if self._progress is not None:
                self._progress.note_execution(
                    index, op_type, call_ordinal, time_s, device_ids, stack_id, summaries
                )
            if self._stopped is None:
                chunk = self._execution_chunk(index)
                chunk.add(
                    op_type=op_type,
                    graph_id=graph_id,
                    input_ids=input_ids,
                    output_ids=output_ids,
                    device_ids=device_ids,
                    output_dtypes=output_dtypes,
                    stack_id=stack_id,
                    summaries=summaries,
                    values=values,
                    time_s=time_s,
                    call_ordinal=call_ordinal,
                    thread=thread,
                    names=names,
                )
            self.num_executions = index + 1
            if (
                self._chunk is not None
                and self._chunk.estimated_bytes >= FLUSH_BYTES
                and not self._rotation.bounds(fmt.STREAM_EXECUTIONS)
            ):
                self._flush(hold=True)
            self._count_and_rotate(fmt.STREAM_EXECUTIONS, 1, index)
            return index

    def _execution_chunk(self, index: int) -> ExecutionChunk:
        """The open chunk of executions, or a new one from ``index`` on.

        A new chunk's record is appended at once, in its place in the stream, and
        packed when the file flushes (`ExecutionChunk.pack_into`).
        """
        chunk = self._chunk
        if chunk is None or chunk.sealed or chunk.full:
            width = (
                len(fmt.ROW_COLUMNS[self.mode])
                if self.mode in fmt.ROW_COLUMNS and self.mode != fmt.FULL_TENSOR
                else 0
            )
            chunk = self._chunk = ExecutionChunk(index, width, self.mode in fmt.MAGNITUDE_MODES)

            def pack(record: dict[str, Any], chunk: ExecutionChunk = chunk) -> None:
                chunk.pack_into(record)
                if ExecsChunk.VALUES in record:
                    record[ExecsChunk.VALUES] = COMPRESSION.encode_all(record[ExecsChunk.VALUES])

            self._files[fmt.STREAM_EXECUTIONS].append({}, encode=pack)
        return chunk

    def add_traces(
        self,
        trace_points: np.ndarray,
        *,
        summaries: np.ndarray | None = None,
        values: Sequence[dict[str, Any]] | None = None,
        step: int | None = None,
        alert: bool | None = None,
    ) -> int:
        """Record a chunk of graph execution traces, in execution order.

        Args:
            trace_points: int32 array, the trace point id of each trace.
            summaries: float64 array of shape (n, len(ROW_COLUMNS[mode])), or None.
            values: FULL_TENSOR values, one `tensor_value_record` per trace, stored as
                given: compress them (`encode_value`) first, off the lock. A
                `DeferredValues` is kept as it is and made into records when its chunk
                is packed (never, if a circular buffer drops the chunk first).
            step: Index of the eager execution (top-level function call) the traces ran
                in; defaults to the number of executions recorded so far.
            alert: Whether a trace holds NaN or infinity; None: found from
                ``summaries`` (or from ``values``, if stored raw).

        Returns:
            The index of the chunk's first trace.
        """
        tps = np.ascontiguousarray(trace_points, dtype="<i4")
        n = int(tps.shape[0])
        with self._lock:
            first = self.num_traces
            step = self.num_executions if step is None else int(step)
            if not self.seeking_alert:
                alert = False
            elif alert is None:
                alert = (
                    summaries_alert(self.mode, summaries)
                    if values is None
                    else values_alert(values)
                )
            if alert:
                self._rotation.note_alert(fmt.STREAM_GRAPH_TRACES, first, step)
            if self._rotation.due_before(fmt.STREAM_GRAPH_TRACES, step):
                self._rotate(fmt.STREAM_GRAPH_TRACES)
            cols = None
            if summaries is not None:
                cols = np.ascontiguousarray(summaries, dtype="<f8")
                if cols.ndim != 2 or cols.shape[0] != n:
                    raise ValueError(f"summaries must have shape ({n}, K), got {cols.shape}")
            if values is not None and len(values) != n:
                raise ValueError(f"expected {n} values, got {len(values)}")
            if self._closed:
                raise RuntimeError(f"dump writer for run {self.run_id} is closed")
            if self._progress is not None and n:
                self._progress.note_traces(first, step, tps, cols)
            if self._stopped is None and n:
                chunk = self._trace_chunk(first, cols, values)
                kept = (
                    values if values is None or isinstance(values, DeferredValues) else list(values)
                )
                chunk.add(tps, cols, kept, step)
            self.num_traces = first + n
            if (
                self._traces is not None
                and self._traces.estimated_bytes >= FLUSH_BYTES
                and not self._rotation.bounds(fmt.STREAM_GRAPH_TRACES)
            ):
                self._flush(hold=True)
            self._count_and_rotate(fmt.STREAM_GRAPH_TRACES, n, step)
            return first

    def _trace_chunk(
        self, first: int, summaries: np.ndarray | None, values: Sequence[Any] | None
    ) -> TraceChunk:
        """The open chunk of traces, or a new one from ``first`` on (as
        `_execution_chunk`)."""
        chunk = self._traces
        if chunk is None or chunk.sealed or chunk.full or not chunk.accepts(summaries, values):
            chunk = self._traces = TraceChunk(first, self.mode in fmt.MAGNITUDE_MODES)
            self._files[fmt.STREAM_GRAPH_TRACES].append({}, encode=chunk.pack_into)
        return chunk
