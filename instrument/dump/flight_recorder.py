"""The flight recorder: the first alert's window survives the circular buffer.

Under a circular buffer of N the writer keeps the latest N executions and N traces
and deletes older segments. Once weights turn NaN every later step alerts, so the
records of the step where the first non-finite value appeared would rotate out. This
module decides, per rotating stream, which segments the first alert **pins** (never
deleted) and when the pinned window closes (docs/format.md section 7):

- When the first alert is seen (an eager output or a graph trace holding NaN or
  infinity), the segments of its own stream still on disk are pinned: the open one
  and the one before it, which together hold at least the N records that preceded
  the alert. The executions stream is pinned then too. The graph traces of the
  alert's step may reach the writer long after its executions (they are drained from
  TensorFlow every half second, later under load): after an eager alert the traces
  stream is pinned when the first chunk of the alert's step (or a later one) arrives,
  so its window holds that step's traces and the N before them, whatever the delay.
- The open (pinned) segment keeps growing while the alert's step goes on: until an
  execution with an index at or past the step's is written (executions), or until a
  chunk of a later step arrives (graph traces). It then rotates, and rotation resumes
  as before on the segments after it.
- A pinned segment never grows past `PINNED_SEGMENT_LIMIT` times N records, so the
  window stays bounded whatever the step's size.

The step of a record is the execution index of the top-level call it belongs to (an
execution's own index; a trace chunk's ``x``). This module knows nothing of
TensorFlow; the writer calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import ValueMap
from reader.summary_rows import alert_flags, first_alert_row

# A pinned segment holds at most this many times N records (the alert step's records
# past the limit rotate as usual): a step's traces can be many times N.
PINNED_SEGMENT_LIMIT = 4
# Elements `all_finite` reads at a time from a large array: 1 MB of float32, which stays
# in the cache between its min and its max. On a convolutional fit's 74 MB of values a
# step, 3.5 ms of CPU instead of 4.9 for the whole array's two passes.
FINITE_CHUNK = 1 << 18


@dataclass(frozen=True)
class FirstAlert:
    """Where the first non-finite value was seen by the writer.

    Attributes:
        stream: ``"executions"`` (an eager output) or ``"graph_traces"``.
        index: The execution index, or the index of the chunk's first trace.
        step: The execution index of the top-level call it belongs to.
    """

    stream: str
    index: int
    step: int


class FlightRecorder:
    """Pinning state of one run's rotating streams.

    Args:
        buffer_size: The run's circular buffer size N; N <= 0 pins nothing.
    """

    def __init__(self, buffer_size: int) -> None:
        self.buffer_size = buffer_size
        self.first_alert: FirstAlert | None = None
        self.pinned: dict[str, set[int]] = {s: set() for s in fmt.ROTATING_STREAMS}
        # Streams whose open segment is pinned and still taking the alert step's records.
        self._pinning: set[str] = set()
        # Streams to pin when the first record of the alert's step reaches them.
        self._waiting: set[str] = set()

    def alert(
        self, stream: str, index: int, step: int, open_segments: dict[str, int]
    ) -> FirstAlert | None:
        """Note an alert; return it if it is the run's first (its window is pinned)."""
        if self.first_alert is not None:
            return None
        self.first_alert = FirstAlert(stream, index, step)
        if self.buffer_size > 0:
            for name, segment in open_segments.items():
                if name in (stream, fmt.STREAM_EXECUTIONS):
                    self._pin(name, segment)
                else:
                    self._waiting.add(name)
        return self.first_alert

    def _pin(self, stream: str, segment: int) -> None:
        self.pinned[stream].update(s for s in (segment - 1, segment) if s >= 0)
        self._pinning.add(stream)

    def is_pinning(self, stream: str) -> bool:
        """The stream's open segment is pinned and takes the alert step's records."""
        return stream in self._pinning

    def before_write(self, stream: str, step: int, open_segment: int) -> bool:
        """A record of ``step`` is about to be written into ``open_segment``.

        Pins the stream's window if it starts here. Returns whether the open segment
        must rotate first (the pinned window ends before this record).
        """
        first = self.first_alert
        if first is None:
            return False
        if stream in self._waiting and step >= first.step:
            self._waiting.discard(stream)
            self._pin(stream, open_segment)
        return stream == fmt.STREAM_GRAPH_TRACES and stream in self._pinning and step > first.step

    def ends_after(self, stream: str, step: int, in_segment: int) -> bool:
        """A record of ``step`` was written: does the pinned window close now?"""
        if stream not in self._pinning or self.first_alert is None:
            return False
        if in_segment >= PINNED_SEGMENT_LIMIT * self.buffer_size:
            return True
        return stream == fmt.STREAM_EXECUTIONS and step >= self.first_alert.step

    def close_window(self, stream: str) -> None:
        """The stream's pinned segment is closed: rotation resumes after it."""
        self._pinning.discard(stream)

    def may_delete(self, stream: str, segment: int) -> bool:
        """Whether rotation may delete ``segment`` of ``stream``."""
        return segment not in self.pinned[stream]


def summaries_alert(
    mode: str | None, rows: Sequence[Sequence[float] | None] | np.ndarray | None
) -> bool:
    """Whether summary rows (one per tensor, None for unsummarised) hold NaN or infinity."""
    if rows is None or mode not in fmt.HEALTH_MODES:
        return False
    if isinstance(rows, np.ndarray):
        return bool(rows.size and alert_flags(mode, rows.reshape(rows.shape[0], -1)).any())
    # An eager execution's few rows: plain Python is cheaper than building an array.
    return first_alert_row(mode, rows) is not None


def values_alert(values: Sequence[Any] | None) -> bool:
    """Whether raw FULL_TENSOR value records (before compression) hold NaN or infinity."""
    if not values:
        return False
    for value in values:
        if not isinstance(value, dict) or value.get(ValueMap.CODEC) is not None:
            continue
        dtype, data = value.get(ValueMap.DTYPE), value.get(ValueMap.DATA)
        if not isinstance(dtype, str) or not data:
            continue
        array_dtype = np.dtype(dtype)
        if array_dtype.kind not in "fc":
            continue
        if not all_finite(np.frombuffer(data, dtype=array_dtype)):
            return True
    return False


def all_finite(array: np.ndarray) -> bool:
    """Whether no element of a float or complex array is NaN or infinite.

    The extremes decide it: numpy's min and max propagate NaN, and an infinity is one
    of them; a complex array is checked as its real and imaginary parts. Two
    vectorised passes with no scratch array cost ~0.75 of ``isfinite`` plus ``all``,
    whose boolean array (megabytes a step) would be mapped and page-faulted in each
    time on a VM. A large array is read a chunk at a time (`FINITE_CHUNK`).
    """
    if not array.size:
        return True
    if array.dtype.kind == "c":
        array = np.ascontiguousarray(array).view(array.real.dtype)
    if array.size <= FINITE_CHUNK or not array.flags.c_contiguous:
        return bool(np.isfinite(array.min()) and np.isfinite(array.max()))
    # Both passes over a cache-sized chunk: a large array is read from memory once.
    flat = array.reshape(-1)
    for start in range(0, flat.size, FINITE_CHUNK):
        chunk = flat[start : start + FINITE_CHUNK]
        if not (np.isfinite(chunk.min()) and np.isfinite(chunk.max())):
            return False
    return True
