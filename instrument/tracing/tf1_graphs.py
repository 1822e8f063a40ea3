"""Traces in TF1 graphs (``tf.compat.v1.Session``): through the host buffer, kept alive.

A TF1 graph runs only what a fetch needs, and it cannot capture the eager trace queue.
So each traced tensor gets a ``numpy_function`` that appends to the host buffer
(`host_trace_buffer.HostTraceBuffer`), and the op's output is replaced by an identity that
depends on that trace: whatever reads the output runs the trace first. A
Placeholder's output cannot be replaced (it must stay feedable): its consumers are
made to wait for its trace instead (``Operation._add_control_input``, one of
`tf_internals`' private APIs; without it, feeds are not traced and a notice says so).
"""

from __future__ import annotations

from typing import Any

from tensorflow.python.framework import ops
from tensorflow.python.ops import array_ops

from instrument.notices import NoticeBoard
from instrument.tf_internals import graph_edits
from instrument.tracing.host_trace_buffer import HostTraceBuffer
from reader import format as fmt

PLACEHOLDER_OPS = ("Placeholder", "PlaceholderWithDefault")


class Tf1Traces:
    """The trace ops of one run's TF1 graphs.

    Args:
        host_traces: Where the ``numpy_function`` ops hand their rows.
        notices: The run's notices.
    """

    def __init__(self, host_traces: HostTraceBuffer, notices: NoticeBoard) -> None:
        self.host_traces = host_traces
        self._notices = notices
        # The debugger's identity tensor name -> the original tensor's name: ops record
        # their inputs by the original names.
        self.aliases: dict[str, str] = {}
        self._placeholder_traces: dict[tuple[int, str], Any] = {}

    def wait_for_placeholder_traces(self, graph: Any, inputs: Any, op: Any) -> None:
        """Make a new op that reads a traced Placeholder wait for its trace."""
        if op is None or not self._placeholder_traces:
            return
        for tensor in inputs:
            trace_op = self._placeholder_traces.get((id(graph), tensor.name))
            if trace_op is not None:
                graph_edits.add_control_input(op, trace_op)

    def instrument(
        self, op_type: str, outputs: tuple[Any, ...], trace_points: dict[int, int]
    ) -> list[Any] | None:
        """Trace the outputs of ``trace_points`` (slot -> trace point); returns the
        replaced outputs (the op callback's answer), or None to keep them."""
        if op_type in PLACEHOLDER_OPS and not graph_edits.can_add_control_input():
            # Fallback: nothing could make the consumers wait for the trace.
            self._notices.once(
                (fmt.NOTICE_TF1_UNTRACED, "placeholders"),
                fmt.NOTICE_TF1_UNTRACED,
                "this TensorFlow lacks Operation._add_control_input: the feeds "
                "(placeholders) of TF1 graphs are not traced; the ops that read them are",
                tensor=outputs[0].name,
            )
            return None
        replaced = list(outputs)
        for slot, trace_point in trace_points.items():
            tensor = outputs[slot]
            trace_op = self.host_traces.add_trace(tensor, trace_point)
            if op_type in PLACEHOLDER_OPS:
                self._placeholder_traces[(id(tensor.graph), tensor.name)] = trace_op
                continue
            with ops.control_dependencies([trace_op]):
                identity = array_ops.identity(tensor, name="tfdbg_tui_identity")
            self.aliases[identity.name] = tensor.name
            replaced[slot] = identity
        return replaced
