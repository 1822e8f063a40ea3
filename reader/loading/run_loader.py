"""Reading one run's files into the indexes, the machinery behind `DumpReader.update`:
reads without the query lock, commits under it in bounded batches.

Reading (file I/O, framing, decoding, scanning) happens without the reader's query
lock; only the steps that change what queries see (a commit of new rows, new
definitions, dropped segments, notices) take it, each for a bounded batch. A query, or
a screen painting from one, waits for one batch, never for a whole read.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

import msgpack
import numpy as np

from reader import format as fmt
from reader import storage
from reader.byte_sources import READ_AHEAD_BYTES, Part
from reader.contract import KIND_KEY, RunRecord
from reader.errors import DamagedDumpError, MalformedRecordError, NoRunsError
from reader.index.definitions import Definitions
from reader.index.exec_chunks import chunk_columns
from reader.index.exec_scan import PAD as EXEC_SCAN_PAD
from reader.index.exec_scan import ExecScan, scan_exec_frames
from reader.index.execution_index import ExecutionIndex
from reader.index.segment_reader import DECODE_ERRORS, SegmentReader, list_segments, short_error
from reader.index.trace_index import TraceIndex
from reader.model import UpdateReport
from reader.notices import Notice, notice_from_record
from reader.watch_log import WatchLogBuilder

# Decoded records kept for repeated fetches (a screenful of executions, a trace chunk
# whose FULL_TENSOR values are being browsed).
RECORD_CACHE_SIZE = 256
# Records taken under one hold of the query lock on the record-at-a-time path
# (definitions, metadata, FULL_TENSOR executions): the lock is taken a few hundred
# times per million records, and held for well under a millisecond each time.
TAKE_BATCH = 256
TAKE_BATCH_VALUES = 16
# A listing of the run this recent (`list_runs`', an instant before the run is opened)
# is the first read's: in a bucket a listing is a round trip, and a new one would show
# little more (the next update lists again).
FIRST_LISTING_AGE_S = 2.0


class RunLoader:
    """Owns a run's segment readers, definitions and indexes, and fills them.

    `update` must not run in two threads at once (`IndexedRun` serialises it). It
    changes the state queries read only while holding ``commit_lock``, which queries
    hold while they read; `fetch` and `close` run under that lock.

    Args:
        path: The run directory.
        commit_lock: The queries' lock (re-entrant); a private one when not given.

    Raises:
        NoRunsError: ``path`` holds no metadata segment.
        FormatVersionError: A file was written by a newer major format version.
        DamagedDumpError: Not even the run's metadata record is readable.
    """

    def __init__(self, path: str, commit_lock: AbstractContextManager[Any] | None = None) -> None:
        self.path = path
        self._commit = commit_lock if commit_lock is not None else threading.RLock()
        self.segments: dict[str, dict[int, SegmentReader]] = {s: {} for s in fmt.STREAMS}
        self.defs = Definitions()
        self.run: dict[str, Any] | None = None
        self.end: dict[str, Any] | None = None
        self.damage: list[str] = []
        self.notices: list[Notice] = []
        self.watch = WatchLogBuilder()
        self.cache: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()
        self.store = storage.store_for(path)
        listing = list_segments(self.path, self.store, FIRST_LISTING_AGE_S)
        if listing is None or not listing[fmt.STREAM_METADATA]:
            raise NoRunsError(f"{self.path}: not a tfdbg-tui run (no metadata file)")
        # The first `update` reads the rest of this listing (a bucket's listing is a
        # request; a new one would show little more). In a bucket, the fetches of the
        # parts it reads first start at once, concurrently, and each read waits only
        # for its own part, rather than a round trip per stream.
        self._listing: dict[str, dict[int, list[Part]]] | None = listing
        if self.store.remote:
            try:
                self.store.prefetch(storage.first_parts(listing, READ_AHEAD_BYTES))
            except OSError:
                pass  # each part is read again, and its failure said, where it is needed
        self._read_stream(fmt.STREAM_METADATA, listing[fmt.STREAM_METADATA])
        if self.run is None:
            detail = f": {self.damage[0]}" if self.damage else ""
            raise DamagedDumpError(f"{self.path}: the run's metadata is unreadable{detail}")
        mode = self.run.get(RunRecord.TENSOR_DEBUG_MODE)
        self.mode: str = mode if mode in fmt.TENSOR_DEBUG_MODES else fmt.NO_TENSOR
        if mode not in fmt.TENSOR_DEBUG_MODES:
            self.damage.append(f"unknown tensor_debug_mode {mode!r}; summaries are ignored")
        self.execs: ExecutionIndex = ExecutionIndex(self.mode)
        self.traces: TraceIndex = TraceIndex(self.mode)

    def update(self) -> UpdateReport:
        """Read what was appended since the last call; see `DumpReader.update`."""
        before = counters(self)
        listing, self._listing = self._listing or list_segments(self.path, self.store), None
        if listing is None:
            with self._commit:
                self.notice(f"{self.path}: the run directory vanished")
            listing = {s: {} for s in fmt.STREAMS}
        for stream in fmt.STREAMS:
            self._read_stream(stream, listing[stream])
        return report_since(self, before)

    def _read_stream(self, stream: str, present: dict[int, list[Part]]) -> None:
        known = self.segments[stream]
        if stream in fmt.ROTATING_STREAMS:
            self._drop_vanished(stream, list(present))
        for number, parts in present.items():
            if number not in known:
                path = self.store.join(self.path, fmt.segment_filename(stream, number))
                known[number] = SegmentReader(path, stream, number, parts, self.store)
            else:
                known[number].set_parts(parts)
        for number in sorted(known):
            segment = known.get(number)
            if segment is None or segment.damage is not None or segment.vanished:
                continue
            # Growing a column copies it aside and swaps it in, leaving its rows as
            # they were: safe beside queries, so done without their lock.
            if stream == fmt.STREAM_GRAPH_TRACES:
                self.traces.reserve_for_bytes(segment.reservable())
                self._read_traces(segment, number)
            elif stream == fmt.STREAM_EXECUTIONS and _has_chunks(segment):
                self._read_exec_chunks(segment, number)
            elif stream == fmt.STREAM_EXECUTIONS and self.mode != fmt.FULL_TENSOR:
                # Format 1.x: one `exec` record per execution.
                self.execs.reserve_for_bytes(segment.reservable())
                for data, base, starts, ends in segment.read_new_frames(pad=EXEC_SCAN_PAD):
                    if not self._take_exec_frames(segment, number, data, base, starts, ends):
                        break
            else:
                # FULL_TENSOR executions compute their summaries from their values
                # while taken: fewer at a time.
                size = TAKE_BATCH if stream != fmt.STREAM_EXECUTIONS else TAKE_BATCH_VALUES
                for batch in _batches(segment.read_new(), size):
                    with self._commit:
                        if not self._take_batch(stream, segment, number, batch):
                            break
            if segment.damage is not None:
                with self._commit:
                    self.notice(segment.damage)
            elif segment.read_error is not None:
                with self._commit:
                    self.notice(f"{segment.read_error}; read again at the next update")
            self._value_notice(segment, stream)
            if segment.vanished and stream in fmt.ROTATING_STREAMS:
                self._drop_vanished(stream, [n for n in known if not known[n].vanished])

    def _read_traces(self, segment: SegmentReader, number: int) -> None:
        """Take a segment's new ``traces`` chunks, committing them under the lock in
        batches (`TraceIndex.commit_due`) and at the end."""
        for start, end, record in segment.read_new():
            if record[KIND_KEY] != fmt.KIND_TRACES:
                continue
            try:
                self.traces.add_chunk(record, number, start, end)
            except MalformedRecordError as error:
                # Later records of the segment would leave a hole in the numbering;
                # stop at the damage, keep everything before it.
                segment.damage = f"{segment.name}: {error} at byte {start}"
                break
            if self.traces.commit_due:
                with self._commit:
                    self.traces.commit()
        with self._commit:
            self.traces.commit()

    def _read_exec_chunks(self, segment: SegmentReader, number: int) -> None:
        """Take a segment's new ``execs`` chunks (format 2.0). A chunk's columns are
        checked (and FULL_TENSOR summaries computed) before the lock is taken."""
        self.execs.reserve_for_bytes(segment.reservable())
        for start, end, record in segment.read_new():
            if record[KIND_KEY] != fmt.KIND_EXECUTION_CHUNK:
                continue
            try:
                columns = chunk_columns(
                    record, self.mode, self.execs.width, self.execs.value_damage
                )
                with self._commit:
                    self.execs.add_chunk(columns, number, start, end)
            except MalformedRecordError as error:
                segment.damage = f"{segment.name}: {error} at byte {start}"
                break

    def _take_batch(
        self,
        stream: str,
        segment: SegmentReader,
        number: int,
        batch: list[tuple[int, int, dict[str, Any]]],
    ) -> bool:
        """Take decoded records (under the lock); False once the segment is damaged."""
        for start, end, record in batch:
            try:
                self._take(stream, number, start, end, record)
            except MalformedRecordError as error:
                if stream in fmt.ROTATING_STREAMS:
                    segment.damage = f"{segment.name}: {error} at byte {start}"
                    return False
                self.notice(f"{segment.name}: {error} at byte {start}; record skipped")
        return True

    def _take_exec_frames(
        self,
        segment: SegmentReader,
        number: int,
        data: bytearray,
        base: int,
        starts: np.ndarray,
        ends: np.ndarray,
    ) -> bool:
        """Index a block of framed ``exec`` records; False once the segment is damaged.

        Records that fit the block's template are indexed from the vectorised scan, in
        runs of consecutive indices; any other record is decoded whole and taken one at
        a time, exactly as `read_new` records are.
        """
        scan = scan_exec_frames(data, starts, ends, self.mode, self.execs.intern_op)
        with self._commit:
            return self._take_scanned(scan, segment, number, data, base, starts, ends)

    def _take_scanned(
        self,
        scan: ExecScan,
        segment: SegmentReader,
        number: int,
        data: bytearray,
        base: int,
        starts: np.ndarray,
        ends: np.ndarray,
    ) -> bool:
        """The part of `_take_exec_frames` that changes the index (under the lock)."""
        n = starts.size
        # A run starts at every record that is not ok, follows one that is not, or
        # does not continue its predecessor's index.
        breaks = ~scan.ok
        breaks[1:] |= ~scan.ok[:-1]
        breaks[1:] |= scan.index[1:] != scan.index[:-1] + 1
        breaks[0] = True
        run_starts = np.flatnonzero(breaks).tolist() + [n]
        for a, b in zip(run_starts[:-1], run_starts[1:]):
            start = base + int(starts[a])
            if scan.ok[a]:
                try:
                    self.execs.add_scanned(scan, a, b, number, base, starts, ends)
                except MalformedRecordError as error:
                    segment.damage = f"{segment.name}: {error} at byte {start}"
                    return False
                continue
            try:
                record = msgpack.unpackb(data[starts[a] : ends[a]], raw=False, strict_map_key=False)
            except DECODE_ERRORS as error:
                segment.mark_damaged(start, f"undecodable record ({short_error(error)})")
                return False
            if not isinstance(record, dict) or not isinstance(record.get(KIND_KEY), str):
                segment.mark_damaged(start, "a record that is not a map with a kind")
                return False
            try:
                self._take(fmt.STREAM_EXECUTIONS, number, start, base + int(ends[a]), record)
            except MalformedRecordError as error:
                segment.damage = f"{segment.name}: {error} at byte {start}"
                return False
        return True

    def _take(
        self, stream: str, segment: int, start: int, end: int, record: dict[str, Any]
    ) -> None:
        kind = record[KIND_KEY]
        if stream == fmt.STREAM_GRAPH_TRACES:
            if kind == fmt.KIND_TRACES:
                self.traces.add_chunk(record, segment, start, end)
        elif stream == fmt.STREAM_EXECUTIONS:
            if kind == fmt.KIND_EXECUTION:
                self.execs.add(record, segment, start, end)
        elif kind == fmt.KIND_RUN and stream == fmt.STREAM_METADATA:
            if self.run is None:
                self.run = record
        elif kind == fmt.KIND_END and stream == fmt.STREAM_METADATA:
            self.end = record
        elif kind == fmt.KIND_NOTICE and stream == fmt.STREAM_METADATA:
            notice = notice_from_record(record)
            if notice is None:
                raise MalformedRecordError("a notice without a kind or message")
            self.notices.append(notice)
        elif kind == fmt.KIND_WATCH_SITE and stream == fmt.STREAM_METADATA:
            self.watch.add_site(record)
        elif kind == fmt.KIND_WATCH_STEPS and stream == fmt.STREAM_METADATA:
            self.watch.add_steps(record)
        elif kind == fmt.KIND_WATCH_HIT and stream == fmt.STREAM_METADATA:
            self.watch.add_hit(record)
        else:
            self.defs.add(record)

    def _value_notice(self, segment: SegmentReader, stream: str) -> None:
        """One notice for the FULL_TENSOR values of ``segment`` just read that could
        not be decoded (their summaries show nothing)."""
        if stream not in fmt.ROTATING_STREAMS:
            return
        index = self.traces if stream == fmt.STREAM_GRAPH_TRACES else self.execs
        problems = index.value_damage
        if problems:
            what = (
                f"{problems[0]}; it is shown"
                if len(problems) == 1
                else f"{len(problems)} tensor values cannot be decoded (the first: "
                f"{problems[0]}); they are shown"
            )
            with self._commit:
                self.notice(f"{segment.name}: {what} without a summary")
            problems.clear()

    def _drop_vanished(self, stream: str, present: list[int]) -> None:
        known = self.segments[stream]
        gone = [n for n in known if n not in present or known[n].vanished]
        if not gone:
            return
        # Usually the oldest segments leave, but the first alert's pinned window stays
        # while the segments after it leave: forget exactly the ones gone.
        index = self.execs if stream == fmt.STREAM_EXECUTIONS else self.traces
        with self._commit:
            for number in gone:
                index.drop_segment(number)
                known.pop(number).close()
            self.cache.clear()

    def notice(self, text: str) -> None:
        """Add a damage notice (once); called under the lock."""
        if text not in self.damage:
            self.damage.append(text)

    def fetch(self, stream: str, segment: int, offset: int, length: int) -> dict[str, Any]:
        key = (stream, segment, offset)
        record = self.cache.get(key)
        if record is not None:
            self.cache.move_to_end(key)
            return record
        reader = self.segments[stream].get(segment)
        record = reader.fetch(offset, length) if reader is not None else None
        if record is None:
            raise DamagedDumpError(
                f"{fmt.segment_filename(stream, segment)}: record at byte {offset} is no "
                "longer readable"
            )
        self.cache[key] = record
        if len(self.cache) > RECORD_CACHE_SIZE:
            self.cache.popitem(last=False)
        return record

    def close(self) -> None:
        """Close every open segment file."""
        for segments in self.segments.values():
            for segment in segments.values():
                segment.close()


def _has_chunks(segment: SegmentReader) -> bool:
    """Whether an executions segment holds ``execs`` chunks (format 2.0 and later)."""
    version = segment.header_version()
    return version is not None and version[0] >= 2


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of up to ``size``, read lazily."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class Loader(Protocol):
    """What `IndexedRun` reads a run through: `RunLoader` (our segment files) and
    `reader.loading.tf_events.loader.TfRunLoader` (a file set of TensorFlow's)."""

    mode: str
    run: dict[str, Any] | None
    end: dict[str, Any] | None
    damage: list[str]
    notices: list[Notice]
    watch: WatchLogBuilder
    defs: Definitions
    execs: ExecutionIndex
    traces: TraceIndex

    def update(self) -> UpdateReport: ...

    def fetch(self, stream: str, segment: int, offset: int, length: int) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Counters(NamedTuple):
    """What a loader holds (counts, ends, flags): taken before an update, for
    `report_since`."""

    exec_end: int
    trace_end: int
    exec_alerts: int
    trace_alerts: int
    graphs: int
    ops: int
    damage: int
    executions: int
    traces: int
    finished: bool
    definitions: int
    notices: int


def counters(loader: Loader) -> Counters:
    """What ``loader`` holds now."""
    defs, execs, traces = loader.defs, loader.execs, loader.traces
    return Counters(
        exec_end=execs.end,
        trace_end=traces.end,
        exec_alerts=execs.alert_index.size,
        trace_alerts=int(np.count_nonzero(traces.alert.view)),
        graphs=defs.num_graphs,
        ops=defs.num_ops,
        damage=len(loader.damage),
        executions=len(execs),
        traces=len(traces),
        finished=loader.end is not None,
        definitions=len(defs.files) + len(defs.frames) + len(defs.stacks) + len(defs.devices),
        notices=len(loader.notices),
    )


def report_since(loader: Loader, before: Counters) -> UpdateReport:
    """What changed in ``loader`` since `counters` gave ``before``."""
    now = counters(loader)
    execs, traces = loader.execs, loader.traces
    # Rows held now at indices past the old end are new; the other rows held before
    # and missing now left the disk (from the front, or after a pinned window).
    new_e = len(execs) - execs.spans.rows_below(before.exec_end)
    new_t = len(traces) - traces.spans.rows_below(before.trace_end)
    return UpdateReport(
        new_executions=new_e,
        new_traces=new_t,
        new_alerts=max(
            now.exec_alerts - before.exec_alerts + now.trace_alerts - before.trace_alerts, 0
        ),
        new_graphs=now.graphs - before.graphs,
        new_ops=now.ops - before.ops,
        damage=tuple(loader.damage[before.damage :]),
        dropped_executions=max(before.executions - (len(execs) - new_e), 0),
        dropped_traces=max(before.traces - (len(traces) - new_t), 0),
        new_definitions=now.definitions - before.definitions,
        finished=now.finished and not before.finished,
        new_notices=now.notices - before.notices,
    )
