"""TF1 graphs' traces: handed to the host by a ``numpy_function`` per traced tensor, buffered.

A ``tf.compat.v1.Session`` graph cannot capture the eager trace queue
(instrument/tracing/trace_queue.py): there each traced tensor gets a
``numpy_function`` that appends its row (or value) to a `HostTraceBuffer`, which the
trace queue's background thread drains with the queues (`trace_queue.TraceDrainer`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from instrument import summaries
from instrument.dump.flight_recorder import values_alert
from instrument.dump.value_encoding import tensor_value_record
from instrument.summaries import summary_ops
from instrument.tracing.trace_queue import TraceSink, discard_traces
from instrument.tracing.value_drain import compress_values
from reader import format as fmt
from reader.contract import ValueMap

# TF1 graphs hand FULL_TENSOR values to a host buffer; past this many bytes the thread
# that hands one over drains the buffer itself.
HOST_BUFFER_MAX_BYTES = 64 << 20


class HostTraceBuffer:
    """Traces handed over by ``numpy_function`` (TF1 graphs), buffered until the next drain.

    Args:
        mode: The tensor debug mode.
        sink: Receives each drained batch.
        seeking_alert: As `trace_queue.TraceQueue`'s.
    """

    def __init__(
        self, mode: str, sink: TraceSink, *, seeking_alert: Callable[[], bool] = lambda: True
    ) -> None:
        self.mode = mode
        self._sink = sink
        self._seeking_alert = seeking_alert
        self.lock = threading.RLock()
        self._drain_lock = threading.Lock()
        self._trace_points: list[int] = []
        self._rows: list[np.ndarray] = []
        self._values: list[dict[str, Any]] = []
        self._value_bytes = 0
        self.polls_while_active = False

    def retire(self) -> None:
        """Discard what arrives from now on (the run is closed)."""
        with self._drain_lock, self.lock:
            self._sink = discard_traces

    def add_trace(self, tensor: Any, trace_point: int) -> Any:
        """Build a ``numpy_function`` that hands ``tensor``'s trace to this buffer;
        return its op."""
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import script_ops

        if self.mode in summaries.SUMMARY_MODES:
            payload = summary_ops.summary_row(self.mode, tensor, trace_point)
        elif self.mode == fmt.FULL_TENSOR:
            payload = tensor
        else:
            with ops.control_dependencies([tensor.op]):
                payload = constant_op.constant(trace_point, dtype=dtypes.int32, name="tfdbg_tui_tp")

        def record(value: np.ndarray) -> np.bool_:
            self._append(trace_point, value)
            return np.bool_(True)

        # `numpy_function`, not `py_func`: the same PyFunc op without TensorFlow's
        # deprecation warning printed into the program's output.
        done = script_ops.numpy_function(
            record, [payload], [dtypes.bool], stateful=True, name="tfdbg_tui_trace"
        )
        return done[0].op

    def _append(self, trace_point: int, value: np.ndarray) -> None:
        with self.lock:
            self._trace_points.append(trace_point)
            if self.mode in summaries.SUMMARY_MODES:
                self._rows.append(np.asarray(value, dtype=np.float64))
            elif self.mode == fmt.FULL_TENSOR:
                # Raw here (the graph waits for this call); compressed by the drain.
                self._values.append(tensor_value_record(value))
                self._value_bytes += len(self._values[-1].get(ValueMap.DATA) or b"")
            overfull = self._value_bytes > HOST_BUFFER_MAX_BYTES
        if overfull:
            # The graph outruns the background drain: this thread waits and helps.
            self.drain()

    def drain(self) -> int:
        """Hand everything buffered to the sink as one batch; return how many traces."""
        with self._drain_lock:
            with self.lock:
                count = len(self._trace_points)
                if count == 0:
                    return 0
                tps = np.asarray(self._trace_points, dtype=np.int32)
                rows = values = None
                if self.mode in summaries.SUMMARY_MODES:
                    rows = summaries.format_rows(self.mode, np.stack(self._rows))
                elif self.mode == fmt.FULL_TENSOR:
                    values = self._values
                self._trace_points, self._rows, self._values = [], [], []
                self._value_bytes = 0
            alert = None
            if values is not None:
                # Looked at before they may be compressed (`compress_values`).
                alert = values_alert(values) if self._seeking_alert() else None
                values = compress_values(values)
            with self.lock:
                self._sink(tps, rows, values, None, alert)
            return count
