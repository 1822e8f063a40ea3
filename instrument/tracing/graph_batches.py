"""Batched trace enqueues for `tf.function` graphs and control-flow bodies: one enqueue
per graph segment, and which values nothing uses (not traced).

One ``QueueEnqueueV2`` per traced tensor costs as much as the rest of a small model's
step, so in the graph of a ``tf.function`` the traces are collected while it is built
and enqueued together: the summary rows are stacked (or, in NO_TENSOR, the trace point
ids are one constant that waits for the traced ops) and enqueued with one
``QueueEnqueueManyV2``.

Order is kept by cutting the graph into **segments** at its nested calls and control
flow (While, If, Case, function calls), whose own traces are enqueued while they run:
the traces of the ops created before such an op are enqueued before it starts (it
gets a control input on their enqueue), and the next segment's enqueue waits for it.
Within a segment, traces are in the order their ops were created, which is an order in
which they may have run (creation order respects data dependencies). The graph's last
segment is enqueued from a hook TensorFlow calls once the graph is fully traced
(``FUNC_GRAPH_TRANSFORMS``), and made a control output of the function.

In a graph that holds the parts of a collective for several devices (built under a
MirroredStrategy over two GPUs or logical CPUs, or holding collective ops itself), each
device's part waits for the others, so that order is kept per device: a nested op waits
only for the enqueue of its own device's traces, and the queue is looked up by name
rather than captured (`TraceQueue.handles_for`). One order across the devices would
make one device's part of a collective wait for the other's, which waits for it: the
job would hang.

Recognising a graph traced by ``tf.function`` and cutting it into segments use
TensorFlow internals (instrument/tf_internals/); without them every graph takes the
per-tensor route below.

The bodies and conditions of while loops and the branches of conds, and their
gradients, get the same hook (while_v2 and cond_v2 make them functions through it) and
are batched too, once a run of the graph (`GraphBatch` with ``body``). Other graphs
(gradient graphs of eager tapes, tf.data functions) get no such hook; their traces use
one enqueue per tensor (`TraceQueue.add_trace`), which TensorFlow's automatic control
dependencies keep in creation order.
"""

from __future__ import annotations

import weakref
from typing import Any

from instrument.tf_internals.graph_edits import (
    NESTED_GRAPH_OPS,
    add_control_input,
    keep_deferred_captures_last,
)
from instrument.tf_internals.graph_frames import (
    WHILE_CONDITION_GRAPH,
    is_stateful,
    is_traced_by_tf_function,
    op_id,
    ops_by_id,
    spans_local_devices,
)
from instrument.tracing.tf1_graphs import PLACEHOLDER_OPS
from instrument.tracing.trace_queue import TraceQueue, in_control_flow_gradient

__all__ = ["COLLECTIVE_OPS", "NESTED_GRAPH_OPS", "GraphBatch", "is_traced_by_tf_function"]

# Ops whose kernels meet their peers on other devices or workers (all-reduce, gather,
# broadcast, all-to-all, reduce-scatter; NCCL's and the TPU's): each waits until every
# participant has started.
COLLECTIVE_OPS = frozenset(
    {
        "CollectiveReduce",
        "CollectiveReduceV2",
        "CollectiveReduceV3",
        "CollectiveGather",
        "CollectiveGatherV2",
        "CollectiveReduceScatterV2",
        "CollectiveBcastSend",
        "CollectiveBcastSendV2",
        "CollectiveBcastRecv",
        "CollectiveBcastRecvV2",
        "CollectiveAllToAllV2",
        "CollectiveAllToAllV3",
        "CollectiveInitializeCommunicator",
        "NcclAllReduce",
        "NcclReduce",
        "NcclBroadcast",
        "_NcclReduceSend",
        "_NcclReduceRecv",
        "_NcclBroadcastSend",
        "_NcclBroadcastRecv",
        "AllToAll",
        "CrossReplicaSum",
        "CollectivePermute",
    }
)

# Graphs (weakly held) traced by tf.function: a graph nested in one under a strategy
# over several devices looks the queue up by name. Not a tf.data function's: tf.data
# runs it on the device of its iterator (a multi-device iterator's: another device than
# the queue's), where a lookup by name finds nothing; a captured handle works there.
_TF_FUNCTION_GRAPHS: weakref.WeakSet[Any] = weakref.WeakSet()
# Graphs (weakly held) that hold collective ops, or a graph nested in them that does:
# marked when the nested graph is finished, before the graph holding it is.
_HOLD_COLLECTIVES: weakref.WeakSet[Any] = weakref.WeakSet()


