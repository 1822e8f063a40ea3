"""One run's files: its directory (or bucket prefix) and the open segment per stream,
opened, rotated (at once, or at the next flush) and deleted.

`instrument.dump.segment_rotation` decides when a stream rotates and which segments
may go; this module opens, closes and deletes them, on a local disk or an object store
alike (`reader.storage`). A run in a bucket keeps no space reserve: an object store
does not fill up, and nothing could be cut back.
"""

from __future__ import annotations

import os
from typing import Any

import msgpack

from instrument.dump import recording_stop
from instrument.dump.record_file import RecordFile
from instrument.dump.segment_sinks import SegmentParts
from reader import format as fmt
from reader import storage
from reader.contract import KIND_KEY, HeaderRecord


class RunFiles:
    """The run directory ``logdir/<run_id>`` and its open segments.

    Raises:
        OSError: The run directory cannot be made (local disks only: a bucket's
            errors show at the first write).

    Attributes:
        store: Where the run is (`reader.storage`).
        path: The run's directory, or its URL.
        reserved: Whether the space reserve was set aside.
        files: The open segment of each stream.
        segments: The open segment's number, per stream.
        in_segment: Executions or traces in the open segment, per stream.
    """

    def __init__(self, logdir: str | os.PathLike[str], run_id: str) -> None:
        self.store = storage.store_for(logdir)
        base = self.store.normalize(os.fspath(logdir)) if self.store.remote else os.fspath(logdir)
        self.path = self.store.join(base, run_id)
        self.run_id = run_id
        self.store.makedirs(self.path)
        # Room for the `recording_stopped` notice should the disk fill up.
        self.reserved = (not self.store.remote) and recording_stop.make_reserve(self.path)
        self.files: dict[str, RecordFile] = {}
        self.segments: dict[str, int] = {}
        self.in_segment: dict[str, int] = {}
        # The parts of closed segments (a bucket), by (stream, segment).
        self._parts: dict[tuple[str, int], list[str]] = {}
        for stream in fmt.STREAMS:
            self.open_segment(stream, 0)

    def segment_path(self, stream: str, segment: int) -> str:
        return self.store.join(self.path, fmt.segment_filename(stream, segment))

    def open_segment(self, stream: str, segment: int) -> None:
        """Make ``segment`` the stream's open one, its header buffered."""
        header: dict[str, Any] = {
            KIND_KEY: HeaderRecord.KIND,
            HeaderRecord.FORMAT: fmt.FORMAT_NAME,
            HeaderRecord.VERSION: list(fmt.written_version(self.store.remote)),
            HeaderRecord.STREAM: stream,
            HeaderRecord.RUN: self.run_id,
            HeaderRecord.SEGMENT: segment,
        }
        file = RecordFile(self.segment_path(stream, segment), header, self.store)
        if stream == fmt.STREAM_EXECUTIONS and isinstance(file.sink, SegmentParts):
            file.sink.before_put = self._put_traces
        self.files[stream] = file
        self.segments[stream] = segment
        self.in_segment[stream] = 0

    def _put_traces(self) -> None:
        """Before a part of executions is put: put the graph traces buffered and held,
        so that the calls never come out ahead of traces the writer had before them
        (for a reader following the run, and in a run killed between the two puts).

        Raises:
            OSError: A write failed.
        """
        traces = self.files[fmt.STREAM_GRAPH_TRACES]
        if not traces.untouched:  # a part of a header alone: one more object to read
            traces.flush()

    def open_next_later(self, stream: str) -> RecordFile:
        """Open the stream's next segment, writing nothing (a circular buffer's
        rotation, `SegmentRotation.rotate`); return the segment it closes, still holding
        what it buffers, for `close_segment` at the next flush (or dropping)."""
        closed = self.files[stream]
        self.open_segment(stream, self.segments[stream] + 1)
        return closed

    def close_segment(self, stream: str, segment: int, file: RecordFile) -> None:
        """Write what a segment `open_next_later` closed still buffers, and close it.

        Raises:
            OSError: A write failed.
        """
        file.close()
        if isinstance(file.sink, SegmentParts):
            self._parts[(stream, segment)] = file.sink.names

    def delete_segment(self, stream: str, segment: int) -> None:
        """Delete a closed segment (its file, or its parts).

        Raises:
            OSError: A delete failed.
        """
        path = self.segment_path(stream, segment)
        if not self.store.remote:
            if os.path.exists(path):
                os.remove(path)
            return
        for part in self._parts.pop((stream, segment), []):
            self.store.remove(part)

    @property
    def progress_path(self) -> str:
        return self.store.join(self.path, fmt.PROGRESS_FILENAME)

    def write_progress(self, record: dict[str, Any]) -> None:
        """Replace the run's progress file with ``record`` (docs/format.md, "The
        progress file").

        Raises:
            OSError: The write failed.
        """
        self.store.replace(self.progress_path, msgpack.packb(record, use_bin_type=True))

    def release_reserve(self) -> None:
        if self.reserved:
            recording_stop.release_reserve(self.path)
