"""TensorFlow's `DebugEvent` messages as the records of our format (docs/format.md),
so `reader.index.definitions` and the indexes take both formats alike.

TensorFlow names graphs, stack frames and ops with strings (UUIDs, op names); our
records refer by small ints. `Ids` hands those ints out, once per string, in the
order the strings are first seen, whether by a definition or by a record that refers
to one not read yet (which then resolves when its definition arrives).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import (
    KIND_KEY,
    DeviceRecord,
    ExecRecord,
    FileRecord,
    FrameRecord,
    GraphRecord,
    OpRecord,
    StackRecord,
)
from reader.index.columns import Column
from reader.limits import MAX_OP_OUTPUTS
from reader.loading.tf_events.tensors import stored_value, summary_row

# Device ids for devices named only by an op's creation record, above any id of
# TensorFlow's own device registry.
_OP_DEVICE_BASE = 1 << 20


class Ids:
    """The ints standing for TensorFlow's string ids in one run."""

    def __init__(self) -> None:
        self.graphs: dict[str, int] = {}
        self.frames: dict[str, int] = {}
        self.stacks: dict[tuple[str, ...], int] = {}
        # (graph UUID, op name, output slot) -> trace point
        self.trace_points: dict[tuple[str, str, int], int] = {}
        self.op_devices: dict[str, int] = {}
        self.num_ops = 0
        self.num_files = 0
        # Eager calls per step function, for the `c` of function calls (steps): the
        # execution indices of its calls, ascending; a call's `c` is its position.
        self.calls: dict[str, Column] = {}

    def graph(self, uuid: str) -> int:
        """The int of a graph's UUID."""
        found = self.graphs.get(uuid)
        if found is None:
            found = self.graphs[uuid] = len(self.graphs)
        return found

    def frame(self, uuid: str) -> int:
        """The int of a stack frame's UUID."""
        found = self.frames.get(uuid)
        if found is None:
            found = self.frames[uuid] = len(self.frames)
        return found

    def stack(self, frame_uuids: Any) -> tuple[int, dict[str, Any] | None]:
        """A code location's stack id, and its ``stack`` record when it is new."""
        key = tuple(frame_uuids)
        found = self.stacks.get(key)
        if found is not None:
            return found, None
        found = self.stacks[key] = len(self.stacks)
        return found, {
            KIND_KEY: StackRecord.KIND,
            StackRecord.ID: found,
            StackRecord.FRAMES: [self.frame(uuid) for uuid in key],
        }

    def trace_point(self, graph_uuid: str, op_name: str, slot: int) -> int:
        """The trace point of one graph tensor."""
        key = (graph_uuid, op_name, slot)
        found = self.trace_points.get(key)
        if found is None:
            found = self.trace_points[key] = len(self.trace_points)
        return found

    def call_ordinal(self, index: int, op_type: str) -> int | None:
        """The `c` of execution ``index``: earlier calls of its step function. A call
        after every one known is the next."""
        function = fmt.step_function_name(op_type)
        if function is None:
            return None
        calls = self._calls_of(function)
        known = calls.view
        position = int(np.searchsorted(known, index))
        if position == known.size:
            calls.append(index)
        return position

    def add_calls(self, function: str, indices: np.ndarray) -> None:
        """Number the calls of step function ``function`` at execution ``indices``
        (ascending, after every call known), as `call_ordinal` of each would."""
        self._calls_of(function).extend(indices)

    def _calls_of(self, function: str) -> Column:
        calls = self.calls.get(function)
        if calls is None:
            calls = self.calls[function] = Column(np.int64)
        return calls


def definition_records(event: Any, ids: Ids) -> list[dict[str, Any]]:
    """Our definition records for one event of the source_files, stack_frames or
    graphs file: none for a kind this reader does not use."""
    what = event.WhichOneof("what")
    if what == "source_file":
        source = event.source_file
        file_id = ids.num_files
        ids.num_files += 1
        lines = list(source.lines)
        record: dict[str, Any] = {
            KIND_KEY: FileRecord.KIND,
            FileRecord.ID: file_id,
            FileRecord.PATH: source.file_path,
            FileRecord.HOST: source.host_name or None,
            FileRecord.LINES: lines or None,
        }
        if not lines:
            # TensorFlow leaves a snapshot empty when it cannot read the file.
            record[FileRecord.OMITTED] = "unreadable"
        return [record]
    if what == "stack_frame_with_id":
        frame = event.stack_frame_with_id
        where = frame.file_line_col
        return [
            {
                KIND_KEY: FrameRecord.KIND,
                FrameRecord.ID: ids.frame(frame.id),
                FrameRecord.FILE: where.file_index,
                FrameRecord.LINE: where.line,
                FrameRecord.FUNCTION: where.func,
            }
        ]
    if what == "debugged_graph":
        graph = event.debugged_graph
        return [
            {
                KIND_KEY: GraphRecord.KIND,
                GraphRecord.ID: ids.graph(graph.graph_id),
                GraphRecord.NAME: graph.graph_name or None,
                GraphRecord.OUTER: (
                    ids.graph(graph.outer_context_id) if graph.outer_context_id else None
                ),
            }
        ]
    if what == "debugged_device":
        device = event.debugged_device
        return [_device_record(device.device_id, device.device_name)]
    if what == "graph_op_creation":
        return _op_records(event.graph_op_creation, ids)
    return []


