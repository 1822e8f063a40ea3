"""Changes to a graph that TensorFlow's public API cannot make: an op made to wait
(control inputs), a graph's late captures put back in order, an op recomputed, a
``cond`` kept functional, variable writes deferred (the table in
`instrument.tf_internals`)."""

from __future__ import annotations

from typing import Any

from instrument.tf_internals import debug_once

# Ops that run other graphs (bodies, branches, functions): where instrument/tracing/graph_batches.py
# cuts a graph into segments, and never made to wait by `defer_variable_writes`.
NESTED_GRAPH_OPS = frozenset(
    {
        "While",
        "StatelessWhile",
        "If",
        "StatelessIf",
        "Case",
        "StatelessCase",
        "PartitionedCall",
        "StatefulPartitionedCall",
    }
)


def can_add_control_input() -> bool:
    """Whether ``Operation._add_control_input`` exists (an op made to wait afterwards)."""
    from tensorflow.python.framework import ops

    present = hasattr(ops.Operation, "_add_control_input")
    if not present:
        debug_once(
            "add_control_input",
            "tfdbg-tui: Operation._add_control_input not found; TF1 placeholders are not traced",
        )
    return present


def add_control_input(op: Any, control: Any) -> None:
    """Make ``op``, already created, wait for ``control`` (``Operation._add_control_input``;
    checked by `can_add_control_input` or `graph_frames.graph_batching_supported`)."""
    op._add_control_input(control)


# -- captures added after a graph's inputs were laid out ----------------------------------


def keep_deferred_captures_last(graph: Any) -> None:
    """Move a FuncGraph's call-time captures back to the end of its inputs.

    ``tf.function`` lays a graph's inputs out as its arguments, its by-value captures,
    then its call-time (deferred) captures, and calls it in that order. A capture
    made after that layout (our trace queue's handle, captured when the last segment's
    enqueue is built) is appended after the call-time captures: a function that has
    any (MultiWorkerMirroredStrategy's collective keys) would be called with its
    inputs out of order.
    """
    deferred = getattr(graph, "deferred_internal_captures", None)
    if not deferred:
        return
    from tensorflow.python.util import nest

    late = {id(t) for t in nest.flatten(deferred, expand_composites=True)}
    inputs = list(graph.inputs)
    reordered = [t for t in inputs if id(t) not in late] + [t for t in inputs if id(t) in late]
    if [id(t) for t in reordered] != [id(t) for t in inputs]:
        graph.inputs = reordered


def copy_op(op: Any, inputs: list[Any]) -> Any | None:
    """A new op of ``op``'s type and attributes on ``inputs``, in the default graph (a
    FuncGraph captures outer inputs); None when ``Graph._create_op_internal`` is missing."""
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    create = getattr(graph, "_create_op_internal", None)
    if create is None:
        debug_once(
            "copy_op",
            "tfdbg-tui: Graph._create_op_internal not found; covered "
            "tensors are read by the exact-rows branch itself",
        )
        return None
    attrs = {key: value for key, value in op.node_def.attr.items() if not key.startswith("_")}
    return create(
        op.type,
        list(inputs),
        dtypes=[t.dtype for t in op.outputs],
        attrs=attrs,
        name="tfdbg_tui_recomputed",
    )


def cond_op(output: Any) -> Any | None:
    """The ``If`` (or ``StatelessIf``) op behind a ``cond``'s ``output``, or None."""
    op = output.op
    while op.type not in ("If", "StatelessIf") and op.inputs:
        op = op.inputs[0].op
    return op if op.type in ("If", "StatelessIf") else None


def keep_functional_if(op: Any | None) -> None:
    """Keep a ``cond``'s ``If`` op (`cond_op`; None: not found) a functional op, run as
    one call of the branch it takes, instead of TensorFlow lowering it into ``Switch``
    and ``Merge`` ops, whose untaken branch is visited op by op (as dead) every run."""
    from tensorflow.core.framework import attr_value_pb2

    set_attr = getattr(op, "_set_attr", None)
    if op is None or set_attr is None:
        debug_once(
            "keep_functional_if",
            "tfdbg-tui: cannot keep a summary cond functional; TensorFlow lowers it",
        )
        return
    set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=False))


# Ops that take a variable's handle without writing the variable.
_VARIABLE_READERS = frozenset(
    {"ReadVariableOp", "VariableShape", "VarIsInitializedOp", "ResourceGather", "ResourceGatherNd"}
)
# Ops whose output 0 shares input 0's buffer.
_BUFFER_ALIASES = frozenset(
    {"Identity", "StopGradient", "Reshape", "Squeeze", "ExpandDims", "Bitcast"}
)


def defer_variable_writes(holder: Any, held: list[Any]) -> int:
    """Make the ops that write a variable whose value ``holder`` holds wait for it.

    A ``ReadVariableOp`` output shares the variable's buffer (as do its identities and
    reshapes). While an op of ours still holds it (``held``: tensors ``holder``
    consumes), an op that updates the variable in place (``AssignSubVariableOp``, an
    optimizer's ``ResourceApply*``) finds the buffer shared and copies the whole
    variable first: a copy of every weight, every step. Writes ``holder`` depends on
    are left as they are (waiting would close a cycle).

    Returns:
        How many ops were made to wait.
    """
    handles = {}
    for tensor in held:
        while tensor.op.type in _BUFFER_ALIASES and tensor.op.inputs:
            tensor = tensor.op.inputs[0]
        if tensor.op.type == "ReadVariableOp":
            handle = tensor.op.inputs[0]
            handles[(handle.op.name, handle.value_index)] = handle
    if not handles:
        return 0
    from tensorflow.python.framework import ops

    if not hasattr(ops.Operation, "_add_control_input"):
        debug_once(
            "defer_variable_writes",
            "tfdbg-tui: Operation._add_control_input not "
            "found; variables a summary batch reads are copied when written",
        )
        return 0
    writers = []
    for handle in handles.values():
        for op in handle.consumers():
            if (
                op is not holder
                and op.type not in _VARIABLE_READERS
                and op.type not in NESTED_GRAPH_OPS
                and op not in writers
            ):
                writers.append(op)
    if not writers:
        return 0
    before = _ancestors(holder)
    deferred = 0
    for op in writers:
        if op not in before and holder not in op.control_inputs:
            op._add_control_input(holder)  # pylint: disable=protected-access
            deferred += 1
    return deferred


def _ancestors(op: Any) -> set[Any]:
    """Every op ``op`` waits for, through data and control inputs."""
    seen: set[Any] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen
