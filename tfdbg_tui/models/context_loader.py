"""What the panes show about a selection, read from the dump in a worker thread: pure
functions of a reader.

Pure functions of a run (a `reader.Run`; a trace's context asks its analyses too, a
`reader.AnalysedRun`): no widgets here. The screen calls them inside
`@work(thread=True)` workers and hands the frozen results down to the panes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reader.analysis.diagnosis.expressions import expression_of, line_span
from reader.analysis.diagnosis.history import TensorHistory, tensor_history
from reader.analysis.hunt.inputs import eager_inputs, input_trace
from reader.errors import UnknownIdError
from reader.model import (
    EagerInput,
    Execution,
    Frame,
    Graph,
    Op,
    Summary,
    Trace,
    innermost_user_position,
)
from tfdbg_tui.models.source_view import SourceView, highlight_source
from tfdbg_tui.text.literal import literal_columns

if TYPE_CHECKING:
    from reader import AnalysedRun, Run


@dataclass(frozen=True)
class Neighbour:
    """An input or consumer of the selected op, with its nearest trace if any."""

    role: str  # "input" | "consumer"
    tensor_name: str  # the input tensor "op:slot", or the consumer op's name
    op: Op | None
    slot: int  # the output slot of `op` to jump to
    input_index: int  # which input of the consumer (consumers) / of the op (inputs)
    trace_index: int | None
    summary: Summary | None
    history: TensorHistory | None = None  # inputs: the tensor's health over the run


@dataclass(frozen=True)
class TraceContext:
    """Everything about one selected graph trace."""

    trace: Trace
    op: Op | None
    graph_name: str | None
    inputs: tuple[Neighbour, ...]
    consumers: tuple[Neighbour, ...]
    frames: tuple[Frame, ...]
    selected_frame: Frame | None
    has_value: bool = False
    expressions: tuple[str | None, ...] = ()  # per frame: its exact expression, if known
    history: TensorHistory | None = None  # the selected tensor's health over the run


@dataclass(frozen=True)
class ExecutionContext:
    """Everything about one selected eager execution."""

    execution: Execution
    graph_name: str | None
    frames: tuple[Frame, ...]
    selected_frame: Frame | None
    inputs: tuple[EagerInput, ...] = ()
    # Executions before the first one on disk were dropped (a circular buffer): an
    # input with no producer may have been made by one of them.
    earlier_dropped: bool = False
    expressions: tuple[str | None, ...] = ()  # per frame: its exact expression, if known


def _op(reader: Run, op_id: int | None) -> Op | None:
    """An op, or None while its definition has not been read."""
    if op_id is None:
        return None
    try:
        return reader.op(op_id)
    except UnknownIdError:
        return None


def _graph(reader: Run, graph_id: int | None) -> Graph | None:
    if graph_id is None:
        return None
    try:
        return reader.graph(graph_id)
    except UnknownIdError:
        return None


def _stack(reader: Run, stack_id: int | None) -> tuple[tuple[Frame, ...], Frame | None]:
    if stack_id is None:
        return (), None
    try:
        frames = tuple(reader.stack(stack_id))
    except UnknownIdError:
        return (), None
    position = innermost_user_position(frames)
    if position is None and frames:
        position = len(frames) - 1
    return frames, (frames[position] if position is not None else None)


def _trace_summary(reader: Run, trace_index: int | None) -> Summary | None:
    if trace_index is None:
        return None
    return reader.trace(trace_index).summary


def load_trace_context(reader: AnalysedRun, trace_index: int) -> TraceContext:
    """The op of a trace, its inputs and consumers (with their nearest traces), its
    creation stack with the innermost user frame selected, and the health over the run
    of its output and inputs."""
    trace = reader.trace(trace_index)
    op = _op(reader, trace.op_id)
    if op is None:
        return TraceContext(trace, None, None, (), (), (), None)
    graph = _graph(reader, op.graph_id)
    inputs = []
    for position, ref in enumerate(op.inputs):
        producer = _op(reader, ref.op_id)
        near = (
            input_trace(reader, ref.op_id, ref.slot, trace_index) if ref.op_id is not None else None
        )
        inputs.append(
            Neighbour(
                "input",
                ref.name,
                producer,
                ref.slot,
                position,
                near,
                _trace_summary(reader, near),
                tensor_history(reader, ref.op_id, ref.slot)
                if producer is not None and ref.op_id is not None
                else None,
            )
        )
    consumers = []
    for consumer, input_index in reader.consumers(op.id):
        slot = 0
        near = reader.nearest_trace_of(consumer.id, slot, trace_index, after=True)
        consumers.append(
            Neighbour(
                "consumer",
                consumer.name,
                consumer,
                slot,
                input_index,
                near,
                _trace_summary(reader, near),
            )
        )
    frames, selected = _stack(reader, op.stack_id)
    has_value = reader.metadata.tensor_debug_mode == "FULL_TENSOR"
    return TraceContext(
        trace,
        op,
        graph.name if graph else None,
        tuple(inputs),
        tuple(consumers),
        frames,
        selected,
        has_value,
        frame_expressions(reader, frames),
        tensor_history(reader, op.id, trace.slot),
    )


def load_execution_context(reader: Run, execution_index: int) -> ExecutionContext:
    """An eager execution and its call stack with the innermost user frame selected."""
    execution = reader.execution(execution_index)
    graph = _graph(reader, execution.graph_id)
    graph_name = graph.name if graph else None
    frames, selected = _stack(reader, execution.stack_id)
    return ExecutionContext(
        execution,
        graph_name,
        frames,
        selected,
        eager_inputs(reader, execution),
        earlier_dropped=reader.first_execution > 0,
        expressions=frame_expressions(reader, frames),
    )


def frame_expressions(reader: Run, frames: tuple[Frame, ...]) -> tuple[str | None, ...]:
    """Each user frame's exact expression (None for library frames and old dumps)."""
    return tuple(expression_of(reader, frame) if frame.is_user else None for frame in frames)


def source_span(reader: Run, frame: Frame) -> tuple[int, int] | None:
    """The frame's expression as columns of its line shown in Source Code, if known."""
    text = reader.source_line(frame)
    span = line_span(frame, text)
    return literal_columns(text, *span) if span is not None and text is not None else None


def load_source(reader: Run, frame: Frame) -> SourceView:
    """The highlighted snapshot of a frame's file, or why there is none."""
    try:
        source = reader.source_file(frame.file_id)
    except UnknownIdError:
        source = None
    if source is None or source.lines is None:
        omitted = source.omitted if source is not None else None
        note = {
            "library": "library file: its text is not stored in the dump",
            "unreadable": "the file could not be read when the program ran",
            "too_large": "the file was too large to store",
        }.get(omitted or "", "no snapshot of this file in the dump")
        return SourceView(frame.path, frame.line, None, note)
    return SourceView(frame.path, frame.line, highlight_source(source.lines, frame.path))
