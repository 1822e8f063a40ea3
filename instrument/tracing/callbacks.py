"""The op callback: records eager executions, graph op creations and their trace points.

TensorFlow calls `DumpingCallback.__call__` (registered with
``op_callbacks.add_op_callback``) after every eager op or function call, with concrete
outputs, and after every op created while a graph is built, with symbolic outputs.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from tensorflow.python.framework import ops

from instrument import summaries
from instrument.dump.value_encoding import tensor_value_record
from instrument.dump.writer import DumpWriter
from instrument.non_finite import EagerOpValues, NonFiniteError, first_alert_error
from instrument.notices import NoticeBoard, recheck_settings
from instrument.tf_internals import debug_once, eager_runtime, graph_frames
from instrument.tracing import eager_names, xla_traces
from instrument.tracing.call_steps import CallSteps
from instrument.tracing.graph_batches import GraphBatch, is_traced_by_tf_function
from instrument.tracing.graph_registry import GraphRegistry
from instrument.tracing.host_trace_buffer import HostTraceBuffer
from instrument.tracing.keras_layers import calling_layer_path
from instrument.tracing.own_resources import OwnResources
from instrument.tracing.session_runs import session_run_op_type
from instrument.tracing.stacks import StackRecorder
from instrument.tracing.tf1_graphs import PLACEHOLDER_OPS, Tf1Traces
from instrument.tracing.trace_queue import DRAINER, TraceQueue
from reader import format as fmt

# Name prefixes of the runtime functions an eager call of a tf.function executes.
FUNCTION_PREFIXES = fmt.FUNCTION_PREFIXES

# Ops whose outputs are not traced (their creation is still recorded):
# - control flow and calls: their outputs are the outputs of ops inside their bodies,
#   which are traced where they are computed;
# - Identity: TensorFlow creates the Identity ops that return a function's outputs
#   with a control dependency on every stateful op of the function, the trace
#   enqueues included; tracing them would close a cycle;
# - TF1 control-flow primitives, which must stay in their frames.
UNTRACED_OPS = frozenset(
    {
        "Identity",
        "IdentityN",
        "NoOp",
        "If",
        "StatelessIf",
        "While",
        "StatelessWhile",
        "Case",
        "StatelessCase",
        "PartitionedCall",
        "StatefulPartitionedCall",
        "RemoteCall",
        "Enter",
        "Exit",
        "Merge",
        "Switch",
        "NextIteration",
        "LoopCond",
        "RefEnter",
        "RefExit",
        "RefMerge",
        "RefSwitch",
        "RefNextIteration",
        "DestroyResourceOp",
    }
)
# Ops whose eager executions are not recorded: the queue and summary ops this package
# runs itself (already excluded by the reentrancy guard; listed for other threads).
UNRECORDED_EAGER_OPS = frozenset(
    {"DebugNumericSummaryV2", "QueueSizeV2", "QueueDequeueManyV2", "DestroyResourceOp"}
)


# DataType enum of a resource handle (a variable's).
_DT_RESOURCE = 20


def _variable_of(graph: Any, inputs: Any) -> str | None:
    """The variable an op reads or writes through its first input, when that input is
    a function graph's capture of a variable's handle."""
    if not inputs:
        return None
    handle = inputs[0]
    dtype = getattr(handle, "dtype", None)
    if dtype is None or dtype.as_datatype_enum != _DT_RESOURCE or handle.op.type != "Placeholder":
        return None
    return graph_frames.captured_variable_name(graph, handle)


class DumpingCallback:
    """Writes one run: the op callback, the concrete-function hook and the trace route.

    Args:
        writer: The run's dump writer.
        mode: The tensor debug mode.
        tensor_filter: Which tensors are traced and summarised.
        snapshot_library_sources: Passed on to `StackRecorder`.
        stop_on_alert: Raise `NonFiniteError` from the first eager execution or
            function call that ends after the first NaN or infinity was recorded.
        on_alert: Called with that error instead of raising it (``on_alert="pdb"``),
            and with the values of the eager op that made it (None after a function
            call); the program runs on when it returns.
    """

    def __init__(
        self,
        writer: DumpWriter,
        mode: str,
        tensor_filter: summaries.TensorFilter,
        *,
        snapshot_library_sources: bool = False,
        stop_on_alert: bool = False,
        on_alert: Callable[[NonFiniteError, EagerOpValues | None], None] | None = None,
    ) -> None:
        if stop_on_alert and not writer.watches_alerts:
            raise ValueError("stop_on_alert needs a dump writer that watches alerts")
        self.writer = writer
        self.mode = mode
        # Cleared once the error is raised: a program that catches it runs on, recorded.
        self._stop_on_alert = stop_on_alert
        self._on_alert = on_alert
        self._filter = tensor_filter
        self._stacks = StackRecorder(writer, snapshot_library_sources=snapshot_library_sources)
        self._guard = threading.local()  # .busy: this thread runs our own TF ops
        self._lock = threading.RLock()
        self.graphs = GraphRegistry(writer)
        self._next_trace_point = 0
        # Function-input placeholders of graphs being built, traced at the graph's next
        # op: TensorFlow creates them before it starts collecting the graph's stateful
        # ops, so an enqueue built right away would be pruned.
        self._pending_inputs: weakref.WeakKeyDictionary[Any, list[tuple[Any, int]]] = (
            weakref.WeakKeyDictionary()
        )
        # tf.function graphs whose traces are enqueued in batches (None: per tensor).
        self._batches: weakref.WeakKeyDictionary[Any, GraphBatch | None] = (
            weakref.WeakKeyDictionary()
        )
        self.closed = False
        self.steps = CallSteps(writer)
        # Calls made so far of each function (`fmt.step_function_name`).
        self._calls_of: dict[str, int] = {}
        self.trace_queue: TraceQueue | None = None

        def seeking_alert() -> bool:
            return writer.seeking_alert

        # The dumper's own resources, made when first needed (the trace queue's when a
        # graph first traces a tensor), kept out of what is recorded.
        self.own = OwnResources()
        if ops.executing_eagerly_outside_functions():
            self.trace_queue = TraceQueue(
                mode,
                self.steps.write_traces,
                seeking_alert=seeking_alert,
                compress=not writer.stores_values_raw,
                on_handle=self.own.add,
                unrecorded=self._busy,
            )
            DRAINER.register(self.trace_queue)
        self.host_traces = HostTraceBuffer(
            mode, self.steps.write_traces, seeking_alert=seeking_alert
        )
        DRAINER.register(self.host_traces)
        self.notices = NoticeBoard(writer)
        self.tf1 = Tf1Traces(self.host_traces, self.notices)
        self.enabling_thread = threading.current_thread()
        # Tensors inside XLA-compiled graphs (instrument/tracing/xla_traces.py).
        self.xla_pool = (
            xla_traces.XlaTracePool(mode, self.trace_queue, on_block=self.own.add)
            if self.trace_queue is not None and xla_traces.supports(mode)
            else None
        )
        self._calls_seen = False

    # -- lifecycle --------------------------------------------------------------------

    def close(self) -> None:
        """Drain every pending trace, close the run, and let old graphs run on harmlessly."""
        self.closed = True
        with self._busy():
            for source in (self.trace_queue, self.host_traces):
                if source is not None:
                    # The drain's locks order concurrent drains; one that runs between
                    # these two calls still writes into the open run.
                    source.drain()
                    source.retire()
        self.writer.close()

    def _busy(self) -> _Busy:
        return _Busy(self._guard)

    def _queue(self) -> TraceQueue:
        """The trace queue, which graphs rooted in eager execution trace into."""
        assert self.trace_queue is not None, "the queue is made when enabled eagerly"
        return self.trace_queue

    # -- functions and graph batches ---------------------------------------------------

    def on_concrete_function(self, function: Any) -> None:
        """Learn the runtime name eager calls of a new ConcreteFunction will carry."""
        name = function.name.decode() if isinstance(function.name, bytes) else function.name
        self.graphs.learn_function_name(name, function.graph)

    def on_function_made(self, name: str, graph: Any) -> None:
        """TensorFlow made runtime function ``name`` of FuncGraph ``graph``.

        Called (through `graph_frames.install_function_hook`) for every function,
        including the ``__forward_*`` and ``__backward_*`` pairs made when a
        ``GradientTape`` records an eager call of a tf.function, which the
        concrete-function hook never sees.
        """
        if self.closed:
            return
        batch = self._batches.get(graph)
        if batch is not None and not batch.finished:
            # The transform hook should have finished it: enqueue the last segment
            # before the graph becomes a function, or its traces would be lost.
            debug_once(
                "late_finish",
                "tfdbg-tui: a tf.function graph was made a function before the transform hook ran",
            )
            self.on_func_graph_traced(graph)
        if name.startswith(FUNCTION_PREFIXES):
            self.graphs.learn_function_name(name, graph)

    def on_func_graph_traced(self, graph: Any) -> None:
        """TensorFlow's hook after a tf.function graph is traced (or a control-flow body
        built): enqueue its last segment."""
        batch = self._batches.get(graph)
        if batch is not None and not self.closed:
            with self._busy():
                batch.finish()

    def _graph_batch(self, graph: Any) -> GraphBatch | None:
        if graph in self._batches:
            batch = self._batches[graph]
            # Ops added to a graph after its trace was finished are traced one by one.
            return batch if batch is not None and not batch.finished else None
        batch = None
        if is_traced_by_tf_function(graph):
            batch = GraphBatch(graph, self._queue())
        elif graph_frames.is_control_flow_body(graph):
            batch = GraphBatch(graph, self._queue(), body=True)
        self._batches[graph] = batch
        return batch

    # -- the op callback ------------------------------------------------------------------

    def __call__(
        self,
        op_type: str,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: str | None = None,
        graph: Any = None,
    ) -> Any:
        if self.closed or getattr(self._guard, "busy", False):
            return None
        if isinstance(op_type, bytes):
            # Ops run through `execute.execute` with a bytes name (Keras' orthogonal
            # initializer's Qr, for one) reach the callback so.
            op_type = op_type.decode("utf-8", errors="replace")
        if graph is None:
            names = (
                eager_names.names_of(op_type, inputs, attrs, op_name)
                if op_type in fmt.NAMING_OPS
                else None
            )
            self._on_eager_execution(op_type, inputs, outputs, names)
            return None
        return self._on_graph_op(op_type, inputs, outputs, op_name, graph)

    def _on_eager_execution(
        self, op_type: str, inputs: Any, outputs: Any, names: list[str] | None = None
    ) -> None:
        if op_type in UNRECORDED_EAGER_OPS:
            return
        outputs = outputs or ()
        is_call = op_type.startswith(FUNCTION_PREFIXES)
        graph_id = self.graphs.function_graph_id(op_type) if is_call else None
        call_ordinal = None
        function_name = fmt.step_function_name(op_type) if is_call else None
        if function_name is not None:
            call_ordinal = self._calls_of.get(function_name, 0)
            self._calls_of[function_name] = call_ordinal + 1
        if is_call:
            self._check_call(op_type, graph_id, function_name)
        thread = threading.current_thread()
        if thread is not self.enabling_thread:
            self.notices.once(
                (fmt.NOTICE_THREAD, thread.name),
                fmt.NOTICE_THREAD,
                f"TensorFlow work in Python thread {thread.name!r} is recorded; its "
                "executions name the thread",
                level=fmt.NOTICE_INFO,
                thread=thread.name,
            )
        stack_id = self._stacks.capture()
        with self._busy():
            summary_rows = values = None
            if self.mode in summaries.SUMMARY_MODES:
                summary_rows = [self._eager_summary(op_type, t) for t in outputs]
            elif self.mode == fmt.FULL_TENSOR:
                values = [
                    tensor_value_record(t.numpy()) if self._traced(op_type, t.dtype) else None
                    for t in outputs
                ]
            device_ids = [self.graphs.device_id(t.device) for t in outputs]
            # The record, written below (checked against `add_execution`'s arguments).
            add_execution = functools.partial(
                self.writer.add_execution,
                op_type=op_type,
                graph_id=graph_id,
                input_ids=[
                    eager_runtime.tensor_id(t)
                    for t in (self.own.program_inputs(inputs) if is_call else inputs)
                ],
                output_ids=[eager_runtime.tensor_id(t) for t in outputs],
                device_ids=device_ids,
                output_dtypes=[t.dtype.as_datatype_enum for t in outputs],
                stack_id=stack_id,
                summaries=summary_rows,
                values=values,
                call_ordinal=call_ordinal,
                thread=None if thread is self.enabling_thread else thread.name,
                names=names,
            )
            if is_call and self.trace_queue is not None:
                # The call's traces carry its ordinal; map it to the call's index. The
                # queue's lock keeps a concurrent drain from seeing one without the other.
                with self.trace_queue.lock:
                    index = add_execution()
                    ordinal = self.steps.add_call(index)
                    self.trace_queue.call_finished()
                if self.xla_pool is not None and len(self.xla_pool):
                    self._collect_xla_traces(self.xla_pool, ordinal, index)
            else:
                index = add_execution()
            if self._stop_on_alert:
                held = None if is_call else (index, inputs, outputs)
                self._stop_if_alerted(is_call, held)

    def on_session_run(self, session: Any, fetches: Any) -> None:
        """A TF1 ``Session.run`` ended (instrument/tracing/session_runs.py): write the traces it
        handed over, then record it as a call of its graph."""
        if self.closed:
            return
        with self._busy():
            self.host_traces.drain()
            op_type = session_run_op_type(fetches, self.tf1.aliases)
            call_ordinal = self._calls_of.get(op_type, 0)
            self._calls_of[op_type] = call_ordinal + 1
            thread = threading.current_thread()
            self.writer.add_execution(
                op_type=op_type,
                graph_id=self.graphs.graph_id(session.graph),
                input_ids=[],
                output_ids=[],
                device_ids=[],
                output_dtypes=[],
                summaries=[] if self.mode in summaries.SUMMARY_MODES else None,
                values=[] if self.mode == fmt.FULL_TENSOR else None,
                stack_id=self._stacks.capture(),
                call_ordinal=call_ordinal,
                thread=None if thread is self.enabling_thread else thread.name,
            )

    def _check_call(self, op_type: str, graph_id: int | None, function_name: str | None) -> None:
        """Notices about an eager function call: settings changed since enable (at the
        first call), a function traced before enable (blind inside)."""
        if not self._calls_seen:
            self._calls_seen = True
            recheck_settings(self.notices)
        if graph_id is None and function_name is not None:
            self.notices.once(
                (fmt.NOTICE_TRACED_BEFORE_ENABLE, function_name),
                fmt.NOTICE_TRACED_BEFORE_ENABLE,
                f"{function_name} was traced before enable_dump_debug_info: its calls are "
                "recorded, the tensors inside are not; enable before its first call",
                function=function_name,
                runtime_name=op_type,
            )

    def _collect_xla_traces(self, pool: xla_traces.XlaTracePool, ordinal: int, index: int) -> None:
        """Write the traces XLA-compiled code left in the pool during call ``index``."""
        collected = pool.collect(ordinal)
        if collected is not None:
            trace_points, rows = collected
            self.writer.add_traces(trace_points, summaries=rows, step=index)

    def _stop_if_alerted(self, is_call: bool, held: tuple[int, Any, Any] | None = None) -> None:
        """Raise `NonFiniteError` once a NaN or infinity is recorded (``stop_on_alert``).

        After a function call its traces are drained at once (not in the background,
        half a second later), so the step that made the first non-finite value is
        the last one run.
        """
        if is_call and self.trace_queue is not None:
            self.trace_queue.drain()
        if self.writer.first_alert is None:
            return
        self._stop_on_alert = False
        self.writer.flush(sync=True)
        error = first_alert_error(self.writer.path)
        if self._on_alert is None:
            raise error
        values = None
        if held is not None:
            index, inputs, outputs = held
            values = EagerOpValues(index, _numpy_values(inputs), _numpy_values(outputs))
        self._on_alert(error, values)

    def _traced(self, op_type: str, dtype: Any) -> bool:
        return self._filter.op_matches(op_type) and self._filter.dtype_traced(dtype)

    def _eager_summary(self, op_type: str, tensor: Any) -> list[float] | None:
        if not self._traced(op_type, tensor.dtype):
            return None
        return summaries.eager_summary(self.mode, tensor)

    # -- graph construction -------------------------------------------------------------

    def _on_graph_op(
        self, op_type: str, inputs: Any, outputs: Any, op_name: str | None, graph: Any
    ) -> Any:
        outputs = tuple(outputs or ())
        if op_type in PLACEHOLDER_OPS and self.own.is_own_capture(graph, outputs):
            return None
        if op_type in ("Const",) + PLACEHOLDER_OPS and outputs:
            # Their op_name can be None or repeat (e.g. "resource"); the tensor name
            # is unique.
            op_name = outputs[0].name.rsplit(":", 1)[0]
        graph_id = self.graphs.graph_id(graph)
        eager_rooted = graph_frames.eager_rooted()
        if eager_rooted and op_type not in PLACEHOLDER_OPS:
            # Never inside a Placeholder's callback: it may be a capture being made,
            # and our enqueue's own capture of the queue must not nest in it.
            self._trace_pending_inputs(graph)
        in_xla = graph_frames.in_xla_context(graph)
        # An op TensorFlow adds to a graph other than the one being built (while_v2's
        # gradient hoists Shape ops into the finished forward loop body) is recorded
        # but not traced: trace ops there would capture into the wrong graph.
        elsewhere = bool(outputs) and outputs[0].graph is not ops.get_default_graph()
        # A tf.data function's inputs are dataset elements, which can be a whole dataset
        # at every call (Keras' fit on arrays hands them to its `grab_batch` map each
        # step): recorded, not traced; the ops that read them are traced.
        dataset_input = op_type in PLACEHOLDER_OPS and graph_frames.is_dataset_function(graph)
        # Graphs that tf.data runs on another device than our queue's: recorded only.
        remote = graph_frames.is_remote_dataset_function(graph)
        traced_slots: list[int] = []
        if (
            not elsewhere
            and not dataset_input
            and not remote
            and op_type not in UNTRACED_OPS
            and self._filter.op_matches(op_type, op_name)
        ):
            traced_slots = [
                slot for slot, t in enumerate(outputs) if self._filter.dtype_traced(t.dtype)
            ]
        if in_xla and (
            not self._xla_traceable(graph, eager_rooted, bool(traced_slots))
            or xla_traces.in_while_condition(graph)
        ):
            traced_slots = []
        # slot -> trace point, for the traced slots.
        points: dict[int, int] = {}
        with self._lock:
            for slot in traced_slots:
                points[slot] = self._next_trace_point
                self._next_trace_point += 1
        trace_points = [points.get(slot) for slot in range(len(outputs))]
        op = outputs[0].op if outputs else _find_op(graph, op_name)
        device = op.device if op is not None else ""
        self.writer.add_op(
            graph_id=graph_id,
            op_type=op_type,
            op_name=op_name or "",
            inputs=[
                self.tf1.aliases.get(t.name, t.name)
                for t in self.own.program_op_inputs(graph, inputs)
            ],
            num_outputs=len(outputs),
            output_dtypes=[t.dtype.as_datatype_enum for t in outputs],
            device_id=self.graphs.device_id(device) if device else None,
            stack_id=self._stacks.capture(),
            trace_points=trace_points,
            layer=calling_layer_path(),
            variable=_variable_of(graph, inputs),
            constant_nan=op_type == "Const" and _constant_holds_nan(outputs),
        )
        batch = self._graph_batch(graph) if eager_rooted and not in_xla and not remote else None
        if batch is not None and op is not None:
            batch.before_op(op)
        if not eager_rooted:
            self.tf1.wait_for_placeholder_traces(graph, inputs, op)
        if not traced_slots:
            return None
        if batch is not None:
            for slot, point in points.items():
                batch.add(outputs[slot], point)
            return None
        if eager_rooted:
            if op_type in PLACEHOLDER_OPS:
                pending = self._pending_inputs.setdefault(graph, [])
                pending.extend((outputs[slot], point) for slot, point in points.items())
                return None
            for slot, point in points.items():
                self._add_trace(outputs[slot], point)
            return None
        return self.tf1.instrument(op_type, outputs, points)

    def _trace_pending_inputs(self, graph: Any) -> None:
        pending = self._pending_inputs.pop(graph, None)
        if pending:
            for tensor, trace_point in pending:
                self._add_trace(tensor, trace_point)

    def _add_trace(self, tensor: Any, trace_point: int) -> None:
        """Trace one tensor of an eager-rooted graph: through the queue, or the XLA pool."""
        if not graph_frames.in_xla_context(tensor.graph):
            self._queue().add_trace(tensor, trace_point)
            return
        # Only with a pool are XLA-compiled graphs traced (`_xla_traceable`).
        assert self.xla_pool is not None
        with self._busy():  # the pool may create a variable: eager ops of our own
            update = self.xla_pool.add_trace(tensor, trace_point)
        if update is None:
            self.notices.once(
                (fmt.NOTICE_XLA_UNTRACED, "rank"),
                fmt.NOTICE_XLA_UNTRACED,
                f"tensors of unknown rank inside XLA-compiled functions are not traced "
                f"(first: {tensor.name!r})",
                tensor=tensor.name,
            )

    def _xla_traceable(self, graph: Any, eager_rooted: bool, wanted: bool) -> bool:
        """Whether an op of an XLA-compiled graph is traced (`XlaTracePool`); says once
        per function that it is compiled with XLA, and loudly what is not traced."""
        function = xla_traces.function_name(graph)
        traceable = eager_rooted and self.xla_pool is not None
        if traceable:
            self.notices.once(
                (fmt.NOTICE_XLA_TRACED, function),
                fmt.NOTICE_XLA_TRACED,
                f"{function} is compiled with XLA: its tensors are summarised by XLA ops "
                "and read after each call; a tensor computed several times in one call "
                "(a loop body, a function called twice) keeps its last value",
                level=fmt.NOTICE_INFO,
                function=function,
            )
        elif wanted:
            why = (
                f"{self.mode} values cannot be recorded inside XLA"
                if eager_rooted
                else "TF1 graphs cannot be traced inside XLA"
            )
            self.notices.once(
                (fmt.NOTICE_XLA_UNTRACED, function),
                fmt.NOTICE_XLA_UNTRACED,
                f"{function} is compiled with XLA and its tensors are not traced ({why}); "
                "its calls and their outputs are recorded",
                function=function,
            )
        return traceable


class _Busy:
    """Marks this thread as running the debugger's own TensorFlow ops."""

    def __init__(self, guard: threading.local) -> None:
        self._guard = guard
        self._was_busy = False

    def __enter__(self) -> None:
        self._was_busy = getattr(self._guard, "busy", False)
        self._guard.busy = True

    def __exit__(self, *exc_info: object) -> None:
        self._guard.busy = self._was_busy


# Constants larger than this are not read at trace time for a NaN (a table baked into
# the graph); their NaN is then told as any other value's.
CONSTANT_NAN_MAX_ELEMENTS = 1 << 20


def _constant_holds_nan(outputs: tuple[Any, ...]) -> bool:
    """Whether a ``Const`` op's floating value holds a NaN, read from its attribute."""
    from tensorflow.python.framework import tensor_util

    if not outputs or not outputs[0].dtype.is_floating:
        return False
    shape = outputs[0].shape
    if not shape.is_fully_defined() or shape.num_elements() > CONSTANT_NAN_MAX_ELEMENTS:
        return False
    value = tensor_util.constant_value(outputs[0])
    return value is not None and bool(np.isnan(np.asarray(value, dtype=np.float64)).any())


def _numpy_values(tensors: Any) -> list[Any]:
    """Each eager tensor's value as numpy, None for one without (a resource handle, a
    variant)."""
    values = []
    for tensor in tensors or ():
        dtype = getattr(tensor, "dtype", None)
        has_value = (
            dtype is not None
            and dtype.is_numpy_compatible
            and dtype.name not in ("resource", "variant")
        )
        values.append(tensor.numpy() if has_value else None)
    return values


def _find_op(graph: Any, op_name: str | None) -> Any:
    if not op_name:
        return None
    try:
        return graph.get_operation_by_name(op_name)
    except (KeyError, ValueError):
        # Ops created under a name TensorFlow later uniquified are not found by it.
        return None