def _op_records(op: Any, ids: Ids) -> list[dict[str, Any]]:
    records = []
    stack_id, stack = ids.stack(op.code_location.stack_frame_ids)
    if stack is not None:
        records.append(stack)
    device = None
    if op.device_name:
        device = ids.op_devices.get(op.device_name)
        if device is None:
            device = ids.op_devices[op.device_name] = _OP_DEVICE_BASE + len(ids.op_devices)
            records.append(_device_record(device, op.device_name))
    op_id = ids.num_ops
    ids.num_ops += 1
    records.append(
        {
            KIND_KEY: OpRecord.KIND,
            OpRecord.ID: op_id,
            OpRecord.GRAPH: ids.graph(op.graph_id),
            OpRecord.TYPE: op.op_type,
            OpRecord.NAME: op.op_name,
            OpRecord.INPUTS: list(op.input_names),
            OpRecord.NUM_OUTPUTS: op.num_outputs,
            OpRecord.DTYPES: [],
            OpRecord.DEVICE: device,
            OpRecord.STACK: stack_id,
            OpRecord.TRACE_POINTS: [
                ids.trace_point(op.graph_id, op.op_name, slot)
                # More than the reader takes: the op record is damage, and no more
                # trace points are made for it than that.
                for slot in range(min(op.num_outputs, MAX_OP_OUTPUTS + 1))
            ],
        }
    )
    return records


def _device_record(device_id: int, name: str) -> dict[str, Any]:
    return {KIND_KEY: DeviceRecord.KIND, DeviceRecord.ID: device_id, DeviceRecord.NAME: name}


def execution_record(
    event: Any, index: int, mode: str, ids: Ids
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Our ``exec`` record (docs/format.md section 4) for an `Execution` event, and
    the definitions it brings: its stack, when new; its function's graph's name."""
    execution = event.execution
    stack_id, stack = ids.stack(execution.code_location.stack_frame_ids)
    definitions = [stack] if stack is not None else []
    graph = ids.graph(execution.graph_id) if execution.graph_id else None
    record: dict[str, Any] = {
        KIND_KEY: ExecRecord.KIND,
        ExecRecord.INDEX: index,
        ExecRecord.OP_TYPE: execution.op_type,
        ExecRecord.GRAPH: graph,
        ExecRecord.INPUTS: list(execution.input_tensor_ids),
        ExecRecord.OUTPUTS: list(execution.output_tensor_ids),
        ExecRecord.DEVICES: list(execution.output_tensor_device_ids),
        ExecRecord.TIME: event.wall_time,
        ExecRecord.STACK: stack_id,
    }
    if graph is not None and fmt.is_function_call(execution.op_type):
        definitions.append(function_name_record(graph, execution.op_type))
    ordinal = ids.call_ordinal(index, execution.op_type)
    if ordinal is not None:
        record[ExecRecord.CALL] = ordinal
    protos = execution.tensor_protos
    if mode == fmt.FULL_TENSOR:
        stored = [stored_value(p) for p in protos]
        record[ExecRecord.VALUES] = stored
        record[ExecRecord.DTYPES] = [_dtype_enum(p) for p in protos]
    elif mode in fmt.TF_SUMMARY_KEPT_COLUMNS:
        # One proto per output TensorFlow could summarise; an empty one for an output
        # of a dtype the mode does not cover.
        rows = [summary_row(mode, p) for p in protos]
        record[ExecRecord.SUMMARIES] = rows
        if mode in (fmt.FULL_HEALTH, fmt.SHAPE):
            record[ExecRecord.DTYPES] = [int(r[0]) if r else 0 for r in rows]
    return record, definitions


def function_name_record(graph_id: int, function: str) -> dict[str, Any]:
    """The ``graph`` update that names the function a graph's eager calls carry."""
    return {
        KIND_KEY: GraphRecord.KIND,
        GraphRecord.ID: graph_id,
        GraphRecord.UPDATE: True,
        GraphRecord.FUNCTION: function,
    }


def _dtype_enum(proto: Any) -> int:
    return int(proto.dtype)


def trace_value(event: Any) -> dict[str, Any] | None:
    """A FULL_TENSOR trace's value, as our format stores values."""
    return stored_value(event.graph_execution_trace.tensor_proto)


def trace_summary(mode: str, event: Any) -> list[float] | None:
    """A trace's summary row (`SUMMARY_COLUMNS[mode]`), or None."""
    return summary_row(mode, event.graph_execution_trace.tensor_proto)
