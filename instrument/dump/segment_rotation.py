"""Which segments a circular buffer keeps: rotation at the flush (what rotates out
before it is never written), and the first alert's window pinned through
`flight_recorder`.

Under ``circular_buffer_size`` N > 0, a rotating stream's open segment is closed once it
holds N records and the one before the segment just closed is dropped, so the latest N
(at least) stay on disk; while the first alert's window is pinned
(`instrument.dump.flight_recorder`), the open segment grows until the alert's step is
over. Rotation waits for the flush: a closed segment keeps what it buffers until the
next flush writes it, and a segment dropped before then is never written at all.
`DumpWriter` calls this under its lock; `RunFiles` opens, closes and deletes the files.
"""

from __future__ import annotations

from typing import Any

from instrument.dump.flight_recorder import FirstAlert, FlightRecorder
from instrument.dump.run_files import RunFiles
from reader import format as fmt


class SegmentRotation:
    """One run's rotating streams under a circular buffer of ``buffer_size`` (N <= 0:
    nothing rotates, every segment is kept).

    Attributes:
        buffer_size: The circular buffer's N.
    """

    def __init__(self, run: RunFiles, buffer_size: int) -> None:
        self._run = run
        self.buffer_size = buffer_size
        self._recorder = FlightRecorder(buffer_size)
        self._stopped = False
        # Segments closed since the last flush, with what they still buffer, and the
        # segments on disk that rotation dropped, deleted once their successors are
        # written.
        self._closed: dict[str, list[tuple[int, Any]]] = {s: [] for s in fmt.ROTATING_STREAMS}
        self._dropped: dict[str, list[int]] = {s: [] for s in fmt.ROTATING_STREAMS}

    @property
    def first_alert(self) -> FirstAlert | None:
        """The first record written that held NaN or infinity, or None."""
        return self._recorder.first_alert

    def rotates(self, stream: str) -> bool:
        """Whether ``stream`` is written through `write` (a rotating stream)."""
        return stream in self._closed

    def bounds(self, stream: str) -> bool:
        """Whether rotation bounds what ``stream`` buffers (a circular buffer's stream):
        it then flushes at the interval only, not by size, and what rotation drops in
        between is never written."""
        return self.buffer_size > 0 and stream in self._closed

    def note_alert(self, stream: str, index: int, step: int) -> None:
        """A record about to be written holds NaN or infinity: pin the first one's window."""
        segments = {s: self._run.segments[s] for s in fmt.ROTATING_STREAMS}
        self._recorder.alert(stream, index, step, segments)

    def due_before(self, stream: str, step: int) -> bool:
        """Whether ``stream`` must rotate before records of ``step`` are written (the
        pinned window ends before them)."""
        return self._recorder.before_write(stream, step, self._run.segments[stream])

    def count(self, stream: str, count: int, step: int) -> bool:
        """Count ``count`` records of ``step`` into the open segment; True when the
        stream must rotate now (the segment holds N, or the pinned window is over)."""
        in_segment = self._run.in_segment
        in_segment[stream] += count
        if self.buffer_size <= 0 or self._stopped:
            return False
        if self._recorder.is_pinning(stream):
            return self._recorder.ends_after(stream, step, in_segment[stream])
        return in_segment[stream] >= self.buffer_size

    def rotate(self, stream: str) -> None:
        """Close the open segment, open the next, drop the one before the closed one.

        Nothing is written here: the closed segment keeps what it buffers until the
        next flush, and a segment dropped before then is never written at all (under
        a circular buffer most of a fast loop's records are dropped within the flush
        interval; writing them cost FULL_TENSOR more than the values' capture). The
        disk keeps what the last flush left until the next one writes the successors
        (`write`), so a kill loses no more than before.
        """
        self._recorder.close_window(stream)
        if self._stopped:
            return
        closed = self._closed[stream]
        closed.append((self._run.segments[stream], self._run.open_next_later(stream)))
        # Keep the segment just filled (at least N records) and the new one.
        stale = self._run.segments[stream] - 2
        if stale < 0 or not self._recorder.may_delete(stream, stale):
            return
        for position, (number, file) in enumerate(closed):
            if number == stale:
                del closed[position]
                file.close(flush=False)
                break
        self._dropped[stream].append(stale)

    def write(self, stream: str, *, sync: bool, hold: bool = False) -> None:
        """Flush a rotating stream: the segments closed since the last flush, then the
        open one, then delete the segments rotation dropped (their successors are
        written first, so the latest N records are on disk at every moment). With
        ``hold`` a bucket's open one may keep its records for a later part
        (`SegmentParts.write`), outside a circular buffer only.

        Raises:
            OSError: A write or a deletion failed.
        """
        closed = self._closed[stream]
        while closed:
            number, file = closed[0]
            self._run.close_segment(stream, number, file)
            del closed[0]
        self._run.files[stream].flush(sync=sync, hold=hold and not self.bounds(stream))
        dropped = self._dropped[stream]
        while dropped:
            self._run.delete_segment(stream, dropped[0])
            del dropped[0]

    def discard(self) -> None:
        """A write failed and recording stopped: drop what closed segments buffer, and
        rotate no more."""
        self._stopped = True
        for closed in self._closed.values():
            for _, file in closed:
                file.close(flush=False)
            closed.clear()
