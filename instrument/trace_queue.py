"""Graph execution traces: from inside TensorFlow graphs to the dump, in batches.

The route (docs/instrument.md, "How graph traces reach the dump"): for each traced
tensor, the graph gets a ``DebugNumericSummaryV2`` on the tensor's device and a
``QueueEnqueueV2`` into one ``FIFOQueue`` that was created eagerly and is captured by
every function graph. The enqueue is stateful, so TensorFlow's automatic control
dependencies keep it, and, since every enqueue uses the same queue resource, they run
in the order they were created; no Python runs per tensor. The host drains the queue
in batches (``QueueSizeV2`` then ``QueueDequeueManyV2``): synchronously after every
eager function call, and every `DRAIN_INTERVAL_S` from a background thread for traces
computed outside calls (tf.data pipelines). Each drained batch becomes one ``traces``
chunk.

TF1 graphs (``tf.compat.v1.Session``) cannot capture an eager queue: there a
``py_func`` per traced tensor appends to a host-side buffer instead
(`HostTraceBuffer`), which the same background thread flushes.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from instrument import summaries
from instrument.writer import tensor_value_record
from reader import format as fmt

logger = logging.getLogger(__name__)

# Period of the background drain. Like the writer's flush interval it bounds how stale
# a live view is and what a SIGKILL loses of traces computed outside function calls.
DRAIN_INTERVAL_S = 0.5
# Queue capacity in traces. A graph that fills it waits in its enqueue until the next
# background drain; this bounds the memory held inside TensorFlow.
QUEUE_CAPACITY = 1 << 20

# A sink receives one drained batch: trace point ids (int32), summary rows with the
# format's columns (float64) or None, FULL_TENSOR values or None.
TraceSink = Callable[[np.ndarray, "np.ndarray | None", "list[dict[str, Any]] | None"], None]


class TraceQueue:
    """The eager ``FIFOQueue`` that graphs enqueue their traces into.

    Args:
        mode: The tensor debug mode; fixes the queue's components.
        sink: Receives each drained batch.

    Attributes:
        lock: Held while a batch is dequeued and handed to the sink. Holding it while
            writing an execution record keeps traces and executions in order.
    """

    def __init__(self, mode: str, sink: TraceSink) -> None:
        import tensorflow as tf

        self.mode = mode
        self._sink = sink
        self.lock = threading.RLock()
        if mode in summaries.SUMMARY_MODES:
            # One float64 row: the trace point (DebugNumericSummaryV2's tensor id
            # column) followed by the summary.
            component_dtypes, shapes = [tf.float64], [[summaries.RAW_WIDTH[mode]]]
        elif mode == fmt.FULL_TENSOR:
            component_dtypes, shapes = [tf.int32, tf.string], [[], []]
        else:
            component_dtypes, shapes = [tf.int32], [[]]
        with tf.init_scope():
            self._queue = tf.queue.FIFOQueue(
                QUEUE_CAPACITY, component_dtypes, shapes=shapes, name="tfdbg_tui_traces")

    @property
    def batches_supported(self) -> bool:
        """Whether traces of this mode can be batched per graph segment."""
        return self.mode != fmt.FULL_TENSOR

    def retire(self) -> None:
        """From now on drained traces are discarded (their run is closed).

        Functions traced while the run was enabled keep enqueueing into this queue;
        it must still be drained so that they never wait on a full queue.
        """
        with self.lock:
            self._sink = _discard

    def add_trace(self, tensor: Any, trace_point: int) -> Any:
        """Build, in the graph being constructed, the ops that trace ``tensor``.

        Returns:
            The enqueue op.
        """
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import gen_data_flow_ops, gen_debug_ops, gen_parsing_ops

        handle = self._queue.queue_ref
        if self.mode in summaries.SUMMARY_MODES:
            row = gen_debug_ops.debug_numeric_summary_v2(
                tensor, output_dtype=dtypes.float64,
                tensor_debug_mode=summaries.TENSOR_DEBUG_MODE_ENUM[self.mode],
                tensor_id=trace_point, name="tfdbg_tui_summary")
            return gen_data_flow_ops.queue_enqueue_v2(handle, [row], name="tfdbg_tui_trace")
        if self.mode == fmt.FULL_TENSOR:
            serialized = gen_parsing_ops.serialize_tensor(tensor, name="tfdbg_tui_value")
            tp = constant_op.constant(trace_point, dtype=dtypes.int32, name="tfdbg_tui_tp")
            return gen_data_flow_ops.queue_enqueue_v2(
                handle, [tp, serialized], name="tfdbg_tui_trace")
        # NO_TENSOR: only the fact that the tensor was computed, so the enqueue waits
        # for the tensor's op without reading its value.
        with ops.control_dependencies([tensor.op]):
            tp = constant_op.constant(trace_point, dtype=dtypes.int32, name="tfdbg_tui_tp")
            return gen_data_flow_ops.queue_enqueue_v2(handle, [tp], name="tfdbg_tui_trace")

    def batch_row(self, tensor: Any, trace_point: int) -> Any:
        """What a `GraphBatch` collects for one traced tensor."""
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import gen_debug_ops

        if self.mode in summaries.SUMMARY_MODES:
            with ops.control_dependencies(None):
                return gen_debug_ops.debug_numeric_summary_v2(
                    tensor, output_dtype=dtypes.float64,
                    tensor_debug_mode=summaries.TENSOR_DEBUG_MODE_ENUM[self.mode],
                    tensor_id=trace_point, name="tfdbg_tui_summary")
        return (tensor.op, trace_point)

    def enqueue_batch(self, rows: list[Any], after: Any) -> Any:
        """Build one enqueue of a batch of `batch_row` results, run after op ``after``."""
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import array_ops_stack, gen_data_flow_ops

        deps = [after] if after is not None else []
        # control_dependencies(None) first: the batch may be built while TensorFlow
        # holds a control-dependency scope on an op that must run after it.
        if self.mode in summaries.SUMMARY_MODES:
            with ops.control_dependencies(None), ops.control_dependencies(deps):
                batch = array_ops_stack.stack(rows, name="tfdbg_tui_rows")
                return gen_data_flow_ops.queue_enqueue_many_v2(
                    self._queue.queue_ref, [batch], name="tfdbg_tui_traces")
        with ops.control_dependencies(None), \
                ops.control_dependencies(deps + [op for op, _ in rows]):
            tps = constant_op.constant([tp for _, tp in rows], dtype=dtypes.int32,
                                       name="tfdbg_tui_tps")
            return gen_data_flow_ops.queue_enqueue_many_v2(
                self._queue.queue_ref, [tps], name="tfdbg_tui_traces")

    def drain(self) -> int:
        """Dequeue everything queued now, as one batch, into the sink.

        Runs eager ops: a caller with op callbacks must keep them from recording these.

        Returns:
            The number of traces drained.
        """
        with self.lock:
            count = int(self._queue.size().numpy())
            if count == 0:
                return 0
            batch = self._queue.dequeue_many(count)
            if self.mode in summaries.SUMMARY_MODES:
                raw = batch.numpy()
                self._sink(summaries.trace_points_of(raw),
                           summaries.keep_columns(self.mode, raw), None)
            elif self.mode == fmt.FULL_TENSOR:
                tps, serialized = batch
                self._sink(tps.numpy().astype(np.int32), None,
                           [_parse_serialized_tensor(s) for s in serialized.numpy()])
            else:
                self._sink(batch.numpy().astype(np.int32), None, None)
            return count


def _discard(trace_points: np.ndarray, rows: np.ndarray | None,
             values: list[dict[str, Any]] | None) -> None:
    del trace_points, rows, values


def _parse_serialized_tensor(serialized: bytes) -> dict[str, Any]:
    from tensorflow.core.framework import tensor_pb2
    from tensorflow.python.framework import tensor_util

    proto = tensor_pb2.TensorProto.FromString(serialized)
    return tensor_value_record(tensor_util.MakeNdarray(proto))


class HostTraceBuffer:
    """Traces handed over by ``py_func`` (TF1 graphs), buffered until the next drain.

    Args:
        mode: The tensor debug mode.
        sink: Receives each drained batch.
    """

    def __init__(self, mode: str, sink: TraceSink) -> None:
        self.mode = mode
        self._sink = sink
        self.lock = threading.RLock()
        self._trace_points: list[int] = []
        self._rows: list[np.ndarray] = []
        self._values: list[dict[str, Any]] = []

    def retire(self) -> None:
        """Discard what arrives from now on (the run is closed)."""
        with self.lock:
            self._sink = _discard

    def add_trace(self, tensor: Any, trace_point: int) -> Any:
        """Build a ``py_func`` that hands ``tensor``'s trace to this buffer; return its op."""
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import gen_debug_ops, script_ops

        if self.mode in summaries.SUMMARY_MODES:
            payload = gen_debug_ops.debug_numeric_summary_v2(
                tensor, output_dtype=dtypes.float64,
                tensor_debug_mode=summaries.TENSOR_DEBUG_MODE_ENUM[self.mode],
                tensor_id=trace_point, name="tfdbg_tui_summary")
        elif self.mode == fmt.FULL_TENSOR:
            payload = tensor
        else:
            with ops.control_dependencies([tensor.op]):
                payload = constant_op.constant(trace_point, dtype=dtypes.int32,
                                               name="tfdbg_tui_tp")

        def record(value: np.ndarray) -> np.bool_:
            self._append(trace_point, value)
            return np.bool_(True)

        done = script_ops.py_func(record, [payload], [dtypes.bool], stateful=True,
                                  name="tfdbg_tui_trace")
        return done[0].op

    def _append(self, trace_point: int, value: np.ndarray) -> None:
        with self.lock:
            self._trace_points.append(trace_point)
            if self.mode in summaries.SUMMARY_MODES:
                self._rows.append(np.asarray(value, dtype=np.float64))
            elif self.mode == fmt.FULL_TENSOR:
                self._values.append(tensor_value_record(value))

    def drain(self) -> int:
        """Hand everything buffered to the sink as one batch; return how many traces."""
        with self.lock:
            count = len(self._trace_points)
            if count == 0:
                return 0
            tps = np.asarray(self._trace_points, dtype=np.int32)
            rows = values = None
            if self.mode in summaries.SUMMARY_MODES:
                rows = summaries.keep_columns(self.mode, np.stack(self._rows))
            elif self.mode == fmt.FULL_TENSOR:
                values = self._values
            self._trace_points, self._rows, self._values = [], [], []
            self._sink(tps, rows, values)
            return count


class TraceDrainer:
    """A daemon thread that drains trace queues and buffers every `DRAIN_INTERVAL_S`.

    Retired queues stay registered (their sink discards) for as long as something
    refers to them: functions traced under an old run still enqueue into them.
    """

    def __init__(self, interval_s: float = DRAIN_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._sources: weakref.WeakSet[TraceQueue | HostTraceBuffer] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def register(self, source: TraceQueue | HostTraceBuffer, *, keep_alive: bool) -> None:
        """Drain ``source`` periodically; ``keep_alive`` holds a strong reference."""
        with self._lock:
            self._sources.add(source)
            if keep_alive:
                _KEPT_ALIVE.append(source)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tfdbg-tui-trace-drain",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            with self._lock:
                sources = list(self._sources)
            for source in sources:
                try:
                    source.drain()
                except Exception:  # noqa: BLE001 - the thread must survive to keep draining
                    # A failed drain (e.g. the process is shutting TensorFlow down) is
                    # reported; the traces stay queued for the next attempt.
                    logger.exception("tfdbg-tui: draining graph traces failed")


# Retired queues that old function graphs still enqueue into.
_KEPT_ALIVE: list[TraceQueue | HostTraceBuffer] = []

DRAINER = TraceDrainer()