class GraphBatch:
    """The traces of one tf.function graph being built, enqueued segment by segment.

    While the graph is built, summary rows are collected and the graph is cut into
    segments at its nested ops; the enqueues are built in `finish`, after TensorFlow's
    automatic control dependencies are done with the graph (they would chain the
    enqueues after the nested ops that also use the queue, closing cycles).

    A control-flow body (``body``: a while loop's body or condition, a cond branch)
    is batched the same way, with two differences. Its rows are each tensor's own
    (`TraceQueue.batch_row` with ``in_body``): a loop body runs once an iteration, where
    the stock route's ``cond`` would cost more than the kernels. And the queue is
    captured, and the call ordinal read, at its first op that is not an input
    (`TraceQueue.capture_in`): while_v2 and cond_v2 lay out a body's inputs from its
    captures before the transform hook builds the enqueues. The outputs of a loop
    condition and of control-flow gradients also wait for the enqueues: the runtime
    inlines a condition for its output alone, and a cond gradient branch's enqueue,
    a control output only, did not run.

    Args:
        graph: The FuncGraph.
        queue: The run's trace queue.
        body: The graph is a control-flow body (`graph_frames.is_control_flow_body`).
    """

    def __init__(self, graph: Any, queue: TraceQueue, *, body: bool = False) -> None:
        self.graph = graph
        self._queue = queue
        self._body = body
        # Graphs whose outputs must wait for the enqueues (`finish`).
        self._outputs_wait = body and (
            type(graph).__name__ == WHILE_CONDITION_GRAPH or in_control_flow_gradient(graph)
        )
        self._captured = not body
        # Ops of several devices meet in collectives here: order is kept per device
        # and the queue looked up by name (module docstring).
        self._spans_devices = False
        if not body:
            _TF_FUNCTION_GRAPHS.add(graph)
        # Whether the queue may be looked up by name here (`_TF_FUNCTION_GRAPHS`).
        self._in_tf_function = _in_tf_function(graph)
        self._rows: list[Any] = []
        # (rows, nested op) per finished segment: the rows' traces precede the op.
        self._segments: list[tuple[list[Any], Any]] = []
        self._last_seen_op_id = 0
        self.finished = False

    def before_op(self, op: Any) -> None:
        """Called for each op created in the graph with a callback, before its traces.

        Nested call ops are created without an op callback; they are found among the
        ops created since the previous callback.
        """
        self._see(op_id(op), op)

    def _see(self, created: int, op: Any | None) -> None:
        """`before_op` for the op created ``created``-th, or (``op`` None) for one
        created after every op of the graph."""
        nodes = ops_by_id(self.graph)
        for skipped_id in range(self._last_seen_op_id + 1, created):
            if skipped_id in nodes:
                skipped = nodes[skipped_id]
                if skipped.type in NESTED_GRAPH_OPS and not is_own_op(skipped):
                    self._cut_before(skipped)
        self._last_seen_op_id = max(self._last_seen_op_id, created)
        op_type = "" if op is None else op.type
        if op_type in NESTED_GRAPH_OPS:
            self._cut_before(op)
        if (
            not self._spans_devices
            and self._in_tf_function
            and (op_type in COLLECTIVE_OPS or spans_local_devices())
        ):
            self._spans_devices = True
        if not self._captured and not self.finished and op_type not in PLACEHOLDER_OPS:
            # Not in an input's callback: the input may be a capture being made.
            self._captured = True
            self._queue.capture_in(self.graph, by_name=self._spans_devices)

    def add(self, tensor: Any, trace_point: int) -> None:
        """Trace ``tensor`` in the current segment."""
        self._rows.append(
            (tensor.op, self._queue.batch_row(tensor, trace_point, in_body=self._body))
        )

    def _cut_before(self, nested_op: Any) -> None:
        self._segments.append((self._rows, nested_op))
        self._rows = []

    def finish(self) -> None:
        """Build the segments' enqueues; called once the graph is fully traced."""
        from tensorflow.python.framework import ops
        from tensorflow.python.ops import array_ops

        if self.finished:
            return
        self.finished = True
        operations = self.graph.get_operations()
        if not operations:
            return
        with self.graph.as_default(), ops.control_dependencies(None):
            # Nested ops created after the last callback (e.g. a function call whose
            # result is returned directly) still cut.
            self._see(op_id(operations[-1]) + 1, None)
            dead = dead_ops(self.graph, operations)
            segments = [
                ([(op, row) for op, row in rows if op not in dead], nested_op)
                for rows, nested_op in self._segments + [(self._rows, None)]
            ]
            self._segments, self._rows = [], []
            if self._in_tf_function and (
                self.graph in _HOLD_COLLECTIVES
                or any(op.type in COLLECTIVE_OPS for op in operations)
            ):
                self._spans_devices = True
            if self._spans_devices:
                _mark_enclosing(self.graph)
            if not self._captured and any(rows for rows, _ in segments):
                # A body whose only ops are its inputs: too late to capture the queue.
                self._queue.look_up_in(self.graph)
            last_enqueues = self._enqueue_segments(segments)
            if self._outputs_wait and last_enqueues:
                # A loop condition's (and a control-flow gradient's) outputs wait for the
                # enqueues, or these would not run (class docstring).
                with ops.control_dependencies(last_enqueues):
                    self.graph.outputs = [array_ops.identity(t) for t in self.graph.outputs]
            # The enqueues may have captured the queue after the inputs were laid out.
            keep_deferred_captures_last(self.graph)
        # The graph is done; let it be collected (it is a weak key of the callback).
        self.graph = None

    def _enqueue_segments(self, segments: list[tuple[list[tuple[Any, Any]], Any]]) -> list[Any]:
        """Build the enqueues of ``segments`` in order around their nested ops; returns
        the last enqueue of each chain.

        One chain, or one per device where the graph spans devices: there a nested op
        waits only for its own device's traces, and each device's traces wait in
        ``pending`` for its next nested op. The traces left after the last nested ops
        are enqueued together, in creation order (nothing waits for that enqueue, so it
        may wait for every device).
        """
        last: dict[str, Any] = {}  # per chain: its last enqueue
        barriers: dict[str, Any] = {}  # per chain: the nested op its next enqueue waits for
        pending: dict[str, list[tuple[int, Any]]] = {}  # per chain: (creation index, row)
        created = 0
        for rows, nested_op in segments:
            for op, row in rows:
                pending.setdefault(self._chain_of(op), []).append((created, row))
                created += 1
            if nested_op is None:
                continue
            chain = self._chain_of(nested_op)
            held = pending.pop(chain, None)
            if held:
                last[chain] = self._enqueue([row for _, row in held], barriers.get(chain))
            if chain in last:
                add_control_input(nested_op, last[chain])
            barriers[chain] = nested_op
        rest = sorted(
            (entry for held in pending.values() for entry in held), key=lambda entry: entry[0]
        )
        if rest:
            final = self._enqueue([row for _, row in rest], list(barriers.values()))
            return [final]
        return list(last.values())

    def _chain_of(self, op: Any) -> str:
        return op.device if self._spans_devices else ""

    def _enqueue(self, rows: list[Any], after: Any) -> Any:
        enqueue = self._queue.enqueue_batch(rows, after, by_name=self._spans_devices)
        self.graph.control_outputs.append(enqueue)
        return enqueue


