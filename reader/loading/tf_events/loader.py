"""`TfRunLoader`: reading one file set of TensorFlow's own dump into the indexes our
format fills, behind `RunLoader`'s interface.

`TfRunLoader` has the interface of `reader.loading.run_loader.RunLoader`: `IndexedRun` takes
either, so every query and analysis, the TUI and the CLI read both formats alike.
TensorFlow's records become our records (`reader.loading.tf_events.events`); graph traces are
indexed a block at a time into the trace columns, in chunks of consecutive traces of
one step; eager executions a block at a time too (`execution_rows`), the records the
block path cannot read one at a time through protobuf, in their place in the order.

A trace's step (our ``x``, docs/format.md section 4) is not in TensorFlow's records:
it is the first execution recorded at or after the trace's wall time (an eager
`tf.function` call is recorded once it returned, after every trace it computed). A
trace read while its call is still running gets the next execution index, which is
that call's.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from reader import format as fmt
from reader import values
from reader.contract import KIND_KEY, ExecRecord, RunRecord, TracesChunk
from reader.errors import DamagedDumpError, DumpError, MalformedRecordError, NoRunsError
from reader.index.columns import Column
from reader.index.definitions import Definitions
from reader.index.execution_index import ExecutionIndex
from reader.index.trace_index import TraceIndex
from reader.loading.run_loader import RECORD_CACHE_SIZE, TAKE_BATCH, counters, report_since
from reader.loading.tf_events import file_sets, trace_block
from reader.loading.tf_events.events import (
    Ids,
    definition_records,
    execution_record,
    trace_summary,
    trace_value,
)
from reader.loading.tf_events.execution_rows import ExecutionRows
from reader.loading.tf_events.schema import DebugEvent
from reader.loading.tf_events.tfrecord import FOOTER_BYTES, HEADER_BYTES, RecordFile
from reader.model import DUMPER_TENSORFLOW, RunInfo, UpdateReport
from reader.notices import Notice
from reader.watch_log import WatchLogBuilder

_MODE_NAMES = {number: name for name, number in fmt.TF_TENSOR_DEBUG_MODE_ENUM.items()}
# Traces per chunk of the trace index: bounds what a FULL_TENSOR value fetch decodes
# (one record) and what one chunk's step covers, at 40 bytes of chunk table per chunk.
CHUNK_TRACES = 256
_DEFINITION_STREAMS = (fmt.STREAM_SOURCE_FILES, fmt.STREAM_STACKS, fmt.STREAM_GRAPHS)


class TfRunLoader:
    """Owns one TensorFlow file set's readers, definitions and indexes, and fills them.

    Args:
        prefix: The file set's prefix, ``LOGDIR/tfdbg_events.<time>.<host>``.
        commit_lock: The queries' lock (re-entrant); a private one when not given.

    Raises:
        NoRunsError: ``prefix`` has no metadata file.
        DamagedDumpError: Its metadata record is unreadable.
    """

    def __init__(self, prefix: str, commit_lock: AbstractContextManager[Any] | None = None) -> None:
        self.path = prefix
        self._commit = commit_lock if commit_lock is not None else threading.RLock()
        if not file_sets.is_file_set(prefix):
            raise NoRunsError(f"{prefix}: not a TensorFlow dump (no .metadata file)")
        self.files = {
            stream: RecordFile(file_sets.stream_path(prefix, stream)) for stream in fmt.STREAMS
        }
        self.defs = Definitions()
        self.ids = Ids()
        self.end: dict[str, Any] | None = None  # TensorFlow writes no end record
        self.damage: list[str] = []
        self.notices: list[Notice] = []
        self.watch = WatchLogBuilder()  # TensorFlow's dumper has no watch tier: empty
        self.cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._exec_times = Column(np.float64)  # wall time per execution row
        self._execution_rows: ExecutionRows | None = None
        self._next_execution = 0
        self._next_trace = 0
        # (graph UUID, op name, slot) as the block scan gives them -> trace point
        self._tp_by_bytes: dict[tuple[bytes, bytes, int], int] = {}
        self.run: dict[str, Any] | None = self._read_metadata()
        mode = self._first_mode()
        self._mode_known = mode is not None
        self.mode: str = mode or fmt.NO_TENSOR
        self.run[RunRecord.TENSOR_DEBUG_MODE] = self.mode
        self.execs = ExecutionIndex(self.mode)
        self.traces = TraceIndex(self.mode)

    def _read_metadata(self) -> dict[str, Any]:
        metadata = self.files[fmt.STREAM_METADATA]
        event = None
        for data, _, starts, lengths in metadata.read_new():
            event = _parse(data[starts[0] : starts[0] + lengths[0]])
            break
        if event is None or not event.HasField("debug_metadata"):
            detail = metadata.damage or "no DebugMetadata record"
            raise DamagedDumpError(f"{self.path}: the run's metadata is unreadable ({detail})")
        start, host = file_sets.start_and_host(self.path)
        return {
            RunRecord.DUMPER: DUMPER_TENSORFLOW,
            RunRecord.HOST: host,
            RunRecord.START_TIME: event.wall_time or start,
            RunRecord.TF_VERSION: event.debug_metadata.tensorflow_version or None,
            RunRecord.TFDBG_RUN_ID: event.debug_metadata.tfdbg_run_id or None,
        }

    def _first_mode(self) -> str | None:
        """The mode named by the first execution or trace on disk, if any."""
        for stream, field in (
            (fmt.STREAM_EXECUTIONS, "execution"),
            (fmt.STREAM_GRAPH_TRACES, "graph_execution_trace"),
        ):
            probe = RecordFile(self.files[stream].path)
            try:
                for data, _, starts, lengths in probe.read_new():
                    event = _parse(data[starts[0] : starts[0] + lengths[0]])
                    if event is not None and event.HasField(field):
                        return _MODE_NAMES.get(getattr(event, field).tensor_debug_mode)
                    break
            finally:
                probe.close()
        return None

    def _learn_mode(self, number: int) -> None:
        """Take the run's mode from its first execution or trace read (while empty)."""
        self._mode_known = True
        mode = _MODE_NAMES.get(number, fmt.NO_TENSOR)
        if mode != self.mode and not len(self.execs) and not len(self.traces):
            with self._commit:
                self.mode = mode
                if self.run is not None:
                    self.run[RunRecord.TENSOR_DEBUG_MODE] = mode
                self.execs.clear(mode)
                self.traces.clear(mode)

    def update(self) -> UpdateReport:
        """Read what was appended since the last call; see `DumpReader.update`."""
        before = counters(self)
        for stream in fmt.STREAMS[1:]:
            record_file = self.files[stream]
            if stream in _DEFINITION_STREAMS:
                self._read_definitions(stream, record_file)
            elif stream == fmt.STREAM_EXECUTIONS:
                self._read_executions(record_file)
            else:
                self._read_traces(record_file)
            if record_file.damage is not None:
                with self._commit:
                    self.notice(record_file.damage)
        return report_since(self, before)

    def _parse_or_note(self, data: Any, record_file: RecordFile, offset: int) -> Any:
        """The `DebugEvent` in ``data``; None, with a notice, when it is not one."""
        event = _parse(data)
        if event is None:
            self._note_skipped(record_file, offset)
        return event

    def _note_skipped(self, record_file: RecordFile, offset: int) -> None:
        with self._commit:
            self.notice(
                f"{record_file.name}: a record that is not a DebugEvent at byte "
                f"{offset}; record skipped"
            )

    def _read_definitions(self, stream: str, record_file: RecordFile) -> None:
        for data, base, starts, lengths in record_file.read_new():
            view = memoryview(data)
            records: list[dict[str, Any]] = []
            for start, length in zip(starts.tolist(), lengths.tolist()):
                event = self._parse_or_note(
                    view[start : start + length], record_file, base + start - HEADER_BYTES
                )
                if event is None:
                    if stream == fmt.STREAM_SOURCE_FILES:
                        self.ids.num_files += 1  # frames name files by position
                    continue
                records.extend(definition_records(event, self.ids))
            for first in range(0, len(records), TAKE_BATCH):
                with self._commit:
                    for record in records[first : first + TAKE_BATCH]:
                        try:
                            self.defs.add(record)
                        except MalformedRecordError as error:
                            self.notice(f"{record_file.name}: {error}; record skipped")

    def _read_executions(self, record_file: RecordFile) -> None:
        for data, base, starts, lengths in record_file.read_new():
            position = 0
            while not self._mode_known and position < starts.size:
                # The mode (and so the summaries' width) comes with the first record.
                self._take_execution_records(
                    record_file, data, base, starts, lengths, position, position + 1
                )
                position += 1
            if position == starts.size:
                continue
            if self.mode == fmt.FULL_TENSOR:
                self._take_execution_records(
                    record_file, data, base, starts, lengths, position, starts.size
                )
            else:
                self._take_execution_block(
                    record_file, data, base, starts[position:], lengths[position:]
                )

    def _take_execution_block(
        self,
        record_file: RecordFile,
        data: bytes,
        base: int,
        starts: np.ndarray,
        lengths: np.ndarray,
    ) -> None:
        """Index a block of execution records in columns (`execution_rows`), the records
        it cannot read one at a time."""
        if self._execution_rows is None or self._execution_rows.mode != self.mode:
            self._execution_rows = ExecutionRows(self.ids, self.mode)
        block = self._execution_rows.scan(data, starts, lengths)
        for begin, end, readable in block.runs():
            if not readable:
                self._take_execution_records(record_file, data, base, starts, lengths, begin, end)
                continue
            rows = self._execution_rows.rows(block, begin, end, self._next_execution, base)
            self._next_execution += end - begin
            with self._commit:
                for definition in rows.definitions:
                    self.defs.add(definition)
                self.execs.add_records(
                    rows.first,
                    rows.op_types,
                    rows.op,
                    rows.has_graph,
                    rows.starts,
                    rows.ends,
                    rows.out_start,
                    rows.out,
                    rows.summaries,
                    rows.has_summary,
                )
                self._exec_times.extend(rows.times)

    def _take_execution_records(
        self,
        record_file: RecordFile,
        data: bytes,
        base: int,
        starts: np.ndarray,
        lengths: np.ndarray,
        begin: int,
        end: int,
    ) -> None:
        """Index records ``begin..end-1`` of a block one at a time (protobuf decodes
        each): any mode, any layout, any damage."""
        view = memoryview(data)
        taken: list[tuple[dict[str, Any], list[dict[str, Any]], int, int]] = []
        for start, length in zip(starts[begin:end].tolist(), lengths[begin:end].tolist()):
            offset = base + start - HEADER_BYTES
            index = self._next_execution
            self._next_execution += 1
            event = self._parse_or_note(view[start : start + length], record_file, offset)
            if event is None or not event.HasField("execution"):
                continue
            if not self._mode_known:
                self._learn_mode(event.execution.tensor_debug_mode)
            record, definitions = execution_record(event, index, self.mode, self.ids)
            taken.append((record, definitions, offset, length + HEADER_BYTES + FOOTER_BYTES))
            if len(taken) >= TAKE_BATCH:
                self._take_executions(record_file, taken)
                taken = []
        self._take_executions(record_file, taken)

    def _take_executions(
        self,
        record_file: RecordFile,
        taken: list[tuple[dict[str, Any], list[dict[str, Any]], int, int]],
    ) -> None:
        with self._commit:
            for record, definitions, offset, length in taken:
                try:
                    for definition in definitions:
                        self.defs.add(definition)
                    self.execs.add(record, 0, offset, offset + length)
                except MalformedRecordError as error:
                    self.notice(f"{record_file.name}: {error} at byte {offset}; record skipped")
                    continue
                self._exec_times.append(record[ExecRecord.TIME])

    def _read_traces(self, record_file: RecordFile) -> None:
        for data, base, starts, lengths in record_file.read_new():
            block = self._scan_traces(record_file, data, base, starts, lengths)
            if block is not None:
                self._take_traces(block, base, starts, lengths)
        with self._commit:
            self.traces.commit()

    def _scan_traces(
        self,
        record_file: RecordFile,
        data: bytes,
        base: int,
        starts: np.ndarray,
        lengths: np.ndarray,
    ) -> tuple | None:
        """Parse a block of trace records: (positions of the records kept, their
        trace indices, trace points, wall times, summary rows)."""
        first = self._next_trace
        scanned = None if self.mode == fmt.FULL_TENSOR else trace_block.scan(data, starts, lengths)
        if scanned is not None and not self._mode_known:
            self._learn_mode(scanned.mode)
        if scanned is None or (
            self.mode == fmt.FULL_TENSOR or not self._block_fits(scanned, starts.size)
        ):
            return self._scan_trace_records(record_file, data, base, starts, lengths)
        self._next_trace = first + starts.size
        positions = np.arange(starts.size, dtype=np.int64)
        keys = list(zip(scanned.graph_ids, scanned.op_names, scanned.slots or itertools.repeat(0)))
        tps = list(map(self._tp_by_bytes.get, keys))
        if None in tps:
            tps = [self._trace_point(key) if tp is None else tp for tp, key in zip(tps, keys)]
        kept_columns = fmt.TF_SUMMARY_KEPT_COLUMNS.get(self.mode)
        if kept_columns is None:
            summaries = np.empty((starts.size, 0))
        else:
            summaries = np.frombuffer(b"".join(scanned.contents), dtype="<f8").reshape(
                -1, kept_columns.stop
            )[:, kept_columns]
        return (positions, first + positions, np.array(tps, dtype="<i4"), scanned.times, summaries)

    def _block_fits(self, scanned: trace_block.Columns, n: int) -> bool:
        """Whether a scanned block holds one summary of this mode's width per trace."""
        kept_columns = fmt.TF_SUMMARY_KEPT_COLUMNS.get(self.mode)
        if kept_columns is None:
            return True
        return len(scanned.contents) == n and set(map(len, scanned.contents)) == {
            8 * kept_columns.stop
        }

    def _trace_point(self, key: tuple[bytes, bytes, int]) -> int:
        graph, op_name, slot = key
        tp = self.ids.trace_point(
            graph.decode("utf-8", "replace"), op_name.decode("utf-8", "replace"), slot
        )
        self._tp_by_bytes[key] = tp
        return tp

    def _scan_trace_records(
        self,
        record_file: RecordFile,
        data: bytes,
        base: int,
        starts: np.ndarray,
        lengths: np.ndarray,
    ) -> tuple | None:
        """`_scan_traces` a record at a time: any mode, any damage."""
        view = memoryview(data)
        kept: list[int] = []
        tps: list[int] = []
        times: list[float] = []
        rows: list[Any] = []
        trace_points = self.ids.trace_points
        mode = self.mode
        kept_columns = fmt.TF_SUMMARY_KEPT_COLUMNS.get(mode)
        width = kept_columns.stop if kept_columns is not None else 0
        first = self._next_trace
        for position, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist())):
            event = _parse(view[start : start + length])
            if event is None or not event.HasField("graph_execution_trace"):
                self._note_skipped(record_file, base + start - HEADER_BYTES)
                continue
            trace = event.graph_execution_trace
            if not self._mode_known:
                self._learn_mode(trace.tensor_debug_mode)
                return self._scan_traces(record_file, data, base, starts, lengths)
            key = (trace.tfdbg_context_id, trace.op_name, trace.output_slot)
            tp = trace_points.get(key)
            kept.append(position)
            tps.append(tp if tp is not None else self.ids.trace_point(*key))
            times.append(event.wall_time)
            if mode == fmt.FULL_TENSOR:
                rows.append(trace_value(event))
            elif width:
                row = trace_summary(mode, event)
                rows.append(row if row is not None else [0.0] * width)
        self._next_trace = first + len(starts)
        if not kept:
            return None
        positions = np.array(kept, dtype=np.int64)
        if mode == fmt.FULL_TENSOR:
            summaries: Any = values.summary_rows(rows)
        else:
            summaries = np.array(rows, dtype=np.float64).reshape(len(kept), -1)
        return (
            positions,
            first + positions,
            np.array(tps, dtype="<i4"),
            np.array(times, dtype=np.float64),
            summaries,
        )

    def _steps_of(self, times: np.ndarray) -> np.ndarray:
        """The step (our ``x``) of traces computed at ``times``."""
        execs = self.execs
        if not len(execs):
            return np.full(times.size, execs.end, dtype=np.int64)
        recorded = np.maximum.accumulate(self._exec_times.view)
        rows = np.searchsorted(recorded, times, side="left")
        steps = np.full(times.size, execs.end, dtype=np.int64)
        inside = rows < len(execs)
        steps[inside] = execs.spans.indices_of(rows[inside])
        return steps

    def _take_traces(
        self, block: tuple, base: int, starts: np.ndarray, lengths: np.ndarray
    ) -> None:
        positions, indices, tps, times, summaries = block
        steps = self._steps_of(times)
        n = positions.size
        # A chunk: consecutive indices of one step, at most CHUNK_TRACES (one trace in
        # FULL_TENSOR, whose value a fetch decodes).
        limit = 1 if self.mode == fmt.FULL_TENSOR else CHUNK_TRACES
        breaks = np.ones(n, dtype=bool)
        breaks[1:] = (steps[1:] != steps[:-1]) | (indices[1:] != indices[:-1] + 1)
        run_starts = np.flatnonzero(breaks)
        within = np.arange(n) - run_starts[np.cumsum(breaks) - 1]
        breaks |= within % limit == 0
        bounds = np.append(np.flatnonzero(breaks), n).tolist()
        record_starts = base + starts[positions] - HEADER_BYTES
        record_ends = base + starts[positions] + lengths[positions] + FOOTER_BYTES
        full_tensor = self.mode == fmt.FULL_TENSOR
        for a, b in zip(bounds[:-1], bounds[1:]):
            offset = int(record_starts[a])
            rows = summaries[a:b] if full_tensor else summaries[a:b].tobytes()
            self.traces.add_rows(
                int(indices[a]),
                int(steps[a]),
                offset,
                int(record_ends[b - 1]) - offset,
                0,
                tps[a:b].tobytes(),
                rows,
            )
            if self.traces.commit_due:
                with self._commit:
                    self.traces.commit()

    def notice(self, text: str) -> None:
        """Add a damage notice (once); called under the lock."""
        if text not in self.damage:
            self.damage.append(text)

    def fetch(self, stream: str, segment: int, offset: int, length: int) -> dict[str, Any]:
        """The record at ``offset`` (``length`` bytes framed) as our format's record:
        an ``exec``, or a ``traces`` chunk (``v`` holding FULL_TENSOR values)."""
        key = (stream, offset)
        record = self.cache.get(key)
        if record is not None:
            self.cache.move_to_end(key)
            return record
        payloads = self.files[stream].fetch_span(offset, length)
        events = [_parse(p) for p in payloads] if payloads is not None else [None]
        if not events or any(e is None for e in events):
            raise DamagedDumpError(
                f"{self.files[stream].name}: record at byte {offset} is no longer readable"
            )
        if stream == fmt.STREAM_EXECUTIONS:
            row = int(np.searchsorted(self.execs.offset.view, offset))
            index = self.execs.spans.index_of(row)
            record, _ = execution_record(events[0], index, self.mode, self.ids)
        else:
            record = {KIND_KEY: TracesChunk.KIND}
            if self.mode == fmt.FULL_TENSOR:
                record[TracesChunk.VALUES] = [trace_value(e) for e in events]
        self.cache[key] = record
        if len(self.cache) > RECORD_CACHE_SIZE:
            self.cache.popitem(last=False)
        return record

    def close(self) -> None:
        """Close every open file."""
        for record_file in self.files.values():
            record_file.close()


def _parse(data: Any) -> Any:
    """A `DebugEvent` from its bytes; None when they are not one."""
    try:
        return DebugEvent.FromString(data)
    except DecodeError:
        return None


def tf_run_info(prefix: str) -> RunInfo:
    """The `RunInfo` of one file set, from its metadata and first records only."""
    start, host = file_sets.start_and_host(prefix)
    try:
        loader = TfRunLoader(prefix)
    except DumpError:
        run: dict[str, Any] = {RunRecord.HOST: host, RunRecord.START_TIME: start}
        mode = None
    else:
        loader.close()
        run = loader.run or {}
        mode = loader.mode if loader._mode_known else None
    return RunInfo(
        run_id=os.path.basename(prefix),
        path=prefix,
        host=run.get(RunRecord.HOST),
        pid=None,
        start_time=(float(run[RunRecord.START_TIME]) if run.get(RunRecord.START_TIME) else None),
        tensor_debug_mode=mode,
        finished=False,
        dumper=DUMPER_TENSORFLOW,
    )
