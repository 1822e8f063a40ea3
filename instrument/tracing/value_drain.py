"""FULL_TENSOR values out of the trace queue: many batches a dequeue, handed to the
writer uncut.

Each queue element is one packed batch of values (instrument/tracing/value_batches.py):
a segment's tensors, or a loop body's each iteration. A loop of small tensors makes
dozens of elements a step, and an eager dequeue of each (with the host's work per
element after it) cost more than the values. The queue is a ``PaddingFIFOQueue``, so
that one ``QueueDequeueManyV2`` takes every element waiting: it pads each component
to the longest, and `PackedBatch` cuts each element back by its count. The padded copy
is bounded by `DRAIN_BYTES`: the drain takes as many elements as fit at the largest
batch built so far (its size is known while the graph is built), and one at a time,
with the plain dequeue that copies nothing, when a batch is that large or of a size
known only when it runs.

The drained batches reach the sink as one `PackedValues`, which is cut into value
records only when the writer packs it: under a circular buffer most values are dropped
before a flush, and are never cut at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from instrument.dump.value_encoding import COMPRESSION
from instrument.tf_internals.eager_runtime import host_view
from instrument.tracing import value_batches

# The queue's capacity in batches. A training loop can produce values faster than they
# are written: a graph that finds the queue full waits in its enqueue for the drain
# instead of piling values up in memory, so at most this many batches, plus those being
# written, are held between the graph and the dump. The fewer held, the likelier the
# drain finds their values still in the CPU's cache: on the benchmark (8.1 MB a step)
# FULL_TENSOR's overhead was 1.3 times TensorFlow's dumper's at 16 batches, 0.98 at 4,
# 0.94 at 2 (where a while loop of one batch an iteration waited for the drain more
# often); at 64 the held batches were fresh memory, page-faulted in (2.1-3.1).
QUEUE_CAPACITY = 4
# Bytes a dequeue of several batches may pad them to (their number times the largest
# batch built so far): bounds the scratch copy a dequeue makes. An LSTM's loop batches
# are 8-350 KB; a convolutional network's step is one 74 MB batch, taken alone.
DRAIN_BYTES = 4 << 20

# The sink of `trace_queue.TraceSink`.
Sink = Callable[[np.ndarray, "np.ndarray | None", Any, "np.ndarray | None", "bool | None"], None]


class ValueDrain:
    """Dequeues FULL_TENSOR batches from a trace queue into its sink.

    Args:
        queue: The trace queue (a ``tf.queue.QueueBase`` over the padding queue).
        lock: The trace queue's lock (`TraceQueue.lock`).
        seeking_alert: Whether the sink still looks for the first alert.
        compress: Whether values may be compressed as they are drained.
    """

    def __init__(
        self,
        queue: Any,
        lock: threading.RLock,
        *,
        seeking_alert: Callable[[], bool],
        compress: bool,
    ) -> None:
        self._queue = queue
        self._lock = lock
        self._seeking_alert = seeking_alert
        self._compress = compress
        # Whether the latest drain found the queue empty (compression).
        self._found_empty = False
        # Bytes of the largest batch built so far; None once one's size is not known
        # while its graph is built.
        self._largest: int | None = 0

    def note_batch(self, tensors: list[Any]) -> None:
        """A batch of ``tensors`` is enqueued by a graph being built."""
        size = value_batches.static_bytes(tensors)
        if size is None or self._largest is None:
            self._largest = None
        else:
            self._largest = max(self._largest, size)

    def drain(self, count: int, sink: Sink) -> int:
        """Dequeue ``count`` batches (those queued now) into ``sink``; return how many
        traces."""
        # Values are compressed only while the drain has time to spare: it found the
        # queue empty at its previous poll and a single batch now (and a core is spare,
        # `COMPRESSION`). Compressing costs far more than the graph's packing: a drain
        # that falls behind makes the graph wait, and it then stores raw until it
        # catches up.
        keeping_up = self._compress and self._found_empty and count == 1
        self._found_empty = count == 0
        per_dequeue = 1 if not self._largest else max(1, DRAIN_BYTES // self._largest)
        drained = 0
        while count > 0:
            take = min(count, per_dequeue)
            drained += self._drain_batches(take, sink, compress=keeping_up)
            count -= take
        return drained

    def _drain_batches(self, take: int, sink: Sink, *, compress: bool) -> int:
        """Dequeue ``take`` batches into ``sink`` in one call; return how many traces."""
        with self._lock:
            if take == 1:
                *components, ordinal = self._queue.dequeue()
                # In place: a copy of megabytes a step costs the training's CPU.
                arrays = [host_view(component) for component in components]
                batches = [value_batches.PackedBatch(arrays)]
                ordinals = [int(ordinal.numpy())]
            else:
                *components, ordinal = self._queue.dequeue_many(take)
                arrays = [host_view(component) for component in components]
                batches = [
                    value_batches.PackedBatch([array[i] for array in arrays]) for i in range(take)
                ]
                ordinals = host_view(ordinal).tolist()
        # The slow part (looking at the values, compressing them) holds no lock the
        # training thread takes: it only competes with it for CPU.
        trace_points = (
            batches[0].trace_points
            if take == 1
            else np.concatenate([b.trace_points for b in batches])
        )
        values: Any = value_batches.PackedValues.of(batches)
        # Looked at here, off the batches' bytes, while the sink still wants to know.
        # Where batches of several calls hold NaN or infinity, the sink looks again at
        # each call's values (None), to find the first.
        alert = None
        if self._seeking_alert():
            found = values.holds_nonfinite()
            alert = None if found and len(set(ordinals)) > 1 else found
        if compress:
            values = compress_values(list(values))
        ordinal_of_each = np.repeat(np.asarray(ordinals, dtype=np.int64), [len(b) for b in batches])
        with self._lock:
            sink(trace_points, None, values, ordinal_of_each, alert)
        return len(trace_points)


def compress_values(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """FULL_TENSOR values compressed if a core is spare (`COMPRESSION`). The sink
    cannot look inside compressed values: a caller that may compress them looks for
    NaN and infinity first, while the sink still wants to know."""
    return COMPRESSION.encode_all(values) if COMPRESSION.core_is_spare() else values