def _in_tf_function(graph: Any) -> bool:
    """Whether ``graph`` is traced by tf.function or nested in a graph that is."""
    while graph is not None:
        if graph in _TF_FUNCTION_GRAPHS:
            return True
        graph = getattr(graph, "outer_graph", None)
    return False


def _mark_enclosing(graph: Any) -> None:
    """Mark the graphs ``graph`` is nested in as holding collectives."""
    outer = getattr(graph, "outer_graph", None)
    while outer is not None and outer not in _HOLD_COLLECTIVES:
        _HOLD_COLLECTIVES.add(outer)
        outer = getattr(outer, "outer_graph", None)


def dead_ops(graph: Any, operations: list[Any]) -> set[Any]:
    """The program's ops of ``graph`` (fully traced) whose results nothing uses.

    TensorFlow prunes them when it runs the function (a gradient no one asked for: the
    gradient of a first layer with respect to the input data), so the program never
    computes them; a trace of theirs would make it compute them (a convolution's input
    gradient cost a quarter of a small network's step). An op is live when it is
    stateful, an input of the graph, one of its outputs or control outputs, or when a
    live op of the program takes its output or waits for it; the debugger's own ops
    keep nothing alive.
    """
    roots = [t.op for t in graph.outputs] + list(graph.control_outputs)
    roots += [op for op in operations if op.type in PLACEHOLDER_OPS or is_stateful(op)]
    live: set[Any] = set()
    pending = [op for op in roots if not is_own_op(op)]
    while pending:
        op = pending.pop()
        if op in live:
            continue
        live.add(op)
        pending.extend(t.op for t in op.inputs if t.graph is graph)
        pending.extend(c for c in op.control_inputs if c.graph is graph)
    return {op for op in operations if op not in live and not is_own_op(op)}


def is_own_op(op: Any) -> bool:
    """Whether ``op`` is one of the debugger's (the ``cond`` of a summary on the
    per-tensor route, built while the graph is traced): it enqueues nothing."""
    return any(part.startswith("tfdbg_tui") for part in op.name.split("/"))
