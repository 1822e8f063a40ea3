"""Root cause: the op and line that made the first harmful non-finite value, an op whose
inputs were all finite but whose output was not.

The walk starts at the first alert in execution order and moves back through the
inputs of the op that produced it, as long as one of them was itself non-finite. The
value behind each input is found by `reader.analysis.hunt.inputs` (for a graph op: the input
tensor's latest trace before; for an eager op: the latest earlier execution that
output the tensor id).

An input without a known value (not traced, not summarised, created outside any op
callback) counts as finite: the walk cannot see past it.

tf.data runs ahead of its consumer: a dataset function (``Dataset.map`` and the like)
computes elements in background threads before the eager op that delivers them
(``IteratorGetNext``) runs, and its traces reach the dump after that op's execution.
So when the walk ends at an eager op that delivers dataset elements, the root cause
is the first non-finite trace of a dataset function, when there is one, walked back
in its own graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from reader.analysis.hunt.alerts import AlertBuilder
from reader.analysis.hunt.inputs import eager_inputs, input_trace
from reader.errors import DumpError
from reader.model import Alert, Execution, RootCause, Summary, TensorRef

if TYPE_CHECKING:
    from reader.run.run_protocol import Run

# Bounds the walk on a malformed graph with a cycle through non-finite tensors.
MAX_WALK_STEPS = 10_000
# Eager ops that hand out the elements of a tf.data pipeline.
DATASET_DELIVERY_OPS = frozenset(
    {
        "IteratorGetNext",
        "IteratorGetNextSync",
        "IteratorGetNextAsOptional",
        "OptionalGetValue",
        "MultiDeviceIteratorGetNextFromShard",
    }
)
# TensorFlow names the graph of a dataset function "Dataset_<transformation>_<function>"
# (tensorflow/python/data/ops/structured_function.py): Dataset_map_parse.
DATASET_GRAPH_PREFIX = "Dataset_"
# Alert traces inspected for one made by a dataset function (they come early).
MAX_DATASET_ALERTS_SCANNED = 10_000


def is_dataset_graph(reader: Run, graph_id: int) -> bool:
    """Whether a graph is (or is nested in) the graph of a tf.data dataset function."""
    seen = 0
    current: int | None = graph_id
    while current is not None and seen < MAX_WALK_STEPS:
        try:
            graph = reader.graph(current)
        except DumpError:
            return False
        if (graph.name or "").startswith(DATASET_GRAPH_PREFIX):
            return True
        current, seen = graph.outer_id, seen + 1
    return False


def find_root_cause(
    reader: Run, first: Alert, *, walk: bool = True, contained: Callable[[int], bool] | None = None
) -> RootCause:
    """The root cause of an alert (`DumpReader.root_cause` starts at the run's first
    harmful one).

    Args:
        reader: The dump's record queries.
        first: The alert to start from.
        walk: False describes ``first``'s own op (its inputs and line) without walking
            back through non-finite inputs.
        contained: Whether a graph trace's non-finite value is contained
            (`reader.analysis.hunt.harm`): the walk does not go back through it.
    """
    steps = MAX_WALK_STEPS if walk else 1
    if first.kind == "graph":
        return _graph_root_cause(reader, first, steps, contained)
    cause = _eager_root_cause(reader, first, steps)
    if walk and cause.execution is not None and cause.execution.op_type in DATASET_DELIVERY_OPS:
        dataset_alert = _first_dataset_alert(reader)
        if dataset_alert is not None:
            return _graph_root_cause(reader, dataset_alert, steps, contained)
    return cause


def _first_dataset_alert(reader: Run) -> Alert | None:
    """The first non-finite trace computed by a dataset function, or None."""
    for index in reader.trace_alert_indices()[:MAX_DATASET_ALERTS_SCANNED].tolist():
        trace = reader.trace(index)
        if trace.op_id is None:
            continue
        if is_dataset_graph(reader, reader.op(trace.op_id).graph_id):
            return AlertBuilder(reader).graph(index, trace.step, *_counts(trace.summary))
    return None


def _counts(summary: Summary | None) -> tuple[int, int, int]:
    if summary is None:
        return -1, -1, -1
    nan, neg, pos = (
        -1 if c is None else c for c in (summary.nan, summary.neg_inf, summary.pos_inf)
    )
    return nan, neg, pos


def _graph_root_cause(
    reader: Run, first: Alert, steps: int, contained: Callable[[int], bool] | None
) -> RootCause:
    index = first.index
    visited = {index}
    inputs: list[tuple[TensorRef, Summary | None]] = []
    indices: list[int | None] = []
    op = None
    for step in range(steps):
        trace = reader.trace(index)
        if trace.op_id is None:
            inputs, indices, op = [], [], None
            break
        op = reader.op(trace.op_id)
        inputs, indices = [], []
        culprit = None
        for ref in op.inputs:
            found = None if ref.op_id is None else input_trace(reader, ref.op_id, ref.slot, index)
            summary = reader.trace(found).summary if found is not None else None
            inputs.append((ref, summary))
            indices.append(found)
            if (
                culprit is None
                and summary is not None
                and summary.is_alert
                and found is not None
                and found not in visited
                and (contained is None or not contained(found))
            ):
                culprit = found
        if culprit is None or step == steps - 1:
            break
        visited.add(culprit)
        index = culprit
    trace = reader.trace(index)
    alert = first
    if index != first.index:
        alert = AlertBuilder(reader).graph(index, trace.step, *_counts(trace.summary))
    execution = _execution_or_none(reader, trace.step)
    frame = reader.innermost_user_frame(op.stack_id) if op is not None else None
    return RootCause(
        alert=alert,
        op=op,
        execution=execution,
        trace=trace,
        inputs=inputs,
        frame=frame,
        line_text=reader.source_line(frame) if frame else None,
        first_alert=first,
        input_indices=indices,
    )


def _execution_or_none(reader: Run, index: int) -> Execution | None:
    try:
        return reader.execution(index)
    except DumpError:
        return None  # the call is not recorded yet (still running) or left the disk


def _eager_root_cause(reader: Run, first: Alert, steps: int) -> RootCause:
    index, slot = first.index, first.slot
    visited = {index}
    for step in range(steps):
        execution = reader.execution(index)
        inputs: list[tuple[TensorRef, Summary | None]] = []
        indices: list[int | None] = []
        culprit = None
        for found in eager_inputs(reader, execution):
            summary = found.summary
            inputs.append(
                (
                    TensorRef(
                        name=found.name,
                        op_id=None,
                        slot=found.slot,
                        execution_index=found.producer_index,
                    ),
                    summary,
                )
            )
            indices.append(found.producer_index)
            if (
                culprit is None
                and found.producer_index is not None
                and summary is not None
                and summary.is_alert
                and found.producer_index not in visited
            ):
                culprit = (found.producer_index, found.slot)
        if culprit is None or step == steps - 1:
            break
        index, slot = culprit
        visited.add(index)
    alert = first
    if index != first.index:
        alert = AlertBuilder(reader).eager(index, slot, *_counts(execution.summary(slot)))
    frame = reader.innermost_user_frame(execution.stack_id)
    return RootCause(
        alert=alert,
        op=None,
        execution=execution,
        trace=None,
        inputs=inputs,
        frame=frame,
        line_text=reader.source_line(frame) if frame else None,
        first_alert=first,
        input_indices=indices,
    )
