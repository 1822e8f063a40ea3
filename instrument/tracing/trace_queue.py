"""Graph execution traces: from inside TensorFlow graphs to the dump, in blocks that
carry the call ordinal.

The route (docs/instrument.md, "How graph traces reach the dump"): each traced tensor
gets its summary computed on its own device (instrument/summaries/summary_ops.py), and its row
goes into one ``PaddingFIFOQueue`` that was created eagerly under a run-unique shared
name, in a block with the other rows enqueued together:
top-level function graphs capture its handle, gradient graphs of control flow look it
up by that name (`TraceQueue.handles_for`); no Python runs per tensor.
`TraceQueue.add_trace` builds one enqueue per tensor (tf.data functions, gradient
graphs of eager tapes); `TraceQueue.batch_row` and `enqueue_batch`
serve the per-segment batches of tf.function graphs and control-flow bodies
(instrument/tracing/graph_batches.py). Every block also carries the ordinal
of the eager function call it ran in (instrument/tracing/call_counter.py). A background thread
drains the queue in batches of blocks (``QueueSizeV2`` then ``QueueDequeueManyV2``, which
pads them; the padding is dropped) every `DRAIN_INTERVAL_S` and at exit;
each run of rows with one call ordinal becomes one ``traces`` chunk. FULL_TENSOR values
travel as packed batches, one queue element each (instrument/tracing/value_batches.py), through
a small queue drained while they keep coming, many batches a dequeue
(instrument/tracing/value_drain.py).

TF1 graphs (``tf.compat.v1.Session``) cannot capture an eager queue: there a
``numpy_function`` per traced tensor appends to a host-side buffer instead
(`host_trace_buffer.HostTraceBuffer`), which the same background thread flushes.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from instrument import summaries
from instrument.summaries import summary_ops
from instrument.tf_internals import eager_runtime
from instrument.tracing import value_batches, value_drain
from instrument.tracing.call_counter import CallCounter
from instrument.tracing.value_drain import ValueDrain
from reader import format as fmt

logger = logging.getLogger(__name__)

# Period of the background drain. Like the writer's flush interval it bounds how stale
# a live view is and what a SIGKILL loses of traces computed outside function calls.
DRAIN_INTERVAL_S = 0.5
# Queue capacity in blocks of traces (a segment's batch, or one trace on the per-tensor
# route). A graph that fills it waits in its enqueue until the next background drain;
# this bounds the memory held inside TensorFlow.
QUEUE_CAPACITY = 1 << 20
# A dequeue pads every block it takes to the largest one's rows: the drain takes at
# most this many rows' worth of blocks at a time (the largest block built so far
# times the blocks taken), so a run of one-row blocks next to a segment's batch of
# hundreds pads to a bounded scratch array, not to hundreds of times the rows.
DRAIN_ROW_BUDGET = 1 << 16
# FULL_TENSOR traces are whole tensors, queued in batches in a small queue
# (`value_drain.QUEUE_CAPACITY`) drained every `ACTIVE_POLL_S` while they keep coming.
# A graph fills that queue in well under a millisecond (a loop body's values): the
# drain's first poll after it finds the queue empty comes this soon. At 10 ms a test
# program's 600 loop-body values took 4.1 s of wall time instead of 2.8 s; the CPU per
# step of the benchmark did not change (1.29 of TensorFlow's overhead either way).
ACTIVE_POLL_S = 0.001

# A sink receives one drained batch: trace point ids (int32), summary rows with the
# format's columns (float64) or None, FULL_TENSOR values or None (a sequence of value
# records, `value_batches.PackedValues` from the queue: cut into records when it is
# iterated), the call ordinal of each trace (int64; None from the TF1 host buffer,
# which has no calls), and whether a value held NaN or infinity (None: not inspected
# here; values compressed before they reach the sink are inspected before, as the
# writer cannot look inside).
TraceSink = Callable[
    [
        np.ndarray,
        "np.ndarray | None",
        "Sequence[dict[str, Any]] | None",
        "np.ndarray | None",
        "bool | None",
    ],
    None,
]


class TraceQueue:
    """The eager queue that graphs enqueue their traces into, in blocks.

    Every trace also carries the **call ordinal**: how many eager function calls had
    completed when it was computed, read in the graph from the run's `CallCounter`,
    which `call_finished` advances after each call. The sink maps ordinals to execution
    indices, so drains need not follow each call: the queue's dequeue is an
    asynchronous kernel whose eager dispatch costs more than a small model's step.

    Args:
        mode: The tensor debug mode; fixes the queue's components.
        sink: Receives each drained batch.
        seeking_alert: Whether the sink still looks for the first alert: values to be
            compressed are inspected here first only then (`DumpWriter.seeking_alert`).
        compress: Whether FULL_TENSOR values may be compressed as they are drained
            (False: stored raw, `DumpWriter.stores_values_raw`).

    Attributes:
        lock: Held while a batch is dequeued, and while it is handed to the sink (not
            while FULL_TENSOR values are parsed and compressed in between).
    """

    def __init__(
        self,
        mode: str,
        sink: TraceSink,
        *,
        seeking_alert: Callable[[], bool] = lambda: True,
        compress: bool = True,
        on_handle: Callable[[Any], None] = lambda handle: None,
        unrecorded: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> None:
        import tensorflow as tf

        self.mode = mode
        self._sink = sink
        self.lock = threading.RLock()
        # Serializes drains, so that batches reach the sink in dequeue order.
        self._drain_lock = threading.Lock()
        from tensorflow.python.ops import gen_data_flow_ops

        # Elements are blocks: a batch's rows (or one trace's), how many, and the call
        # ordinal. One element per row cost ~0.3 us a row on each side of the queue.
        if mode in summaries.SUMMARY_MODES:
            # float64 rows, one after the other: the trace point followed by the raw
            # summary. Flat, so that one tensor's row is enqueued as its kernel made it.
            component_dtypes = [tf.float64, tf.int32]
            shapes: list[list[int | None]] = [[None], []]
        elif mode == fmt.FULL_TENSOR:
            # One element per batch of values (instrument/tracing/value_batches.py).
            component_dtypes = value_batches.component_dtypes()
            shapes = value_batches.component_shapes()
        else:
            component_dtypes, shapes = [tf.int32, tf.int32], [[None], []]
        # A dequeue of many blocks pads them to the largest.
        self._make_queue = gen_data_flow_ops.padding_fifo_queue_v2
        # Rows of the largest block built so far (`DRAIN_ROW_BUDGET`).
        self._largest_block = 1

        # The queue and the call counter are created under shared names unique to this
        # run, so that graphs nested in functions (control-flow bodies and their
        # gradients) can look them up by name instead of capturing their handles
        # (`handles_for`). `tf.queue.FIFOQueue` and `tf.Variable` would make them
        # anonymous in eager mode.
        self._unique = f"{os.getpid()}_{uuid.uuid4().hex}"
        full_tensor = mode == fmt.FULL_TENSOR
        self._queue_attrs = dict(
            component_types=component_dtypes + [tf.int64],
            shapes=shapes + [[]],
            capacity=value_drain.QUEUE_CAPACITY if full_tensor else QUEUE_CAPACITY,
            container="",
            shared_name=f"tfdbg_tui_traces_{self._unique}",
        )
        self.polls_while_active = full_tensor
        self._seeking_alert, self._compress = seeking_alert, compress
        self._on_handle = on_handle
        self._unrecorded = unrecorded
        # The queue and the counter are made when first needed (`_made`), not here: an
        # eager op initializes TensorFlow's runtime, after which a program can no longer
        # set its threads or devices (`tf.config.set_logical_device_configuration`,
        # `set_memory_growth`), which programs do first, after an enable at their top
        # or `tfdbg-tui run`'s before them.
        self._resources: _QueueResources | None = None
        self._making = threading.Lock()
        # Per nested graph: the in-graph lookups of the queue and the counter.
        self._lookups: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()
        # Per graph: the call ordinal read its enqueues share (`_ordinal_in`).
        self._ordinals: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def _made(self) -> _QueueResources:
        """The queue, the call counter and the values' drain, made at the first call."""
        made = self._resources
        if made is None:
            with self._making:
                made = self._resources
                if made is None:
                    made = self._resources = self._make()
        return made

    def _make(self) -> _QueueResources:
        import tensorflow as tf

        types, shapes = self._queue_attrs["component_types"], self._queue_attrs["shapes"]
        # Eagerly, also when a graph being built asks first; the dumper's own ops.
        with self._unrecorded(), tf.init_scope():
            queue_ref = self._make_queue(**self._queue_attrs, name="tfdbg_tui_traces")
            queue = tf.queue.QueueBase(types, shapes, None, queue_ref)
            calls = CallCounter(f"tfdbg_tui_calls_{self._unique}")
        for handle in (queue_ref, calls.handle):
            self._on_handle(handle)
        return _QueueResources(
            queue,
            calls,
            queue_ref.device,
            ValueDrain(
                queue, self.lock, seeking_alert=self._seeking_alert, compress=self._compress
            ),
        )

    @property
    def _queue(self) -> Any:
        return self._made().queue

    @property
    def _calls(self) -> CallCounter:
        return self._made().calls

    @property
    def _device(self) -> str:
        return self._made().device

    @property
    def _values(self) -> ValueDrain:
        return self._made().values

    @property
    def handles(self) -> tuple[Any, Any]:
        """The eager handles of the queue and the call counter (graphs capture them)."""
        return self._queue.queue_ref, self._calls.handle

    def call_finished(self) -> None:
        """Advance the call ordinal; run eagerly after each eager function call."""
        self._calls.advance()

    def retire(self) -> None:
        """From now on drained traces are discarded (their run is closed).

        Functions traced while the run was enabled keep enqueueing into this queue;
        it must still be drained so that they never wait on a full queue.
        """
        with self._drain_lock, self.lock:
            self._sink = discard_traces

    def handles_for(self, graph: Any, *, by_name: bool = False) -> tuple[Any, Any]:
        """The queue's and the counter's handles to use in ``graph`` (being built).

        The gradient graph of a ``tf.while_loop`` body or a ``tf.cond`` branch (and
        graphs nested in one) gets its own queue op and ``VarHandleOp`` that
        look the run's queue and counter up by shared name on their device: the
        kernels find the same resources, and the graph captures nothing. There a
        capture of an eager handle breaks TensorFlow's gradient construction
        (while_v2 cannot route it, cond_v2 reads its ``.graph``). So does a graph
        built ``by_name``: one built where a tf.distribute strategy spans several
        local devices (`graph_frames.spans_local_devices`). There a capture would
        make every control-flow and call op that traces a tensor take the queue as
        an input, and TensorFlow's automatic control dependencies would run those
        ops one after another in creation order: one device's collective (an
        Embedding's sparse gradient gathered inside Adam's ``cond``) would then
        wait for its peer on the other device, which waits for it. Other graphs
        capture the eager handles: the control-flow and call ops then take the queue
        as an input, and automatic control dependencies keep the enqueues of the
        enclosing graph in order around them.
        """
        lookups = self._lookups.get(graph)
        if lookups is not None:
            return lookups
        if not by_name and not in_control_flow_gradient(graph):
            return self._queue.queue_ref, self._calls.handle
        return self.look_up_in(graph)

    def look_up_in(self, graph: Any) -> tuple[Any, Any]:
        """Build, in ``graph``, the ops that look the queue and the counter up by their
        shared names; `handles_for` returns them from now on."""
        from tensorflow.python.framework import ops

        # Not colocated with what the graph is building (a variable of another device,
        # under a strategy's update): the lookups find the resources on their device.
        with (
            graph.as_default(),
            ops.control_dependencies(None),
            ops.colocate_with(None, ignore_existing=True),
        ):
            # Each on its own resource's device: made under a strategy's replica, the
            # two may sit on different devices.
            with ops.device(self._device):
                queue = self._make_queue(**self._queue_attrs, name="tfdbg_tui_traces")
            with ops.device(self._calls.handle.device):
                lookups = (queue, self._calls.lookup())
        self._lookups[graph] = lookups
        return lookups

    def capture_in(self, graph: Any, *, by_name: bool = False) -> None:
        """Capture the queue and read the call ordinal in ``graph`` (being built) now
        (or, ``by_name``, look them up: `handles_for`).

        For control-flow bodies, whose enqueues are built after while_v2 or cond_v2 laid
        out the body's inputs from its captures.
        """
        handle, calls_handle = self.handles_for(graph, by_name=by_name)
        if handle is self._queue.queue_ref:
            graph.capture(handle)
        self._ordinal_in(graph, calls_handle)

    def call_ordinal_in(self, graph: Any) -> Any:
        """The call ordinal read in ``graph`` (being built), without touching the queue.

        For graphs that cannot run the queue's ops (XLA-compiled functions): in a
        control-flow gradient graph the counter alone is looked up by name.
        """
        if not in_control_flow_gradient(graph):
            return CallCounter.read(self._calls.handle)
        from tensorflow.python.framework import ops

        with (
            graph.as_default(),
            ops.control_dependencies(None),
            ops.colocate_with(None, ignore_existing=True),
            ops.device(self._calls.handle.device),
        ):
            handle = self._calls.lookup()
        return CallCounter.read(handle)

    def add_trace(self, tensor: Any, trace_point: int) -> Any:
        """Build, in the graph being constructed, the ops that trace ``tensor``.

        Returns:
            The enqueue op.
        """
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import array_ops, gen_data_flow_ops

        handle, calls_handle = self.handles_for(tensor.graph)
        ordinal = self._ordinal_in(tensor.graph, calls_handle)
        if self.mode == fmt.FULL_TENSOR:
            self._values.note_batch([tensor])
            return gen_data_flow_ops.queue_enqueue_v2(
                handle,
                value_batches.pack([tensor], [trace_point]) + [ordinal],
                name="tfdbg_tui_trace",
            )
        one = constant_op.constant(1, dtype=dtypes.int32, name="tfdbg_tui_rows")
        if self.mode in summaries.SUMMARY_MODES:
            summary = summary_ops.tensor_summary(self.mode, tensor, trace_point)
            if summary.check is None and summary.after is None:
                block = summary.row  # the kernel's row (RAW_WIDTH), enqueued as it is
            else:
                block = array_ops.reshape(summary_ops.stack_summaries([summary]), [-1])
            return gen_data_flow_ops.queue_enqueue_v2(
                handle, [block, one, ordinal], name="tfdbg_tui_trace"
            )
        # NO_TENSOR: only the fact that the tensor was computed, so the enqueue waits
        # for the tensor's op without reading its value.
        with ops.control_dependencies([tensor.op]):
            tp = constant_op.constant([trace_point], dtype=dtypes.int32, name="tfdbg_tui_tp")
            return gen_data_flow_ops.queue_enqueue_v2(
                handle, [tp, one, ordinal], name="tfdbg_tui_trace"
            )

    def _ordinal_in(self, graph: Any, calls_handle: Any) -> Any:
        """The call ordinal read once in ``graph`` (being built) for all its enqueues:
        one read a run of the graph (a loop body's iteration), not one per enqueue."""
        ordinal = self._ordinals.get(graph)
        if ordinal is None:
            from tensorflow.python.framework import ops

            # Read on the counter's device, not colocated with the op being built (a
            # replica's, on another device, whose runtime would look the counter up
            # there).
            with (
                graph.as_default(),
                ops.colocate_with(None, ignore_existing=True),
                ops.device(self._calls.handle.device),
            ):
                ordinal = CallCounter.read(calls_handle)
            self._ordinals[graph] = ordinal
        return ordinal

    def batch_row(self, tensor: Any, trace_point: int, *, in_body: bool = False) -> Any:
        """What a `GraphBatch` collects for one traced tensor (``in_body``: of a
        control-flow body, whose rows are each tensor's own kernel's where the kernel is
        cheap, not the batch's stock route)."""
        from tensorflow.python.framework import ops

        if self.mode in summaries.SUMMARY_MODES:
            # In a body CONCISE_HEALTH takes the batch's stock route too: its kernel is
            # a scalar loop, and its stock rows are constants behind one check per
            # iteration (an LSTM's fit: 4.0-4.6 -> 3.1-3.3 ms a step over the plain
            # 2.4); CURT_HEALTH's kernel, a vectorised any-of, costs less there than
            # the batch's checks and cond (2.4 against 3.1).
            batched = not in_body or self.mode == fmt.CONCISE_HEALTH
            with ops.control_dependencies(None):
                return summary_ops.tensor_summary(self.mode, tensor, trace_point, batched=batched)
        # FULL_TENSOR: the tensor itself, packed with the others in `enqueue_batch`.
        return (tensor if self.mode == fmt.FULL_TENSOR else tensor.op, trace_point)

    def enqueue_batch(self, rows: list[Any], after: Any, *, by_name: bool = False) -> Any:
        """Build one enqueue of a batch of `batch_row` results, run after ``after`` (an
        op, a list of ops, or None; ``by_name``: `handles_for`)."""
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import array_ops, gen_data_flow_ops

        deps = list(after) if isinstance(after, list) else [after] if after is not None else []
        graph = ops.get_default_graph()
        handle, calls_handle = self.handles_for(graph, by_name=by_name)
        # control_dependencies(None) first: the batch may be built while TensorFlow
        # holds a control-dependency scope on an op that must run after it.
        with ops.control_dependencies(None):
            ordinal = self._ordinal_in(graph, calls_handle)
            if self.mode == fmt.FULL_TENSOR:
                self._values.note_batch([t for t, _ in rows])
                components = value_batches.pack([t for t, _ in rows], [tp for _, tp in rows])
                with ops.control_dependencies(deps):
                    return gen_data_flow_ops.queue_enqueue_v2(
                        handle, components + [ordinal], name="tfdbg_tui_traces"
                    )
            if self.mode in summaries.SUMMARY_MODES:
                components = [array_ops.reshape(summary_ops.stack_summaries(rows), [-1])]
            else:
                components = [
                    constant_op.constant(
                        [tp for _, tp in rows], dtype=dtypes.int32, name="tfdbg_tui_tps"
                    )
                ]
                # NO_TENSOR: only the fact that the tensors were computed, so the
                # enqueue waits for their ops without reading their values.
                deps = deps + [op for op, _ in rows]
            self._largest_block = max(self._largest_block, len(rows))
            size = constant_op.constant(len(rows), dtype=dtypes.int32, name="tfdbg_tui_rows")
            with ops.control_dependencies(deps):
                return gen_data_flow_ops.queue_enqueue_v2(
                    handle, components + [size, ordinal], name="tfdbg_tui_traces"
                )

    def drain(self) -> int:
        """Dequeue everything queued now into the sink.

        Runs eager ops: a caller with op callbacks must keep them from recording these.
        Must not be called with `lock` held (a concurrent drain would wait for it).

        Returns:
            The number of traces drained.
        """
        # Eager also when the program disabled eager execution after enable (TF1), and
        # in threads a TF1 program starts: the queue is an eager resource.
        if self._resources is None:
            return 0  # nothing was made that could enqueue
        with self._drain_lock, eager_runtime.eager_mode():
            with self.lock:
                count = int(self._queue.size().numpy())
            if self.mode == fmt.FULL_TENSOR:
                return self._values.drain(count, self._sink)
            drained = 0
            while count > 0:
                take = min(count, max(1, DRAIN_ROW_BUDGET // self._largest_block))
                drained += self._drain_blocks(take)
                count -= take
            return drained

    def _drain_blocks(self, take: int) -> int:
        """Dequeue ``take`` blocks of traces into the sink; return how many traces."""
        with self.lock:
            blocks, sizes, ordinals = (c.numpy() for c in self._queue.dequeue_many(take))
            width = summaries.RAW_WIDTH.get(self.mode, 1)
            rows = blocks[np.arange(blocks.shape[1]) < sizes[:, np.newaxis] * width]
            ordinals = np.repeat(ordinals, sizes)
            if self.mode in summaries.SUMMARY_MODES:
                rows = rows.reshape(-1, width)
                self._sink(
                    summaries.trace_points_of(rows),
                    summaries.format_rows(self.mode, rows),
                    None,
                    ordinals,
                    None,
                )
            else:
                self._sink(rows.astype(np.int32), None, None, ordinals, None)
        return len(rows)


# TensorFlow's FuncGraph classes of the gradients of while bodies and cond branches
# (while_v2.py, cond_v2.py). Their capture logic only knows tensors of the forward
# graph: an eager tensor captured there raises.
CONTROL_FLOW_GRAD_GRAPHS = frozenset({"_WhileBodyGradFuncGraph", "_CondGradFuncGraph"})


def in_control_flow_gradient(graph: Any) -> bool:
    """Whether ``graph`` is (or is nested in) a control-flow gradient graph.

    Besides the gradient body and branch classes, the condition of a gradient while
    loop (a plain ``WhileCondFuncGraph`` named ``..._rewritten_grad_N``) counts: a
    capture there changes the loop's inputs ("cond_graph takes 10 inputs"). Any
    control-flow graph with ``_grad`` in its name is taken as one; a user's loop so
    named only loses the ordering described in docs/instrument.md.
    """
    while graph is not None:
        names = {cls.__name__ for cls in type(graph).__mro__}
        if names & CONTROL_FLOW_GRAD_GRAPHS:
            return True
        if "ControlFlowFuncGraph" in names and "_grad" in (getattr(graph, "name", "") or ""):
            return True
        graph = getattr(graph, "outer_graph", None)
    return False


def discard_traces(
    trace_points: np.ndarray,
    rows: np.ndarray | None,
    values: Sequence[dict[str, Any]] | None,
    ordinals: np.ndarray | None,
    alert: bool | None,
) -> None:
    """The sink of a retired source: drained traces go nowhere."""
    del trace_points, rows, values, ordinals, alert


@dataclass(frozen=True)
class _QueueResources:
    """What `TraceQueue` makes in TensorFlow's runtime when first needed."""

    queue: Any
    calls: CallCounter
    device: str
    values: ValueDrain


class TraceSource(Protocol):
    """What `TraceDrainer` drains: a `TraceQueue`, or the TF1 route's host buffer
    (instrument/tracing/host_trace_buffer.py)."""

    polls_while_active: bool

    def drain(self) -> int:
        """Hand what is buffered to the sink; return how many traces."""


class TraceDrainer:
    """A daemon thread that drains trace queues and buffers every `DRAIN_INTERVAL_S`.

    A source whose ``polls_while_active`` is set (FULL_TENSOR queues) is drained
    continuously while it yields traces, then polled every `ACTIVE_POLL_S` and less
    often as it stays empty.

    Sources stay registered after their run is closed (their sink then discards):
    functions traced under an old run still enqueue into its queue, which must never
    fill up.
    """

    def __init__(self, interval_s: float = DRAIN_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._sources: list[TraceSource] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def register(self, source: TraceSource) -> None:
        """Drain ``source`` periodically from now on."""
        with self._lock:
            self._sources.append(source)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tfdbg-tui-trace-drain", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        stop = threading.Event()  # never set: the thread lives as long as the process
        wait = self._interval_s
        while not stop.wait(wait):
            with self._lock:
                sources = list(self._sources)
            active = False
            for source in sources:
                try:
                    if source.drain() and source.polls_while_active:
                        active = True
                except Exception:  # the thread must survive to keep draining
                    # A failed drain (e.g. while the interpreter shuts TensorFlow down)
                    # is reported; a batch already dequeued when it failed is lost.
                    logger.exception("tfdbg-tui: draining graph traces failed")
            # While FULL_TENSOR traces keep coming, drain again at once; once they stop,
            # poll at `ACTIVE_POLL_S`, backing off to the interval.
            wait = 0.0 if active else min(max(2 * wait, ACTIVE_POLL_S), self._interval_s)


DRAINER = TraceDrainer()
